"""Playbook labels: normalisation, parsing, and the label-match part of the confidence.

**Label match** (0–1) is the mean, over the *request's* labels, of 1 when the playbook pins
the key to that value (or to ``*``), 0 when it pins the key to other values only, and ½ when
it does not pin the key at all — a generic playbook is neither evidence for nor against. A
request without labels scores ½ for every playbook. Keys compare without their DNS prefix
(``kubernaut.ai/incident-type`` is ``incident-type``); keys and values are case-insensitive.

Three refinements make the label part discriminate (:class:`LabelRule`; the ``seed`` rule has
none, the ``default`` rule all three — see the README's selection figures):

* **The action is a label too.** A request always names its action, and a playbook lists the
  actions it runs. Without that, a request whose only label is one every playbook accepts
  (``environment: staging``) gives every playbook label match 1.0, and a rollback request
  could be answered with a node-resize playbook. The query carries the action's concept from
  :mod:`precedent.core.vocabulary` (``reduce_replicas`` and ``scale_down`` are both
  ``scale-down``) or its own name, scored as an implicit ``action`` label against the
  playbook's actions and their concepts (1 / 0 / ½). It never *contradicts*: a playbook is
  not excluded for listing other actions, it just gets no credit. A request label ``action``
  given explicitly wins over the implicit one.
* **A label every playbook accepts is no evidence.** Each request label is weighted by its
  selectivity across the catalog, ``1 − (playbooks accepting the value / playbooks)``:
  ``environment: production``, accepted by nearly every playbook, weighs almost nothing, an
  ``incident-type`` or an action few playbooks accept weighs nearly 1, and a value no playbook
  accepts weighs 1 (it pulls every playbook towards ½). Label match is the weighted mean; when
  every weight is 0 it is ½, as without labels.
* **An unstated incident type is unknown, not a match.** A request that does not say what went
  wrong (no ``incident-type``) cannot confirm a playbook written for one kind of incident: such
  a playbook gets one more term, ½ with weight 1. Without it, "restart one pod stuck after a
  config reload" labelled only ``environment: staging`` gave ``pod-oom-recovery`` label match
  1.0 (its action and environment match) and a confident 0.78.

:class:`LabelTable` is the one implementation: every playbook's labels as bit masks, so one
query is scored against the whole catalog with a few numpy operations.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from precedent.core.playbooks._arrays import BoolArray, F64Array, resized
from precedent.core.vocabulary import concepts
from precedent.models import Playbook

__all__ = [
    "ACTION",
    "DEFAULT_LABEL_RULE",
    "INCIDENT_TYPE",
    "LABEL_MATCH",
    "LABEL_MISMATCH",
    "LABEL_UNPINNED",
    "NO_LABELS",
    "SEED_LABEL_RULE",
    "WILDCARD",
    "LabelRule",
    "LabelScores",
    "LabelTable",
    "action_label",
    "action_labels",
    "normalize_label_key",
    "normalize_label_value",
    "parse_label",
    "playbook_labels",
]

LABEL_MATCH = 1.0
"""Score of a request label the playbook pins to the same value (or to ``*``)."""
LABEL_MISMATCH = 0.0
"""Score of a request label the playbook pins to other values only."""
LABEL_UNPINNED = 0.5
"""Score of a request label whose key the playbook does not pin."""
NO_LABELS = 0.5
"""Label match of every playbook for a request without labels."""
WILDCARD = "*"
"""A playbook label value that accepts any request value."""
INCIDENT_TYPE = "incident-type"
"""The label key naming the kind of incident (a new playbook pinned to it is listed)."""
ACTION = "action"
"""The implicit label key of the request's action (scored, never a contradiction)."""

_K = TypeVar("_K", str, tuple[str, str])


@dataclass(frozen=True, slots=True)
class LabelRule:
    """How the label part is computed (the module doc): the seed's plain mean, or refined."""

    action: bool = True
    """The request's action counts as an implicit ``action`` label."""
    selective: bool = True
    """Each request label is weighted by its selectivity across the catalog."""
    unstated: bool = True
    """A request that does not state its ``incident-type`` leaves that label of a playbook
    pinned to one unknown: it adds a term ½ of weight 1 for such playbooks."""
    infer: bool = False
    """That term counts 1 for a playbook written for an incident type read from the request's
    text (``inferred``), and an action no playbook lists is left out rather than a mismatch."""


SEED_LABEL_RULE = LabelRule(action=False, selective=False, unstated=False)
"""Seed 004 as written: the plain mean over the request's own labels."""
DEFAULT_LABEL_RULE = LabelRule()
"""The action label, selectivity weights and the unstated incident type."""

_LABEL_KEY = re.compile(
    r"^(?:[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?"  # optional DNS prefix
    r"[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")


def normalize_label_key(key: str) -> str:
    """Lower case, without the DNS prefix: ``Kubernaut.ai/Incident-Type`` → ``incident-type``."""
    return key.strip().lower().rsplit("/", 1)[-1]


def normalize_label_value(value: str) -> str:
    """Lower case, trimmed."""
    return value.strip().lower()


def parse_label(text: str) -> tuple[str, str]:
    """``key:value`` → normalised ``(key, value)``; ValueError says what is wrong."""
    key, sep, value = text.partition(":")
    key, value = key.strip().lower(), value.strip().lower()
    if not sep or not key or not value:
        raise ValueError(f"{text!r} is not key:value")
    if not _LABEL_KEY.match(key):
        raise ValueError(f"{text!r}: {key!r} is not a valid label key")
    if not _LABEL_VALUE.match(value):
        raise ValueError(f"{text!r}: {value!r} is not a valid label value")
    return normalize_label_key(key), value


@functools.lru_cache(maxsize=4096)
def _action_concepts(action: str) -> tuple[str, ...]:
    # Requests name a few actions over and over: each is matched against the vocabulary once.
    return tuple(c.removeprefix("~") for c in concepts(action.replace("_", " ")))


def action_label(action: str) -> str | None:
    """The request-side ``action`` label value: the action's first concept, else its name.

    None when the name is not a valid label value (it is then left out of the query).
    """
    found = _action_concepts(action)
    value = found[0] if found else normalize_label_value(action)
    return value if _LABEL_VALUE.match(value) else None


def action_labels(actions: Sequence[str]) -> frozenset[str]:
    """The ``action`` values a playbook accepts: its actions' names and their concepts."""
    accepted: set[str] = set()
    for action in actions:
        accepted.add(normalize_label_value(action))
        accepted.update(_action_concepts(action))
    return frozenset(accepted)


def playbook_labels(playbook: Playbook, *, actions: bool = True) -> dict[str, frozenset[str]]:
    """The values a playbook accepts per key, keys and values normalised.

    With ``actions`` (the default rule), the playbook's actions are accepted under ``action``
    unless it pins that key itself; the seed's rule knows only the playbook's own labels.
    """
    labels: dict[str, set[str]] = {}
    for key, values in playbook.labels.items():
        labels.setdefault(normalize_label_key(key), set()).update(
            normalize_label_value(v) for v in values
        )
    if actions and ACTION not in labels and playbook.actions:
        labels[ACTION] = set(action_labels(playbook.actions))
    return {k: frozenset(v) for k, v in labels.items()}


@dataclass(frozen=True, slots=True)
class LabelScores:
    """One query's labels against every row of a :class:`LabelTable`."""

    match: F64Array
    """Label match per row, 0–1."""
    contradicts: BoolArray
    """The row pins one of the request's keys to other values only."""
    targets_incident: BoolArray
    """The row pins ``incident-type`` to the request's value (it was written for this kind)."""


class LabelTable:
    """Every row's accepted labels as bit masks: one mask per key, one per (key, value).

    Rows are the catalog index's rows; the index grows, sets and clears them.
    """

    def __init__(self) -> None:
        self._capacity = 0
        self._rows: list[dict[str, frozenset[str]]] = []
        self._pinned: dict[str, BoolArray] = {}
        self._accepts: dict[tuple[str, str], BoolArray] = {}

    def grow(self, capacity: int) -> None:
        """Make room for ``capacity`` rows (new rows pin nothing)."""
        self._pinned = {k: resized(v, capacity) for k, v in self._pinned.items()}
        self._accepts = {k: resized(v, capacity) for k, v in self._accepts.items()}
        self._rows.extend([{}] * (capacity - self._capacity))
        self._capacity = capacity

    def _mask(self, table: dict[_K, BoolArray], key: _K) -> BoolArray:
        mask = table.get(key)
        if mask is None:
            mask = table[key] = np.zeros(self._capacity, dtype=bool)
        return mask

    def clear(self, row: int) -> None:
        """Forget the row's labels."""
        for key, values in self._rows[row].items():
            self._pinned[key][row] = False
            for value in values:
                self._accepts[(key, value)][row] = False
        self._rows[row] = {}

    def set(self, row: int, labels: Mapping[str, frozenset[str]]) -> None:
        """Replace the row's labels (normalised, as :func:`playbook_labels` gives them)."""
        self.clear(row)
        for key, values in labels.items():
            self._mask(self._pinned, key)[row] = True
            for value in values:
                self._mask(self._accepts, (key, value))[row] = True
        self._rows[row] = dict(labels)

    def contradiction(self, labels: Sequence[tuple[str, str]], row: int) -> str:
        """How the row pins the request's ``labels`` to other values, for a person: "it is
        written for incident-type node-upgrade, not the request's service-degradation" (empty
        when it pins none of them otherwise; the action is never a contradiction)."""
        written = self._rows[row] if 0 <= row < len(self._rows) else {}
        found = []
        for key, value in labels:
            accepted = written.get(key)
            if key == ACTION or accepted is None or value in accepted or WILDCARD in accepted:
                continue
            found.append(f"{key} {', '.join(sorted(accepted))}, not the request's {value}")
        return f"it is written for {'; '.join(found)}" if found else ""

    def score(
        self,
        labels: Sequence[tuple[str, str]],
        n: int,
        *,
        action: str | None = None,
        rule: LabelRule = SEED_LABEL_RULE,
        size: int | None = None,
        inferred: Sequence[str] = (),
    ) -> LabelScores:
        """The request's normalised ``labels`` (and its ``action`` value, when the rule counts
        it) against rows ``0..n-1``. ``size`` is how many playbooks the rows hold (the
        selectivity's denominator; default ``n``); rows not holding one pin nothing.
        ``inferred``: incident types read from the request's text when it states none (the
        unstated-incident term then counts 1 for a row written for one of them)."""
        items = list(labels)
        if rule.action and action is not None and all(k != ACTION for k, _ in items):
            items.append((ACTION, action))
        none = np.zeros(n, dtype=bool)
        if not items:
            return LabelScores(np.full(n, NO_LABELS), none, none.copy())
        size = max(size if size is not None else n, 1)
        total = np.zeros(n)
        weights = 0.0
        contradicts = np.zeros(n, dtype=bool)
        targets = np.zeros(n, dtype=bool)
        for key, value in items:
            pinned = self._pinned.get(key)
            accepts = np.zeros(n, dtype=bool)
            if pinned is not None:
                pinned = pinned[:n]
                for accepted in (value, WILDCARD):
                    mask = self._accepts.get((key, accepted))
                    if mask is not None:
                        accepts |= mask[:n]
            if key == ACTION and rule.infer and not accepts.any():
                # An action no playbook lists (``increase_memory``) tells no playbook apart:
                # it is left out rather than counted against every playbook that lists any.
                continue
            # Rows not in use pin nothing, so the count is over the catalog's playbooks.
            weight = 1.0 - int(accepts.sum()) / size if rule.selective else 1.0
            if pinned is None:
                total += weight * LABEL_UNPINNED
            else:
                total += weight * np.where(
                    pinned, np.where(accepts, LABEL_MATCH, LABEL_MISMATCH), LABEL_UNPINNED
                )
                if key != ACTION:  # listing other actions is no evidence against a playbook
                    contradicts |= pinned & ~accepts
                if key == INCIDENT_TYPE:
                    targets |= pinned & accepts
            weights += weight
        per_row = np.full(n, weights)
        if rule.unstated and all(k != INCIDENT_TYPE for k, _ in items):
            # What went wrong is not said: a playbook written for one kind of incident cannot
            # be confirmed, so its label part is pulled towards ½ by one full label's weight.
            written_for = self._pinned.get(INCIDENT_TYPE)
            if written_for is not None:
                pinned = written_for[:n]
                # An incident type read from the text confirms the rows written for it; it
                # never contradicts the others (a reading can be wrong): they stay unknown.
                fits = np.zeros(n, dtype=bool)
                for value in inferred:
                    mask = self._accepts.get((INCIDENT_TYPE, normalize_label_value(value)))
                    if mask is not None:
                        fits |= mask[:n]
                fits &= pinned
                total += np.where(fits, LABEL_MATCH, np.where(pinned, LABEL_UNPINNED, 0.0))
                per_row += pinned.astype(float)
                targets |= fits
        score = np.divide(total, per_row, out=np.full(n, NO_LABELS), where=per_row > 0)
        return LabelScores(score, contradicts, targets)
