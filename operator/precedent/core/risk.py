"""SRI:Historical — the risk score from similar past incidents (seed 000).

``score = best.similarity × weight[best.severity] + Σ others (similarity × weight × 0.20)``,
capped at 100, with weights critical 100 / high 75 / medium 40 / low 10. Bands: 0–25 low,
26–60 medium, 61–100 high (a score between two integers goes to the upper band only once it
passes the lower band's top: 25.4 is medium, 25.0 is low). What a band decides is the policy's
(``core.policy``), not the score's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from precedent.models import Band, Severity

__all__ = [
    "DIMINISHING_RETURNS",
    "MAX_SCORE",
    "SEVERITY_WEIGHTS",
    "band_for",
    "sri_score",
    "sri_score_weighted",
]

SEVERITY_WEIGHTS: dict[Severity, float] = {
    Severity.CRITICAL: 100.0,
    Severity.HIGH: 75.0,
    Severity.MEDIUM: 40.0,
    Severity.LOW: 10.0,
}
DIMINISHING_RETURNS = 0.20
MAX_SCORE = 100.0
LOW_BAND_MAX = 25.0
MEDIUM_BAND_MAX = 60.0


def sri_score(similar: Sequence[tuple[float, Severity]]) -> float:
    """Score ``(similarity, severity)`` pairs, most similar first, rounded to 0.1."""
    return sri_score_weighted(
        np.array([sim for sim, _ in similar], dtype=np.float64),
        np.array([SEVERITY_WEIGHTS[sev] for _, sev in similar], dtype=np.float64),
    )


def sri_score_weighted(
    similarities: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]
) -> float:
    """The same score from aligned arrays (most similar first): what the scorer calls."""
    if similarities.size == 0:
        return 0.0
    products = similarities * weights
    score = float(products[0]) + float(products[1:].sum()) * DIMINISHING_RETURNS
    return round(min(score, MAX_SCORE), 1)


def band_for(score: float) -> Band:
    """Risk band for a score."""
    if score <= LOW_BAND_MAX:
        return Band.LOW
    if score <= MEDIUM_BAND_MAX:
        return Band.MEDIUM
    return Band.HIGH
