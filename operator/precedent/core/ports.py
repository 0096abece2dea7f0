"""Ports the core calls through; adapters at the edge implement them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from precedent.core.history import History
from precedent.core.normalize import ProposedAction
from precedent.models import Alternative, PlaybookSelection, Recommendation

__all__ = ["PlaybookDecision", "SemanticNeighbours"]


class SemanticNeighbours(Protocol):
    """Finds incidents whose text means something close to the request's."""

    @property
    def name(self) -> str:
        """Embedder name, recorded in the assessment's engine info."""
        ...

    def neighbours(self, action: ProposedAction, history: History, k: int) -> Mapping[int, float]:
        """Up to ``k`` incident positions in ``history`` with their similarity (0–1)."""
        ...


@dataclass(frozen=True, slots=True)
class PlaybookDecision:
    """What the catalog answered for one request: a selection or a recommendation."""

    selection: PlaybookSelection | None = None
    alternatives: list[Alternative] = field(default_factory=list)
    recommendation: Recommendation | None = None
