"""Ports the core calls through; adapters at the edge implement them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from precedent.core.change import LiveTarget
from precedent.core.memory_query import MemoryQuery, ParsedHits, VectorField
from precedent.core.normalize import ProposedAction
from precedent.core.snapshot import History
from precedent.models import Alternative, PlaybookSelection, Recommendation

__all__ = [
    "Embedder",
    "IncidentIndex",
    "IncidentMemory",
    "IndexStats",
    "MemoryFailure",
    "MemoryFailureKind",
    "PlaybookDecision",
    "SemanticNeighbours",
    "TargetReader",
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


MemoryFailureKind = Literal[
    "auth", "unreachable", "timeout", "not_found", "throttled", "mapping", "error"
]


class MemoryFailure(Exception):
    """The fleet memory could not answer; ``str()`` is one line naming what is wrong."""

    def __init__(self, kind: MemoryFailureKind, message: str) -> None:
        super().__init__(message)
        self.kind: MemoryFailureKind = kind


class IncidentMemory(Protocol):
    """A fleet-wide store of investigations (seed 001) that many clusters read and write.

    Every method raises :class:`MemoryFailure` (never a client library's error) when the
    store cannot answer.
    """

    @property
    def location(self) -> str:
        """Where the memory is (URL and index), for messages; never carries a secret."""
        ...

    async def vector_field(self) -> VectorField | None:
        """The index's ``knn_vector`` field, detected once (and again after the store refused
        a query or document, or lost the index: the mapping may have changed); None when it has
        none."""
        ...

    async def search(self, query: MemoryQuery) -> ParsedHits:
        """Seed 001's search for one request."""
        ...

    async def upsert(self, documents: Sequence[tuple[str, Mapping[str, Any]]]) -> int:
        """Store documents by id (an existing id is replaced: idempotent); returns how many."""
        ...

    async def aclose(self) -> None:
        """Release the connections."""
        ...


class TargetReader(Protocol):
    """Reads a request's target as it is now (the API server, or manifests given to the CLI)."""

    async def read(
        self,
        kind: str,
        name: str,
        namespace: str | None,
        api_version: str | None,
        *,
        fresh: bool = False,
    ) -> LiveTarget | None:
        """The target, with what sizes a change to it (``exists=False`` when it is not
        there); None when it cannot be read (a kind this reader does not know, no permission,
        the server down): the answer then reads every unknown the riskier way. ``fresh``:
        read as it is now, not as a read made for an earlier request found it."""
        ...
