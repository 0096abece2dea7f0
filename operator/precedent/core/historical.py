"""The historical pattern scorer: "has something like this gone wrong before?" (seed 000).

Similarity per incident is the rule similarity, the semantic similarity, or the larger of the
two (mode ``rules`` | ``semantic`` | ``hybrid``); incidents at or above the threshold feed the
SRI:Historical score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
import numpy.typing as npt

from precedent.core.history import History
from precedent.core.normalize import ProposedAction
from precedent.core.ranking import RankingWeights, rank_score
from precedent.core.risk import band_for, decision_for, sri_score_weighted
from precedent.core.similarity import SIMILARITY_THRESHOLD, RuleParts
from precedent.models import (
    Incident,
    RiskAssessment,
    SimilarIncident,
    SimilarityParts,
)

__all__ = ["HistoricalResult", "SimilarityMode", "evaluate_history"]

SimilarityMode = Literal["rules", "semantic", "hybrid"]


@dataclass(frozen=True, slots=True)
class HistoricalResult:
    """Risk plus the similar incidents that drove it."""

    risk: RiskAssessment
    similar: list[SimilarIncident]
    similar_count: int


def evaluate_history(
    history: History,
    action: ProposedAction,
    *,
    mode: SimilarityMode = "rules",
    semantic: Mapping[int, float] | None = None,
    threshold: float = SIMILARITY_THRESHOLD,
    top_k: int = 5,
    ranking: RankingWeights | None = None,
    now: datetime | None = None,
) -> HistoricalResult:
    """Score ``action`` against ``history``.

    ``semantic`` maps incident positions to embedding similarity (0–1) for the neighbours the
    vector index returned; incidents it omits have semantic similarity 0. The risk score and
    the most relevant incident follow the similarity; the listed similar incidents are ordered
    for people by ``rank_score`` (seed 002's hybrid score × seed 001's boosts, measured from
    ``now``).
    """
    n = len(history)
    rules = history.rules.score(action)
    rule_total = rules.total
    sem = np.zeros(n, dtype=np.float32)
    if semantic and mode != "rules":
        idx = np.fromiter(semantic.keys(), dtype=np.int64, count=len(semantic))
        sem[idx] = np.fromiter(semantic.values(), dtype=np.float32, count=len(semantic))
    if mode == "rules":
        combined = rule_total
    elif mode == "semantic":
        combined = sem
    else:
        combined = np.maximum(rule_total, sem)
    # Rounded so float32 sums such as 0.4 + 0.3 + 0.1 compare as the seed's 0.8.
    combined = np.round(combined, 4)
    hits = np.flatnonzero(combined >= threshold - 1e-9)

    # Most similar first, then the more severe, then by id: one numpy sort, not a Python one.
    order = hits[np.lexsort((history.id_rank[hits], history.severity_rank[hits], -combined[hits]))]
    ordered: list[int] = order.tolist()
    score = sri_score_weighted(combined[order].astype(np.float64), history.severity_weight[order])
    band = band_for(score)
    decision = decision_for(band)

    # People's ranking reorders the most similar candidates; boosts are at most ×2.34, so an
    # incident far down the similarity order cannot reach the top few.
    ranked = []
    for p in ordered[: max(10 * top_k, 50)]:
        incident = history.incidents[p]
        rank = rank_score(
            incident,
            float(combined[p]),
            resource_name=action.resource_name,
            now=now,
            weights=ranking,
        )
        ranked.append((-rank.uncapped, p, rank.relevance))
    ranked.sort(key=lambda r: r[0])
    similar = [
        _to_similar_incident(
            history.incidents[p],
            float(combined[p]),
            rules.parts(p),
            float(sem[p]) if mode != "rules" else None,
            relevance,
            mode,
        )
        for _, p, relevance in ranked[:top_k]
    ]
    top = history.incidents[ordered[0]] if ordered else None
    risk = RiskAssessment(
        score=score,
        band=band,
        decision=decision,
        reasoning=_reasoning(ordered, combined, history, score, band.value, decision.value),
        most_relevant_incident=top.id if top else None,
        recommended_procedure=(top.recommended_procedure or top.resolution or None)
        if top
        else None,
    )
    return HistoricalResult(risk=risk, similar=similar, similar_count=len(ordered))


def _to_similar_incident(
    incident: Incident,
    similarity: float,
    parts: RuleParts,
    semantic: float | None,
    relevance: float,
    mode: SimilarityMode,
) -> SimilarIncident:
    rule = parts.total
    # Hybrid: the larger one counted (a tie goes to the rule, the explainable one).
    counted: Literal["rule", "semantic"] = (
        "semantic"
        if mode == "semantic" or (mode == "hybrid" and semantic is not None and semantic > rule)
        else "rule"
    )
    return SimilarIncident(
        id=incident.id,
        title=incident.title,
        severity=incident.severity,
        similarity=round(similarity, 4),
        parts=SimilarityParts(
            action=parts.action,
            resource_type=parts.resource_type,
            resource_name=parts.resource_name,
            tags=parts.tags,
            rule=rule,
            semantic=None if semantic is None else round(semantic, 4),
            counted=counted,
        ),
        relevance=relevance,
        outcome=incident.outcome,
    )


def _reasoning(
    ordered: list[int],
    combined: npt.NDArray[np.float32],
    history: History,
    score: float,
    band: str,
    decision: str,
) -> str:
    verdict = f"SRI:Historical {score:g} → {band} risk, {decision}."
    if not ordered:
        return (
            f"No similar past incidents (similarity ≥ {SIMILARITY_THRESHOLD:.2f}) among "
            f"{len(history)} in the history. {verdict}"
        )
    top = history.incidents[ordered[0]]
    count = len(ordered)
    noun = "incident" if count == 1 else "incidents"
    return (
        f'{count} similar past {noun}. Most relevant: {top.id} "{top.title}" '
        f"(similarity {float(combined[ordered[0]]):.2f}, {top.severity.value}, "
        f"{top.outcome.value}). {verdict}"
    )
