"""Reported outcomes as pure values: playbook counts, base-rate evidence, the Incident a
failure becomes, its deterministic name and its severity."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from precedent.core.normalize import normalize_request
from precedent.core.outcomes import (
    OutcomeRecord,
    PlaybookCounts,
    count_playbooks,
    incident_from_outcome,
    incident_name,
    outcome_evidence,
    outcome_record,
    severity_of_request,
)
from precedent.models import (
    IncidentOutcome,
    PlaybookHistory,
    RemediationRequestSpec,
    RequestOutcomeResult,
    Severity,
)

UID = "7f3c9a21-5b4e-4d2a-9c1b-0e8f6a2d4c11"
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
T1 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
T2 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def spec(**fields: Any) -> RemediationRequestSpec:
    body: dict[str, Any] = {
        "action": "restart_service",
        "target": {"kind": "Deployments", "name": "payment-api"},
        "description": "Restart payment-api to clear stuck workers",
        "labels": {"environment": "production"},
    }
    body.update(fields)
    return RemediationRequestSpec.model_validate(body)


def record(
    uid: str, result: str, playbook: str | None = "pb", at: datetime | None = None
) -> OutcomeRecord:
    return OutcomeRecord(
        uid=uid,
        action="restart_service",
        resource_kind="deployment",
        result=RequestOutcomeResult(result),
        playbook=playbook,
        finished_at=at,
        target="payment-api",
    )


def test_playbook_counts_only_succeeded_is_a_success_and_unnamed_outcomes_are_not_counted() -> None:
    counts = count_playbooks(
        [
            record("a", "succeeded"),
            record("b", "failed"),
            record("c", "partial"),
            record("d", "succeeded", playbook="other"),
            record("e", "succeeded", playbook=None),
        ]
    )
    assert counts == {"pb": PlaybookCounts(3, 1), "other": PlaybookCounts(1, 1)}
    prior = PlaybookHistory(executions=40, successes=38)
    assert counts["pb"].plus(prior) == PlaybookCounts(43, 39)
    assert counts["pb"].plus(prior).as_history() == PlaybookHistory(executions=43, successes=39)


def test_evidence_counts_partial_as_failure_per_kind_and_per_target() -> None:
    evidence = outcome_evidence(
        [
            record("a", "succeeded"),
            record("b", "failed", at=T2),
            record("c", "partial", at=T1),
            record("d", "failed"),  # no finishedAt: counted, no time
        ]
    )
    action = normalize_request(spec())
    [own] = evidence.lookup(action)  # the target's own record wins over its kind's
    assert own.target == action.resource_name
    assert (own.successes, own.failures) == (1, 3)
    assert sorted(t for t in own.failure_times if t) == [T1, T2]
    other = normalize_request(spec(target={"kind": "deploy", "name": "elsewhere"}))
    [kind] = evidence.lookup(other)  # another Deployment: the kind's record, aliases folded
    assert kind.target is None
    assert (kind.successes, kind.failures) == (1, 3)


def test_outcome_record_uses_the_normalised_action_and_kind() -> None:
    assert outcome_record(UID, spec()) is None
    made = outcome_record(
        UID,
        spec(
            target={
                "kind": "Deployment",
                "name": "cart",
                "resourceId": "/apis/apps/v1/namespaces/shop/deployments/cart",
            },
            outcome={"result": "partial", "playbook": {"id": "pb-1", "version": "v2"}},
        ),
    )
    assert made is not None
    assert (made.uid, made.action, made.resource_kind) == (UID, "restart_service", "deployment")
    assert (made.result, made.playbook, made.succeeded) == (
        RequestOutcomeResult.PARTIAL,
        "pb-1",
        False,
    )


@pytest.mark.parametrize(
    ("signal", "priority", "expected"),
    [
        ("critical", "P4", Severity.CRITICAL),  # the signal wins
        ("warning", None, Severity.MEDIUM),
        ("Error", None, Severity.HIGH),
        (None, "P1", Severity.CRITICAL),
        (None, "p2", Severity.HIGH),
        (None, "SEV-3", Severity.MEDIUM),
        (None, "info", Severity.LOW),
        ("page-me", "whenever", Severity.MEDIUM),  # unknown words: medium
        (None, None, Severity.MEDIUM),
    ],
)
def test_severity_from_the_signal_then_the_priority_label(
    signal: str | None, priority: str | None, expected: Severity
) -> None:
    fields: dict[str, Any] = {"labels": {"priority": priority} if priority else {}}
    if signal:
        fields["signal"] = {"name": "Alert", "severity": signal}
    assert severity_of_request(spec(**fields)) is expected


def test_incident_name_is_deterministic_short_and_keeps_the_uid_part() -> None:
    assert incident_name("default", "restart-payment-api", UID) == (
        "rr-default-restart-payment-api-7f3c9a21"
    )
    long = incident_name("team-" + "n" * 60, "request." + "x" * 200, UID)
    assert len(long) <= 63
    assert long.endswith("-7f3c9a21")
    assert long == incident_name("team-" + "n" * 60, "request." + "x" * 200, UID)
    assert "." not in incident_name("default", "a.b", UID)


def test_a_failed_outcome_becomes_an_unresolved_incident_with_the_request_context() -> None:
    failed = spec(
        signal={"name": "HighErrorRate", "severity": "critical"},
        outcome={
            "result": "failed",
            "playbook": {"id": "rolling-restart", "version": "v2.1"},
            "finishedAt": "2026-03-02T10:15:00Z",
            "message": "Pods restarted but the consumer deadlocked again\nsecond line",
        },
    )
    made = incident_from_outcome(failed, namespace="shop", name="restart-1", uid=UID, now=NOW)
    assert made is not None
    name, incident = made
    assert name == incident.id == "rr-shop-restart-1-7f3c9a21"
    assert incident.title == (
        "restart_service on Deployments/payment-api failed: "
        "Pods restarted but the consumer deadlocked again"
    )
    assert incident.outcome is IncidentOutcome.UNRESOLVED
    assert incident.severity is Severity.CRITICAL
    assert incident.occurred_at == datetime(2026, 3, 2, 10, 15, tzinfo=UTC)
    assert incident.resource is not None
    assert (incident.resource.type, incident.resource.name) == ("deployment", "payment-api")
    assert {"restart_service", "restart", "environment-production"} <= set(incident.tags)
    assert "rolling-restart v2.1" in incident.description
    assert "Namespace shop, environment production" in incident.description


def test_a_partial_outcome_is_a_partial_incident_at_now_and_success_makes_none() -> None:
    partial = spec(outcome={"result": "partial"})
    made = incident_from_outcome(partial, namespace="ns", name="r", uid=UID, now=NOW)
    assert made is not None
    assert made[1].outcome is IncidentOutcome.PARTIAL
    assert made[1].occurred_at == NOW
    assert made[1].severity is Severity.MEDIUM
    succeeded = spec(outcome={"result": "succeeded"})
    assert incident_from_outcome(succeeded, namespace="ns", name="r", uid=UID, now=NOW) is None
