"""Helpers shared by the tests: one per concept."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.core.historical import RiskModelName, SimilarityMode, risk_model_named
from precedent.core.policy import PolicyEngine
from precedent.core.ports import SemanticNeighbours
from precedent.core.snapshot import History
from precedent.models import Assessment, RemediationRequestSpec
from precedent.services import AssessmentSettings, Assessor, HistoryStore, IncidentScorer


class HistoryScorer:
    """The assessor over a fixed history, called synchronously (no playbooks)."""

    def __init__(self, assessor: Assessor) -> None:
        self.assessor = assessor

    @property
    def history(self) -> History:
        """The snapshot scored against."""
        return self.assessor.scorer.history.snapshot

    def assess(self, spec: RemediationRequestSpec, *, now: datetime | None = None) -> Assessment:
        """Normalise, score and decide, as the operator does."""
        return self.assessor.assess_normalised(self.assessor.normalise(spec), None, now)


def scorer(
    history: History,
    *,
    mode: SimilarityMode = "rules",
    semantic: SemanticNeighbours | None = None,
    risk_model: RiskModelName = "seed",
    policy: PolicyEngine | None = None,
) -> HistoryScorer:
    """A scorer for ``history`` in ``mode`` with the ``risk_model`` (seed by default)."""
    assessor = Assessor(
        IncidentScorer(
            HistoryStore(history.incidents),
            neighbours=semantic,
            config=AssessmentSettings(mode=mode, risk_model=risk_model_named(risk_model)),
        ),
        selector=None,
        catalog=LocalPlaybookCatalog(),
        policy=policy or PolicyEngine(),
    )
    return HistoryScorer(assessor)


def eventually(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not reached within {timeout:.0f} s")


def incidents_passed_to(monkeypatch: Any, owner: object, name: str) -> list[str]:
    """Wrap the function ``owner.name`` (its first argument an incident) for the test: the id
    of every incident it is called with, in order."""
    seen: list[str] = []
    real = getattr(owner, name)

    def recorded(incident: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(incident.id)
        return real(incident, *args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return seen
