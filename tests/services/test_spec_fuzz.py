"""Fuzzing the specs through the service layer: any JSON value as a RemediationRequest,
Incident or Playbook spec gives an assessment (or a stored object) or an InputError naming
the field — nothing else, whatever the value."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.loader import load_incidents, load_playbooks
from precedent.core.historical import DefaultRiskModel
from precedent.core.policy import PolicyEngine
from precedent.errors import InputError
from precedent.models import Assessment
from precedent.services import (
    AssessmentSettings,
    Assessor,
    HistoryStore,
    IncidentScorer,
    PlaybookSelector,
)
from precedent.services.objects import ClusterObjects

DATA = Path(__file__).resolve().parents[1] / "data"
FUZZ = settings(max_examples=150, deadline=None)
NOW = datetime(2025, 6, 1, tzinfo=UTC)

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(["", " ", "restart_service", "Deployment", "2025-01-01 10:00:00", "Z"])
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=25,
)


def _near(fields: dict[str, Any]) -> Any:
    """Specs close to valid ones: each field kept, dropped or replaced by any JSON value."""
    return st.fixed_dictionaries(
        {}, optional={key: st.just(value) | JSON for key, value in fields.items()}
    )


REQUEST = _near(
    {
        "action": "restart_service",
        "target": {"kind": "Deployment", "name": "payment-api", "namespace": "prod"},
        "description": "restart payment-api after OOM",
        "labels": {"incident-type": "pod-oom-killer", "environment": "production"},
        "signal": {"name": "KubePodCrashLooping", "severity": "critical"},
        "domain": "kubernetes",
    }
)
INCIDENT = _near(
    {
        "id": "INC-FUZZ-1",
        "title": "payment-api restart failed",
        "action": "restart_service",
        "resource": {"type": "Deployment", "name": "payment-api"},
        "severity": "high",
        "outcome": "resolved",
        "tags": ["oom"],
        "occurredAt": "2025-01-01T10:00:00Z",
        "resolutionHours": 2.5,
        "qualityScore": 0.8,
    }
)
PLAYBOOK = _near(
    {
        "version": "v1",
        "description": "restart the deployment and watch memory",
        "actions": ["restart_service"],
        "labels": {"incident-type": ["pod-oom-killer"]},
        "steps": [{"name": "restart", "run": "kubectl rollout restart"}],
        "history": {"executions": 4, "successes": 3},
    }
)


def service() -> Assessor:
    local = LocalPlaybookCatalog(load_playbooks([DATA / "playbooks"]))
    return Assessor(
        IncidentScorer(
            HistoryStore(load_incidents([DATA / "incidents.yaml"])),
            neighbours=None,
            config=AssessmentSettings(mode="rules", risk_model=DefaultRiskModel()),
        ),
        selector=PlaybookSelector(local, min_confidence=0.5, declares=local.declares_incident_type),
        catalog=local,
        policy=PolicyEngine(),
    )


def objects(assessor: Assessor) -> ClusterObjects:
    """The object mirror over the assessor's history and catalog."""
    return ClusterObjects(assessor.scorer.history, assessor.catalog)


SERVICE = service()


@FUZZ
@given(spec=REQUEST | JSON)
def test_any_request_spec_is_an_assessment_or_an_input_error(spec: Any) -> None:
    try:
        assessment = asyncio.run(SERVICE.assess(spec, now=NOW))
    except InputError as exc:
        message = str(exc)
    else:
        assert isinstance(assessment, Assessment)
        assert 0 <= assessment.risk.score <= 100
        return
    assert message
    assert "\n" not in message


@FUZZ
@given(spec=INCIDENT | JSON, request=REQUEST)
def test_any_incident_spec_is_stored_or_refused_and_scoring_still_works(
    spec: Any, request: Any
) -> None:
    store = service()
    message = "Incident fuzzed: "
    try:
        objects(store).upsert_incident("fuzzed", spec)
    except InputError as exc:
        message = str(exc)
    assert message.startswith("Incident fuzzed: ")
    try:
        assessment = asyncio.run(store.assess(request, now=NOW))
    except InputError:
        return
    assert 0 <= assessment.risk.score <= 100


@FUZZ
@given(spec=PLAYBOOK | JSON, request=REQUEST)
def test_any_playbook_spec_is_stored_or_refused_and_selection_still_works(
    spec: Any, request: Any
) -> None:
    store = service()
    message = "Playbook fuzzed: "
    try:
        objects(store).upsert_playbook("fuzzed", spec)
    except InputError as exc:
        message = str(exc)
    assert message.startswith("Playbook fuzzed: ")
    try:
        assessment = asyncio.run(store.assess(request, now=NOW))
    except InputError:
        return
    assert isinstance(assessment, Assessment)
