"""Every reconciliation is counted, timed and logged by the real service and a real registry."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from precedent.logging_json import configure_logging
from precedent.metrics import Metrics
from precedent.services.observability import DecisionRecorder, RequestName
from precedent.settings import Settings
from precedent.wiring import Engine, build_recorder, build_service

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "requests" / "examples.yaml"
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def examples() -> dict[str, dict[str, Any]]:
    """The bundled example requests by name."""
    with EXAMPLES.open() as stream:
        return {d["metadata"]["name"]: d["spec"] for d in yaml.safe_load_all(stream) if d}


@pytest.fixture(scope="module")
def service() -> Engine:
    return build_service(Settings(), mode="rules", follows_cluster=True)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("json", stream)
    yield stream
    configure_logging("text")


def reconcile(service: Engine, recorder: DecisionRecorder, uid: str, spec: dict[str, Any]) -> str:
    update = asyncio.run(
        service.assessor.reconcile(spec, uid=uid, generation=1, previous=None, now=NOW, anchor=NOW)
    )
    recorder.reconciled(
        RequestName(uid, "default", f"rr-{uid}"), spec.get("action", ""), update, 0.02
    )
    return update.outcome


def decisions(log: io.StringIO) -> list[dict[str, Any]]:
    """The JSON decision records written so far (the catalog logs its own lines too)."""
    lines = [json.loads(line) for line in log.getvalue().splitlines()]
    return [line for line in lines if line["logger"] == "precedent.decisions"]


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    found = registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def test_decisions_are_counted_by_band_and_decision(
    service: Engine, registry: CollectorRegistry, log: io.StringIO
) -> None:
    recorder = build_recorder(service, Metrics(registry))
    specs = examples()
    for uid, name in enumerate(specs):
        assert reconcile(service, recorder, str(uid), specs[name]) == "assessed"
    lines = decisions(log)
    assert len(lines) == len(specs)
    # The counter agrees with the decisions the log reports, per (band, decision).
    seen: dict[tuple[str, str], int] = {}
    for line in lines:
        seen[(line["band"], line["decision"])] = seen.get((line["band"], line["decision"]), 0) + 1
    assert {d for _, d in seen} == {"Approved", "Escalated", "Denied"}
    for (band, decision), count in seen.items():
        assert value(registry, "precedent_decisions_total", band=band, decision=decision) == count
    assert value(
        registry, "precedent_assessment_duration_seconds_count", outcome="assessed"
    ) == len(specs)
    assert value(registry, "precedent_history_incidents") == service.objects.history_size() > 0
    assert value(registry, "precedent_vector_index_info", kind="none") == 1  # rules mode
    assert value(registry, "precedent_vector_index_info", kind="exact") == 0


def test_one_json_line_per_decision_names_the_request(
    service: Engine, registry: CollectorRegistry, log: io.StringIO
) -> None:
    recorder = build_recorder(service, Metrics(registry))
    spec = examples()["rollback-search-api"]
    reconcile(service, recorder, "u-1", spec)
    (line,) = decisions(log)
    assert {k: line[k] for k in ("uid", "namespace", "name", "action", "logger")} == {
        "uid": "u-1",
        "namespace": "default",
        "name": "rr-u-1",
        "action": "rollback",
        "logger": "precedent.decisions",
    }
    assessment = asyncio.run(service.assess(spec, now=NOW))
    assert line["band"] == assessment.risk.band.value
    assert line["decision"] == assessment.risk.decision.value
    assert line["playbook"] == (assessment.playbook.id if assessment.playbook else None)
    assert line["duration_seconds"] == 0.02
    assert line["incident"] == assessment.risk.most_relevant_incident
    assert value(registry, "precedent_top_incident_matches_total", incident=line["incident"]) == 1
    assert line["level"] == "INFO"


def test_stalled_gauge_counts_requests_until_answered_or_deleted(
    service: Engine, registry: CollectorRegistry, log: io.StringIO
) -> None:
    recorder = build_recorder(service, Metrics(registry))
    bad = {"action": "restart_service", "target": {"kind": "Deployment"}}
    assert reconcile(service, recorder, "a", bad) == "invalid"
    assert reconcile(service, recorder, "a", bad) == "invalid"  # the same request again
    assert reconcile(service, recorder, "b", bad) == "invalid"
    assert value(registry, "precedent_stalled_requests", reason="InvalidSpec") == 2
    recorder.deleted("a")
    assert value(registry, "precedent_stalled_requests", reason="InvalidSpec") == 1
    reconcile(service, recorder, "b", examples()["expand-pvc-prometheus"])
    assert value(registry, "precedent_stalled_requests", reason="InvalidSpec") == 0
    assert value(registry, "precedent_assessment_duration_seconds_count", outcome="invalid") == 3
    reasons = [line.get("reason") for line in decisions(log)]
    assert reasons[:3] == ["InvalidSpec"] * 3


def test_text_format_leaves_records_to_kopfs_root_logger(
    service: Engine, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    configure_logging("text")
    recorder = build_recorder(service, Metrics(registry))
    with caplog.at_level(logging.INFO, logger="precedent.decisions"):
        reconcile(service, recorder, "t", examples()["expand-pvc-prometheus"])
    (record,) = [r for r in caplog.records if r.name == "precedent.decisions"]
    assert record.getMessage().startswith("default/rr-t assessed: risk low")
    assert b"precedent_decisions_total" in generate_latest(registry)


def test_pending_approvals_and_the_wait_are_counted_per_request(
    service: Engine, registry: CollectorRegistry
) -> None:
    recorder = build_recorder(service, Metrics(registry))
    escalated = {"action": "drain_node", "target": {"kind": "Node", "name": "idle-7"}}
    routine = {"action": "scale_up", "target": {"kind": "Deployment", "name": "frontend"}}
    reconcile(service, recorder, "a", escalated)
    reconcile(service, recorder, "a", escalated)  # reconciled again: still one request
    reconcile(service, recorder, "b", escalated)
    reconcile(service, recorder, "c", routine)
    assert registry.get_sample_value("precedent_approvals_pending") == 2
    recorder.approval_decided("a", 600.0)
    assert registry.get_sample_value("precedent_approvals_pending") == 1
    assert registry.get_sample_value("precedent_approval_wait_seconds_count") == 1
    assert registry.get_sample_value("precedent_approval_wait_seconds_bucket", {"le": "900.0"}) == 1
    recorder.deleted("b")
    assert registry.get_sample_value("precedent_approvals_pending") == 0
