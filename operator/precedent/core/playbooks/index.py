"""The in-memory playbook catalog: descriptions embedded once, labels as bit masks, numpy scoring.

**Semantic** (0–1) is the cosine of the request's text (action words and description) with the
playbook's text (:func:`~precedent.core.playbooks.model.playbook_text`) through the retrieval
:class:`~precedent.core.ports.Embedder`, calibrated onto 0–1
(:func:`~precedent.core.semantic.playbook_calibration_for`). The other parts and the rule that
lists playbooks live in their own modules; :meth:`CatalogIndex.search` puts them together for
every playbook at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import numpy as np
import numpy.typing as npt

from precedent.core.embedding import FloatMatrix, LexicalEmbedder
from precedent.core.playbooks._arrays import BoolArray, F64Array, resized
from precedent.core.playbooks.confidence import (
    ConfidenceParts,
    ConfidenceWeights,
    SuccessPrior,
    combine,
    evidence,
    historical_success,
)
from precedent.core.playbooks.decision import SCORE_TOLERANCE, qualifying
from precedent.core.playbooks.labels import INCIDENT_TYPE, LabelTable, playbook_labels
from precedent.core.playbooks.model import DEFAULT_SELECTION_MODEL, SelectionModel, playbook_text
from precedent.core.playbooks.phrases import asks_read_only, inferred_incident_types
from precedent.core.playbooks.profile import (
    ConceptTable,
    RequestConcepts,
    profile_calibration_for,
    request_concepts,
)
from precedent.core.playbooks.query import CatalogAnswer, PlaybookQuery, ScoredPlaybook
from precedent.core.ports import Embedder
from precedent.core.semantic import SemanticCalibration, playbook_calibration_for
from precedent.models import Playbook, PlaybookHistory

__all__ = ["CONCEPT_WEIGHT", "FACT_MARGIN", "CatalogIndex"]

CONCEPT_WEIGHT = 0.3
"""Weight of the concept similarity beside the embedder's cosine, before calibration: the
semantic part's cosine is ``(embedder cosine + 0.3 × concept similarity) / 1.3``."""

FACT_MARGIN = 0.15
"""How close (in evidence: semantic and label parts, history left out) the runner-up must be
for a fact that only it is written for to hold back the best-scored playbook."""


class CatalogIndex:
    """The in-memory catalog: descriptions embedded once, labels as bit masks, numpy scoring.

    ``upsert`` and ``remove`` change one playbook (one embedding, a few mask bits); rows are
    reused, and arrays grow by doubling. Not thread-safe: callers serialise mutations.
    """

    def __init__(
        self,
        playbooks: Iterable[Playbook] = (),
        *,
        embedder: Embedder | None = None,
        weights: ConfidenceWeights | None = None,
        prior: SuccessPrior | None = None,
        name: str = "in-process",
        calibration: SemanticCalibration | None = None,
        model: SelectionModel = DEFAULT_SELECTION_MODEL,
    ) -> None:
        self.model = model
        self.embedder: Embedder = embedder or LexicalEmbedder()
        # Raw cosines of a long request against a one-line description sit low; calibrate them
        # onto 0–1 like incident similarity so that the 0.4 semantic weight can count.
        self.calibration = calibration or (
            profile_calibration_for(self.embedder.name)
            if model.profile
            else playbook_calibration_for(self.embedder.name)
        )
        self.weights = weights or ConfidenceWeights()
        self.prior = prior or SuccessPrior()
        self.name = name
        self._capacity = 0
        self._high = 0  # rows in use are below this mark
        self._free: list[int] = []
        self._rows: dict[str, int] = {}
        self._items: list[Playbook | None] = []
        self._labels = LabelTable()
        self._concepts = ConceptTable()
        # Transposed (dim × rows): a sparse query reads only its non-zero dimensions' rows.
        self._vectors_t: FloatMatrix = np.zeros((self.embedder.dimension, 0), dtype=np.float32)
        self._active: BoolArray = np.zeros(0, dtype=bool)
        self._history: F64Array = np.zeros(0)
        self._new: BoolArray = np.zeros(0, dtype=bool)
        self._grow(16)
        batch = list(playbooks)
        if batch:
            vectors = self.embedder.embed([playbook_text(p, self.model) for p in batch])
            for playbook, vector in zip(batch, vectors, strict=True):
                self._put(playbook, vector)

    # -- mutation -------------------------------------------------------------------------

    def _grow(self, capacity: int) -> None:
        grown_t = np.zeros((self.embedder.dimension, capacity), dtype=np.float32)
        grown_t[:, : self._vectors_t.shape[1]] = self._vectors_t
        self._vectors_t = grown_t
        self._active = resized(self._active, capacity)
        self._history = resized(self._history, capacity)
        self._new = resized(self._new, capacity)
        self._labels.grow(capacity)
        self._concepts.grow(capacity)
        self._items.extend([None] * (capacity - self._capacity))
        self._capacity = capacity

    def _clear_row(self, row: int) -> None:
        self._labels.clear(row)
        self._concepts.clear(row)
        self._items[row] = None
        self._active[row] = False

    def _put(self, playbook: Playbook, vector: npt.NDArray[np.float32]) -> None:
        row = self._rows.get(playbook.id)
        if row is None:
            if self._free:
                row = self._free.pop()
            else:
                if self._high == self._capacity:
                    self._grow(self._capacity * 2)
                row = self._high
                self._high += 1
            self._rows[playbook.id] = row
        history = playbook.history
        self._labels.set(row, playbook_labels(playbook, actions=self.model.labels.action))
        if self.model.concepts:
            self._concepts.set(row, playbook)
        self._items[row] = playbook
        self._vectors_t[:, row] = vector
        self._history[row] = historical_success(
            float(history.successes), float(history.executions), self.prior
        )
        self._new[row] = history.executions == 0
        self._active[row] = True

    def upsert(self, playbook: Playbook) -> None:
        """Add a playbook, or replace the one with the same id (one embedding, no rebuild)."""
        self._put(playbook, self.embedder.embed([playbook_text(playbook, self.model)])[0])

    def set_history(self, playbook_id: str, history: PlaybookHistory) -> bool:
        """Replace a playbook's execution counts only: nothing is embedded again (the counts
        are not part of what is embedded). False if the playbook is not there."""
        row = self._rows.get(playbook_id)
        playbook = None if row is None else self._items[row]
        if row is None or playbook is None:
            return False
        self._items[row] = playbook.model_copy(update={"history": history})
        self._history[row] = historical_success(
            float(history.successes), float(history.executions), self.prior
        )
        self._new[row] = history.executions == 0
        return True

    def remove(self, playbook_id: str) -> bool:
        """Drop a playbook by id; False if it was not there."""
        row = self._rows.pop(playbook_id, None)
        if row is None:
            return False
        self._clear_row(row)
        self._free.append(row)
        return True

    def get(self, playbook_id: str) -> Playbook | None:
        """The playbook with this id, or None."""
        row = self._rows.get(playbook_id)
        return None if row is None else self._items[row]

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, playbook_id: object) -> bool:
        return playbook_id in self._rows

    # -- scoring --------------------------------------------------------------------------

    def _cosines(self, query: npt.NDArray[np.float32], n: int) -> F64Array:
        # Cosine with every row. A lexical query has a few hundred non-zero dimensions:
        # gathering those rows reads ~1% of the matrix.
        nonzero = np.flatnonzero(query)
        if nonzero.size * 4 < query.size:
            raw = query[nonzero] @ self._vectors_t[nonzero, :n]
        else:
            raw = query @ self._vectors_t[:, :n]
        return cast(F64Array, raw.astype(np.float64))

    def _calibrated(self, raw: F64Array) -> F64Array:
        floor, ceiling = self.calibration.floor, self.calibration.ceiling
        calibrated = (raw - floor) / (ceiling - floor)
        # float32 sums differ in the last bits with the order of terms; 6 places is plenty.
        return cast(F64Array, np.round(np.clip(calibrated, 0.0, 1.0), 6))

    def _scored(
        self,
        row: int,
        semantic: F64Array,
        labels: F64Array,
        confidence: F64Array,
        held_back: str = "",
    ) -> ScoredPlaybook:
        playbook = self._items[row]
        assert playbook is not None
        parts = ConfidenceParts(
            semantic=float(semantic[row]),
            label_match=float(labels[row]),
            historical=float(self._history[row]),
            confidence=float(confidence[row]),
        )
        return ScoredPlaybook(
            id=playbook.id,
            version=playbook.version,
            description=playbook.description,
            confidence=parts.confidence,
            parts=parts,
            executions=playbook.history.executions,
            held_back=held_back,
        )

    def _id(self, row: int) -> str:
        item = self._items[row]
        return item.id if item is not None else ""

    def _hold_back(
        self,
        concepts: RequestConcepts,
        action: str | None,
        kind: str,
        listed: BoolArray,
        fits: BoolArray,
        confidence: F64Array,
        evidence_: F64Array,
    ) -> dict[int, str]:
        """Listed rows held back, with the reason: the request asks for no change and the
        playbook makes one; its steps run kubectl on other workload kinds than the target's
        (``scale deployment/…`` for a StatefulSet); its id names a node, a node pool or a
        VM and the target is a workload; or the best-scored playbook is not written for a
        failure or object the request names and a near runner-up is (and none the other way
        round)."""
        n = listed.size
        held: dict[int, str] = {}
        candidates = fits.copy()
        other_kind = self._concepts.other_workload(kind, n)
        for row in np.flatnonzero(listed & other_kind).tolist():
            names = " and a ".join(self._concepts.workload_names(row))
            held[row] = f"its steps act on a {names}, and the target is a {kind.strip()}"
        candidates &= ~other_kind
        other_object = self._concepts.infrastructure_for_workload(kind, n)
        for row in np.flatnonzero(listed & other_object & ~other_kind).tolist():
            names = " or ".join(self._concepts.infrastructure_names(row))
            held[row] = f"it is written for a {names}, and the target is a {kind.strip()}"
        candidates &= ~other_object
        if asks_read_only(concepts.found, action or ""):
            mutating = self._concepts.mutating(n)
            for row in np.flatnonzero(listed & mutating).tolist():
                held[row] = "it changes things and the request asks for none"
            candidates &= ~mutating
        top = self._best(np.flatnonzero(listed & candidates), confidence, 1)
        if not top:
            return held
        best = top[0]
        candidates[best] = False
        runner = self._best(np.flatnonzero(candidates), confidence, 1)
        if not runner or evidence_[best] - evidence_[runner[0]] > FACT_MARGIN:
            return held
        other = runner[0]
        for_other = self._concepts.unshared_facts(concepts, other, best)
        if for_other and not self._concepts.unshared_facts(concepts, best, other):
            held[best] = (
                f"it is not written for {', '.join(for_other)}, which the request names and "
                f"{self._id(other)}, close behind, is"
            )
        return held

    def _best(self, rows: npt.NDArray[np.intp], confidence: F64Array, k: int) -> list[int]:
        # The k best rows by confidence, ties by id. numpy finds the head; Python orders it.
        if rows.size == 0:
            return []
        key = np.round(confidence[rows], 9)
        if rows.size > k:
            cutoff = np.partition(key, rows.size - k)[rows.size - k]
            rows = rows[key >= cutoff]  # the k best and anything tied with the k-th
        items = self._items

        def rank(row: int) -> tuple[float, str]:
            item = items[row]
            return (-round(float(confidence[row]), 9), item.id if item is not None else "")

        return sorted(rows.tolist(), key=rank)[:k]

    def search(self, query: PlaybookQuery) -> CatalogAnswer:
        """Score every playbook, keep the qualifying ones, best first."""
        n = self._high
        if not self._rows:
            return CatalogAnswer((), 0, self.name, catalog_size=0, consistent=0)
        active = self._active[:n]
        raw = self._cosines(self.embedder.embed([query.text])[0], n)
        inferred: tuple[str, ...] = ()
        same_object = None
        concepts: RequestConcepts | None = None
        if self.model.concepts:
            concepts = request_concepts(query.text, query.kind)
            similarity = self._concepts.similarity(concepts, active)
            raw = (raw + CONCEPT_WEIGHT * similarity) / (1.0 + CONCEPT_WEIGHT)
            same_object = self._concepts.same_object(concepts, n)
            if all(k != INCIDENT_TYPE for k, _ in query.labels):
                inferred = inferred_incident_types(concepts.found)
        semantic = self._calibrated(raw)
        labels = self._labels.score(
            query.labels,
            n,
            action=query.action,
            rule=self.model.labels,
            size=len(self._rows),
            inferred=inferred,
        )
        confidence = combine(semantic, labels.match, self._history[:n], self.weights)
        evidence_ = evidence(semantic, labels.match, self.weights)
        listed = qualifying(
            query.min_confidence,
            confidence,
            evidence_,
            active=active,
            new=self._new[:n],
            contradicts=labels.contradicts,
            targets_incident=labels.targets_incident,
            same_object=same_object,
        )
        held: dict[int, str] = {}
        if self.model.hold_back and concepts is not None:
            fits = active & ~labels.contradicts
            held = self._hold_back(
                concepts, query.action, query.kind, listed, fits, confidence, evidence_
            )
            for row in held:
                listed[row] = False
        rows = np.flatnonzero(listed)
        chosen = self._best(rows, confidence, query.max_results)
        below = self._best(np.flatnonzero(active & ~listed), confidence, 1)
        why_below = held.get(below[0], "") if below else ""
        if (
            below
            and not why_below
            and labels.contradicts[below[0]]
            and confidence[below[0]] >= query.min_confidence - SCORE_TOLERANCE
        ):
            # Not listed for the labels it pins, though it scored at or above the bar.
            why_below = self._labels.contradiction(query.labels, below[0])
        top = float(confidence[chosen[0]]) if chosen else -1.0
        return CatalogAnswer(
            candidates=tuple(self._scored(r, semantic, labels.match, confidence) for r in chosen),
            total=int(rows.size),
            source=self.name,
            catalog_size=len(self._rows),
            consistent=int((active & ~labels.contradicts).sum()),
            best_below=self._scored(below[0], semantic, labels.match, confidence, why_below)
            if below
            else None,
            inferred_incident_types=inferred,
            held_back=tuple(
                self._scored(r, semantic, labels.match, confidence, held[r])
                for r in self._best(np.fromiter(held, dtype=np.intp), confidence, len(held))
                if confidence[r] > top
            ),
        )
