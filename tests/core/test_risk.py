"""SRI:Historical formula, bands and decisions (seed 000)."""

from __future__ import annotations

import pytest

from precedent.core.policy import BAND_DECISIONS
from precedent.core.risk import (
    DIMINISHING_RETURNS,
    SEVERITY_WEIGHTS,
    band_for,
    sri_score,
)
from precedent.models import Band, Decision, Severity

C, H, M, L = Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW


def test_severity_weights_are_the_seeds() -> None:
    assert SEVERITY_WEIGHTS == {C: 100, H: 75, M: 40, L: 10}
    assert DIMINISHING_RETURNS == 0.20


def test_no_similar_incidents_scores_zero() -> None:
    assert sri_score([]) == 0


@pytest.mark.parametrize(
    ("similar", "expected"),
    [
        ([(1.0, C)], 100),
        ([(1.0, H)], 75),
        ([(1.0, M)], 40),
        ([(0.8, L)], 8),
        # best × weight + each other × weight × 0.20
        ([(1.0, H), (0.4, M)], 75 + 0.4 * 40 * 0.2),
        ([(0.5, M), (0.5, M), (0.5, M)], 20 + 2 * 0.5 * 40 * 0.2),
    ],
)
def test_sri_formula(similar: list[tuple[float, Severity]], expected: float) -> None:
    assert sri_score(similar) == pytest.approx(expected, abs=0.05)


def test_score_is_capped_at_100() -> None:
    assert sri_score([(1.0, C)] * 10) == 100


def test_diminishing_returns_one_perfect_match_beats_five_partial_ones() -> None:
    assert sri_score([(1.0, C)]) > sri_score([(0.4, M)] * 5)


@pytest.mark.parametrize(
    ("score", "band", "decision"),
    [
        (0, Band.LOW, Decision.APPROVED),
        (8, Band.LOW, Decision.APPROVED),
        (25, Band.LOW, Decision.APPROVED),
        (26, Band.MEDIUM, Decision.ESCALATED),
        (40, Band.MEDIUM, Decision.ESCALATED),
        (60, Band.MEDIUM, Decision.ESCALATED),
        (61, Band.HIGH, Decision.DENIED),
        (100, Band.HIGH, Decision.DENIED),
    ],
)
def test_bands_and_decisions(score: float, band: Band, decision: Decision) -> None:
    assert band_for(score) is band
    assert BAND_DECISIONS[band] is decision
