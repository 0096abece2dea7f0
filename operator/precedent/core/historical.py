"""The historical pattern scorer: "has something like this gone wrong before?" (seed 000).

Similarity per incident is the rule similarity, the semantic similarity, or the larger of the
two (mode ``rules`` | ``semantic`` | ``hybrid``). Two risk models turn it into a score:

- ``seed``: seed 000's formula exactly; every incident at or above the threshold counts, and
  those are the listed similar incidents.
- ``default``: core/risk_model.py; only precedents (the same action, the same resource or a
  semantic match of what was done) count, with context, a bounded tail and the base rate of
  past outcomes; the listed similar incidents are the precedents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from precedent.core.normalize import ProposedAction
from precedent.core.ranking import RankingWeights, rank_score
from precedent.core.risk import band_for, decision_for, sri_score_weighted
from precedent.core.risk_model import OutcomeEvidence, RiskModelWeights, score_precedents
from precedent.core.similarity import SIMILARITY_THRESHOLD, RuleParts, RuleScores
from precedent.core.snapshot import History
from precedent.models import (
    Incident,
    RiskAssessment,
    RiskFactor,
    SimilarIncident,
    SimilarityParts,
)

__all__ = ["HistoricalResult", "RiskModelName", "SimilarityMode", "evaluate_history"]

SimilarityMode = Literal["rules", "semantic", "hybrid"]
RiskModelName = Literal["seed", "default"]


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
    risk_model: RiskModelName = "seed",
    outcomes: OutcomeEvidence | None = None,
    risk_weights: RiskModelWeights | None = None,
) -> HistoricalResult:
    """Score ``action`` against ``history``.

    ``semantic`` maps incident positions to embedding similarity (0–1) for the neighbours the
    vector index returned; incidents it omits have semantic similarity 0. The risk score and
    the most relevant incident follow the similarity; the listed similar incidents are ordered
    for people by ``rank_score`` (seed 002's hybrid score and seed 001's boosts in the
    ranking weights' order, measured from ``now``).

    ``risk_model`` picks the score: ``seed`` (seed 000 exactly, the default here so existing
    callers keep their answers) or ``default`` (core/risk_model.py, which also reads
    ``outcomes`` — past runs' successes and failures — and ``risk_weights``).
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
    if risk_model == "default":
        return _evaluate_default(
            history,
            action,
            mode=mode,
            rules=rules,
            sem=sem,
            combined=combined,
            threshold=threshold,
            top_k=top_k,
            ranking=ranking,
            now=now,
            outcomes=outcomes,
            weights=risk_weights,
        )
    hits = np.flatnonzero(combined >= threshold - 1e-9)

    # Most similar first, then the more severe, then by id: one numpy sort, not a Python one.
    order = hits[np.lexsort((history.id_rank[hits], history.severity_rank[hits], -combined[hits]))]
    ordered: list[int] = order.tolist()
    score = sri_score_weighted(combined[order].astype(np.float64), history.severity_weight[order])
    band = band_for(score)
    decision = decision_for(band)

    # People's ranking reorders the most similar candidates; its factors are bounded (at most
    # ×2.34 in the seed order, ×1.65 bounded), so an incident far down the similarity order
    # cannot reach the top few.
    ranked = []
    vector = _vector_term(mode, combined, sem)
    for p in ordered[: max(10 * top_k, 50)]:
        incident = history.incidents[p]
        rank = rank_score(
            incident,
            float(vector[p]),
            resource_name=action.resource_name,
            now=now,
            weights=ranking,
            action=action.action,
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


def _vector_term(
    mode: SimilarityMode, similarity: npt.NDArray[np.floating[Any]], sem: npt.NDArray[np.float32]
) -> npt.NDArray[np.float64]:
    """Seed 002's ``vector_similarity`` in people's ranking: the vector index's similarity.

    In ``hybrid`` mode an incident's similarity is max(rule, semantic), and the rules give
    many incidents the same coarse value (every drain of a node scores 0.8), which left the
    order among them to the metadata and the boosts alone. The people-facing order uses the
    vector similarity, as seed 002's formula says (0 for an incident the index did not
    return); the score, the counted precedents and the listed ``similarity`` do not change.
    ``rules`` mode has no vectors and ranks by the rule similarity.
    """
    if mode == "rules":
        return similarity.astype(np.float64)
    # Rounded as the combined similarity is, so equal cosines tie as the listed values do.
    return np.round(sem, 4).astype(np.float64)


def _evaluate_default(
    history: History,
    action: ProposedAction,
    *,
    mode: SimilarityMode,
    rules: RuleScores,
    sem: npt.NDArray[np.float32],
    combined: npt.NDArray[np.float32],
    threshold: float,
    top_k: int,
    ranking: RankingWeights | None,
    now: datetime | None,
    outcomes: OutcomeEvidence | None,
    weights: RiskModelWeights | None,
) -> HistoricalResult:
    semantic = sem.astype(np.float64) if mode != "rules" else None
    same_action = rules.action > 0
    if mode == "semantic":
        # Semantic mode compares meanings only: the rules neither gate nor count.
        same_action = np.zeros(len(history), dtype=np.bool_)
    model = score_precedents(
        history.risk_context(weights),
        action,
        same_action=same_action,
        same_name=rules.resource_name > 0,
        same_type=rules.resource_type > 0,
        tag_overlap=rules.tags > 0,
        semantic=semantic,
        similarity=combined.astype(np.float64),
        threshold=threshold,
        severity_rank=history.severity_rank,
        id_rank=history.id_rank,
        outcomes=outcomes,
        now=now,
    )
    band = band_for(model.score)
    decision = decision_for(band)

    # "Ranking is ranking": every candidate the retriever returned is listed — the precedents
    # (also those below the threshold) and the semantic neighbours that are no precedent — the
    # counted precedents first, each group in people's order (rank_score). The threshold
    # applies to the score only. A neighbour that is no precedent ranks by its semantic
    # similarity alone, so a resource-type match never lifts it.
    retrieved = model.precedent | (sem > 0) if mode != "rules" else model.precedent
    listed = np.flatnonzero(retrieved)
    shown = np.where(model.precedent, combined, sem).astype(np.float64)
    vector = _vector_term(mode, shown, sem)
    below = ~model.scored[listed]
    candidates = listed[
        np.lexsort((history.id_rank[listed], -model.evidence[listed], -shown[listed], below))
    ][: max(10 * top_k, 50)]
    ranked = []
    for p in candidates.tolist():
        incident = history.incidents[p]
        rank = rank_score(
            incident,
            float(vector[p]),
            resource_name=action.resource_name,
            now=now,
            weights=ranking,
            action=action.action,
        )
        ranked.append((not bool(model.scored[p]), -rank.uncapped, p, rank.relevance))
    ranked.sort(key=lambda r: (r[0], r[1], r[2]))
    order = [(p, relevance) for _, _, p, relevance in ranked][:top_k]
    strongest = model.strongest
    if strongest is not None and all(p != strongest for p, _ in order):
        # The incident the reasoning names as most relevant is always listed (in the last
        # place when people's order puts it further down), so a reader never sees a "most
        # relevant incident" that the list leaves out.
        relevance = rank_score(
            history.incidents[strongest],
            float(vector[strongest]),
            resource_name=action.resource_name,
            now=now,
            weights=ranking,
            action=action.action,
        ).relevance
        order = [*order[: top_k - 1], (strongest, relevance)]
    similar = [
        _to_similar_incident(
            history.incidents[p],
            float(shown[p]),
            rules.parts(p),
            float(sem[p]) if mode != "rules" else None,
            relevance,
            mode,
        )
        for p, relevance in order
    ]
    top = history.incidents[model.strongest] if model.strongest is not None else None
    reasoning = _default_reasoning(
        history,
        model.strongest,
        int(model.scored.sum()),
        int(model.precedent.sum()),
        model.factors,
        model.score,
        band.value,
        decision.value,
    )
    risk = RiskAssessment(
        score=model.score,
        band=band,
        decision=decision,
        reasoning=reasoning,
        most_relevant_incident=top.id if top else None,
        recommended_procedure=(top.recommended_procedure or top.resolution or None)
        if top
        else None,
        factors=model.factors,
    )
    return HistoricalResult(risk=risk, similar=similar, similar_count=int(model.precedent.sum()))


def _default_reasoning(
    history: History,
    strongest: int | None,
    counted: int,
    listed: int,
    factors: list[RiskFactor],
    score: float,
    band: str,
    decision: str,
) -> str:
    verdict = f"Risk {score:g} → {band} risk."
    if strongest is None:
        return f"No precedent for this change among {len(history)} incidents. {verdict}"
    top = history.incidents[strongest]
    noun = "precedent" if counted == 1 else "precedents"
    moved = sorted(factors, key=lambda f: -abs(f.contribution))[:3]
    named = "; ".join(f"{f.name} {f.contribution:+g} ({f.detail})" for f in moved)
    extra = f", {listed - counted} more below the threshold" if listed > counted else ""
    return (
        f'{counted} {noun}{extra}. Strongest: {top.id} "{top.title}" ({top.severity.value}, '
        f"{top.outcome.value}). Moved by: {named}. {verdict}"
    )


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
    verdict = f"SRI:Historical {score:g} → {band} risk."
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
