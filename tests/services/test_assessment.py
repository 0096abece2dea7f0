"""The assessor and the object mirror: history that follows objects, one decision path."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from precedent.core.snapshot import History
from precedent.errors import InputError
from precedent.models import Decision
from precedent.services import HistoryStore, StatusUpdate
from precedent.settings import Settings
from precedent.wiring import Engine, build_service

REQUEST = {"action": "drain_node", "target": {"kind": "Node", "name": "node-7"}}
INCIDENT = {
    "id": "INC-1",
    "title": "Draining node-7 evicted the only etcd member",
    "action": "drain_node",
    "resource": {"type": "Node", "name": "node-7"},
    "severity": "high",
    "tags": ["drain"],
}
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def service(**overrides: object) -> Engine:
    settings = Settings(history_path="", catalog="", **overrides)  # type: ignore[arg-type]
    return build_service(settings, mode="rules", follows_cluster=True)


def score(svc: Engine, spec: dict[str, object] = REQUEST) -> float:
    return asyncio.run(svc.assess(spec)).risk.score


def test_added_incident_changes_later_answers_and_removal_reverts() -> None:
    svc = service(risk_model="seed")
    assert score(svc) == 0
    svc.objects.upsert_incident("inc-1", INCIDENT)
    assert score(svc) == 75
    svc.objects.remove_incident("inc-1")
    assert score(svc) == 0


def test_snapshot_is_rebuilt_once_per_batch_of_changes() -> None:
    svc = service()
    for i in range(50):
        svc.objects.upsert_incident(f"inc-{i}", {**INCIDENT, "id": f"INC-{i}"})
    first = svc.objects.history.snapshot
    assert len(first) == 50
    assert svc.objects.history.snapshot is first  # no change, no rebuild
    svc.objects.upsert_incident("inc-0", {**INCIDENT, "id": "INC-0"})  # identical: still no rebuild
    assert svc.objects.history.snapshot is first
    svc.objects.upsert_incident("inc-0", {**INCIDENT, "id": "INC-0", "severity": "low"})
    assert svc.objects.history.snapshot is not first


def test_invalid_objects_and_specs_name_the_field() -> None:
    svc = service()
    with pytest.raises(InputError, match=r"Incident bad: spec.severity"):
        svc.objects.upsert_incident("bad", {**INCIDENT, "severity": "catastrophic"})
    with pytest.raises(InputError, match=r"spec.target.name: required field is missing"):
        asyncio.run(svc.assess({"action": "drain_node", "target": {"kind": "Node"}}))


def test_the_policy_alone_decides_and_says_why() -> None:
    # A low band for an ADMIN action: the band alone would approve; the policy escalates.
    svc = service()
    assessment = asyncio.run(svc.assess({**REQUEST, "action": "drain_node"}))
    assert assessment.risk.band.value == "low"
    assert assessment.risk.decision is Decision.ESCALATED
    assert assessment.policy is not None
    assert assessment.policy.access_level == "ADMIN"
    assert assessment.policy.reason == "ADMIN action: always needs approval"


def test_reconcile_builds_the_status_for_each_outcome() -> None:
    svc = service()
    ok = asyncio.run(
        svc.assessor.reconcile(REQUEST, uid="u1", generation=2, previous=None, now=NOW)
    )
    assert ok.outcome == "assessed"
    patch = ok.patch()
    assert patch["observedGeneration"] == 2
    assert {c["type"]: c["status"] for c in patch["conditions"]} == {
        "Ready": "True",
        "Reconciling": "False",
        "Stalled": "False",
        "Approved": "Unknown",  # Escalated in enforce mode: a human must decide
    }
    assert patch["risk"]["decision"] == "Escalated"
    assert patch["policy"]["approval"] == {"state": "Pending"}
    assert ok.event is not None
    assert ok.event.reason == "Escalated"

    bad = asyncio.run(
        svc.assessor.reconcile(
            {"action": "x", "target": {}}, uid="u1", generation=1, previous=None, now=NOW
        )
    )
    assert bad.outcome == "invalid"
    assert "spec.target.kind: required field is missing" in bad.message
    stalled = {c["type"]: c for c in bad.patch()["conditions"]}["Stalled"]
    assert stalled["status"] == "True"
    assert stalled["reason"] == "InvalidSpec"
    assert bad.event is not None
    assert bad.event.type == "Warning"


def test_waiting_keeps_the_answered_generation() -> None:
    update = StatusUpdate.waiting("catalog down", generation=3, previous=None, now=NOW)
    patch = update.patch()
    assert "observedGeneration" not in patch
    reconciling = {c["type"]: c for c in patch["conditions"]}["Reconciling"]
    assert reconciling["status"] == "True"
    assert update.event is None


def test_a_label_given_twice_is_a_bad_spec_naming_labels() -> None:
    svc = service()
    spec = {**REQUEST, "labels": {"Environment": "prod", "environment": "staging"}}
    with pytest.raises(InputError, match=r"spec.labels"):
        svc.assessor.normalise(spec)


def test_cli_and_operator_get_the_same_catalog_for_the_same_settings(tmp_path: Path) -> None:
    # One rule: unset → data/playbooks; "" → none; a path → that path; a URL → remote first.
    settings = Settings()
    assert settings.catalog.source().path == Path("data/playbooks")
    assert Settings(catalog="").catalog.source().path is None
    remote = Settings(catalog="http://catalog:8081", catalog_fallback="").catalog.source()
    assert remote.url == "http://catalog:8081"
    assert remote.path is None
    cli = build_service(settings, require_history=True)
    operator = build_service(settings, follows_cluster=True)
    assert len(cli.objects.catalog) == len(operator.objects.catalog) > 0


class BrokenHistory(HistoryStore):
    """A history whose snapshot fails as a corrupt record would: a fault injector."""

    @property
    def snapshot(self) -> History:
        raise TypeError("can't subtract offset-naive and offset-aware datetimes")


def test_an_unexpected_error_is_retried_a_bounded_number_of_times_then_stalled() -> None:
    svc = service(max_attempts=3)
    svc.assessor.scorer.history = BrokenHistory()
    updates = [
        asyncio.run(
            svc.assessor.reconcile(
                REQUEST, uid="u", generation=1, previous=None, now=NOW, attempt=n
            )
        )
        for n in (1, 2, 3)
    ]
    assert [u.outcome for u in updates] == ["retrying", "retrying", "failed"]
    assert "attempt 1 of 3" in updates[0].message
    assert updates[0].event is None  # no Warning per retry
    final = updates[-1]
    stalled = {c["type"]: c for c in final.patch()["conditions"]}["Stalled"]
    assert stalled["status"] == "True"
    assert stalled["reason"] == "AssessmentError"
    assert "TypeError: can't subtract offset-naive" in stalled["message"]
    assert final.event is not None
    assert final.event.type == "Warning"


def test_the_most_relevant_incident_is_always_listed() -> None:
    # Deleting a production postgres: the strongest precedent (by severity and context) ranked
    # below five others in people's order and was named by the reasoning but not listed.
    svc = build_service(Settings(catalog=""), require_history=True)
    spec = {
        "action": "delete_resource",
        "target": {"kind": "StatefulSet", "name": "postgres", "namespace": "payments"},
        "description": "Delete the postgres StatefulSet in production to recreate it with new "
        "storage.",
        "labels": {"environment": "production"},
    }
    assessment = asyncio.run(svc.assess(spec, now=NOW))
    top = assessment.risk.most_relevant_incident
    assert top is not None
    assert top in [s.id for s in assessment.similar_incidents]
