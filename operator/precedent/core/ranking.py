"""Ranking similar incidents for people: seed 002's hybrid score and seed 001's rerank boosts.

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

Two orders (:attr:`RankingWeights.order`, ``PRECEDENT_RANKING_ORDER``):

- ``seed``: the two seeds literally, ``relevance = hybrid × boosts``. Seed 001's boosts were
  written to re-rank fleet-memory hits that a search had already found relevant; applied to
  every incident the retriever returns they lift clearly less similar incidents above clearly
  more similar ones: ×1.3 resolved × quality lifts a node drain (similarity 0.38) above the
  Released-PV cleanup (0.83) for "clean up Released persistent volumes", and ×1.5 exact name
  lifts a *restart* of order-processing above its scale-down for "scale down order-processing".
- ``bounded`` (the default): seed 002's formula is the ranking, as that seed says; seed 001's
  boosts are bounded to what they were written for. The exact-name boost says "this happened
  to the very resource" and is evidence of relevance only when the incident also did the same
  kind of change (the same action concept, core/vocabulary.py: scale down = reduce_replicas =
  lower the replica count); the outcome, quality and recency boosts say which of comparably
  relevant records is the more useful to read, so together they may raise a score by at most
  ``margin`` (10 %)::

      usefulness = outcome × quality × recency / (largest outcome × largest recency)   (0–1)
      relevance  = hybrid × exact-name boost (same name and same action, else 1)
                          × (1 + margin × usefulness)

  Those boosts never lift an incident above one whose hybrid score is more than 10 % higher;
  seed 002's weights (also per request in the search API) keep their full effect.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from precedent.core.vocabulary import ACTION_CONCEPTS, concepts
from precedent.models import Incident, IncidentOutcome, Severity

__all__ = [
    "DEFAULT_PRIORITY_WEIGHTS",
    "RankedScore",
    "RankingOrder",
    "RankingWeights",
    "boost_parts",
    "rank_score",
    "rank_scores",
    "same_action",
]

RankingOrder = Literal["bounded", "seed"]
"""``bounded``: the seeds' terms, each where it belongs (the default); ``seed``: literally."""

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
    order: RankingOrder = "bounded"
    """How the terms combine: ``bounded`` (the default) or ``seed`` (the seeds literally)."""
    margin: float = 0.1
    """``bounded``: the most seed 001's outcome, quality and recency boosts raise a score."""

    def __post_init__(self) -> None:
        if self.time_normalization_hours <= 0:
            raise ValueError("time_normalization_hours must be positive")
        if min(self.vector_weight, self.metadata_weight) < 0:
            raise ValueError("ranking weights must not be negative")
        if self.order not in ("bounded", "seed"):
            raise ValueError(f"order must be bounded or seed, not {self.order!r}")
        if self.margin < 0:
            raise ValueError("margin must not be negative")


@dataclass(frozen=True, slots=True)
class RankedScore:
    """One incident's relevance and its parts."""

    relevance: float
    uncapped: float
    hybrid: float
    metadata: float
    boost: float


def _largest(w: RankingWeights) -> float:
    """The largest product the outcome and recency boosts can reach."""
    return max(1.0, w.resolved_boost, w.partial_boost) * max(1.0, w.recent_boost, w.fresh_boost)


def _usefulness(parts: dict[str, float], w: RankingWeights) -> float:
    """Seed 001's outcome, quality and recency boosts, scaled by their largest product: 0–1."""
    return min(1.0, max(0.0, _product(parts, leave_out="exactName") / _largest(w)))


def _metadata(incident: Incident, w: RankingWeights) -> float:
    priority = w.priority_weights.get(incident.effective_priority, 0.0)
    hours = incident.resolution_hours
    time = 0.0 if hours is None else max(0.0, 1.0 - hours / w.time_normalization_hours)
    return w.priority_share * priority + w.time_share * time


def _product(parts: dict[str, float], *, leave_out: str | None = None) -> float:
    product = 1.0
    for name, factor in parts.items():
        if name != leave_out:
            product *= factor
    return product


@functools.lru_cache(maxsize=4096)
def _action_key(action: str) -> str:
    """The action's first action concept (``reduce_replicas`` → ``~scale-down``), else its
    name: two actions are the same kind of change when their keys are equal."""
    found = concepts(action.replace("_", " ").replace("-", " "), only=ACTION_CONCEPTS)
    return found[0] if found else action.strip().lower()


def same_action(requested: str, done: str) -> bool:
    """Whether ``done`` (an incident's action) is the kind of change ``requested`` names."""
    return bool(requested.strip()) and _action_key(requested) == _action_key(done)


def _boosts(
    incident: Incident,
    wanted: str | None,
    now: datetime | None,
    w: RankingWeights,
    action: str | None,
) -> tuple[float | None, float | None, float, float | None]:
    """Seed 001's boosts for ``incident`` in order — exact name, outcome, quality, recency —
    None where one does not apply; ``wanted`` is the request's resource name, stripped and
    lower-cased (None: the request names none)."""
    resource = incident.resource
    name = (
        w.exact_name_boost
        if wanted is not None
        and resource is not None
        and resource.name.strip().lower() == wanted
        and (w.order == "seed" or action is None or same_action(action, incident.action))
        else None
    )
    if incident.outcome is IncidentOutcome.RESOLVED:
        outcome: float | None = w.resolved_boost
    elif incident.outcome is IncidentOutcome.PARTIAL:
        outcome = w.partial_boost
    else:
        outcome = None
    quality = w.quality_floor + (1.0 - w.quality_floor) * incident.quality_score
    recency = None
    if now is not None and incident.occurred_at is not None:
        age_days = (now - incident.occurred_at).total_seconds() / 86400.0
        if 0 <= age_days < w.recent_days:
            recency = w.recent_boost
        elif 0 <= age_days < w.fresh_days:
            recency = w.fresh_boost
    return name, outcome, quality, recency


def _wanted(resource_name: str | None) -> str | None:
    return resource_name.strip().lower() if resource_name else None


def boost_parts(
    incident: Incident,
    *,
    resource_name: str | None,
    now: datetime | None,
    weights: RankingWeights | None = None,
    action: str | None = None,
) -> dict[str, float]:
    """Seed 001's rerank boosts that apply to ``incident``, by name (their product is the
    boost): ``exactName``, ``outcome``, ``quality`` (always), ``recency``.

    With the ``bounded`` order and the request's ``action`` given, ``exactName`` applies only
    when the incident's action is the same kind of change (:func:`same_action`); without
    ``action`` (seed 001's fleet-memory re-rank) the name alone decides, as in the seed.
    """
    w = weights or RankingWeights()
    factors = _boosts(incident, _wanted(resource_name), now, w, action)
    names = ("exactName", "outcome", "quality", "recency")
    return {n: f for n, f in zip(names, factors, strict=True) if f is not None}


def rank_score(
    incident: Incident,
    similarity: float,
    *,
    resource_name: str | None = None,
    now: datetime | None = None,
    weights: RankingWeights | None = None,
    action: str | None = None,
) -> RankedScore:
    """Relevance of ``incident`` for a person reading the list (0–1), in the weights' order.

    ``similarity`` is the incident's similarity to the request (the vector term);
    ``resource_name`` the request's target, for the exact-name boost; ``action`` the
    request's action, which the ``bounded`` order requires the incident to share for that
    boost (None: the name alone, as in seed 001); ``now`` the time the recency boost is
    measured from (no recency boost without it, so scoring stays deterministic for callers
    that do not pass one).
    """
    w = weights or RankingWeights()
    metadata = _metadata(incident, w)
    hybrid = w.vector_weight * similarity + w.metadata_weight * metadata
    parts = boost_parts(incident, resource_name=resource_name, now=now, weights=w, action=action)
    boost = _product(parts)
    if w.order == "seed":
        uncapped = hybrid * boost
    else:
        name = parts.get("exactName", 1.0)
        uncapped = hybrid * name * (1.0 + w.margin * _usefulness(parts, w))
    return RankedScore(
        relevance=round(min(1.0, max(0.0, uncapped)), 4),
        uncapped=uncapped,
        hybrid=hybrid,
        metadata=metadata,
        boost=boost,
    )


def rank_scores(
    incidents: Sequence[Incident],
    similarities: Sequence[float],
    *,
    resource_name: str | None = None,
    now: datetime | None = None,
    weights: RankingWeights | None = None,
    action: str | None = None,
) -> list[tuple[float, float]]:
    """``(uncapped, relevance)`` of each incident, as :func:`rank_score` gives them (the same
    floating-point operations in the same order, bit for bit: ``tests/core/test_ranking.py``),
    without building each one's parts and score objects: a request ranks about fifty
    candidates, and those objects were most of the ranking's time."""
    w = weights or RankingWeights()
    wanted = _wanted(resource_name)
    seed = w.order == "seed"
    largest = _largest(w)
    out: list[tuple[float, float]] = []
    for incident, similarity in zip(incidents, similarities, strict=True):
        hybrid = w.vector_weight * similarity + w.metadata_weight * _metadata(incident, w)
        name, outcome, quality, recency = _boosts(incident, wanted, now, w, action)
        if seed:
            boost = 1.0
            for factor in (name, outcome, quality, recency):
                if factor is not None:
                    boost *= factor
            uncapped = hybrid * boost
        else:
            useful = 1.0
            for factor in (outcome, quality, recency):
                if factor is not None:
                    useful *= factor
            usefulness = min(1.0, max(0.0, useful / largest))
            uncapped = hybrid * (1.0 if name is None else name) * (1.0 + w.margin * usefulness)
        out.append((uncapped, round(min(1.0, max(0.0, uncapped)), 4)))
    return out
