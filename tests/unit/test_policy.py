"""Policy: access levels and the decision table (seed 003, DESIGN's decision table)."""

from __future__ import annotations

import pytest

from precedent.core.policy import PolicyEngine
from precedent.models import Band, Decision

ENGINE = PolicyEngine()


@pytest.mark.parametrize(
    ("action", "level"),
    [
        ("collect_diagnostics", "READ_ONLY"),
        ("get_logs", "READ_ONLY"),
        ("restart_service", "WRITE"),
        ("scale_down", "WRITE"),
        ("delete_resource", "ADMIN"),
        ("modify_iam", "ADMIN"),
        ("frobnicate", "ADMIN"),  # unknown actions get the most restrictive level
    ],
)
def test_access_levels(action: str, level: str) -> None:
    assert ENGINE.access_level(action) == level


@pytest.mark.parametrize(
    ("action", "band", "decision", "approval_required"),
    [
        ("restart_service", Band.LOW, Decision.APPROVED, False),
        ("restart_service", Band.MEDIUM, Decision.ESCALATED, True),
        ("restart_service", Band.HIGH, Decision.DENIED, False),
        ("delete_resource", Band.LOW, Decision.ESCALATED, True),
        ("delete_resource", Band.HIGH, Decision.DENIED, False),
        ("collect_diagnostics", Band.HIGH, Decision.APPROVED, False),
    ],
)
def test_decision_table(
    action: str, band: Band, decision: Decision, approval_required: bool
) -> None:
    outcome = ENGINE.decide(action, band)
    assert outcome.decision is decision
    assert outcome.policy.approval_required is approval_required
    assert outcome.policy.approval == ("Pending" if approval_required else None)


def test_audit_mode_records_but_nothing_waits() -> None:
    outcome = PolicyEngine(enforce=False).decide("restart_service", Band.MEDIUM)
    assert outcome.decision is Decision.ESCALATED
    assert outcome.policy.approval_required is False
    assert outcome.policy.approval == "audit-only"
