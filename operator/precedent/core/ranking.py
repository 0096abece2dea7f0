"""Ranking similar incidents for people: seed 002's hybrid score times seed 001's rerank boosts.

Seed 002 (retrieval)::

    hybrid   = vector_weight × similarity + metadata_weight × metadata      (0.7 / 0.3)
    metadata = priority_share × priority_weight + time_share × time         (0.6 / 0.4)
    time     = max(0, 1 − resolution_hours / time_normalization_hours)      (100 h)
    priority_weight: critical 1.0, high 0.8, medium 0.5, low 0.3

Seed 001 (memory system) multiplies the hybrid score by rerank boosts: exact resource name
×1.5; outcome resolved ×1.3 or partial ×1.1; record quality ×(0.5 + 0.5 × quality), i.e.
0.5–1.0; occurred less than 7 days ago ×1.2, less than 30 days ago ×1.1. The product is capped
at 1.0 so relevance stays in [0, 1]; ties at the cap are broken by the uncapped value, so the
order is the one the boosts give. An incident with no recorded resolution time has time 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from precedent.models import Incident, IncidentOutcome, Severity

__all__ = [
    "DEFAULT_PRIORITY_WEIGHTS",
    "RankedScore",
    "RankingWeights",
    "boost_parts",
    "rank_score",
]

DEFAULT_PRIORITY_WEIGHTS: dict[Severity, float] = {
    Severity.CRITICAL: 1.0,
    Severity.HIGH: 0.8,
    Severity.MEDIUM: 0.5,
    Severity.LOW: 0.3,
}


@dataclass(frozen=True, slots=True)
class RankingWeights:
    """Every weight of the people-facing ranking; the defaults are the seeds' numbers."""

    vector_weight: float = 0.7
    metadata_weight: float = 0.3
    priority_share: float = 0.6
    time_share: float = 0.4
    time_normalization_hours: float = 100.0
    priority_weights: dict[Severity, float] = field(
        default_factory=lambda: dict(DEFAULT_PRIORITY_WEIGHTS)
    )
    exact_name_boost: float = 1.5
    resolved_boost: float = 1.3
    partial_boost: float = 1.1
    quality_floor: float = 0.5
    recent_days: float = 7.0
    recent_boost: float = 1.2
    fresh_days: float = 30.0
    fresh_boost: float = 1.1

    def __post_init__(self) -> None:
        if self.time_normalization_hours <= 0:
            raise ValueError("time_normalization_hours must be positive")
        if min(self.vector_weight, self.metadata_weight) < 0:
            raise ValueError("ranking weights must not be negative")


@dataclass(frozen=True, slots=True)
class RankedScore:
    """One incident's relevance and its parts."""

    relevance: float
    uncapped: float
    hybrid: float
    metadata: float
    boost: float


def _metadata(incident: Incident, w: RankingWeights) -> float:
    priority = w.priority_weights.get(incident.effective_priority, 0.0)
    hours = incident.resolution_hours
    time = 0.0 if hours is None else max(0.0, 1.0 - hours / w.time_normalization_hours)
    return w.priority_share * priority + w.time_share * time


def _boost(
    incident: Incident, resource_name: str | None, now: datetime | None, w: RankingWeights
) -> float:
    boost = 1.0
    for factor in boost_parts(incident, resource_name=resource_name, now=now, weights=w).values():
        boost *= factor
    return boost


def boost_parts(
    incident: Incident,
    *,
    resource_name: str | None,
    now: datetime | None,
    weights: RankingWeights | None = None,
) -> dict[str, float]:
    """Seed 001's rerank boosts that apply to ``incident``, by name (their product is the
    boost): ``exactName``, ``outcome``, ``quality`` (always), ``recency``."""
    w = weights or RankingWeights()
    parts: dict[str, float] = {}
    if (
        resource_name
        and incident.resource is not None
        and incident.resource.name.strip().lower() == resource_name.strip().lower()
    ):
        parts["exactName"] = w.exact_name_boost
    if incident.outcome is IncidentOutcome.RESOLVED:
        parts["outcome"] = w.resolved_boost
    elif incident.outcome is IncidentOutcome.PARTIAL:
        parts["outcome"] = w.partial_boost
    parts["quality"] = w.quality_floor + (1.0 - w.quality_floor) * incident.quality_score
    if now is not None and incident.occurred_at is not None:
        age_days = (now - incident.occurred_at).total_seconds() / 86400.0
        if 0 <= age_days < w.recent_days:
            parts["recency"] = w.recent_boost
        elif 0 <= age_days < w.fresh_days:
            parts["recency"] = w.fresh_boost
    return parts


def rank_score(
    incident: Incident,
    similarity: float,
    *,
    resource_name: str | None = None,
    now: datetime | None = None,
    weights: RankingWeights | None = None,
) -> RankedScore:
    """Relevance of ``incident`` for a person reading the list (0–1).

    ``similarity`` is the incident's similarity to the request (the vector term);
    ``resource_name`` the request's target, for the exact-name boost; ``now`` the time the
    recency boost is measured from (no recency boost without it, so scoring stays
    deterministic for callers that do not pass one).
    """
    w = weights or RankingWeights()
    metadata = _metadata(incident, w)
    hybrid = w.vector_weight * similarity + w.metadata_weight * metadata
    boost = _boost(incident, resource_name, now, w)
    uncapped = hybrid * boost
    return RankedScore(
        relevance=round(min(1.0, max(0.0, uncapped)), 4),
        uncapped=uncapped,
        hybrid=hybrid,
        metadata=metadata,
        boost=boost,
    )
