"""Ports the core calls through; adapters at the edge implement them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from precedent.core.history import History
from precedent.core.normalize import ProposedAction
from precedent.models import Alternative, PlaybookSelection, Recommendation

__all__ = [
    "Embedder",
    "IncidentIndex",
    "IndexStats",
    "PlaybookDecision",
    "SemanticNeighbours",
]


class SemanticNeighbours(Protocol):
    """Finds incidents whose text means something close to the request's."""

    @property
    def name(self) -> str:
        """Embedder name, recorded in the assessment's engine info."""
        ...

    def neighbours(self, action: ProposedAction, history: History, k: int) -> Mapping[int, float]:
        """Up to ``k`` incident positions in ``history`` with their similarity (0–1)."""
        ...


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of a fixed length."""

    @property
    def name(self) -> str:
        """Stable name of the model and its configuration, e.g. ``lexical-512``."""
        ...

    @property
    def dimension(self) -> int:
        """Vector length."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit-length float32 row per text (a text with no content may give zeros)."""
        ...


@dataclass(frozen=True, slots=True)
class IndexStats:
    """What a vector index holds (seed 002's index stats)."""

    total_vectors: int
    dimension: int
    kind: str
    domain_distribution: dict[str, int]


class IncidentIndex(Protocol):
    """Incident vectors keyed by incident id, searched by inner product."""

    @property
    def dimension(self) -> int:
        """Vector length."""
        ...

    def __len__(self) -> int:
        """Number of incidents in the index."""
        ...

    def __contains__(self, incident_id: object) -> bool:
        """Whether an incident id is in the index."""
        ...

    def fingerprint(self, incident_id: str) -> str | None:
        """The content fingerprint stored with an incident, or None if it is absent."""
        ...

    def ids(self) -> list[str]:
        """Every incident id in the index."""
        ...

    def add(
        self,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        *,
        domains: Sequence[str | None] | None = None,
        fingerprints: Sequence[str] | None = None,
    ) -> None:
        """Add incidents; an id already present is replaced."""
        ...

    def remove(self, ids: Iterable[str]) -> int:
        """Remove incidents by id; returns how many were present."""
        ...

    def search(
        self, vector: npt.NDArray[np.float32], k: int, *, domain: str | None = None
    ) -> list[tuple[str, float]]:
        """Up to ``k`` ``(incident id, inner product)`` pairs, best first."""
        ...

    def stats(self) -> IndexStats:
        """Vectors, dimension, kind and per-domain counts."""
        ...


@dataclass(frozen=True, slots=True)
class PlaybookDecision:
    """What the catalog answered for one request: a selection or a recommendation."""

    selection: PlaybookSelection | None = None
    alternatives: list[Alternative] = field(default_factory=list)
    recommendation: Recommendation | None = None
