"""Playbook confidence and selection (seed 004, BR-AI-057).

The formula, its one home::

    confidence = 0.4 × semantic + 0.4 × label match + 0.2 × historical success

* **semantic** (0–1): cosine of the request's text (action words and description) with the
  playbook's description through the retrieval :class:`~precedent.core.ports.Embedder`,
  calibrated onto 0–1 (:func:`~precedent.core.semantic.playbook_calibration_for`).
* **label match** (0–1): the mean, over the request's labels, of 1 when the playbook pins the
  key to that value (or to ``*``), 0 when it pins the key to other values, and ½ when it does
  not pin the key at all — a generic playbook is neither evidence for nor against. A request
  without labels scores ½ for every playbook. Keys compare without their DNS prefix
  (``kubernaut.ai/incident-type`` is ``incident-type``); keys and values are case-insensitive.
* **historical success** (0–1): the success rate smoothed with a Beta(1, 1) prior,
  ``(successes + 1) / (executions + 2)``: a new playbook scores ½ — listed, not trusted — and
  one success gives ⅔, not 1.

Weights and prior are configurable (:class:`ConfidenceWeights`, :class:`SuccessPrior`).

The seed's worked examples do not add up under its own weights: "0.92 = semantic 0.88 +
labels 1.0 + historical 0.95" is 0.942, "0.78 = 0.85 + 0.95 + 0.50" is 0.82, "0.65 = 0.80 +
1.0 + 0.0" is 0.72. The tests check the formula and the order it produces, not those totals.

Selection: every playbook is scored; those at or above ``min_confidence`` qualify. New
playbooks are always listed when they are relevant: a **new** playbook (no executions)
qualifies below ``min_confidence`` when it contradicts none of the request's labels, either
pins the request's ``incident-type`` (it was written for this kind of incident) or has an
evidence part — semantic and label parts re-weighted to sum to 1 — that reaches
``min_confidence``, and no established playbook that also fits the labels scored higher and
was turned away: a new playbook is a best guess where nothing proven fits, never a way around
a proven one. Its reported confidence is the full formula, low until it has run, and the
rationale says when a pick is below ``min_confidence``.

Qualifying playbooks are sorted by confidence (ties by id), cut to ``max_results``; the first
is selected, the next three are alternatives. When none qualifies the answer is a
``manual_investigation`` recommendation that says whether nothing matched (every playbook pins
a request label to another value, or the catalog is empty) or nothing was confident enough.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from precedent.core.embedding import FloatMatrix, LexicalEmbedder
from precedent.core.ports import Embedder, PlaybookDecision
from precedent.core.semantic import SemanticCalibration, playbook_calibration_for
from precedent.models import (
    Alternative,
    Playbook,
    PlaybookSelection,
    Recommendation,
    RemediationRequestSpec,
)

__all__ = [
    "DEFAULT_MAX_RESULTS",
    "DEFAULT_MIN_CONFIDENCE",
    "INCIDENT_TYPE",
    "LABEL_MATCH",
    "LABEL_MISMATCH",
    "LABEL_UNPINNED",
    "MAX_ALTERNATIVES",
    "MAX_DESCRIPTION_BYTES",
    "MAX_RESULTS_LIMIT",
    "NO_LABELS",
    "CatalogAnswer",
    "CatalogIndex",
    "ConfidenceParts",
    "ConfidenceWeights",
    "PlaybookCatalog",
    "PlaybookQuery",
    "ScoredPlaybook",
    "SelectionMethod",
    "SuccessPrior",
    "combine",
    "decide",
    "historical_success",
    "label_match",
    "label_score",
    "normalize_label_key",
    "normalize_label_value",
    "parse_label",
    "score_playbook",
    "unavailable",
]

LABEL_MATCH = 1.0
LABEL_MISMATCH = 0.0
LABEL_UNPINNED = 0.5
NO_LABELS = 0.5
WILDCARD = "*"
INCIDENT_TYPE = "incident-type"

DEFAULT_MIN_CONFIDENCE = 0.7
DEFAULT_MAX_RESULTS = 10
MAX_RESULTS_LIMIT = 100
MAX_ALTERNATIVES = 3
MAX_DESCRIPTION_BYTES = 8192
NEAR_MISS = 0.1  # a playbook this close below min_confidence is worth a look by hand
MAX_RATIONALE = 4096  # status.playbook.rationale and status.recommendation.reason (CRD limits)
MAX_SUGGESTION = 1024  # each of status.recommendation.suggestedActions

SelectionMethod = Literal["data_driven", "fallback"]

_EPS = 1e-9
_Num = TypeVar("_Num", float, npt.NDArray[np.float64])
_K = TypeVar("_K", str, tuple[str, str])
_G = TypeVar("_G", bound=np.generic)


# ---------------------------------------------------------------------------------------------
# The formula
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfidenceWeights:
    """Weights of the three parts; non-negative and summing to 1."""

    semantic: float = 0.4
    """Weight of semantic similarity."""
    labels: float = 0.4
    """Weight of label match."""
    historical: float = 0.2
    """Weight of smoothed historical success."""

    def __post_init__(self) -> None:
        parts = (self.semantic, self.labels, self.historical)
        if any(w < 0 for w in parts):
            raise ValueError(f"confidence weights must be ≥ 0, got {parts}")
        if abs(sum(parts) - 1.0) > 1e-6:
            raise ValueError(f"confidence weights must sum to 1, got {sum(parts):g}")


@dataclass(frozen=True, slots=True)
class SuccessPrior:
    """Pseudo-counts added to a playbook's record before its success rate is taken."""

    successes: float = 1.0
    """Pseudo-successes added to every record."""
    failures: float = 1.0
    """Pseudo-failures added to every record."""

    def __post_init__(self) -> None:
        if self.successes <= 0 or self.failures <= 0:
            raise ValueError("success prior pseudo-counts must be > 0")


def historical_success(successes: _Num, executions: _Num, prior: SuccessPrior) -> _Num:
    """Smoothed success rate ``(successes + a) / (executions + a + b)``; a = b = 1 by default."""
    return (successes + prior.successes) / (executions + prior.successes + prior.failures)


def combine(semantic: _Num, labels: _Num, historical: _Num, weights: ConfidenceWeights) -> _Num:
    """The confidence: weighted sum of the three parts (works on floats and numpy arrays)."""
    return weights.semantic * semantic + weights.labels * labels + weights.historical * historical


def _evidence(semantic: _Num, labels: _Num, weights: ConfidenceWeights) -> _Num:
    # A new playbook's semantic and label parts, re-weighted to sum to 1 (history set aside).
    known = weights.semantic + weights.labels
    if known <= 0:
        return semantic * 0.0
    return (weights.semantic * semantic + weights.labels * labels) / known


@dataclass(frozen=True, slots=True)
class ConfidenceParts:
    """The three parts of one playbook's confidence, and their weighted total."""

    semantic: float
    """Semantic similarity, 0–1."""
    labels: float
    """Label match, 0–1."""
    historical: float
    """Smoothed historical success, 0–1."""
    confidence: float
    """The weighted total, 0–1."""

    def components(self) -> dict[str, float]:
        """``{semantic, labelMatch, historical}`` rounded to 4 places, as the status shows."""
        return {
            "semantic": round(self.semantic, 4),
            "labelMatch": round(self.labels, 4),
            "historical": round(self.historical, 4),
        }

    def strongest(self, weights: ConfidenceWeights) -> tuple[str, float]:
        """The part that contributed most to the total: (its name, its unweighted value)."""
        parts = [
            ("semantic similarity", self.semantic, weights.semantic),
            ("label match", self.labels, weights.labels),
            ("historical success", self.historical, weights.historical),
        ]
        name, value, _ = max(parts, key=lambda p: p[1] * p[2])
        return name, value


# ---------------------------------------------------------------------------------------------
# Labels
# ---------------------------------------------------------------------------------------------

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


def label_score(accepted: Mapping[str, Collection[str]], key: str, value: str) -> float:
    """One request label against a playbook's labels: match 1, pinned to another 0, unpinned ½.

    ``accepted`` must have normalised keys and values (see :func:`_playbook_labels`).
    """
    values = accepted.get(key)
    if values is None:
        return LABEL_UNPINNED
    return LABEL_MATCH if value in values or WILDCARD in values else LABEL_MISMATCH


def label_match(
    accepted: Mapping[str, Collection[str]], labels: Sequence[tuple[str, str]]
) -> float:
    """Mean :func:`label_score` over the request's labels; ½ when it has none."""
    if not labels:
        return NO_LABELS
    return sum(label_score(accepted, k, v) for k, v in labels) / len(labels)


def _playbook_labels(playbook: Playbook) -> dict[str, frozenset[str]]:
    labels: dict[str, set[str]] = {}
    for key, values in playbook.labels.items():
        labels.setdefault(normalize_label_key(key), set()).update(
            normalize_label_value(v) for v in values
        )
    return {k: frozenset(v) for k, v in labels.items()}


# ---------------------------------------------------------------------------------------------
# Queries and answers
# ---------------------------------------------------------------------------------------------


def _truncate_utf8(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore")


@dataclass(frozen=True, slots=True)
class PlaybookQuery:
    """What the catalog is asked: text, labels and the two selection parameters."""

    text: str
    """Request text: its action in words and its description (the API's ``description``)."""
    labels: tuple[tuple[str, str], ...] = ()
    """Normalised ``(key, value)`` pairs, sorted by key."""
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    """Lowest confidence listed (new playbooks aside), 0–1."""
    max_results: int = DEFAULT_MAX_RESULTS
    """Most playbooks returned, 1–100."""
    subject: str = field(default="", compare=False)
    """The target, for suggested actions; not part of the query's identity."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {self.min_confidence}")
        if not 1 <= self.max_results <= MAX_RESULTS_LIMIT:
            raise ValueError(
                f"max_results must be in 1..{MAX_RESULTS_LIMIT}, got {self.max_results}"
            )

    @classmethod
    def create(
        cls,
        text: str,
        labels: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        *,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
        max_results: int = DEFAULT_MAX_RESULTS,
        subject: str = "",
    ) -> PlaybookQuery:
        """Normalise labels (keys without prefix, lower case, sorted); a key twice is an error."""
        pairs = labels.items() if isinstance(labels, Mapping) else labels
        seen: dict[str, str] = {}
        for key, value in pairs:
            k, v = normalize_label_key(key), normalize_label_value(value)
            if not k or not v:
                raise ValueError(f"label {key!r}: empty key or value")
            if seen.get(k, v) != v:
                raise ValueError(f"label {k!r} given twice: {seen[k]!r} and {v!r}")
            seen[k] = v
        return cls(
            text=text,
            labels=tuple(sorted(seen.items())),
            min_confidence=min_confidence,
            max_results=max_results,
            subject=subject,
        )

    @classmethod
    def from_spec(
        cls,
        spec: RemediationRequestSpec,
        *,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
        max_results: int = DEFAULT_MAX_RESULTS,
    ) -> PlaybookQuery:
        """The request's action words and description, its labels, its target as the subject."""
        action = spec.action.replace("_", " ")
        text = f"{action}. {spec.description}" if spec.description else action
        target = spec.target
        subject = f"{target.kind}/{target.name}"
        if target.namespace:
            subject = f"{target.kind} {target.namespace}/{target.name}"
        return cls.create(
            _truncate_utf8(text, MAX_DESCRIPTION_BYTES),
            spec.labels,
            min_confidence=min_confidence,
            max_results=max_results,
            subject=subject,
        )

    @property
    def incident_type(self) -> str:
        """The ``incident-type`` label, or ``unknown``."""
        return dict(self.labels).get(INCIDENT_TYPE, "unknown")

    def cache_key(self) -> str:
        """The normalised query: whitespace-collapsed lower-case text, labels, parameters."""
        text = " ".join(self.text.lower().split())
        return json.dumps(
            [text, self.labels, round(self.min_confidence, 6), self.max_results],
            separators=(",", ":"),
        )


@dataclass(frozen=True, slots=True)
class ScoredPlaybook:
    """One playbook with its confidence; ``parts`` only when scored in this process."""

    id: str
    """Playbook id."""
    version: str
    """Playbook version."""
    description: str
    """What the playbook does."""
    confidence: float
    """Confidence, 0–1."""
    parts: ConfidenceParts | None = None
    """The parts of the confidence (None through the HTTP path)."""
    executions: int | None = None
    """How many times it ran (None through the HTTP path)."""

    @property
    def is_new(self) -> bool:
        """No execution history (unknown through the HTTP path)."""
        return self.executions == 0


@dataclass(frozen=True, slots=True)
class CatalogAnswer:
    """A catalog's answer to one query."""

    candidates: tuple[ScoredPlaybook, ...]
    """Qualifying playbooks, best first, at most ``max_results``."""
    total: int
    """How many qualified before the ``max_results`` cut."""
    source: str
    """Which catalog answered (``in-process`` or the Context API's URL)."""
    catalog_size: int | None = None
    """Playbooks in the catalog (unknown through the HTTP path)."""
    consistent: int | None = None
    """Playbooks that contradict none of the request's labels (in-process only)."""
    best_below: ScoredPlaybook | None = None
    """The best playbook that did not qualify (in-process only)."""


class PlaybookCatalog(Protocol):
    """The catalog port: answers a playbook query. Adapters: in-process and HTTP."""

    @property
    def kind(self) -> str:
        """``in_process`` or ``http``: the metrics label for this catalog."""
        ...

    @property
    def name(self) -> str:
        """What to call this catalog in rationales and logs."""
        ...

    async def search(self, query: PlaybookQuery) -> CatalogAnswer:
        """Scored, qualifying playbooks; raises ``CatalogUnavailable`` when it cannot answer."""
        ...


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------


def score_playbook(
    playbook: Playbook,
    query: PlaybookQuery,
    semantic: float,
    *,
    weights: ConfidenceWeights | None = None,
    prior: SuccessPrior | None = None,
) -> ConfidenceParts:
    """Reference scoring of one playbook, given its semantic similarity to the query."""
    weights = weights or ConfidenceWeights()
    prior = prior or SuccessPrior()
    labels = label_match(_playbook_labels(playbook), query.labels)
    history = historical_success(
        float(playbook.history.successes), float(playbook.history.executions), prior
    )
    semantic = min(max(semantic, 0.0), 1.0)
    return ConfidenceParts(semantic, labels, history, combine(semantic, labels, history, weights))


BoolArray = npt.NDArray[np.bool_]
F64Array = npt.NDArray[np.float64]


def _resized(array: npt.NDArray[_G], capacity: int) -> npt.NDArray[_G]:
    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


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
    ) -> None:
        self.embedder: Embedder = embedder or LexicalEmbedder()
        # Raw cosines of a long request against a one-line description sit low; calibrate them
        # onto 0–1 like incident similarity so that the 0.4 semantic weight can count.
        self.calibration = calibration or playbook_calibration_for(self.embedder.name)
        self.weights = weights or ConfidenceWeights()
        self.prior = prior or SuccessPrior()
        self.name = name
        self._capacity = 0
        self._high = 0  # rows in use are below this mark
        self._free: list[int] = []
        self._rows: dict[str, int] = {}
        self._items: list[Playbook | None] = []
        self._labels: list[dict[str, frozenset[str]]] = []
        # Transposed (dim × rows): a sparse query reads only its non-zero dimensions' rows.
        self._vectors_t: FloatMatrix = np.zeros((self.embedder.dimension, 0), dtype=np.float32)
        self._active: BoolArray = np.zeros(0, dtype=bool)
        self._history: F64Array = np.zeros(0)
        self._new: BoolArray = np.zeros(0, dtype=bool)
        self._pinned: dict[str, BoolArray] = {}
        self._accepts: dict[tuple[str, str], BoolArray] = {}
        self._grow(16)
        batch = list(playbooks)
        if batch:
            vectors = self.embedder.embed([p.description for p in batch])
            for playbook, vector in zip(batch, vectors, strict=True):
                self._put(playbook, vector)

    # -- mutation -------------------------------------------------------------------------

    def _grow(self, capacity: int) -> None:
        grown_t = np.zeros((self.embedder.dimension, capacity), dtype=np.float32)
        grown_t[:, : self._vectors_t.shape[1]] = self._vectors_t
        self._vectors_t = grown_t
        self._active = _resized(self._active, capacity)
        self._history = _resized(self._history, capacity)
        self._new = _resized(self._new, capacity)
        self._pinned = {k: _resized(v, capacity) for k, v in self._pinned.items()}
        self._accepts = {k: _resized(v, capacity) for k, v in self._accepts.items()}
        self._items.extend([None] * (capacity - self._capacity))
        self._labels.extend([{}] * (capacity - self._capacity))
        self._capacity = capacity

    def _mask(self, table: dict[_K, BoolArray], key: _K) -> BoolArray:
        mask = table.get(key)
        if mask is None:
            mask = table[key] = np.zeros(self._capacity, dtype=bool)
        return mask

    def _clear_row(self, row: int) -> None:
        for key, values in self._labels[row].items():
            self._pinned[key][row] = False
            for value in values:
                self._accepts[(key, value)][row] = False
        self._labels[row] = {}
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
        else:
            self._clear_row(row)
        labels = _playbook_labels(playbook)
        for key, values in labels.items():
            self._mask(self._pinned, key)[row] = True
            for value in values:
                self._mask(self._accepts, (key, value))[row] = True
        history = playbook.history
        self._labels[row] = labels
        self._items[row] = playbook
        self._vectors_t[:, row] = vector
        self._history[row] = historical_success(
            float(history.successes), float(history.executions), self.prior
        )
        self._new[row] = history.executions == 0
        self._active[row] = True

    def upsert(self, playbook: Playbook) -> None:
        """Add a playbook, or replace the one with the same id (one embedding, no rebuild)."""
        self._put(playbook, self.embedder.embed([playbook.description])[0])

    def remove(self, playbook_id: str) -> bool:
        """Drop a playbook by id; False if it was not there."""
        row = self._rows.pop(playbook_id, None)
        if row is None:
            return False
        self._clear_row(row)
        self._free.append(row)
        return True

    def get(self, playbook_id: str) -> Playbook | None:
        """A playbook by id, or None."""
        row = self._rows.get(playbook_id)
        return None if row is None else self._items[row]

    def playbooks(self) -> list[Playbook]:
        """Every playbook, sorted by id."""
        return sorted((p for p in self._items if p is not None), key=lambda p: p.id)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, playbook_id: object) -> bool:
        return playbook_id in self._rows

    # -- scoring --------------------------------------------------------------------------

    def _semantic(self, query: npt.NDArray[np.float32], n: int) -> F64Array:
        # Cosine with every row, clipped to 0–1 (cosine_similarity's rule). A lexical query has
        # a few hundred non-zero dimensions: gathering those rows reads ~1% of the matrix.
        nonzero = np.flatnonzero(query)
        if nonzero.size * 4 < query.size:
            raw = query[nonzero] @ self._vectors_t[nonzero, :n]
        else:
            raw = query @ self._vectors_t[:, :n]
        floor, ceiling = self.calibration.floor, self.calibration.ceiling
        calibrated = (raw.astype(np.float64) - floor) / (ceiling - floor)
        # float32 sums differ in the last bits with the order of terms; 6 places is plenty.
        scores = cast(F64Array, np.round(np.clip(calibrated, 0.0, 1.0), 6))
        return scores

    def _label_parts(self, query: PlaybookQuery) -> tuple[F64Array, BoolArray, BoolArray]:
        # (label match, pins some label to another value, pins the request's incident type)
        n = self._high
        if not query.labels:
            return np.full(n, NO_LABELS), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        total = np.zeros(n)
        mismatch = np.zeros(n, dtype=bool)
        targeted = np.zeros(n, dtype=bool)
        for key, value in query.labels:
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
            scores = np.where(accepts, LABEL_MATCH, LABEL_MISMATCH)
            total += np.where(pinned, scores, LABEL_UNPINNED)
            mismatch |= pinned & ~accepts
            if key == INCIDENT_TYPE:
                targeted |= pinned & accepts
        return total / len(query.labels), mismatch, targeted

    def _scored(
        self, row: int, semantic: F64Array, labels: F64Array, confidence: F64Array
    ) -> ScoredPlaybook:
        playbook = self._items[row]
        assert playbook is not None
        parts = ConfidenceParts(
            float(semantic[row]),
            float(labels[row]),
            float(self._history[row]),
            float(confidence[row]),
        )
        return ScoredPlaybook(
            id=playbook.id,
            version=playbook.version,
            description=playbook.description,
            confidence=parts.confidence,
            parts=parts,
            executions=playbook.history.executions,
        )

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
        """Score every playbook, keep the qualifying ones, best first (see the module doc)."""
        n = self._high
        if not self._rows:
            return CatalogAnswer((), 0, self.name, catalog_size=0, consistent=0)
        q = self.embedder.embed([query.text])[0]
        semantic = self._semantic(q, n)
        labels, mismatch, targeted = self._label_parts(query)
        history = self._history[:n]
        confidence = combine(semantic, labels, history, self.weights)
        active = self._active[:n]
        threshold = query.min_confidence - _EPS
        evidence = _evidence(semantic, labels, self.weights)
        new = self._new[:n]
        fits = active & ~mismatch
        turned_away = fits & ~new & (confidence < threshold)
        bar = float(confidence[turned_away].max()) if turned_away.any() else 0.0
        new_ok = new & fits & (targeted | (evidence >= threshold)) & (confidence >= bar - _EPS)
        qualifies = active & ((confidence >= threshold) | new_ok)
        rows = np.flatnonzero(qualifies)
        total = int(rows.size)
        chosen = self._best(rows, confidence, query.max_results)
        rest = np.flatnonzero(active & ~qualifies)
        below = self._best(rest, confidence, 1)
        best_below = self._scored(below[0], semantic, labels, confidence) if below else None
        return CatalogAnswer(
            candidates=tuple(self._scored(r, semantic, labels, confidence) for r in chosen),
            total=total,
            source=self.name,
            catalog_size=len(self._rows),
            consistent=int(fits.sum()),
            best_below=best_below,
        )


# ---------------------------------------------------------------------------------------------
# Decision
# ---------------------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _percent(value: float) -> str:
    return f"{value:.2f}"


def _rationale(
    pick: ScoredPlaybook,
    query: PlaybookQuery,
    weights: ConfidenceWeights,
    source_note: str | None,
    alternatives: int,
) -> str:
    sentence = f"Selected {pick.id} {pick.version} with confidence {_percent(pick.confidence)}"
    if pick.parts is not None:
        part, value = pick.parts.strongest(weights)
        sentence += f", strongest on {part} ({_percent(value)})"
    else:
        sentence += " (the Context API reports the total only, not its parts)"
    if pick.is_new:
        sentence += ", a new playbook with no execution history"
        if pick.confidence < query.min_confidence:
            sentence += (
                f", listed below min_confidence {_percent(query.min_confidence)} because new "
                "playbooks are judged without history"
            )
    if alternatives:
        sentence += f"; {alternatives} alternative{'s' if alternatives > 1 else ''} listed"
    sentence += "."
    return f"{source_note} {sentence}" if source_note else sentence


def _suggestions(query: PlaybookQuery, answer: CatalogAnswer | None) -> list[str]:
    subject = query.subject or "the target"
    steps = [
        f"inspect the events, logs and recent restarts of {subject}",
        f"review recent changes to {subject} (rollouts, configuration, scaling)",
    ]
    near = answer.best_below if answer else None
    if near is not None and near.confidence >= query.min_confidence - NEAR_MISS:
        steps.append(
            f"review the closest playbook, {near.id} {near.version} "
            f"(confidence {_percent(near.confidence)}), before running any step by hand"
        )
    incident = query.incident_type
    steps.append(
        f"create a playbook for incident type {incident} once the cause is known"
        if incident != "unknown"
        else "label the request with its incident-type so a playbook can match it"
    )
    return steps


def _manual_reason(query: PlaybookQuery, answer: CatalogAnswer) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in query.labels) or "none"
    if answer.catalog_size == 0:
        return f"no playbook matched: the catalog ({answer.source}) is empty"
    if answer.consistent == 0:
        return (
            f"no playbook matched: all {answer.catalog_size} playbooks pin one of the "
            f"request's labels ({labels}) to another value"
        )
    near = answer.best_below
    if near is not None and near.parts is not None:
        p = near.parts
        return (
            f"no playbook confident enough: the best, {near.id} {near.version}, scored "
            f"{_percent(near.confidence)} (semantic {_percent(p.semantic)}, label match "
            f"{_percent(p.labels)}, historical {_percent(p.historical)}), below "
            f"min_confidence {_percent(query.min_confidence)}"
        )
    return (
        f"no playbook confident enough: {answer.source} returned none at or above "
        f"min_confidence {_percent(query.min_confidence)} for labels {labels}"
    )


def decide(
    query: PlaybookQuery,
    answer: CatalogAnswer,
    *,
    method: SelectionMethod = "data_driven",
    note: str | None = None,
    weights: ConfidenceWeights | None = None,
) -> PlaybookDecision:
    """Pick the highest-confidence candidate, or recommend manual investigation.

    ``note`` prefixes the rationale (why a fallback was used).
    """
    weights = weights or ConfidenceWeights()
    if not answer.candidates:
        reason = _manual_reason(query, answer)
        return PlaybookDecision(
            recommendation=Recommendation(
                action="manual_investigation",
                reason=_clip(f"{note} {reason}" if note else reason, MAX_RATIONALE),
                suggested_actions=[_clip(a, MAX_SUGGESTION) for a in _suggestions(query, answer)],
            )
        )
    pick, *rest = answer.candidates
    alternatives = [
        Alternative(id=c.id, version=c.version, confidence=round(c.confidence, 4))
        for c in rest[:MAX_ALTERNATIVES]
    ]
    selection = PlaybookSelection(
        id=pick.id,
        version=pick.version,
        confidence=round(min(max(pick.confidence, 0.0), 1.0), 4),
        components=pick.parts.components() if pick.parts else {},
        selection_method=method,
        rationale=_clip(_rationale(pick, query, weights, note, len(alternatives)), MAX_RATIONALE),
    )
    return PlaybookDecision(selection=selection, alternatives=alternatives)


def unavailable(query: PlaybookQuery, reason: str) -> PlaybookDecision:
    """Manual investigation because no catalog could answer."""
    return PlaybookDecision(
        recommendation=Recommendation(
            action="manual_investigation",
            reason=_clip(f"playbook catalog unavailable: {reason}", MAX_RATIONALE),
            suggested_actions=[_clip(a, MAX_SUGGESTION) for a in _suggestions(query, None)],
        )
    )
