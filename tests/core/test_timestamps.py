"""One timestamp rule everywhere: RFC 3339 with an offset, kept in UTC; a naive one is refused
with the field named — by the models, the loaders, the CLI, the service and the CRD schemas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from precedent.adapters.evaluation import load_history_jsonl
from precedent.adapters.loader import load_incidents
from precedent.cli import main
from precedent.errors import InputError, LoadError
from precedent.models import Incident, RemediationRequestSpec, RequestOutcome
from precedent.services import HistoryStore
from precedent_sandbox.errors import FieldError
from precedent_sandbox.schema import Schema
from tests.helpers import scorer

CRDS = Path(__file__).resolve().parents[2] / "crds"
NAIVE = ["2025-01-01 10:00:00", "2025-01-01T10:00:00", "2025-01-01"]
AWARE = ["2025-01-01T10:00:00Z", "2025-01-01T12:00:00+02:00", "2025-01-01T10:00:00.5+00:00"]
INCIDENT = {"id": "INC-1", "title": "restart of payment-api failed", "action": "restart_service"}


@pytest.mark.parametrize("value", NAIVE)
def test_models_refuse_a_timestamp_without_an_offset(value: str) -> None:
    with pytest.raises(ValidationError, match="occurredAt"):
        Incident.model_validate({**INCIDENT, "occurredAt": value})
    with pytest.raises(ValidationError, match="finishedAt"):
        RequestOutcome.model_validate({"result": "failed", "finishedAt": value})


def test_models_refuse_a_naive_datetime_object() -> None:
    # What an unquoted YAML timestamp without an offset becomes.
    with pytest.raises(ValidationError, match="timezone"):
        Incident.model_validate({**INCIDENT, "occurredAt": datetime(2025, 1, 1, 10)})


@pytest.mark.parametrize("value", AWARE)
def test_an_aware_timestamp_is_kept_in_utc(value: str) -> None:
    incident = Incident.model_validate({**INCIDENT, "occurredAt": value})
    assert incident.occurred_at is not None
    assert incident.occurred_at.utcoffset() == timedelta(0)
    assert incident.occurred_at == datetime.fromisoformat(value)


def test_a_yaml_history_with_an_unquoted_naive_timestamp_names_file_document_and_field(
    tmp_path: Path,
) -> None:
    file = tmp_path / "incidents.yaml"
    file.write_text(
        "apiVersion: precedent.dev/v1alpha1\nkind: Incident\nmetadata: {name: inc-1}\n"
        "spec:\n  id: INC-1\n  title: restart failed\n  occurredAt: 2025-01-01 10:00:00\n"
    )
    with pytest.raises(LoadError, match=r"incidents\.yaml, document 1 .*spec\.occurredAt"):
        load_incidents([file])


def test_a_jsonl_history_with_a_naive_timestamp_names_the_line(tmp_path: Path) -> None:
    file = tmp_path / "history.jsonl"
    file.write_text(
        '{"id": "A", "title": "a", "occurredAt": "2025-01-01T10:00:00Z"}\n'
        '{"id": "B", "title": "b", "occurredAt": "2025-01-01 10:00:00"}\n'
    )
    with pytest.raises(InputError, match=r"history\.jsonl:2: occurredAt"):
        load_history_jsonl(file)


def test_the_cli_reports_a_naive_timestamp_in_one_line(tmp_path: Path) -> None:
    history = tmp_path / "incidents.yaml"
    history.write_text(
        "apiVersion: precedent.dev/v1alpha1\nkind: Incident\nmetadata: {name: inc-1}\n"
        "spec: {id: INC-1, title: restart failed, occurredAt: 2025-01-01 10:00:00}\n"
    )
    request = tmp_path / "request.yaml"
    request.write_text(
        "apiVersion: precedent.dev/v1alpha1\nkind: RemediationRequest\nmetadata: {name: r}\n"
        "spec: {action: restart_service, target: {kind: Deployment, name: payment-api}}\n"
    )
    result = CliRunner().invoke(
        main, ["score", str(request), "--history", str(history), "--catalog", ""]
    )
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert "spec.occurredAt" in lines[0]


def test_the_service_refuses_a_naive_incident_and_scores_with_aware_ones() -> None:
    store = HistoryStore()
    with pytest.raises(InputError, match=r"Incident inc-1: spec\.occurredAt"):
        store.upsert("inc-1", {**INCIDENT, "occurredAt": "2025-01-01 10:00:00"})
    recent = datetime.now(UTC) - timedelta(days=3)
    store.upsert("inc-2", {**INCIDENT, "id": "INC-2", "occurredAt": recent.isoformat()})
    store.upsert("inc-3", {**INCIDENT, "id": "INC-3", "occurredAt": "2025-01-01T12:00:00+02:00"})
    request = RemediationRequestSpec.model_validate(
        {"action": "restart_service", "target": {"kind": "Deployment", "name": "payment-api"}}
    )
    for model in ("seed", "default"):
        assessment = scorer(store.snapshot, risk_model=model).assess(request, now=datetime.now(UTC))
        assert 0 <= assessment.risk.score <= 100


def _property(crd: str, path: str) -> dict[str, Any]:
    document = yaml.safe_load((CRDS / f"{crd}.yaml").read_text())
    node: dict[str, Any] = document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for part in path.split("."):
        node = node["properties"][part]
    return node


@pytest.mark.parametrize(
    ("crd", "path"),
    [("incidents", "spec.occurredAt"), ("remediationrequests", "spec.outcome.finishedAt")],
)
def test_the_crds_refuse_the_same_timestamps(crd: str, path: str) -> None:
    node = _property(crd, path)
    assert node["format"] == "date-time"
    schema = Schema(node)
    for value in NAIVE:
        errors: list[FieldError] = []
        schema.validate(value, path, errors)
        assert [e.field for e in errors] == [path], value
    for value in AWARE:
        errors = []
        schema.validate(value, path, errors)
        assert errors == [], value
