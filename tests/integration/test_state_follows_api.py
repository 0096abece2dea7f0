"""The operator's history and catalog follow what the API server holds, deletions included.

The API server is stopped and started again on the same port with other contents: some
Incidents and Playbooks gone, one Incident changed. Its resourceVersions continue above the
old ones, as after an etcd restore with ``--bump-revision``, so kopf's watches resume and
replay the new server's objects — and never hear of the ones that are gone. The operator's
periodic list (``PRECEDENT_RESYNC_SECONDS``) drops those; the kopf re-list alone does not.
"""

from __future__ import annotations

import copy
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from kopf.testing import KopfRunner

from precedent.adapters.loader import iter_documents
from precedent.demo import object_path
from precedent_sandbox import SandboxThread
from tests.helpers import eventually
from tests.integration.conftest import DATA, REPO, Cluster, condition, is_true

# Also in the fault suite (`-m faults`); runs alone as any test does.
pytestmark = [pytest.mark.faults, pytest.mark.integration]

# The seed request "restart payment-api" (seed-000.yaml): its answer names incidents and a
# playbook, which the new contents leave out.
REQUEST_SPEC = next(
    d.body["spec"]
    for d in iter_documents([DATA / "requests" / "seed-000.yaml"])
    if d.name == "restart-payment-api"
)
# An incident of the old contents the new ones change into a near twin of the request.
CHANGED = "inc-2024-0312"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def request(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": copy.deepcopy(REQUEST_SPEC),
    }


@contextmanager
def operator(liveness: int) -> Iterator[KopfRunner]:
    args = ["run", "-m", "precedent.handlers", "--all-namespaces", "--standalone"]
    args.append(f"--liveness=http://127.0.0.1:{liveness}/healthz")
    with KopfRunner(args, timeout=90) as runner:
        yield runner
    assert runner.exception is None or isinstance(runner.exception, SystemExit), runner.output


def health(port: int) -> dict[str, Any]:
    try:
        response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    except httpx.HTTPError:
        return {}
    return dict(response.json()) if response.status_code == 200 else {}


def documents(kind: str) -> list[dict[str, Any]]:
    folder = DATA / ("incidents" if kind == "Incident" else "playbooks")
    return [copy.deepcopy(d.body) for d in iter_documents([folder]) if d.kind == kind]


def post_all(client: httpx.Client, bodies: list[dict[str, Any]]) -> None:
    for body in bodies:
        response = client.post(object_path(body["kind"], None), json=body)
        assert response.status_code == 201, response.text


def test_after_the_api_server_returns_with_other_contents_answers_use_only_those(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECEDENT_RESYNC_SECONDS", "1")
    liveness = free_port()
    incidents, playbooks = documents("Incident"), documents("Playbook")
    restarted: SandboxThread | None = None
    try:
        with operator(liveness):
            # Incidents and Playbooks are listed by two watches: wait for both counts.
            full = {"history": len(incidents), "playbooks": len(playbooks)}
            eventually(lambda: {k: health(liveness).get(k) for k in full} == full, timeout=60)
            assert cluster.create(request("before")).status_code == 201
            before = cluster.wait_ready("before")["status"]
            old_ids = {i["id"] for i in before["similarIncidents"]}
            old_playbook = before["playbook"]["id"]
            assert old_ids
            assert CHANGED not in {i.lower() for i in old_ids}

            # New contents: the incidents and the playbook that answered are gone; one
            # incident is now a twin of the request under a new id.
            kept = [i for i in incidents if i["spec"]["id"] not in old_ids]
            for body in kept:
                if body["metadata"]["name"] == CHANGED:
                    body["spec"] = {
                        "id": "INC-2099-0001",
                        "title": "payment-api restart exhausted the connection pool again",
                        "action": "restart_service",
                        "resource": {"type": "managedClusters", "name": "payment-api"},
                        "severity": "critical",
                        "outcome": "unresolved",
                    }
            kept_playbooks = [p for p in playbooks if p["metadata"]["name"] != old_playbook]
            old_rv = int(cluster.sandbox.call(lambda: cluster.sandbox.store.rv))
            port = cluster.sandbox.port
            cluster.sandbox.stop()

            restarted = SandboxThread(REPO / "crds", port=port).start()
            store = restarted.store
            restarted.call(setattr, store, "rv", old_rv + 10_000)  # a restore's bumped revision
            with httpx.Client(base_url=restarted.url, timeout=30) as client:
                post_all(client, [*kept, *kept_playbooks])

            # The health probe counts what the API holds, not what the old server held.
            eventually(
                lambda: (
                    health(liveness).get("history") == len(kept)
                    and health(liveness).get("playbooks") == len(kept_playbooks)
                ),
                timeout=60,
            )
            assert cluster.create(request("after")).status_code == 201
            after = cluster.wait_ready("after", timeout=90)["status"]
    finally:
        if restarted is not None:
            restarted.stop()

    print(
        f"\nAPI server restart: {len(incidents)} -> {len(kept)} incidents, "
        f"{len(playbooks)} -> {len(kept_playbooks)} playbooks"
    )
    new_ids = {i["id"] for i in after["similarIncidents"]}
    assert new_ids, after
    assert not new_ids & old_ids, new_ids & old_ids  # nothing from the old contents
    assert new_ids <= {i["spec"]["id"] for i in kept}
    assert after["risk"]["mostRelevantIncident"] == "INC-2099-0001"  # the change took effect
    chosen = (after.get("playbook") or {}).get("id")
    assert chosen != old_playbook
    assert chosen is None or chosen in {p["metadata"]["name"] for p in kept_playbooks}


def test_an_incident_updated_to_an_invalid_spec_leaves_the_history_and_says_why(
    cluster: Cluster,
) -> None:
    name = "inc-2026-9002"
    incident = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "Incident",
        "metadata": {"name": name},
        "spec": {
            "id": "INC-2026-9002",
            "title": "Defragmenting volume vol-9 corrupted the filesystem",
            "action": "defrag_volume",
            "resource": {"type": "VolumeAttachment", "name": "vol-9"},
            "severity": "critical",
        },
    }
    spec = {"action": "defrag_volume", "target": {"kind": "VolumeAttachment", "name": "vol-9"}}
    path = object_path("Incident", None, name)
    counter = iter(range(1000))

    def top_of_a_new_request() -> str | None:
        body = request(f"probe-{next(counter)}")
        body["spec"] = dict(spec)
        assert cluster.create(body).status_code == 201
        status = cluster.wait_ready(body["metadata"]["name"])["status"]
        return str(status["risk"].get("mostRelevantIncident"))

    with cluster.operator():
        assert cluster.create(incident).status_code == 201
        eventually(lambda: top_of_a_new_request() == "INC-2026-9002", timeout=30)
        # Whitespace passes the CRD's minLength but is no title: the model refuses it.
        patch = {"spec": {"title": "   "}}
        response = cluster.client.patch(
            path, json=patch, headers={"Content-Type": "application/merge-patch+json"}
        )
        assert response.status_code == 200, response.text

        def reported() -> dict[str, Any] | None:
            obj = dict(cluster.client.get(path).json())
            found = condition(obj, "Ready")
            return found if found and found.get("reason") == "InvalidSpec" else None

        ready = eventually(reported, timeout=30)
        assert "spec.title" in ready["message"]
        # Dropped from scoring, not kept in its last valid form.
        eventually(lambda: top_of_a_new_request() != "INC-2026-9002", timeout=30)
        obj = dict(cluster.client.get(path).json())
        assert not is_true(obj, "Ready")
