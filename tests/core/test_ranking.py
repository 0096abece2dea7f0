"""Seed 002's hybrid score and seed 001's rerank boosts, with the seeds' numbers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from precedent.core.ranking import RankingWeights, rank_score
from precedent.models import Incident


def _incident(**fields: object) -> Incident:
    base: dict[str, object] = {"id": "INC-1", "title": "t", "outcome": "unknown"}
    base.update(fields)
    return Incident.model_validate(base)


def test_hybrid_score_is_point_seven_vector_plus_point_three_metadata() -> None:
    incident = _incident(severity="high", resolutionHours=25.0)
    score = rank_score(incident, 0.5)
    # metadata = 0.6 × priority(high 0.8) + 0.4 × (1 − 25/100)
    assert score.metadata == pytest.approx(0.6 * 0.8 + 0.4 * 0.75)
    assert score.hybrid == pytest.approx(0.7 * 0.5 + 0.3 * score.metadata)


@pytest.mark.parametrize(
    ("priority", "weight"), [("critical", 1.0), ("high", 0.8), ("medium", 0.5), ("low", 0.3)]
)
def test_priority_weights(priority: str, weight: float) -> None:
    score = rank_score(_incident(priority=priority, resolutionHours=100.0), 0.0)
    assert score.metadata == pytest.approx(0.6 * weight)


def test_time_score_floors_at_zero_and_missing_hours_count_as_zero() -> None:
    assert rank_score(_incident(priority="low", resolutionHours=250.0), 0.0).metadata == (
        pytest.approx(0.6 * 0.3)
    )
    assert rank_score(_incident(priority="low"), 0.0).metadata == pytest.approx(0.6 * 0.3)


def test_boosts_exact_name_resolved_partial_quality() -> None:
    plain = rank_score(_incident(qualityScore=1.0), 0.4)
    named = rank_score(
        _incident(resource={"type": "Deployment", "name": "Payment-API"}, qualityScore=1.0),
        0.4,
        resource_name="payment-api",
    )
    resolved = rank_score(_incident(outcome="resolved", qualityScore=1.0), 0.4)
    partial = rank_score(_incident(outcome="partial", qualityScore=1.0), 0.4)
    poor = rank_score(_incident(qualityScore=0.0), 0.4)
    assert plain.boost == pytest.approx(1.0)
    assert named.boost == pytest.approx(1.5)
    assert resolved.boost == pytest.approx(1.3)
    assert partial.boost == pytest.approx(1.1)
    assert poor.boost == pytest.approx(0.5)


def test_recency_boost_needs_now() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    week = _incident(occurredAt=now - timedelta(days=3))
    month = _incident(occurredAt=now - timedelta(days=20))
    old = _incident(occurredAt=now - timedelta(days=90))
    assert rank_score(week, 0.5, now=now).boost == pytest.approx(1.2)
    assert rank_score(month, 0.5, now=now).boost == pytest.approx(1.1)
    assert rank_score(old, 0.5, now=now).boost == pytest.approx(1.0)
    assert rank_score(week, 0.5).boost == pytest.approx(1.0)


def test_relevance_is_capped_at_one_but_keeps_the_order() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    best = _incident(
        priority="critical",
        resolutionHours=0.0,
        outcome="resolved",
        resource={"type": "Deployment", "name": "api"},
        occurredAt=now - timedelta(days=1),
    )
    top = rank_score(best, 1.0, resource_name="api", now=now)
    lower = rank_score(best, 0.9, resource_name="api", now=now)
    assert top.relevance == 1.0
    assert lower.relevance == 1.0
    assert top.uncapped > lower.uncapped


def test_weights_are_configurable() -> None:
    weights = RankingWeights(vector_weight=0.9, metadata_weight=0.1, time_normalization_hours=10)
    score = rank_score(_incident(priority="critical", resolutionHours=5.0), 1.0, weights=weights)
    assert score.hybrid == pytest.approx(0.9 + 0.1 * (0.6 * 1.0 + 0.4 * 0.5))
    with pytest.raises(ValueError, match="time_normalization_hours"):
        RankingWeights(time_normalization_hours=0)
