"""Regressions for decisions a requester could forge: the operator re-assesses them."""

from __future__ import annotations

import pytest

from tests.integration.conftest import Cluster, eventually, is_true

pytestmark = pytest.mark.integration


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
    assert answer["status"]["risk"]["score"] == 100
    assert answer["status"]["mark"].startswith("hmac-sha256:")
