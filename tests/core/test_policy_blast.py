"""Policy: a target's blast radius escalates a request the decision table would approve."""

from __future__ import annotations

import pytest

from precedent.core.policy import BlastImpact, BlastLimits, PolicyEngine
from precedent.models import ApprovalState, Band, Decision

ENGINE = PolicyEngine()

LEAF = BlastImpact("deploy/email-worker", upstream_count=0)
WIDE = BlastImpact("deploy/payment-api", upstream_count=6)
CRITICAL = BlastImpact(
    "deploy/fraud-check", upstream_count=2, critical_upstream=("shop/deploy/payment-api",)
)
TWO_CRITICAL = BlastImpact(
    "deploy/redis", upstream_count=3, critical_upstream=("deploy/payment-api", "sts/ledger")
)


def test_within_the_limits_the_band_decides() -> None:
    verdict = ENGINE.decide("restart_service", Band.LOW, LEAF)
    assert verdict.decision is Decision.APPROVED
    assert verdict.policy.reason is None


def test_no_impact_is_not_weighed() -> None:
    assert ENGINE.decide("restart_service", Band.LOW, None).decision is Decision.APPROVED


def test_a_critical_service_upstream_escalates_with_its_name() -> None:
    verdict = ENGINE.decide("restart_service", Band.LOW, CRITICAL)
    assert verdict.decision is Decision.ESCALATED
    assert verdict.policy.approval_required
    assert verdict.policy.approval is not None
    assert verdict.policy.approval.state is ApprovalState.PENDING
    assert verdict.policy.reason == (
        "blast radius: 1 critical service upstream: shop/deploy/payment-api"
    )


def test_critical_services_are_counted_and_listed() -> None:
    verdict = ENGINE.decide("restart_pod", Band.LOW, TWO_CRITICAL)
    assert verdict.policy.reason == (
        "blast radius: 2 critical services upstream: deploy/payment-api, sts/ledger"
    )


@pytest.mark.parametrize(("limit", "decision"), [(5, "Escalated"), (6, "Approved")])
def test_more_dependents_than_the_limit_escalate(limit: int, decision: str) -> None:
    engine = PolicyEngine(blast=BlastLimits(max_upstream=limit))
    verdict = engine.decide("restart_service", Band.LOW, WIDE)
    assert verdict.decision == decision
    if decision == "Escalated":
        assert verdict.policy.reason == (
            f"blast radius: 6 nodes depend on deploy/payment-api (limit {limit})"
        )


def test_both_reasons_are_given() -> None:
    impact = BlastImpact("svc/ledger", upstream_count=9, critical_upstream=("deploy/payment-api",))
    reason = ENGINE.decide("restart_service", Band.LOW, impact).policy.reason
    assert reason == (
        "blast radius: 1 critical service upstream: deploy/payment-api; "
        "9 nodes depend on svc/ledger (limit 5)"
    )


def test_the_critical_rule_can_be_turned_off() -> None:
    engine = PolicyEngine(blast=BlastLimits(escalate_critical=False))
    assert engine.decide("restart_service", Band.LOW, CRITICAL).decision is Decision.APPROVED


def test_no_count_limit() -> None:
    engine = PolicyEngine(blast=BlastLimits(max_upstream=None, escalate_critical=False))
    big = BlastImpact("svc/dns", upstream_count=10_000)
    assert engine.decide("restart_service", Band.LOW, big).decision is Decision.APPROVED


def test_read_only_actions_are_never_escalated_for_it() -> None:
    verdict = ENGINE.decide("collect_diagnostics", Band.LOW, CRITICAL)
    assert verdict.decision is Decision.APPROVED
    assert verdict.policy.reason is None


@pytest.mark.parametrize(("band", "decision"), [(Band.MEDIUM, "Escalated"), (Band.HIGH, "Denied")])
def test_it_never_softens_or_replaces_a_stricter_decision(band: Band, decision: str) -> None:
    verdict = ENGINE.decide("restart_service", band, CRITICAL)
    assert verdict.decision == decision
    assert verdict.policy.reason is None  # the band decided, not the blast radius


def test_admin_keeps_its_own_reason() -> None:
    verdict = ENGINE.decide("delete_resource", Band.LOW, CRITICAL)
    assert verdict.decision is Decision.ESCALATED
    assert verdict.policy.reason == "ADMIN action: always needs approval"


def test_audit_only_records_what_enforce_would_decide() -> None:
    engine = PolicyEngine(enforce=False)
    verdict = engine.decide("restart_service", Band.LOW, CRITICAL)
    assert verdict.decision is Decision.APPROVED
    assert verdict.policy.would_be is Decision.ESCALATED
    assert verdict.policy.reason is not None
    assert "1 critical service upstream: shop/deploy/payment-api" in verdict.policy.reason
