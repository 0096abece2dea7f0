"""Catalog decisions fit the RemediationRequest status schema (the CRD), whatever path made them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from precedent.core.playbooks import (
    CatalogAnswer,
    CatalogIndex,
    PlaybookQuery,
    ScoredPlaybook,
    decide,
    unavailable,
)
from precedent.core.ports import PlaybookDecision
from precedent.models import Playbook, PlaybookHistory
from precedent_sandbox.errors import FieldError
from precedent_sandbox.schema import Schema

REPO = Path(__file__).resolve().parents[3]


def status_schema() -> Schema:
    document = yaml.safe_load((REPO / "crds" / "remediationrequests.yaml").read_text())
    (version,) = document["spec"]["versions"]
    return Schema(version["schema"]["openAPIV3Schema"]["properties"]["status"])


def status_part(decision: PlaybookDecision) -> dict[str, Any]:
    part: dict[str, Any] = {}
    if decision.selection is not None:
        part["playbook"] = decision.selection.model_dump(mode="json", by_alias=True)
    part["alternatives"] = [a.model_dump(mode="json", by_alias=True) for a in decision.alternatives]
    if decision.recommendation is not None:
        part["recommendation"] = decision.recommendation.model_dump(mode="json", by_alias=True)
    return part


def errors_of(decision: PlaybookDecision) -> list[str]:
    schema = status_schema()
    errors: list[FieldError] = []
    unknown: list[str] = []
    status = schema.normalize(status_part(decision), "status", unknown)
    assert unknown == []
    schema.validate(status, "status", errors)
    return [str(e) for e in errors]


INDEX = CatalogIndex(
    [
        Playbook(
            id=f"pb-{i}",
            version="v1",
            description=f"restarts the pod number {i}",
            labels={"incident-type": ["pod-oom-killer"]},
            history=PlaybookHistory(executions=10, successes=9),
        )
        for i in range(6)
    ]
)
MANY_LABELS = {"incident-type": "database-failure"} | {f"label-{i}": "x" * 60 for i in range(200)}


@pytest.mark.parametrize(
    "decision",
    [
        decide(
            PlaybookQuery.create("restarts the pod", min_confidence=0.0),
            INDEX.search(PlaybookQuery.create("restarts the pod", min_confidence=0.0)),
        ),
        decide(
            PlaybookQuery.create("x"),
            CatalogAnswer((ScoredPlaybook("remote", "v1", "d", 0.9),), 1, "http://ctx"),
            method="fallback",
            note="Fallback: " + "e" * 5000,
        ),
        decide(
            PlaybookQuery.create("x", MANY_LABELS, subject="Deployment/" + "n" * 2000),
            INDEX.search(PlaybookQuery.create("x", MANY_LABELS)),
        ),
        unavailable(PlaybookQuery.create("x", subject="Pod/" + "p" * 3000), "z" * 9000),
    ],
    ids=["in-process", "remote-with-long-note", "many-labels", "unavailable"],
)
def test_decisions_validate_against_the_status_schema(decision: PlaybookDecision) -> None:
    assert errors_of(decision) == []
