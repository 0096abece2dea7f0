"""Playbook labels: normalisation, parsing, and the label-match part of the confidence.

**Label match** (0–1) is the mean, over the *request's* labels, of 1 when the playbook pins
the key to that value (or to ``*``), 0 when it pins the key to other values only, and ½ when
it does not pin the key at all — a generic playbook is neither evidence for nor against. A
request without labels scores ½ for every playbook. Keys compare without their DNS prefix
(``kubernaut.ai/incident-type`` is ``incident-type``); keys and values are case-insensitive.

**The action is a label too.** A request always names its action, and a playbook lists the
actions it runs; without that, a request whose only label is one every playbook accepts
(``environment: staging``) gives every playbook label match 1.0, and a rollback request could
be answered with a node-resize playbook. So the operator's query carries an implicit ``action``
label (the action's concept from :mod:`precedent.core.vocabulary` — ``reduce_replicas`` and
``scale_down`` are both ``scale-down`` — or its own name), and each playbook accepts its
actions and their concepts under that key. The action key scores like any other (1 / 0 / ½)
but never *contradicts*: a playbook is not excluded for listing other actions, it just gets no
credit for them. A request label ``action`` given explicitly wins over the implicit one.

:class:`LabelTable` is the one implementation: every playbook's labels as bit masks, so one
query is scored against the whole catalog with a few numpy operations.
"""

from __future__ import annotations

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
    "INCIDENT_TYPE",
    "LABEL_MATCH",
    "LABEL_MISMATCH",
    "LABEL_UNPINNED",
    "NO_LABELS",
    "WILDCARD",
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


def _action_concepts(action: str) -> list[str]:
    return [c.removeprefix("~") for c in concepts(action.replace("_", " "))]


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


def playbook_labels(playbook: Playbook) -> dict[str, frozenset[str]]:
    """The values a playbook accepts per key, keys and values normalised.

    The playbook's actions are accepted under ``action`` unless it pins that key itself.
    """
    labels: dict[str, set[str]] = {}
    for key, values in playbook.labels.items():
        labels.setdefault(normalize_label_key(key), set()).update(
            normalize_label_value(v) for v in values
        )
    if ACTION not in labels and playbook.actions:
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

    def score(self, labels: Sequence[tuple[str, str]], n: int) -> LabelScores:
        """The request's normalised ``labels`` against rows ``0..n-1``."""
        if not labels:
            return LabelScores(
                np.full(n, NO_LABELS), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
            )
        total = np.zeros(n)
        contradicts = np.zeros(n, dtype=bool)
        targets = np.zeros(n, dtype=bool)
        for key, value in labels:
            pinned = self._pinned.get(key)
            if pinned is None:
                total += LABEL_UNPINNED
                continue
            pinned = pinned[:n]
            accepts = np.zeros(n, dtype=bool)
            for accepted in (value, WILDCARD):
                mask = self._accepts.get((key, accepted))
                if mask is not None:
                    accepts |= mask[:n]
            total += np.where(
                pinned, np.where(accepts, LABEL_MATCH, LABEL_MISMATCH), LABEL_UNPINNED
            )
            if key != ACTION:  # listing other actions is no evidence against a playbook
                contradicts |= pinned & ~accepts
            if key == INCIDENT_TYPE:
                targets |= pinned & accepts
        return LabelScores(total / len(labels), contradicts, targets)
