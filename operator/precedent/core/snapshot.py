"""A history snapshot: the incidents, their rule matrix and a fingerprint of their content."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from precedent.core.carried import carried_column
from precedent.core.risk import SEVERITY_WEIGHTS
from precedent.core.risk_model import IncidentContext, RiskModelWeights
from precedent.core.similarity import RuleMatrix
from precedent.models import Incident

__all__ = ["DuplicateIncidentError", "History", "content_digest"]

DIGEST_SIZE = 32  # sha256


def content_digest(incident: Incident) -> bytes:
    """sha256 of an incident's content (``Incident.content_digest``)."""
    return incident.content_digest()


def _sources(incidents: Sequence[Incident], previous: History) -> npt.NDArray[np.int64]:
    """For each incident, the position ``previous`` holds that very object at; -1 if none."""
    positions, kept = previous._positions, previous.incidents
    source = np.full(len(incidents), -1, dtype=np.int64)
    for pos, incident in enumerate(incidents):
        was = positions.get(incident.id)
        if was is not None and kept[was] is incident:
            source[pos] = was
    return source


def _digests(
    incidents: Sequence[Incident],
    previous: History | None,
    source: npt.NDArray[np.int64] | None,
) -> npt.NDArray[np.uint8]:
    """Each incident's :func:`content_digest`, one row each; the rows of incident objects
    that ``previous`` holds (``source``) are copied from it."""
    size = len(incidents)
    out = np.empty((size, DIGEST_SIZE), dtype=np.uint8)
    fresh: Sequence[int] = range(size)
    held = previous._digests if previous is not None else None
    if held is not None and source is not None:
        reused = source >= 0
        out[reused] = held[source[reused]]
        fresh = np.flatnonzero(~reused).tolist()
    if fresh:
        made = b"".join(content_digest(incidents[pos]) for pos in fresh)
        out[np.asarray(fresh, dtype=np.int64)] = np.frombuffer(made, np.uint8).reshape(
            -1, DIGEST_SIZE
        )
    return out


def _severity_rank(incident: Incident) -> int:
    return _SEVERITY_ORDER[incident.severity.value]


_SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}


def _risk_base(
    previous: History | None, source: npt.NDArray[np.int64] | None
) -> tuple[IncidentContext, npt.NDArray[np.int64]] | None:
    """The context a snapshot's first request builds its own from, and where that context
    holds each of the snapshot's incidents: ``previous``'s, or the one ``previous`` was to be
    built from (no request came between two changes)."""
    if previous is None or source is None:
        return None
    if previous._risk_context is not None:
        return previous._risk_context, source
    if previous._risk_base is None:
        return None
    context, before = previous._risk_base
    held = source >= 0
    composed = np.full(source.size, -1, dtype=np.int64)
    composed[held] = before[source[held]]
    return context, composed


class DuplicateIncidentError(ValueError):
    """Two incidents share an id."""


class History:
    """An immutable snapshot of past incidents, ready to score against."""

    def __init__(self, incidents: Sequence[Incident], previous: History | None = None) -> None:
        """A snapshot of ``incidents``. ``previous``, the snapshot this one replaces, lends
        what it worked out for every incident object both hold (a history changes by
        replacing incidents, never by changing one): its content digest, its rule matrix
        codes and tags, its sort keys. A change then costs the new incidents only, and the
        snapshot is the same either way (``tests/core/test_snapshot_rebuild.py``)."""
        seen: set[str] = set()
        for incident in incidents:
            if incident.id in seen:
                raise DuplicateIncidentError(f"duplicate incident id {incident.id!r}")
            seen.add(incident.id)
        self.incidents: tuple[Incident, ...] = tuple(incidents)
        # Where ``previous`` holds each incident object: its rows are copied, not worked out.
        source = _sources(self.incidents, previous) if previous is not None else None
        self.rules: RuleMatrix = (
            RuleMatrix(self.incidents)
            if previous is None or source is None
            else previous.rules.rebuilt(self.incidents, source)
        )
        self._positions = {incident.id: pos for pos, incident in enumerate(self.incidents)}
        # Sort keys for ordering hits with numpy: severity (critical first), then id.
        self.severity_rank: npt.NDArray[np.int8] = carried_column(
            self.incidents,
            _severity_rank,
            np.int8,
            previous.severity_rank if previous is not None else None,
            source,
        )
        self.severity_weight: npt.NDArray[np.float64] = carried_column(
            self.incidents,
            lambda i: SEVERITY_WEIGHTS[i.severity],
            np.float64,
            previous.severity_weight if previous is not None else None,
            source,
        )
        by_id = np.argsort(np.array([i.id for i in self.incidents], dtype=str))
        self.id_rank = np.argsort(by_id)
        self._risk_context: IncidentContext | None = None
        # The context ``previous`` built, and where it holds each incident: the first request
        # builds this snapshot's from it.
        self._risk_base: tuple[IncidentContext, npt.NDArray[np.int64]] | None = _risk_base(
            previous, source
        )
        self._sorted_ids: np.ndarray | None = None  # built by the first ``extended``
        digests = _digests(self.incidents, previous, source)
        self._digests: npt.NDArray[np.uint8] | None = digests
        # sha256 over the incidents' content digests in id order.
        self.fingerprint = hashlib.sha256(digests[by_id].tobytes()).hexdigest()

    def extended(self, extra: Sequence[Incident]) -> History:
        """This snapshot with ``extra`` (ids it lacks) appended, at the cost of the extra ones.

        It scores exactly as ``History([*incidents, *extra])`` would, but reuses this
        snapshot's rule matrix, sort keys and risk context instead of rebuilding them over
        every incident (a rebuild of a 10 000-incident history takes hundreds of
        milliseconds; the fleet memory adds a few incidents to every request's view). The
        positions of this snapshot's incidents are unchanged. The fingerprint covers this
        snapshot's and the extra incidents' content.
        """
        if not extra:
            return self
        out = History.__new__(History)
        positions = dict(self._positions)
        for pos, incident in enumerate(extra, start=len(self.incidents)):
            if incident.id in positions:
                raise DuplicateIncidentError(f"duplicate incident id {incident.id!r}")
            positions[incident.id] = pos
        out.incidents = (*self.incidents, *extra)
        out._positions = positions
        out.rules = self.rules.extended(extra)
        out.severity_rank = np.concatenate(
            [self.severity_rank, np.array([_severity_rank(i) for i in extra], np.int8)]
        )
        out.severity_weight = np.concatenate(
            [
                self.severity_weight,
                np.array([SEVERITY_WEIGHTS[i.severity] for i in extra], np.float64),
            ]
        )
        # Ranks by id over all incidents: each held rank moves up by the extra ids below it.
        if self._sorted_ids is None:
            self._sorted_ids = np.sort(np.array([i.id for i in self.incidents], dtype=str))
        ids = sorted(i.id for i in extra)
        below = np.searchsorted(self._sorted_ids, np.array(ids, dtype=str))
        rank_of = {key: int(below[j]) + j for j, key in enumerate(ids)}
        shifted = self.id_rank + np.searchsorted(below, self.id_rank, side="right")
        out.id_rank = np.concatenate(
            [shifted, np.array([rank_of[i.id] for i in extra], dtype=shifted.dtype)]
        )
        out._sorted_ids = None
        # The snapshot's context is built once and kept; each request extends a copy.
        out._risk_context = self.risk_context().extended(extra)
        out._risk_base = None
        digest = hashlib.sha256(self.fingerprint.encode())
        for incident in sorted(extra, key=lambda i: i.id):
            digest.update(content_digest(incident))
        out.fingerprint = digest.hexdigest()
        out._digests = None  # a request's view: not the base of another snapshot
        return out

    def __len__(self) -> int:
        return len(self.incidents)

    def __iter__(self) -> Iterator[Incident]:
        return iter(self.incidents)

    def risk_context(self, weights: RiskModelWeights | None = None) -> IncidentContext:
        """The default risk model's per-incident arrays (built once for the default weights)."""
        if weights is not None:
            return IncidentContext(self.incidents, weights)
        if self._risk_context is None:
            base, source = self._risk_base if self._risk_base is not None else (None, None)
            self._risk_context = IncidentContext(
                self.incidents, RiskModelWeights(), previous=base, source=source
            )
            self._risk_base = None
        return self._risk_context

    def position(self, incident_id: str) -> int | None:
        """Index of an incident in this snapshot, or None."""
        return self._positions.get(incident_id)

    def get(self, incident_id: str) -> Incident | None:
        """An incident by id, or None."""
        pos = self._positions.get(incident_id)
        return None if pos is None else self.incidents[pos]
