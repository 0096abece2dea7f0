"""How well playbook selection agrees with a labelled set: accuracy, wrong-confident and manual
rates, each with a bootstrap 95% interval.

Pure: the caller selects for each labelled request and hands over :class:`SelectionResult`
values; this module only counts. Three rates, over the requests they concern:

* **accuracy** (all requests): an acceptable playbook was chosen, or manual investigation
  when the label says no playbook fits;
* **wrong confident** (all requests): a playbook was chosen that is not acceptable — the
  number to minimise, since a wrong playbook with a confidence attached is followed;
* **manual when one fits** (requests with an acceptable playbook): nothing was chosen though
  the catalog had the right playbook — safe, but a miss.

Intervals are percentile bootstraps over the requests (fixed seed: the same set gives the same
interval), so a difference between two models can be read against them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from precedent.core.playbooks._arrays import BoolArray

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "MANUAL",
    "Rate",
    "SelectionEvaluation",
    "SelectionResult",
    "evaluate_selection",
]

MANUAL = "manual_investigation"
"""What a request gets when no playbook is selected."""
BOOTSTRAP_RESAMPLES = 2000
"""Bootstrap resamples per interval."""
_SEED = 20240917


@dataclass(frozen=True, slots=True)
class SelectionResult:
    """One labelled request: what was acceptable, what was chosen."""

    name: str
    """The request's name."""
    acceptable: frozenset[str]
    """Acceptable playbook ids; empty when manual investigation is the right answer."""
    chosen: str
    """The selected playbook's id, or ``manual_investigation``."""
    confidence: float | None = None
    """The selection's confidence (None for manual investigation)."""
    split: str = ""
    """``holdout`` or ``tune`` (empty when the set does not say)."""

    @property
    def correct(self) -> bool:
        """An acceptable playbook, or manual investigation where none fits."""
        if not self.acceptable:
            return self.chosen == MANUAL
        return self.chosen in self.acceptable

    @property
    def wrong_confident(self) -> bool:
        """A playbook was chosen that is not acceptable."""
        return self.chosen != MANUAL and self.chosen not in self.acceptable

    @property
    def manual_miss(self) -> bool:
        """Manual investigation although an acceptable playbook exists."""
        return self.chosen == MANUAL and bool(self.acceptable)


@dataclass(frozen=True, slots=True)
class Rate:
    """A proportion with its bootstrap 95% interval."""

    hits: int
    """Requests counted."""
    total: int
    """Requests the rate is over."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""

    @property
    def value(self) -> float:
        """hits / total (0 when total is 0)."""
        return self.hits / self.total if self.total else 0.0

    def format(self) -> str:
        """``84.0% [76.4, 90.6] (42/50)``."""
        return (
            f"{self.value:.1%} [{self.low * 100:.1f}, {self.high * 100:.1f}] "
            f"({self.hits}/{self.total})"
        )


def _rate(flags: BoolArray, rng: np.random.Generator) -> Rate:
    total = int(flags.size)
    hits = int(flags.sum())
    if total == 0:
        return Rate(0, 0, 0.0, 0.0)
    samples = rng.integers(0, total, size=(BOOTSTRAP_RESAMPLES, total))
    means = flags[samples].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Rate(hits, total, float(low), float(high))


@dataclass(frozen=True, slots=True)
class SelectionEvaluation:
    """The three rates over one set of results, and the results themselves."""

    accuracy: Rate
    """Acceptable answers over all requests."""
    wrong_confident: Rate
    """Unacceptable playbooks chosen over all requests."""
    manual_when_fits: Rate
    """Manual investigation over the requests an acceptable playbook exists for."""
    results: tuple[SelectionResult, ...]
    """Every request's result, in order."""

    @property
    def misses(self) -> list[SelectionResult]:
        """The results that were not correct."""
        return [r for r in self.results if not r.correct]


def evaluate_selection(results: Iterable[SelectionResult]) -> SelectionEvaluation:
    """Count the rates with their intervals (deterministic: a fixed bootstrap seed)."""
    items: Sequence[SelectionResult] = tuple(results)
    rng = np.random.default_rng(_SEED)
    correct = np.array([r.correct for r in items], dtype=bool)
    wrong = np.array([r.wrong_confident for r in items], dtype=bool)
    fits = np.array([r.manual_miss for r in items if r.acceptable], dtype=bool)
    return SelectionEvaluation(
        accuracy=_rate(correct, rng),
        wrong_confident=_rate(wrong, rng),
        manual_when_fits=_rate(fits, rng),
        results=tuple(items),
    )
