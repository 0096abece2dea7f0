"""Rule similarity between a proposed action and past incidents (seed 000).

Four dimensions, weights summing to 1.0: action type 0.40, resource type 0.30, resource name
0.20, tag relevance 0.10 (an action keyword appears in the incident's tags). Incidents scoring
at least 0.30 are "similar". ``rule_similarity`` is the reference for one incident;
``RuleMatrix`` computes the same numbers for a whole history with numpy, so 100k incidents
score in milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from precedent.core.carried import carried_column
from precedent.core.normalize import ProposedAction, canonical_resource_type
from precedent.models import Incident

__all__ = [
    "SIMILARITY_THRESHOLD",
    "W_ACTION",
    "W_RESOURCE_NAME",
    "W_RESOURCE_TYPE",
    "W_TAGS",
    "RuleMatrix",
    "RuleParts",
    "RuleScores",
    "rule_similarity",
]

W_ACTION = 0.40
W_RESOURCE_TYPE = 0.30
W_RESOURCE_NAME = 0.20
W_TAGS = 0.10
SIMILARITY_THRESHOLD = 0.30

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class RuleParts:
    """The four weighted parts of one incident's rule similarity."""

    action: float
    resource_type: float
    resource_name: float
    tags: float

    @property
    def total(self) -> float:
        """Sum of the parts, 0–1."""
        return round(self.action + self.resource_type + self.resource_name + self.tags, 6)


def _incident_type(incident: Incident) -> str:
    return canonical_resource_type(incident.resource.type) if incident.resource else ""


def _incident_name(incident: Incident) -> str:
    return incident.resource.name.strip().lower() if incident.resource else ""


def rule_similarity(incident: Incident, action: ProposedAction) -> RuleParts:
    """Seed 000's similarity for one incident, dimension by dimension."""
    tags = {t.lower() for t in incident.tags}
    return RuleParts(
        action=W_ACTION if incident.action and incident.action in action.names else 0.0,
        resource_type=W_RESOURCE_TYPE if _incident_type(incident) == action.resource_type else 0.0,
        resource_name=W_RESOURCE_NAME if _incident_name(incident) == action.resource_name else 0.0,
        tags=W_TAGS if action.keywords & tags else 0.0,
    )


@dataclass(frozen=True, slots=True)
class RuleScores:
    """Per-incident parts for a whole history, aligned with its order."""

    action: FloatArray
    resource_type: FloatArray
    resource_name: FloatArray
    tags: FloatArray

    @property
    def total(self) -> FloatArray:
        """Rule similarity per incident."""
        return self.action + self.resource_type + self.resource_name + self.tags

    def parts(self, i: int) -> RuleParts:
        """The parts of incident ``i``."""
        # The arrays hold float32 copies of the weights; report the exact weights.
        return RuleParts(
            action=W_ACTION if self.action[i] else 0.0,
            resource_type=W_RESOURCE_TYPE if self.resource_type[i] else 0.0,
            resource_name=W_RESOURCE_NAME if self.resource_name[i] else 0.0,
            tags=W_TAGS if self.tags[i] else 0.0,
        )


class _Codebook:
    """Interns strings to small ints so equality becomes one numpy comparison."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {"": -1}

    def code(self, value: str) -> int:
        return self._codes.setdefault(value, len(self._codes))

    def copy(self) -> _Codebook:
        """An independent copy (an extended matrix adds codes without changing this one)."""
        out = _Codebook()
        out._codes = dict(self._codes)
        return out

    def lookup(self, value: str) -> int:
        # An unseen value matches nothing; -2 is never assigned.
        return self._codes.get(value, -2) if value else -2


class RuleMatrix:
    """Seed 000's rule similarity over a whole history at once."""

    def __init__(self, incidents: Sequence[Incident]) -> None:
        self._size = len(incidents)
        self._actions, self._types, self._names = _Codebook(), _Codebook(), _Codebook()
        self._action_codes = np.fromiter(
            (self._actions.code(i.action) for i in incidents), dtype=np.int32, count=self._size
        )
        self._type_codes = np.fromiter(
            (self._types.code(_incident_type(i)) for i in incidents),
            dtype=np.int32,
            count=self._size,
        )
        self._name_codes = np.fromiter(
            (self._names.code(_incident_name(i)) for i in incidents),
            dtype=np.int32,
            count=self._size,
        )
        # Inverted index tag → incident positions; an action's tag mask is a union of a few rows.
        postings: dict[str, list[int]] = {}
        for pos, incident in enumerate(incidents):
            for tag in {t.lower() for t in incident.tags}:
                postings.setdefault(tag, []).append(pos)
        self._postings = {tag: np.asarray(p, dtype=np.int64) for tag, p in postings.items()}

    def __len__(self) -> int:
        return self._size

    def rebuilt(self, incidents: Sequence[Incident], source: npt.NDArray[np.int64]) -> RuleMatrix:
        """The matrix of ``incidents``, where ``source[pos]`` is the row this matrix holds for
        the incident at ``pos`` (the same incident object), -1 for an incident it does not
        hold: held rows are copied, only the others coded. Equal to ``RuleMatrix(incidents)``
        (codes are compared for equality only; a code this matrix gave a value no incident
        has any more matches nothing, as an unseen value does)."""
        out = RuleMatrix.__new__(RuleMatrix)
        out._size = len(incidents)
        out._actions, out._types = self._actions.copy(), self._types.copy()
        out._names = self._names.copy()
        out._action_codes = carried_column(
            incidents, lambda i: out._actions.code(i.action), np.int32, self._action_codes, source
        )
        out._type_codes = carried_column(
            incidents,
            lambda i: out._types.code(_incident_type(i)),
            np.int32,
            self._type_codes,
            source,
        )
        out._name_codes = carried_column(
            incidents,
            lambda i: out._names.code(_incident_name(i)),
            np.int32,
            self._name_codes,
            source,
        )
        held = source >= 0
        fresh = np.flatnonzero(~held).tolist()
        # Postings: held rows move to their new positions, fresh rows join.
        moved = np.full(self._size, -1, dtype=np.int64)
        moved[source[held]] = np.flatnonzero(held)
        postings: dict[str, npt.NDArray[np.int64]] = {}
        for tag, rows in self._postings.items():
            kept = moved[rows]
            kept = kept[kept >= 0]
            if kept.size:
                postings[tag] = kept
        added: dict[str, list[int]] = {}
        for pos in fresh:
            for tag in {t.lower() for t in incidents[pos].tags}:
                added.setdefault(tag, []).append(pos)
        for tag, more in added.items():
            rows = np.asarray(more, dtype=np.int64)
            held_rows = postings.get(tag)
            postings[tag] = rows if held_rows is None else np.concatenate([held_rows, rows])
        out._postings = {tag: np.sort(rows) for tag, rows in postings.items()}
        return out

    def extended(self, extra: Sequence[Incident]) -> RuleMatrix:
        """This matrix with ``extra`` appended, without recoding the incidents it holds.

        Equal to ``RuleMatrix([*incidents, *extra])`` at a cost of the extra incidents (plus
        array copies): the fleet memory's few incidents join a request's view of a large
        history.
        """
        out = RuleMatrix.__new__(RuleMatrix)
        out._size = self._size + len(extra)
        out._actions, out._types = self._actions.copy(), self._types.copy()
        out._names = self._names.copy()
        out._action_codes = np.concatenate(
            [self._action_codes, np.array([out._actions.code(i.action) for i in extra], np.int32)]
        )
        out._type_codes = np.concatenate(
            [
                self._type_codes,
                np.array([out._types.code(_incident_type(i)) for i in extra], np.int32),
            ]
        )
        out._name_codes = np.concatenate(
            [
                self._name_codes,
                np.array([out._names.code(_incident_name(i)) for i in extra], np.int32),
            ]
        )
        postings = dict(self._postings)
        for pos, incident in enumerate(extra, start=self._size):
            for tag in {t.lower() for t in incident.tags}:
                held = postings.get(tag)
                row = np.array([pos], dtype=np.int64)
                postings[tag] = row if held is None else np.concatenate([held, row])
        out._postings = postings
        return out

    def _same_action(self, action: ProposedAction) -> npt.NDArray[np.bool_]:
        """Incidents recording the action or one of its effect class's (core.effects)."""
        if len(action.names) == 1:
            one: npt.NDArray[np.bool_] = self._action_codes == self._actions.lookup(action.action)
            return one
        codes = [self._actions.lookup(name) for name in sorted(action.names)]
        same: npt.NDArray[np.bool_] = np.isin(self._action_codes, np.array(codes, dtype=np.int32))
        return same

    def score(self, action: ProposedAction) -> RuleScores:
        """Every incident's rule-similarity parts for ``action``."""
        zero = np.float32(0.0)
        tags = np.zeros(self._size, dtype=np.float32)
        for keyword in action.keywords:
            hits = self._postings.get(keyword)
            if hits is not None:
                tags[hits] = W_TAGS
        return RuleScores(
            action=np.where(self._same_action(action), np.float32(W_ACTION), zero),
            resource_type=np.where(
                self._type_codes == self._types.lookup(action.resource_type),
                np.float32(W_RESOURCE_TYPE),
                zero,
            ),
            resource_name=np.where(
                self._name_codes == self._names.lookup(action.resource_name),
                np.float32(W_RESOURCE_NAME),
                zero,
            ),
            tags=tags,
        )
