"""No answer changes unnoticed: the full assessment of every bundled request and of the labelled
risk and selection sets, at a fixed time, compared with the recorded one (statuses.json).

A change that is meant to change answers regenerates the file and shows the difference in
review: ``PRECEDENT_GOLDEN_UPDATE=1 pytest tests/golden``. Left out: the engine block (the
version and which sources answered), which says how an answer was made, not what it is.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from precedent.adapters.loader import load_requests
from precedent.settings import Settings
from precedent.wiring import build_service

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("statuses.json")
NOW = datetime(2026, 11, 25, tzinfo=UTC)
SETS = {
    "bundled": [REPO / "data" / "requests"],
    "risk": [REPO / "tests" / "data" / "risk"],
    "selection": [REPO / "tests" / "data" / "selection"],
}


def _answers() -> dict[str, dict[str, Any]]:
    settings = Settings(
        history_path=REPO / "data" / "incidents", catalog=str(REPO / "data" / "playbooks")
    )
    service = build_service(settings, require_history=True)
    answers: dict[str, dict[str, Any]] = {}

    async def assess_all() -> None:
        try:
            for name, paths in SETS.items():
                requests = load_requests(paths)
                assessed = await service.assess_many(
                    [r.spec for r in requests],
                    now=NOW,
                    namespaces=[r.namespace for r in requests],
                )
                for request, assessment in zip(requests, assessed, strict=True):
                    body = assessment.model_dump(mode="json", by_alias=True, exclude_none=True)
                    body.pop("engine", None)
                    answers[f"{name}/{request.namespace or 'default'}/{request.name}"] = body
        finally:
            await service.aclose()

    asyncio.run(assess_all())
    return answers


def test_every_answer_is_the_recorded_one() -> None:
    answers = _answers()
    if os.environ.get("PRECEDENT_GOLDEN_UPDATE") == "1":
        GOLDEN.write_text(json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        pytest.skip(f"recorded {len(answers)} answers in {GOLDEN.name}")
    recorded = json.loads(GOLDEN.read_text())
    assert sorted(answers) == sorted(recorded)
    changed = [key for key in recorded if answers[key] != recorded[key]]
    assert not changed, f"{len(changed)} answers changed, e.g. {changed[:5]}"
