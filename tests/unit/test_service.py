"""The service follows Incident and Playbook objects incrementally and rebuilds lazily."""

from __future__ import annotations

import pytest

from precedent.errors import InputError
from precedent.service import PrecedentService
from precedent.settings import Settings

REQUEST = {"action": "drain_node", "target": {"kind": "Node", "name": "node-7"}}
INCIDENT = {
    "id": "INC-1",
    "title": "Draining node-7 evicted the only etcd member",
    "action": "drain_node",
    "resource": {"type": "Node", "name": "node-7"},
    "severity": "high",
    "tags": ["drain"],
}


def service() -> PrecedentService:
    return PrecedentService(Settings(history_path="/nonexistent"))


def test_added_incident_changes_later_answers_and_removal_reverts() -> None:
    svc = service()
    assert svc.assess(REQUEST).risk.score == 0
    svc.upsert_incident("inc-1", INCIDENT)
    assert svc.assess(REQUEST).risk.score == 75
    svc.remove_incident("inc-1")
    assert svc.assess(REQUEST).risk.score == 0


def test_snapshot_is_rebuilt_once_per_batch_of_changes() -> None:
    svc = service()
    for i in range(50):
        svc.upsert_incident(f"inc-{i}", {**INCIDENT, "id": f"INC-{i}"})
    first = svc.assessor
    assert len(first.history) == 50
    assert svc.assessor is first  # no change, no rebuild
    svc.upsert_incident("inc-0", {**INCIDENT, "id": "INC-0"})  # identical: still no rebuild
    assert svc.assessor is first


def test_invalid_objects_name_the_field() -> None:
    svc = service()
    with pytest.raises(InputError, match=r"Incident bad: spec.severity"):
        svc.upsert_incident("bad", {**INCIDENT, "severity": "catastrophic"})
    with pytest.raises(InputError, match=r"spec.target.name: required field is missing"):
        svc.assess({"action": "drain_node", "target": {"kind": "Node"}})
