"""What a playbook is for, read from all of it: the profile the semantic part compares with.

A one-line description is a poor target for a request's text: "Increases memory limits and
restarts pod" shares no word with "exit code 137". A playbook also says what it is for in its
id, its actions, the incident types it is written for, its steps (their names and the comments
that explain them) and the requests it served. Two things are built from that, once when a
playbook is added or changed, never per request:

* :func:`profile_text` — the text the embedder embeds for the playbook (the description first,
  then the rest), so the embedder's cosine reads more than the description;
* :class:`ConceptTable` — the playbook's **selection concepts**
  (:mod:`precedent.core.playbooks.phrases`): those of its id, description and incident types
  count fully, those only in its steps, actions and served requests count half. A request's
  concepts (from its text and its target's kind) are compared with every playbook's by an
  idf-weighted cosine — the **concept similarity** — so that a concept nearly every playbook
  has (a ``rollback`` step) says little and a rare one (``x509``) says much.

The same table knows each playbook's **objects** (what its id and description say it acts on:
a certificate, a credential, a node…), which the new-playbook rule reads: a new playbook is
never offered for another kind of object than the request's. It also knows the **workload
kinds its steps run kubectl on** (:func:`workload_kinds`: Deployment, StatefulSet, DaemonSet):
a playbook whose steps scale ``deployment/$DEPLOYMENT`` is not handed out for a StatefulSet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np

from precedent.core.playbooks._arrays import BoolArray, F64Array, resized
from precedent.core.playbooks.phrases import (
    FAILURE,
    OBJECT,
    SELECTION_CONCEPTS,
    concept_counts,
    is_read_only,
    kind_objects,
)
from precedent.core.semantic import SemanticCalibration
from precedent.models import Playbook

__all__ = [
    "PRIMARY_WEIGHT",
    "PROFILE_CALIBRATIONS",
    "SECONDARY_WEIGHT",
    "WORKLOAD_KINDS",
    "ConceptTable",
    "RequestConcepts",
    "own_facts",
    "playbook_concepts",
    "profile_calibration_for",
    "profile_text",
    "request_concepts",
    "workload_kinds",
]

WORKLOAD_KINDS: tuple[str, ...] = ("Deployment", "StatefulSet", "DaemonSet")
"""The workload kinds a playbook's kubectl steps are read for."""
_WORKLOAD_WORDS = {
    "deployment": "Deployment",
    "deployments": "Deployment",
    "deploy": "Deployment",
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
    "sts": "StatefulSet",
    "daemonset": "DaemonSet",
    "daemonsets": "DaemonSet",
    "ds": "DaemonSet",
}
_WORKLOAD_COLUMNS = {kind.lower(): column for column, kind in enumerate(WORKLOAD_KINDS)}
# A workload kind as kubectl takes it: ``deployment/web``, ``sts web``, ``daemonsets.apps``,
# ``deploy,sts``; not inside a flag (``--ignore-daemonsets``) or a word (``redeploy``).
_KUBECTL_KIND = re.compile(
    r"(?<![\w-])(deployments?|deploy|statefulsets?|sts|daemonsets?|ds)(?:\.apps)?(?=[/,\s]|$)",
    re.IGNORECASE,
)

PRIMARY_WEIGHT = 1.0
"""Weight of a concept in a playbook's id, description or incident types."""
SECONDARY_WEIGHT = 0.5
"""Weight of a concept found only in its actions, steps or served requests."""

PROFILE_CALIBRATIONS: Mapping[str, SemanticCalibration] = {
    "lexical": SemanticCalibration(floor=0.15, ceiling=0.40),
    "tfidf": SemanticCalibration(floor=0.15, ceiling=0.40),
    "onnx": SemanticCalibration(floor=0.20, ceiling=0.60),
    "http": SemanticCalibration(floor=0.20, ceiling=0.60),
}
"""Cosine → semantic part for a request against a playbook's profile, per embedder family: a
profile is longer than a description, so its cosines sit higher than the description's."""


def profile_calibration_for(embedder_name: str) -> SemanticCalibration:
    """The profile calibration of an embedder (``lexical-512`` → ``lexical``; unknown → http)."""
    family = embedder_name.split("-", 1)[0]
    return PROFILE_CALIBRATIONS.get(family, PROFILE_CALIBRATIONS["http"])


_INDEX: Mapping[str, int] = {c.name: i for i, c in enumerate(SELECTION_CONCEPTS)}
_SORTS = np.array([c.sort for c in SELECTION_CONCEPTS])
_OBJECT_COLUMNS: BoolArray = _SORTS == OBJECT
_FACT_COLUMNS: BoolArray = _SORTS == FAILURE
# What a workload runs on, not a workload: a playbook written for one of these is not for a
# request whose target is a workload (a StatefulSet's scale-down is no node pool's).
INFRASTRUCTURE_OBJECTS: tuple[str, ...] = ("node", "node-pool", "vm")
_INFRASTRUCTURE_COLUMNS: BoolArray = np.isin(
    np.array([c.name for c in SELECTION_CONCEPTS]), INFRASTRUCTURE_OBJECTS
)
# The failure concepts that imply an incident type: a playbook written for that type has them.
_FAILURES_OF_TYPE: Mapping[str, tuple[str, ...]] = {
    incident: tuple(
        c.name for c in SELECTION_CONCEPTS if c.sort == FAILURE and incident in c.incident_types
    )
    for incident in {t for c in SELECTION_CONCEPTS for t in c.incident_types}
}
_COMMENT = re.compile(r"^\s*#\s?(.*)$", re.MULTILINE)


def _words(identifier: str) -> str:
    return identifier.replace("-", " ").replace("_", " ")


def _step_text(playbook: Playbook) -> str:
    parts = []
    for step in playbook.steps:
        parts.append(_words(step.name))
        parts.extend(m.group(1) for m in _COMMENT.finditer(step.run))
    return ". ".join(p for p in parts if p)


def _primary_text(playbook: Playbook) -> str:
    return f"{_words(playbook.id)}. {playbook.description}"


def _secondary_text(playbook: Playbook) -> str:
    actions = ", ".join(_words(a) for a in playbook.actions)
    examples = ". ".join(playbook.examples)
    return ". ".join(p for p in (actions, _step_text(playbook), examples) if p)


def profile_text(playbook: Playbook) -> str:
    """Description, id, actions, incident types, steps (names and comments) and the requests
    it served, in that order: what the embedder embeds for a playbook under a profile model."""
    types = ", ".join(_words(t) for t in playbook.labels.get("incident-type", ()))
    head = f"{playbook.description} {_words(playbook.id)}."
    if types:
        head += f" For {types}."
    return f"{head} {_secondary_text(playbook)}".strip()


def own_facts(playbook: Playbook) -> BoolArray:
    """The failures and objects the playbook's own id and description name (not those implied
    by its incident types): what it is written for, which a near neighbour may not be."""
    own = np.zeros(len(SELECTION_CONCEPTS), dtype=bool)
    for name in concept_counts(_primary_text(playbook)):
        own[_INDEX[name]] = _FACT_COLUMNS[_INDEX[name]]
    return own


def infrastructure_named(playbook: Playbook) -> BoolArray:
    """The nodes, node pools or VMs (``INFRASTRUCTURE_OBJECTS``) the playbook's id names: what
    it is written for. Its description may name them in passing (``diagnostics-collection``
    reads a workload's or a node's logs) without being written for them."""
    named = np.zeros(len(SELECTION_CONCEPTS), dtype=bool)
    for name in concept_counts(_words(playbook.id)):
        named[_INDEX[name]] = _INFRASTRUCTURE_COLUMNS[_INDEX[name]]
    return named


def playbook_concepts(playbook: Playbook) -> tuple[F64Array, BoolArray]:
    """The playbook's concept weights (one per selection concept) and its object mask."""
    weights = np.zeros(len(SELECTION_CONCEPTS))
    primary = concept_counts(_primary_text(playbook))
    for name in concept_counts(_secondary_text(playbook)):
        weights[_INDEX[name]] = SECONDARY_WEIGHT
    for name in primary:
        weights[_INDEX[name]] = PRIMARY_WEIGHT
    for key, values in playbook.labels.items():
        if key.strip().lower().rsplit("/", 1)[-1] != "incident-type":
            continue
        for value in values:
            for name in _FAILURES_OF_TYPE.get(value.strip().lower(), ()):
                weights[_INDEX[name]] = PRIMARY_WEIGHT
    found_objects = np.zeros(len(SELECTION_CONCEPTS), dtype=bool)
    for name in primary:
        found_objects[_INDEX[name]] = _OBJECT_COLUMNS[_INDEX[name]]
    return weights, found_objects


def workload_kinds(playbook: Playbook) -> frozenset[str]:
    """The workload kinds (``WORKLOAD_KINDS``) the playbook's steps run kubectl on, read from
    each command after ``kubectl``; empty when its steps name none (``$KIND/$NAME``, no
    kubectl)."""
    found: set[str] = set()
    for step in playbook.steps:
        for line in step.run.splitlines():
            _, kubectl, command = line.partition("kubectl")
            if not kubectl:
                continue
            for match in _KUBECTL_KIND.finditer(command):
                found.add(_WORKLOAD_WORDS[match.group(1).lower()])
    return frozenset(found)


class RequestConcepts:
    """A request's selection concepts: what its text and its target's kind name."""

    __slots__ = ("facts", "found", "objects", "vector")

    def __init__(self, found: Mapping[str, int], kind_objects_: Sequence[str]) -> None:
        self.found = dict(found)
        for name in kind_objects_:
            self.found.setdefault(name, 1)
        self.vector = np.zeros(len(SELECTION_CONCEPTS))
        for name in self.found:
            self.vector[_INDEX[name]] = 1.0
        self.objects: BoolArray = (self.vector > 0) & _OBJECT_COLUMNS
        self.facts: BoolArray = (self.vector > 0) & _FACT_COLUMNS


def request_concepts(text: str, kind: str = "") -> RequestConcepts:
    """The concepts of a request's text and of its target's kind."""
    return RequestConcepts(concept_counts(text), kind_objects(kind) if kind else ())


class ConceptTable:
    """Every playbook's concept weights and objects, rows as the catalog index's rows."""

    def __init__(self) -> None:
        width = len(SELECTION_CONCEPTS)
        self._weights: F64Array = np.zeros((0, width))
        self._objects: BoolArray = np.zeros((0, width), dtype=bool)
        self._own: BoolArray = np.zeros((0, width), dtype=bool)
        self._read_only: BoolArray = np.zeros(0, dtype=bool)
        self._mutating: BoolArray = np.zeros(0, dtype=bool)
        self._kinds: BoolArray = np.zeros((0, len(WORKLOAD_KINDS)), dtype=bool)
        self._infrastructure: BoolArray = np.zeros((0, width), dtype=bool)

    def grow(self, capacity: int) -> None:
        """Make room for ``capacity`` rows (new rows have no concepts)."""
        self._weights = resized(self._weights, capacity)
        self._objects = resized(self._objects, capacity)
        self._own = resized(self._own, capacity)
        self._read_only = resized(self._read_only, capacity)
        self._mutating = resized(self._mutating, capacity)
        self._kinds = resized(self._kinds, capacity)
        self._infrastructure = resized(self._infrastructure, capacity)

    def set(self, row: int, playbook: Playbook) -> None:
        """The row's concepts, read from the playbook."""
        self._weights[row], self._objects[row] = playbook_concepts(playbook)
        self._own[row] = own_facts(playbook)
        self._read_only[row] = is_read_only(playbook.actions)
        self._mutating[row] = bool(playbook.actions) and not self._read_only[row]
        kinds = workload_kinds(playbook)
        self._kinds[row] = [kind in kinds for kind in WORKLOAD_KINDS]
        self._infrastructure[row] = infrastructure_named(playbook)

    def clear(self, row: int) -> None:
        """Forget the row."""
        self._weights[row] = 0.0
        self._objects[row] = False
        self._own[row] = False
        self._read_only[row] = False
        self._mutating[row] = False
        self._kinds[row] = False
        self._infrastructure[row] = False

    def other_workload(self, kind: str, n: int) -> BoolArray:
        """Rows whose steps run kubectl on workload kinds, none of them ``kind`` (a target's
        kind; nothing for a kind that is no workload kind)."""
        column = _WORKLOAD_COLUMNS.get(kind.strip().lower())
        if column is None:
            return np.zeros(n, dtype=bool)
        rows = self._kinds[:n]
        return cast(BoolArray, np.any(rows, axis=1) & ~rows[:, column])

    def infrastructure_for_workload(self, kind: str, n: int) -> BoolArray:
        """Rows whose id names a node, a node pool or a VM (``node-drain-safe``,
        ``vm-resize-drained``), when the target is a workload (``kind`` one of
        ``WORKLOAD_KINDS``): the request's action changes the workload, not what it runs on,
        even when its text gives that as the reason ("scale kafka down so the node pool can
        shrink")."""
        if kind.strip().lower() not in _WORKLOAD_COLUMNS:
            return np.zeros(n, dtype=bool)
        return cast(BoolArray, np.any(self._infrastructure[:n], axis=1))

    def infrastructure_names(self, row: int) -> list[str]:
        """The nodes, node pools or VMs the row's id names."""
        return [SELECTION_CONCEPTS[i].name for i in np.flatnonzero(self._infrastructure[row])]

    def workload_names(self, row: int) -> list[str]:
        """The workload kinds the row's steps run kubectl on."""
        return [k for k, on in zip(WORKLOAD_KINDS, self._kinds[row].tolist(), strict=True) if on]

    def mutating(self, n: int) -> BoolArray:
        """Rows whose playbook lists an action that changes something."""
        return self._mutating[:n]

    def unshared_facts(self, request: RequestConcepts, row: int, other: int) -> list[str]:
        """The request's failures and objects that ``row``'s own text names and ``other``'s
        does not: facts that tell the two apart in favour of ``row``."""
        only = request.facts & self._own[row] & ~self._own[other]
        return [SELECTION_CONCEPTS[i].name for i in np.flatnonzero(only)]

    def similarity(self, request: RequestConcepts, active: BoolArray) -> F64Array:
        """Idf-weighted cosine of the request's concepts with every active row's, 0–1."""
        n = active.size
        weights = self._weights[:n] * active[:, None]
        documents = int(active.sum())
        if documents == 0 or not request.vector.any():
            return np.zeros(n)
        df = (weights > 0).sum(axis=0)
        idf = np.log1p(documents / np.maximum(df, 1))
        query = request.vector * idf
        rows = weights * idf
        norms = np.linalg.norm(rows, axis=1) * float(np.linalg.norm(query))
        dots = rows @ query
        out: F64Array = np.divide(dots, norms, out=np.zeros(n), where=norms > 0)
        return out

    def same_object(self, request: RequestConcepts, n: int) -> BoolArray:
        """Rows that act on one of the request's objects, or where either side names none."""
        rows = self._objects[:n]
        if not request.objects.any():
            return np.ones(n, dtype=bool)
        shared = np.any(rows & request.objects, axis=1)
        names_none = np.logical_not(np.any(rows, axis=1))
        return cast(BoolArray, np.logical_or(shared, names_none))
