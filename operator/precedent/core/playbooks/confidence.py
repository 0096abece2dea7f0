"""Playbook confidence (seed 004, BR-AI-057): the formula, its weights and smoothing.

::

    confidence = 0.4 × semantic + 0.4 × label match + 0.2 × historical success

* **semantic** (0–1): the request's text against the playbook's description (see
  :mod:`precedent.core.playbooks.index`).
* **label match** (0–1): see :mod:`precedent.core.playbooks.labels`.
* **historical success** (0–1): the success rate smoothed with a Beta(1, 1) prior,
  ``(successes + 1) / (executions + 2)``: a new playbook scores ½ — listed, not trusted — and
  one success gives ⅔, not 1.

Weights and prior are configurable (:class:`ConfidenceWeights`, :class:`SuccessPrior`);
:func:`check_confidence_weights` is the one place their rule is written.

The seed's worked examples do not add up under its own weights: "0.92 = semantic 0.88 +
labels 1.0 + historical 0.95" is 0.942, "0.78 = 0.85 + 0.95 + 0.50" is 0.82, "0.65 = 0.80 +
1.0 + 0.0" is 0.72. The tests check the formula and the order it produces, not those totals.

Every function here takes floats or numpy arrays alike: the catalog index scores a whole
catalog in one call, and the same code scores one playbook.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "WEIGHT_SUM_TOLERANCE",
    "ConfidenceParts",
    "ConfidenceWeights",
    "SuccessPrior",
    "check_confidence_weights",
    "combine",
    "evidence",
    "historical_success",
]

WEIGHT_SUM_TOLERANCE = 1e-6
"""How far from 1 the weights' sum may be (decimal weights such as 0.1 + 0.2 do not add up
exactly in binary floating point)."""

_Num = TypeVar("_Num", float, npt.NDArray[np.float64])


def check_confidence_weights(semantic: float, labels: float, historical: float) -> None:
    """The weights' rule: each ≥ 0, summing to 1. ValueError says which part is broken."""
    parts = (semantic, labels, historical)
    if any(w < 0 for w in parts):
        raise ValueError(f"confidence weights must be ≥ 0, got {parts}")
    total = sum(parts)
    if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
        raise ValueError(f"confidence weights must sum to 1, got {total:g}")


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
        check_confidence_weights(self.semantic, self.labels, self.historical)


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
    """The confidence: the weighted sum of the three parts."""
    return weights.semantic * semantic + weights.labels * labels + weights.historical * historical


def evidence(semantic: _Num, labels: _Num, weights: ConfidenceWeights) -> _Num:
    """Semantic and label parts re-weighted to sum to 1: what a new playbook is judged on.

    A playbook that never ran has no history to weigh, so its history weight is set aside
    rather than counted as a ½ (see :func:`precedent.core.playbooks.decision.qualifying`).
    """
    known = weights.semantic + weights.labels
    if known <= 0:
        return semantic * 0.0
    return (weights.semantic * semantic + weights.labels * labels) / known


@dataclass(frozen=True, slots=True)
class ConfidenceParts:
    """The three parts of one playbook's confidence, and their weighted total."""

    semantic: float
    """Semantic similarity, 0–1."""
    label_match: float
    """Label match, 0–1."""
    historical: float
    """Smoothed historical success, 0–1."""
    confidence: float
    """The weighted total, 0–1."""

    def strongest(self, weights: ConfidenceWeights) -> tuple[str, float]:
        """The part that contributed most to the total: (its name, its unweighted value)."""
        parts = [
            ("semantic similarity", self.semantic, weights.semantic),
            ("label match", self.label_match, weights.labels),
            ("historical success", self.historical, weights.historical),
        ]
        name, value, _ = max(parts, key=lambda p: p[1] * p[2])
        return name, value
