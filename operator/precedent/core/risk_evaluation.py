"""How well a risk model's bands agree with a labelled set: accuracy, confusion, misses.

Pure: the caller scores each labelled request and hands over ``BandResult`` values; this module
only counts. ``within_one`` counts answers at most one band away (low↔medium, medium↔high), the
tolerance a reviewer gives a borderline label; ``under`` counts answers below the label (the
dangerous direction: a high-risk request approved).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from precedent.models import Band

__all__ = ["BAND_ORDER", "BandResult", "RiskEvaluation", "evaluate_bands", "format_confusion"]

BAND_ORDER: tuple[Band, ...] = (Band.LOW, Band.MEDIUM, Band.HIGH)
_RANK = {band: i for i, band in enumerate(BAND_ORDER)}


@dataclass(frozen=True, slots=True)
class BandResult:
    """One labelled request: the band expected, the band given and why."""

    name: str
    """The request's name."""
    expected: Band
    """The label."""
    predicted: Band
    """The model's band."""
    score: float
    """The model's score."""
    reasoning: str = ""
    """The model's reasoning, for misses."""
    rationale: str = ""
    """Why the label is what it is."""


@dataclass(frozen=True, slots=True)
class RiskEvaluation:
    """Agreement of a model with a labelled set."""

    total: int
    """Labelled requests."""
    correct: int
    """Requests given their expected band."""
    within_one: int
    """Requests at most one band off."""
    under: int
    """Requests given a lower band than expected."""
    confusion: dict[Band, dict[Band, int]]
    """confusion[expected][predicted] = count."""
    misses: list[BandResult]
    """Every request not given its expected band, in input order."""

    @property
    def accuracy(self) -> float:
        """correct / total (0 for an empty set)."""
        return self.correct / self.total if self.total else 0.0


def evaluate_bands(outcomes: Iterable[BandResult]) -> RiskEvaluation:
    """Count agreement, the confusion matrix and the misses."""
    confusion = {e: dict.fromkeys(BAND_ORDER, 0) for e in BAND_ORDER}
    total = correct = within = under = 0
    misses = []
    for outcome in outcomes:
        total += 1
        confusion[outcome.expected][outcome.predicted] += 1
        distance = _RANK[outcome.predicted] - _RANK[outcome.expected]
        if distance == 0:
            correct += 1
        else:
            misses.append(outcome)
        within += abs(distance) <= 1
        under += distance < 0
    return RiskEvaluation(total, correct, within, under, confusion, misses)


def format_confusion(evaluation: RiskEvaluation) -> str:
    """The confusion matrix as a small text table (rows expected, columns predicted)."""
    header = "expected \\ predicted " + " ".join(f"{b.value:>7}" for b in BAND_ORDER)
    rows = [header]
    for expected in BAND_ORDER:
        cells = " ".join(f"{evaluation.confusion[expected][p]:>7}" for p in BAND_ORDER)
        rows.append(f"{expected.value:<20} {cells}")
    return "\n".join(rows)
