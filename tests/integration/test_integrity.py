"""Regressions for decisions a requester could forge: the operator re-assesses them."""

from __future__ import annotations

import time

import pytest

from tests.integration.conftest import Cluster, condition, eventually, is_true

pytestmark = pytest.mark.integration
# The sandbox and a real kube-apiserver (the trust suites run on both).
BACKENDS = ("sandbox", "real")


def test_a_status_written_before_the_operator_is_not_trusted(cluster: Cluster) -> None:
    body = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": "forged", "namespace": "default"},
        "spec": {
            "action": "modify_nsg",
            "target": {"kind": "networkSecurityGroups", "name": "nsg-east"},
        },
    }
    assert cluster.create(body).status_code == 201
    created = cluster.get_request("forged")
    forged = {
        "observedGeneration": created["metadata"]["generation"],
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Assessed",
                "message": "risk low (0), Approved",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "risk": {"score": 0, "band": "low", "decision": "Approved", "reasoning": "trust me"},
    }
    response = cluster.client.patch(
        "/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests/forged/status",
        json={"status": forged},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    with cluster.operator():
        answer = eventually(
            lambda: (o := cluster.get_request("forged"))["status"].get("mark") and o
        )
    assert is_true(answer, "Ready")
    assert answer["status"]["risk"]["decision"] == "Denied"
    assert answer["status"]["risk"]["score"] > 60  # high: the forged "0" is gone
    assert answer["status"]["mark"].startswith("hmac-sha256:")


def incident(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "Incident",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_a_duplicate_incident_id_does_not_shadow_the_original(cluster: Cluster) -> None:
    # Regression: a second object reusing INC-2025-0634's id once dropped the sql-prod request
    # from 40 Escalated to 0 Approved, depending on arrival order.
    impostor = incident(
        "impostor",
        id="INC-2025-0634",
        title="Unrelated low-severity note",
        action="collect_diagnostics",
        severity="low",
    )
    time.sleep(1.1)  # creation times have whole seconds: make the impostor the later one
    assert cluster.create(impostor).status_code == 201
    body = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": "sql", "namespace": "default"},
        "spec": {
            "action": "update_config",
            "target": {
                "kind": "servers",
                "name": "sql-prod",
                "resourceId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Sql/"
                "servers/sql-prod",
            },
        },
    }
    assert cluster.create(body).status_code == 201
    with cluster.operator():
        answer = cluster.wait_ready("sql")
        flagged = eventually(
            lambda: (
                (o := cluster.client.get("/apis/precedent.dev/v1alpha1/incidents/impostor").json())
                and condition(o, "Ready")
                and condition(o, "Ready")["reason"] == "DuplicateId"  # type: ignore[index]
                and o
            )
        )
    assert answer["status"]["risk"]["mostRelevantIncident"] == "INC-2025-0634"
    assert answer["status"]["risk"]["band"] == "medium"
    ready = condition(flagged, "Ready")
    assert ready is not None
    assert "already used by Incident inc-2025-0634" in ready["message"]
    warnings = [
        e
        for e in cluster.client.get("/api/v1/events").json()["items"]
        if e.get("involvedObject", {}).get("name") == "impostor"
    ]
    assert any(e["reason"] == "DuplicateId" for e in warnings)
