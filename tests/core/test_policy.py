"""Policy: access levels and the decision table (seed 003, DESIGN's decision table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedent.adapters.action_registry import load_action_registry
from precedent.core.policy import PolicyEngine
from precedent.errors import InputError
from precedent.models import ApprovalState, Band, Decision, PolicyApproval

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
    pending = PolicyApproval(state=ApprovalState.PENDING)
    assert outcome.policy.approval == (pending if approval_required else None)


@pytest.mark.parametrize(
    ("action", "band", "would_be"),
    [
        ("restart_service", Band.MEDIUM, Decision.ESCALATED),
        ("restart_service", Band.HIGH, Decision.DENIED),
        ("delete_resource", Band.LOW, Decision.ESCALATED),
    ],
)
def test_audit_mode_records_but_nothing_waits(action: str, band: Band, would_be: Decision) -> None:
    outcome = PolicyEngine(enforce=False).decide(action, band)
    assert outcome.decision is Decision.APPROVED
    assert outcome.policy.approval_required is False
    assert outcome.policy.would_be is would_be
    assert outcome.policy.approval == PolicyApproval(state=ApprovalState.AUDIT_ONLY)
    assert f"would decide {would_be}" in (outcome.policy.reason or "")


def test_audit_mode_leaves_approved_requests_alone() -> None:
    outcome = PolicyEngine(enforce=False).decide("restart_service", Band.LOW)
    assert outcome.decision is Decision.APPROVED
    assert outcome.policy.approval is None
    assert outcome.policy.would_be is None


@pytest.mark.parametrize(
    "action", ["check_then_restart_service", "get_rid_of_database", "check_then_modify_nsg"]
)
def test_no_name_heuristics_unknown_actions_are_admin(action: str) -> None:
    # Regression: a read-only-looking prefix once made these READ_ONLY, and approved them at 100.
    assert ENGINE.access_level(action) == "ADMIN"
    assert ENGINE.decide(action, Band.HIGH).decision is Decision.DENIED
    assert ENGINE.decide(action, Band.LOW).decision is Decision.ESCALATED


def test_registry_file_replaces_the_bundled_one(tmp_path: Path) -> None:
    path = tmp_path / "actions.yaml"
    path.write_text("READ_ONLY: [check_then_restart_service]\nWRITE: [Restart-Service]\n")
    engine = PolicyEngine(registry=load_action_registry(path))
    assert engine.access_level("check_then_restart_service") == "READ_ONLY"
    assert engine.access_level("restart_service") == "WRITE"
    assert engine.access_level("scale_down") == "ADMIN"  # not listed in this file


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("WRITE: [a]\nADMIN: [a]\n", "actions.yaml: action 'a' is listed as WRITE and ADMIN"),
        ("SUPERUSER: [a]\n", "actions.yaml: SUPERUSER: unknown access level"),
        ("WRITE: a\n", "actions.yaml: WRITE: expected a list of action names"),
        ("- a\n", "actions.yaml: expected a mapping"),
        ("WRITE: [a\n", "actions.yaml: line 2, column 1: not valid YAML"),
    ],
)
def test_bad_registry_files_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "actions.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_action_registry(path)
    assert message in str(caught.value)
