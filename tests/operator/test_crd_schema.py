"""The CRDs against the models: every Assessment validates against the status schema, every
Assessment field has a place in it, and every CRD is bounded (what CEL cost estimation needs)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from precedent.models import (
    Alternative,
    ApprovalState,
    Assessment,
    Band,
    Decision,
    EngineInfo,
    IncidentOutcome,
    PlaybookSelection,
    PolicyApproval,
    PolicyResult,
    Recommendation,
    RiskAssessment,
    RiskFactor,
    Severity,
    SimilarIncident,
    SimilarityParts,
)
from precedent_sandbox.errors import FieldError
from precedent_sandbox.schema import Schema

CRDS = Path(__file__).resolve().parents[2] / "crds"


def crd(name: str) -> dict[str, Any]:
    """The one CRD in ``crds/<name>.yaml``."""
    document = yaml.safe_load((CRDS / f"{name}.yaml").read_text())
    assert document["kind"] == "CustomResourceDefinition"
    return document  # type: ignore[no-any-return]


def root_schema(name: str) -> dict[str, Any]:
    """The openAPIV3Schema of the CRD's only version."""
    (version,) = crd(name)["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def full_assessment() -> Assessment:
    """An Assessment with every optional part filled in."""
    parts = SimilarityParts(
        action=0.4,
        resource_type=0.3,
        resource_name=0.2,
        tags=0.1,
        rule=1.0,
        semantic=0.87,
        counted="rule",
    )
    return Assessment(
        risk=RiskAssessment(
            score=85.0,
            band=Band.HIGH,
            decision=Decision.DENIED,
            reasoning="Two critical incidents after restarts of payment-api.",
            most_relevant_incident="INC-2025-0847",
            recommended_procedure="1. Check the dependency graph first.",
            factors=[
                RiskFactor(name="precedent", contribution=100.0, detail="INC-2025-0847"),
                RiskFactor(name="environment", contribution=-15.0, detail="staging request"),
            ],
        ),
        similar_incidents=[
            SimilarIncident(
                id="INC-2025-0847",
                title="Restart of payment-api cascaded",
                severity=Severity.CRITICAL,
                similarity=1.0,
                parts=parts,
                relevance=0.93,
                outcome=IncidentOutcome.RESOLVED,
            )
        ],
        similar_count=3,
        playbook=PlaybookSelection(
            id="restart-with-gate",
            version="v1.2",
            confidence=0.82,
            components={"semantic": 0.9, "labelMatch": 1.0, "historical": 0.5},
            selection_method="data_driven",
            rationale="Best label match and a good history.",
        ),
        alternatives=[Alternative(id="plain-restart", version="v1", confidence=0.6)],
        recommendation=Recommendation(
            action="manual_investigation", reason="none qualified", suggested_actions=["look"]
        ),
        policy=PolicyResult(
            access_level="WRITE",
            approval_required=True,
            approval=PolicyApproval(
                state=ApprovalState.APPROVED,
                by="alice",
                at="2026-01-01T00:00:00Z",
                reason="checked the runbook",
                approval="restart-ok",
            ),
            reason="audit-only mode: enforce mode would decide Escalated",
            would_be=Decision.ESCALATED,
        ),
        engine=EngineInfo(
            version="0.1.0", history_size=106, similarity_mode="hybrid", embedder="minilm"
        ),
        input_hash="sha256:" + "0" * 64,
    )


def minimal_assessment() -> Assessment:
    """An Assessment with only the required parts."""
    return Assessment(
        risk=RiskAssessment(score=0, band=Band.LOW, decision=Decision.APPROVED, reasoning="None."),
        engine=EngineInfo(version="0.1.0", history_size=0, similarity_mode="rules"),
        input_hash="sha256:" + "f" * 64,
    )


def status_for(assessment: Assessment) -> dict[str, Any]:
    """The status the operator writes: the assessment, observedGeneration and conditions."""
    status = assessment.model_dump(mode="json", by_alias=True, exclude_none=True)
    status["observedGeneration"] = 1
    status["conditions"] = [
        {
            "type": kind,
            "status": value,
            "reason": "Assessed",
            "message": "",
            "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "observedGeneration": 1,
        }
        for kind, value in (("Ready", "True"), ("Reconciling", "False"), ("Stalled", "False"))
    ]
    return status


@pytest.mark.parametrize(
    "assessment", [full_assessment(), minimal_assessment()], ids=["full", "minimal"]
)
def test_assessment_status_validates_against_the_crd(assessment: Assessment) -> None:
    schema = Schema(root_schema("remediationrequests")["properties"]["status"])
    status = status_for(assessment)
    expected = yaml.safe_load(yaml.safe_dump(status))
    unknown: list[str] = []
    normalized = schema.normalize(status, "status", unknown)
    assert unknown == []  # nothing the operator writes is pruned
    assert normalized == expected
    errors: list[FieldError] = []
    schema.validate(normalized, "status", errors)
    assert [str(e) for e in errors] == []


def test_a_wrong_status_is_caught() -> None:
    schema = Schema(root_schema("remediationrequests")["properties"]["status"])
    status = status_for(minimal_assessment())
    status["risk"]["score"] = 101
    status["conditions"][0]["status"] = "Maybe"
    errors: list[FieldError] = []
    schema.validate(status, "status", errors)
    assert {e.field for e in errors} == {"status.risk.score", "status.conditions[0].status"}


def _model_fields(
    node: dict[str, Any], defs: dict[str, Any], path: str
) -> list[tuple[str, dict[str, Any]]]:
    """(path, sub-schema) for every property of a pydantic JSON schema, resolved through $refs."""
    if "$ref" in node:
        return _model_fields(defs[node["$ref"].rsplit("/", 1)[-1]], defs, path)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in node:
            return [f for option in node[key] for f in _model_fields(option, defs, path)]
    found: list[tuple[str, dict[str, Any]]] = []
    for name, sub in node.get("properties", {}).items():
        found.append((f"{path}.{name}", sub))
        found.extend(_model_fields(sub, defs, f"{path}.{name}"))
    if "items" in node:
        found.extend(_model_fields(node["items"], defs, f"{path}[]"))
    return found


def _crd_node(schema: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The CRD schema node at a ``status.a[].b`` path, or None if it has no such field."""
    node: dict[str, Any] | None = schema
    for part in path.split(".")[1:]:
        node = (node or {}).get("properties", {}).get(part.replace("[]", ""))
        for _ in range(part.count("[]")):
            node = (node or {}).get("items")
    return node


def test_every_assessment_field_exists_in_the_status_schema() -> None:
    model = Assessment.model_json_schema(by_alias=True)
    status = root_schema("remediationrequests")["properties"]["status"]
    missing = [
        path
        for path, _ in _model_fields(model, model.get("$defs", {}), "status")
        if _crd_node(status, path) is None
    ]
    assert missing == []


def _walk(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    found = [(path, node)]
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return found
    for name, sub in node.get("properties", {}).items():
        found.extend(_walk(sub, f"{path}.{name}"))
    if isinstance(node.get("additionalProperties"), dict):
        found.extend(_walk(node["additionalProperties"], f"{path}.*"))
    if "items" in node:
        found.extend(_walk(node["items"], f"{path}[]"))
    return found


@pytest.mark.parametrize(
    "name", ["remediationrequests", "playbooks", "incidents", "remediationapprovals"]
)
def test_crds_are_structural_and_bounded(name: str) -> None:
    document = crd(name)
    names = document["spec"]["names"]
    assert names["categories"] == ["precedent"]
    assert document["metadata"]["name"] == f"{names['plural']}.precedent.dev"
    (version,) = document["spec"]["versions"]
    assert version["name"] == "v1alpha1"
    assert version["subresources"] == {"status": {}}
    problems = []
    for path, node in _walk(root_schema(name), name):
        if path == f"{name}.metadata":
            continue
        if "type" not in node and not node.get("x-kubernetes-int-or-string"):
            problems.append(f"{path}: no type")
        if node.get("type") == "string" and "maxLength" not in node and "enum" not in node:
            problems.append(f"{path}: string without maxLength")
        if node.get("type") == "array" and "maxItems" not in node:
            problems.append(f"{path}: array without maxItems")
        if "additionalProperties" in node and "maxProperties" not in node:
            problems.append(f"{path}: map without maxProperties")
        is_property = not path.endswith(("[]", ".*")) and path.count(".") >= 1
        if is_property and "description" not in node:
            problems.append(f"{path}: no description")
    assert problems == []
