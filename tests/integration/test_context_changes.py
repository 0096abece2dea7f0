"""The facts about a target change, and the answer follows: the real operator against the
sandbox.

- relabelling a namespace answers again the requests aimed at it, while the operator runs and
  after a restart (the answer records the facts it was given in: ``status.context.facts``,
  covered by the input hash and the mark);
- a relabel towards a less risky environment never turns a decision more permissive;
- a periodic full list of Namespaces catches a relabel or a deletion the watch missed;
- the playbook catalog is asked about the verified environment, whatever key the requester
  spelled a claim with.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from precedent_sandbox import SandboxThread
from tests.integration.conftest import REPO, Cluster, condition, eventually
from tests.integration.test_trust_facts import answered, namespace, payment_restart

pytestmark = pytest.mark.integration

MERGE = {"Content-Type": "application/merge-patch+json"}


def relabel(cluster: Cluster, name: str, environment: str) -> None:
    body = {"metadata": {"labels": {"precedent.dev/environment": environment}}}
    response = cluster.client.patch(f"/api/v1/namespaces/{name}", json=body, headers=MERGE)
    assert response.status_code == 200, response.text


def facts_say(cluster: Cluster, name: str, text: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        obj = cluster.get_request(name)
        status = obj.get("status") or {}
        found = (status.get("context") or {}).get("facts") or ""
        return obj if status.get("mark") and text in found else None

    return dict(eventually(check))


def test_relabelling_a_namespace_answers_its_requests_again(cluster: Cluster) -> None:
    namespace(cluster, "checkout", "dev")
    assert cluster.create(payment_restart("in-checkout", "checkout")).status_code == 201
    with cluster.operator():
        first = answered(cluster, "in-checkout")
        assert first["status"]["context"]["facts"] == "dev from namespace label on checkout"
        # An admin says checkout is production after all: the answer follows at once.
        relabel(cluster, "checkout", "production")
        again = facts_say(cluster, "in-checkout", "production from namespace label on checkout")
        # The Event that says why is posted through kopf's queue, after the status.
        events = eventually(
            lambda: (
                reasons
                if "ContextChanged"
                in (reasons := {e["reason"] for e in cluster.events_for("in-checkout")})
                else None
            )
        )
        # The same request made now gets the same answer.
        assert cluster.create(payment_restart("control", "checkout")).status_code == 201
        control = answered(cluster, "control")
    assert first["status"]["risk"]["score"] < control["status"]["risk"]["score"]
    assert again["status"]["mark"] != first["status"]["mark"]
    assert again["status"]["inputHash"] != first["status"]["inputHash"]
    assert again["status"]["context"]["environment"] == "production"
    assert again["status"]["risk"]["score"] == control["status"]["risk"]["score"]
    assert again["status"]["risk"]["decision"] == control["status"]["risk"]["decision"]
    assert condition(again, "Approved")["status"] != "True"  # type: ignore[index]
    assert "ContextChanged" in events


def test_a_relabel_towards_dev_never_makes_a_decision_more_permissive(cluster: Cluster) -> None:
    namespace(cluster, "ledger", "production")
    assert cluster.create(payment_restart("in-ledger", "ledger")).status_code == 201
    with cluster.operator():
        first = answered(cluster, "in-ledger")
        assert first["status"]["risk"]["decision"] != "Approved"
        relabel(cluster, "ledger", "dev")
        again = facts_say(cluster, "in-ledger", "dev from namespace label on ledger")
    assert again["status"]["risk"]["decision"] == first["status"]["risk"]["decision"]
    assert condition(again, "Approved")["status"] != "True"  # type: ignore[index]


def test_a_relabel_while_the_operator_is_away_is_seen_at_start(cluster: Cluster) -> None:
    namespace(cluster, "search", "staging")
    assert cluster.create(payment_restart("in-search", "search")).status_code == 201
    with cluster.operator():
        first = answered(cluster, "in-search")
    relabel(cluster, "search", "production")
    with cluster.operator():
        again = facts_say(cluster, "in-search", "production from namespace label on search")
    assert again["status"]["risk"]["score"] >= first["status"]["risk"]["score"]
    assert again["status"]["context"]["environment"] == "production"


def test_the_periodic_list_of_namespaces_catches_what_the_watch_missed(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The API server returns with other contents (a restore: resourceVersions continue above
    # the old ones), so the watch resumes and never hears that namespace preview, labelled
    # dev, is gone. The periodic list drops it: preview is then unknown, i.e. production.
    monkeypatch.setenv("PRECEDENT_RESYNC_SECONDS", "1")
    namespace(cluster, "preview", "dev")
    restarted: SandboxThread | None = None
    try:
        # kopf retries the writes the restart cut off (its backoffs add up to about 90 s)
        # before it stops: more time to stop than the usual minute.
        with cluster.operator(stop_timeout=180):
            assert cluster.create(payment_restart("before", "preview")).status_code == 201
            assert "dev from" in answered(cluster, "before")["status"]["context"]["facts"]
            old_rv = int(cluster.sandbox.call(lambda: cluster.sandbox.store.rv))
            port = cluster.sandbox.port
            cluster.sandbox.stop()
            restarted = SandboxThread(REPO / "crds", port=port).start()
            restarted.call(setattr, restarted.store, "rv", old_rv + 10_000)
            with httpx.Client(base_url=restarted.url, timeout=30) as client:
                body = payment_restart("after", "preview")
                response = client.post(
                    "/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests",
                    json=body,
                )
                assert response.status_code == 201, response.text

                def settled() -> dict[str, Any] | None:
                    path = "/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests"
                    obj = client.get(f"{path}/after").json()
                    facts = ((obj.get("status") or {}).get("context") or {}).get("facts")
                    return obj if facts == "production from default environment" else None

                # A write the restart cut off may hold the operator in kopf's backoff (up to
                # about 90 s, above) before it answers the new request.
                after = dict(eventually(settled, timeout=150))
    finally:
        if restarted is not None:
            restarted.stop()
    assert after["status"]["context"]["environment"] == "production"


class HeldCatalog:
    """A Context API on loopback that holds one request, once armed, until released, then
    answers 503 (the in-process catalog then answers): an assessment kept in flight."""

    def __init__(self) -> None:
        self.armed = threading.Event()
        self.holding = threading.Event()
        self.release = threading.Event()
        held = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                if held.armed.is_set() and not held.holding.is_set():
                    held.holding.set()
                    held.release.wait(timeout=120)
                body = b'{"detail": "unavailable"}'
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HeldCatalog:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_relabel_while_a_request_is_being_answered_is_not_lost(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The request reads its namespace's facts (dev), then waits for the playbook catalog;
    # meanwhile the namespace becomes production. The handler that answers again the
    # requests of a relabelled namespace passes this one by (it has no answer yet), so the
    # answer, when it comes, must be made in the facts that hold then.
    namespace(cluster, "checkout", "dev")
    with HeldCatalog() as catalog:
        monkeypatch.setenv("PRECEDENT_CATALOG", catalog.url)
        monkeypatch.setenv("PRECEDENT_CATALOG_RETRIES", "0")
        monkeypatch.setenv("PRECEDENT_CATALOG_TIMEOUT_SECONDS", "60")
        monkeypatch.setenv("PRECEDENT_SELECTION_DEADLINE_SECONDS", "60")
        with cluster.operator():
            assert cluster.create(payment_restart("control", "checkout")).status_code == 201
            assert "dev from" in answered(cluster, "control")["status"]["context"]["facts"]
            catalog.armed.set()
            assert cluster.create(payment_restart("in-flight", "checkout")).status_code == 201
            assert catalog.holding.wait(timeout=60), "the request never asked the catalog"
            relabel(cluster, "checkout", "production")
            # The relabel was handled: the request answered before it is answered again.
            facts_say(cluster, "control", "production from namespace label on checkout")
            catalog.release.set()
            late = facts_say(cluster, "in-flight", "production from namespace label on checkout")
    assert late["status"]["context"]["environment"] == "production"
    assert late["status"]["risk"]["decision"] != "Approved"
