"""No single object stops the operator: one with an out-of-range date that admission did not
stop (a cluster where CEL rules do not run and date formats are not checked: the CRDs are
installed without them) cannot fail a
start-up activity or /healthz, and the other requests are answered.

The row this guards: ``finishedAt: "0001-01-01T00:00:00+01:00"`` in an outcome overflowed
outside validation, the ``outcomes`` start-up activity failed after a restart, /healthz never
answered and no request was answered until an admin deleted the object.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from precedent.demo import object_path
from precedent_sandbox import SandboxThread
from tests.helpers import eventually
from tests.integration.conftest import DATA, REPO, apply, condition, is_true
from tests.integration.test_approvals import approval
from tests.integration.test_state_follows_api import free_port, health, operator

pytestmark = pytest.mark.integration

EDGE = "0001-01-01T00:00:00+01:00"
LATE = "9999-12-31T23:59:59-01:00"


def _without_cel(value: Any) -> Any:
    # No CEL rules and no date-time format check: what an older or a lax API server lets in.
    if isinstance(value, dict):
        return {
            k: _without_cel(v)
            for k, v in value.items()
            if k != "x-kubernetes-validations" and not (k == "format" and v == "date-time")
        }
    if isinstance(value, list):
        return [_without_cel(v) for v in value]
    return value


@pytest.fixture
def lax(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    """The sandbox with the CRDs minus CEL rules and date formats, the bundled data."""
    crds = tmp_path / "crds"
    crds.mkdir()
    for path in (REPO / "crds").glob("*.yaml"):
        docs = [_without_cel(d) for d in yaml.safe_load_all(path.read_text()) if d]
        (crds / path.name).write_text(yaml.safe_dump_all(docs))
    assert "x-kubernetes-validations" not in "".join(p.read_text() for p in crds.glob("*"))
    with SandboxThread(crds) as sandbox:
        monkeypatch.setenv("KUBECONFIG", str(sandbox.write_kubeconfig(tmp_path / "kubeconfig")))
        monkeypatch.setenv("PRECEDENT_HISTORY_PATH", "")
        monkeypatch.setenv("PRECEDENT_CATALOG", "")
        monkeypatch.setenv("PRECEDENT_STATUS_KEY", "bad-object-test-key")
        monkeypatch.setenv("PRECEDENT_METRICS_PORT", "0")
        with httpx.Client(base_url=sandbox.url, timeout=30) as client:
            apply(client, [DATA / "incidents", DATA / "playbooks"])
            yield client
    shutil.rmtree(crds)


def request(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "action": "update_config",
            "target": {"kind": "servers", "name": "sql-prod"},
            "description": "Raise the minimum TLS version of sql-prod to 1.2.",
            "requester": "rita",
            **spec,
        },
    }


def get(client: httpx.Client, name: str) -> dict[str, Any]:
    response = client.get(object_path("RemediationRequest", "default", name))
    response.raise_for_status()
    return dict(response.json())


def test_one_bad_date_stops_neither_start_up_nor_health_nor_other_requests(
    lax: httpx.Client,
) -> None:
    bad = [
        request("ancient-outcome", outcome={"result": "succeeded", "finishedAt": EDGE}),
        request("late-outcome", outcome={"result": "failed", "finishedAt": LATE}),
        request("garbled-outcome", outcome={"result": "failed", "finishedAt": "yesterday"}),
    ]
    incident = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "Incident",
        "metadata": {"name": "ancient-incident"},
        "spec": {
            "id": "INC-0001-0001",
            "title": "sql-prod config change broke logins",
            "action": "update_config",
            "resource": {"type": "servers", "name": "sql-prod"},
            "severity": "critical",
            "outcome": "resolved",
            "occurredAt": EDGE,
        },
    }
    ancient_ok = approval("ancient-ok", "fine-before", expiresAt=EDGE)
    approvals = "/apis/precedent.dev/v1alpha1/namespaces/default/remediationapprovals"
    for body in [*bad, incident, request("fine-before"), ancient_ok]:
        namespace = "default" if body["kind"] != "Incident" else None
        path = approvals if body is ancient_ok else object_path(body["kind"], namespace)
        response = lax.post(path, json=body)
        # Admission did not stop them: the CEL rules are not there.
        assert response.status_code == 201, response.text

    liveness = free_port()
    with operator(liveness) as runner:
        # Every start-up activity finished: /healthz answers with the history loaded.
        eventually(lambda: health(liveness).get("history"), timeout=90)
        before = eventually(lambda: (o := get(lax, "fine-before")) and is_true(o, "Ready") and o)
        assert (
            lax.post(
                object_path("RemediationRequest", "default"), json=request("fine-after")
            ).status_code
            == 201
        )
        after = eventually(lambda: (o := get(lax, "fine-after")) and is_true(o, "Ready") and o)
        assert health(liveness).get("history")
    assert before["status"]["risk"]["decision"]
    assert after["status"]["risk"]["decision"]
    assert "OverflowError" not in runner.output
    # The bad requests say what is wrong with them, naming the field, and nothing loops.
    for body in bad:
        name = body["metadata"]["name"]
        obj = eventually(lambda n=name: (o := get(lax, n)).get("status") and o)  # type: ignore[misc]
        text = yaml.safe_dump(obj["status"])
        assert "finishedAt" in text, (name, text)
        ready = condition(obj, "Ready")
        assert ready is None or ready["status"] != "True" or "outcome" in obj["status"]
