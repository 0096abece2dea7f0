"""Typos reach the people who wrote them: the operator puts an unknown action or a misspelt
label key in the status (``warnings`` and the ``InputWarnings`` condition) and posts a Warning
Event with the suggestion; a request without one gets neither."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import eventually
from tests.integration.conftest import Cluster, condition

pytestmark = pytest.mark.integration


def _request(name: str, action: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "action": action,
            "target": {"kind": "Deployment", "name": "checkout"},
            "description": "restart checkout after a memory leak",
            "labels": labels,
        },
    }


def test_typos_are_a_condition_a_status_field_and_events(cluster: Cluster) -> None:
    typo = _request("typo", "restart_servcie", {"enviroment": "staging", "team": "payments"})
    clean = _request("clean", "restart_service", {"environment": "production"})
    for body in (typo, clean):
        assert cluster.create(body).status_code == 201
    with cluster.operator():
        answered = cluster.wait_ready("typo")
        plain = cluster.wait_ready("clean")

        def warnings_posted() -> dict[str, Any] | None:
            # kopf posts Events in the background: wait until both have landed.
            got = {e["reason"]: e for e in cluster.events_for("typo") if e["type"] == "Warning"}
            return got if {"UnknownAction", "UnknownLabelKey"} <= got.keys() else None

        reasons = dict(eventually(warnings_posted, timeout=30))

    warnings = answered["status"]["warnings"]
    assert [w["reason"] for w in warnings] == ["UnknownAction", "UnknownLabelKey"]
    assert "did you mean restart_service?" in warnings[0]["message"]
    assert "did you mean environment?" in warnings[1]["message"]
    flagged = condition(answered, "InputWarnings")
    assert flagged is not None
    assert flagged["status"] == "True"
    assert flagged["reason"] == "UnknownAction"
    assert "enviroment" in flagged["message"]
    assert "did you mean restart_service?" in reasons["UnknownAction"]["message"]
    assert "did you mean environment?" in reasons["UnknownLabelKey"]["message"]
    # The unknown action is ADMIN, and the answer says so where people look.
    assert answered["status"]["policy"]["accessLevel"] == "ADMIN"

    assert "warnings" not in plain["status"] or plain["status"]["warnings"] == []
    assert condition(plain, "InputWarnings") is None
