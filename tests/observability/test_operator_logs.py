"""The operator's log, as ``kopf run -m precedent.handlers`` writes it in its own process:
``PRECEDENT_LOG_FORMAT=json`` makes every line one JSON object (kopf's own lines too), and at
the default level third-party libraries stay quiet (no import probing, no line per HTTP
request)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from precedent.demo import apply
from tests.faults.rig import (
    create_batch,
    operator_process,
    ready_names,
    sandbox_process,
    wait_for,
)
from tests.integration.conftest import DATA

pytestmark = pytest.mark.integration

NAMES = ["log-a", "log-b", "log-c"]
QUIET = ("faiss", "httpx", "httpcore")
"""Libraries whose INFO and DEBUG lines stay out of the log at the default level."""
# kopf's default text format: "[time] logger-name [LEVEL   ] message" (names cut at 20).
TEXT_LINE = re.compile(r"^\[[^\]]+\] (?P<logger>\S+)\s+\[(?P<level>[A-Z]+)\s*\] ")


def operator_log(tmp_path: Path, **settings: str) -> list[str]:
    """Start the sandbox and the operator, let it answer three requests, stop it, and return
    its log's lines."""
    log = tmp_path / "operator.log"
    with (
        sandbox_process(tmp_path) as sandbox,
        httpx.Client(base_url=sandbox.url, timeout=30) as client,
    ):
        apply(client, [DATA / "incidents", DATA / "playbooks"])
        with operator_process(sandbox.kubeconfig, log, **settings):
            create_batch(sandbox.url, NAMES)
            wait_for(
                lambda: ready_names(client, NAMES) == set(NAMES),
                timeout=120,
                missing=lambda: f"not Ready: {set(NAMES) - ready_names(client, NAMES)}",
            )
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines, "the operator wrote nothing"
    return lines


def test_json_format_makes_every_line_json(tmp_path: Path) -> None:
    lines = operator_log(tmp_path, PRECEDENT_LOG_FORMAT="json")
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            pytest.fail(f"line {number} is not JSON: {line!r}")
        assert isinstance(record, dict), line
        assert {"time", "level", "logger", "message"} <= record.keys(), line
        records.append(record)
    loggers = {r["logger"].split(".")[0] for r in records}
    assert {"kopf", "precedent"} <= loggers, loggers
    # A decision record keeps its structured fields; kopf's per-object lines name the object.
    decisions = [r for r in records if r.get("decision") and r.get("name") in NAMES]
    assert {r["name"] for r in decisions} == set(NAMES)
    per_object = [r for r in records if r["logger"] == "kopf.objects"]
    assert per_object
    assert all(r.get("object", {}).get("name") for r in per_object), per_object[:3]
    quiet = [
        r for r in records if r["logger"].startswith(QUIET) and r["level"] in ("INFO", "DEBUG")
    ]
    assert not quiet, quiet[:3]


def test_third_party_libraries_are_quiet_at_the_default_level(tmp_path: Path) -> None:
    lines = operator_log(tmp_path)
    parsed = [
        (m.group("logger"), m.group("level")) for line in lines if (m := TEXT_LINE.match(line))
    ]
    assert parsed, lines[:5]
    loud = [
        line
        for line in lines
        if (m := TEXT_LINE.match(line))
        and m.group("logger").startswith(QUIET)
        and m.group("level") in ("INFO", "DEBUG")
    ]
    assert not loud, loud[:5]
