"""A history snapshot: the incidents, their rule matrix and a fingerprint of their content."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from precedent.core.risk import SEVERITY_WEIGHTS
from precedent.core.risk_model import IncidentContext, RiskModelWeights
from precedent.core.similarity import RuleMatrix
from precedent.models import Incident

__all__ = ["DuplicateIncidentError", "History", "content_digest"]

DIGEST_SIZE = 32  # sha256


def content_digest(incident: Incident) -> bytes:
    """sha256 of an incident's content: its JSON form, keys sorted."""
    text = json.dumps(incident.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).digest()


def _digests(incidents: Sequence[Incident], previous: History | None) -> npt.NDArray[np.uint8]:
    """Each incident's :func:`content_digest`, one row each; the rows of incident objects
    that ``previous`` holds are copied from it."""
    size = len(incidents)
    out = np.empty((size, DIGEST_SIZE), dtype=np.uint8)
    fresh: Sequence[int] = range(size)
    held = previous._digests if previous is not None else None
    if previous is not None and held is not None:
        positions, kept = previous._positions, previous.incidents
        source = np.full(size, -1, dtype=np.int64)
        for pos, incident in enumerate(incidents):
            was = positions.get(incident.id)
            if was is not None and kept[was] is incident:
                source[pos] = was
        reused = source >= 0
        out[reused] = held[source[reused]]
        fresh = np.flatnonzero(~reused).tolist()
    if fresh:
        made = b"".join(content_digest(incidents[pos]) for pos in fresh)
        out[np.asarray(fresh, dtype=np.int64)] = np.frombuffer(made, np.uint8).reshape(
            -1, DIGEST_SIZE
        )
    return out


class DuplicateIncidentError(ValueError):
    """Two incidents share an id."""


class History:
    """An immutable snapshot of past incidents, ready to score against."""

    def __init__(self, incidents: Sequence[Incident], previous: History | None = None) -> None:
        """A snapshot of ``incidents``. ``previous``, the snapshot this one replaces, lends
        the content digest of every incident object both hold (a history changes by
        replacing incidents, never by changing one), so a change costs the digests of the
        new incidents only; the fingerprint is the same either way."""
        seen: set[str] = set()
        for incident in incidents:
            if incident.id in seen:
                raise DuplicateIncidentError(f"duplicate incident id {incident.id!r}")
            seen.add(incident.id)
        self.incidents: tuple[Incident, ...] = tuple(incidents)
        self.rules = RuleMatrix(self.incidents)
        self._positions = {incident.id: pos for pos, incident in enumerate(self.incidents)}
        # Sort keys for ordering hits with numpy: severity (critical first), then id.
        order = {"critical": 0, "high": 1, "medium": 2, "low": 3}
        self.severity_rank = np.array(
            [order[i.severity.value] for i in self.incidents], dtype=np.int8
        )
        self.severity_weight = np.array(
            [SEVERITY_WEIGHTS[i.severity] for i in self.incidents], dtype=np.float64
        )
        by_id = np.argsort(np.array([i.id for i in self.incidents], dtype=str))
        self.id_rank = np.argsort(by_id)
        self._risk_context: IncidentContext | None = None
        self._sorted_ids: np.ndarray | None = None  # built by the first ``extended``
        digests = _digests(self.incidents, previous)
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
        order = {"critical": 0, "high": 1, "medium": 2, "low": 3}
        out.severity_rank = np.concatenate(
            [self.severity_rank, np.array([order[i.severity.value] for i in extra], np.int8)]
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
            self._risk_context = IncidentContext(self.incidents, RiskModelWeights())
        return self._risk_context

    def position(self, incident_id: str) -> int | None:
        """Index of an incident in this snapshot, or None."""
        return self._positions.get(incident_id)

    def get(self, incident_id: str) -> Incident | None:
        """An incident by id, or None."""
        pos = self._positions.get(incident_id)
        return None if pos is None else self.incidents[pos]
