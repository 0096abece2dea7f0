"""The RemediationRequest spec's CEL rules, evaluated as the sandbox API server evaluates them:
every field but ``outcome`` is immutable (added, changed or removed), ``outcome`` is set once."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from precedent.models import RemediationRequestSpec, RequestOutcomeResult
from precedent_sandbox.cel import attach_rules, check_rules
from precedent_sandbox.errors import FieldError
from precedent_sandbox.schema import Schema

CRD = Path(__file__).resolve().parents[2] / "crds" / "remediationrequests.yaml"
BASE: dict[str, Any] = {
    "action": "restart_service",
    "target": {"kind": "Deployment", "name": "payment-api"},
    "description": "Restart payment-api",
    "labels": {"environment": "production"},
}
OUTCOME = {"result": "failed", "message": "pods crash-looped after the restart"}


def spec_schema() -> Schema:
    (version,) = yaml.safe_load(CRD.read_text())["spec"]["versions"]
    schema = Schema(version["schema"]["openAPIV3Schema"]["properties"]["spec"])
    # eight immutable fields, the outcome rule, one action, the range of outcome.finishedAt
    assert attach_rules(schema) == 11
    return schema


def problems(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    errors: list[FieldError] = []
    check_rules(spec_schema(), new, old, "spec", errors)
    return [f"{e.field}: {e.detail}" for e in errors]


def changed(**fields: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    for key, value in fields.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return spec


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("action", "scale_down"),
        ("target", {"kind": "Deployment", "name": "orders"}),
        ("description", "something else"),
        ("description", None),  # removed
        ("labels", None),  # removed
        ("labels", {"environment": "staging"}),
        ("signal", {"name": "HighLatency"}),  # added
        ("domain", "payments"),  # added
        ("requester", "mallory"),  # added after creation: a requester is recorded once
    ],
)
def test_every_field_but_the_outcome_is_immutable(field: str, value: Any) -> None:
    found = problems(BASE, changed(**{field: value}))
    assert len(found) == 1
    assert found[0].startswith(f"spec.{field}: spec.{field} ")


def test_an_outcome_can_be_added_once_but_not_changed_or_removed() -> None:
    with_outcome = changed(outcome=OUTCOME)
    assert problems(BASE, with_outcome) == []
    for later in (changed(outcome={**OUTCOME, "result": "succeeded"}), changed()):
        [found] = problems(with_outcome, later)
        assert found.startswith("spec.outcome: spec.outcome is set once")


def test_the_outcome_is_part_of_the_spec_model_and_not_an_incident_outcome() -> None:
    spec = RemediationRequestSpec.model_validate(
        {
            **BASE,
            "outcome": {**OUTCOME, "playbook": {"id": "pb"}, "finishedAt": "2026-03-02T10:15:00Z"},
        }
    )
    assert spec.outcome is not None
    assert spec.outcome.result is RequestOutcomeResult.FAILED
    assert spec.outcome.playbook is not None
    assert spec.outcome.playbook.id == "pb"
    assert spec.outcome.finished_at is not None
    assert spec.outcome.finished_at.year == 2026
    with pytest.raises(ValueError, match="result"):
        RemediationRequestSpec.model_validate({**BASE, "outcome": {"result": "resolved"}})
