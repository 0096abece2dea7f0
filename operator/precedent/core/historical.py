"""The historical pattern scorer: "has something like this gone wrong before?" (seed 000).

Similarity per incident is the rule similarity, the semantic similarity, or the larger of the
two (mode ``rules`` | ``semantic`` | ``hybrid``). A risk model (:class:`RiskModel`, chosen once
when the service is built) turns it into a score, a band, factors and the reasoning's summary:

- :class:`SeedRiskModel`: seed 000's formula exactly; every incident at or above the threshold
  counts, and those are the listed similar incidents.
- :class:`DefaultRiskModel`: core/risk_model.py; only precedents (the same action, the same
  resource or a semantic match of what was done) count, with context, a bounded tail and the
  base rate of past outcomes; the listed similar incidents are the precedents.

Both list the similar incidents in people's order through one step (``_rank_and_list``). No
decision is made here: what a band decides is the policy's (``core.policy``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from precedent.core.normalize import ProposedAction
from precedent.core.ranking import RankingWeights, rank_scores
from precedent.core.risk import band_for, sri_score_weighted
from precedent.core.risk_model import (
    OutcomeEvidence,
    PrecedentMatches,
    RiskModelWeights,
    score_precedents,
)
from precedent.core.similarity import SIMILARITY_THRESHOLD, RuleParts, RuleScores
from precedent.core.snapshot import History
from precedent.models import (
    Band,
    Decision,
    Incident,
    IncidentRef,
    PrecedentSummary,
    Reasoning,
    ReasoningPart,
    RiskAssessment,
    RiskFactor,
    SimilarIncident,
    SimilarityParts,
    SimilarSummary,
)

__all__ = [
    "RISK_MODELS",
    "DefaultRiskModel",
    "HistoricalResult",
    "Matches",
    "RiskModel",
    "RiskModelName",
    "RiskResult",
    "SeedRiskModel",
    "SimilarityMode",
    "evaluate_history",
    "risk_model_named",
]

SimilarityMode = Literal["rules", "semantic", "hybrid"]
RiskModelName = Literal["seed", "default"]


@dataclass(frozen=True, slots=True)
class RiskResult:
    """What the history says about a request's risk. The decision is not here: the policy
    makes it (:meth:`decided` writes the status's risk part once it has)."""

    score: float
    """0–100, one decimal."""
    band: Band
    """low / medium / high."""
    reasoning: Reasoning
    """Why: the risk model's summary, and what later steps added (the fleet memory, …)."""
    most_relevant_incident: str | None = None
    """The strongest incident's id."""
    recommended_procedure: str | None = None
    """What it recommends."""
    factors: list[RiskFactor] = field(default_factory=list)
    """Each factor's contribution (default model)."""

    def noted(self, *parts: ReasoningPart) -> RiskResult:
        """This result with ``parts`` added to its reasoning."""
        return RiskResult(
            self.score,
            self.band,
            self.reasoning.plus(*parts),
            self.most_relevant_incident,
            self.recommended_procedure,
            self.factors,
        )

    def decided(self, decision: Decision, *parts: ReasoningPart) -> RiskAssessment:
        """The status's risk part with the policy's ``decision`` and the last ``parts`` of the
        reasoning."""
        return RiskAssessment(
            score=self.score,
            band=self.band,
            decision=decision,
            reasoning=self.reasoning.plus(*parts),
            most_relevant_incident=self.most_relevant_incident,
            recommended_procedure=self.recommended_procedure,
            factors=self.factors,
        )


@dataclass(frozen=True, slots=True)
class HistoricalResult:
    """Risk plus the similar incidents that drove it."""

    risk: RiskResult
    similar: list[SimilarIncident]
    similar_count: int


@dataclass(frozen=True, slots=True)
class Matches:
    """One request's similarity to every incident of a history, in one mode."""

    mode: SimilarityMode
    """rules, semantic or hybrid."""
    rules: RuleScores
    """The rule similarity and its parts."""
    semantic: npt.NDArray[np.float32]
    """The semantic similarity (0 where the vector index returned nothing)."""
    combined: npt.NDArray[np.float32]
    """The mode's similarity, rounded to 4 places."""
    threshold: float
    """Minimum similarity for an incident to count in the score."""


class RiskModel(Protocol):
    """Turns a request's matches into a risk (score, band, factors, summary) and the listed
    similar incidents. Chosen once, when the service is built."""

    @property
    def name(self) -> str:
        """What ``engine.riskModel`` says (seed or default)."""
        ...

    def assess(
        self,
        history: History,
        action: ProposedAction,
        matches: Matches,
        *,
        top_k: int,
        ranking: RankingWeights | None,
        now: datetime | None,
        outcomes: OutcomeEvidence | None,
    ) -> HistoricalResult:
        """The risk of ``action`` and its ``top_k`` similar incidents in people's order."""
        ...


def evaluate_history(
    history: History,
    action: ProposedAction,
    *,
    model: RiskModel,
    mode: SimilarityMode = "rules",
    semantic: Mapping[int, float] | None = None,
    threshold: float = SIMILARITY_THRESHOLD,
    top_k: int = 5,
    ranking: RankingWeights | None = None,
    now: datetime | None = None,
    outcomes: OutcomeEvidence | None = None,
) -> HistoricalResult:
    """Score ``action`` against ``history`` with the risk ``model``.

    ``semantic`` maps incident positions to embedding similarity (0–1) for the neighbours the
    vector index returned; incidents it omits have semantic similarity 0. The risk score and
    the most relevant incident follow the similarity; the listed similar incidents are ordered
    for people by ``rank_score`` (seed 002's hybrid score and seed 001's boosts in the
    ranking weights' order, measured from ``now``). ``outcomes`` (past runs' successes and
    failures) is the default model's base rate.
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
    matches = Matches(mode, rules, sem, combined, threshold)
    return model.assess(
        history, action, matches, top_k=top_k, ranking=ranking, now=now, outcomes=outcomes
    )


@dataclass(frozen=True, slots=True)
class SeedRiskModel:
    """Seed 000's formula as written: every incident at or above the threshold counts."""

    @property
    def name(self) -> str:
        """seed."""
        return "seed"

    def assess(
        self,
        history: History,
        action: ProposedAction,
        matches: Matches,
        *,
        top_k: int,
        ranking: RankingWeights | None,
        now: datetime | None,
        outcomes: OutcomeEvidence | None,
    ) -> HistoricalResult:
        """Seed 000's score over the incidents at or above the threshold."""
        combined = matches.combined
        hits = np.flatnonzero(combined >= matches.threshold - 1e-9)
        # Most similar first, then the more severe, then by id: one numpy sort.
        order = hits[
            np.lexsort((history.id_rank[hits], history.severity_rank[hits], -combined[hits]))
        ]
        ordered: list[int] = order.tolist()
        score = sri_score_weighted(
            combined[order].astype(np.float64), history.severity_weight[order]
        )
        band = band_for(score)
        # People's ranking reorders the most similar candidates; its factors are bounded (at
        # most ×2.34 in the seed order, ×1.65 bounded), so an incident far down the similarity
        # order cannot reach the top few.
        similar = _rank_and_list(
            history,
            action,
            matches,
            ordered[: max(10 * top_k, 50)],
            combined,
            top_k=top_k,
            ranking=ranking,
            now=now,
        )
        top = history.incidents[ordered[0]] if ordered else None
        summary = SimilarSummary(
            history_size=len(history),
            count=len(ordered),
            threshold=SIMILARITY_THRESHOLD,
            strongest=_ref(top),
            similarity=float(combined[ordered[0]]) if ordered else 0.0,
            score=score,
            band=band,
        )
        risk = RiskResult(
            score=score,
            band=band,
            reasoning=Reasoning((summary,)),
            most_relevant_incident=top.id if top else None,
            recommended_procedure=_procedure(top),
        )
        return HistoricalResult(risk=risk, similar=similar, similar_count=len(ordered))


@dataclass(frozen=True, slots=True)
class DefaultRiskModel:
    """core/risk_model.py: precedents, context, a bounded tail and the base rate."""

    weights: RiskModelWeights | None = None
    """The model's numbers (None: the documented defaults)."""

    @property
    def name(self) -> str:
        """default."""
        return "default"

    def assess(
        self,
        history: History,
        action: ProposedAction,
        matches: Matches,
        *,
        top_k: int,
        ranking: RankingWeights | None,
        now: datetime | None,
        outcomes: OutcomeEvidence | None,
    ) -> HistoricalResult:
        """The default model's score over the precedents."""
        mode, rules, sem, combined = matches.mode, matches.rules, matches.semantic, matches.combined
        same_action = rules.action > 0
        if mode == "semantic":
            # Semantic mode compares meanings only: the rules neither gate nor count.
            same_action = np.zeros(len(history), dtype=np.bool_)
        model = score_precedents(
            history.risk_context(self.weights),
            action,
            PrecedentMatches(
                same_action=same_action,
                same_name=rules.resource_name > 0,
                same_type=rules.resource_type > 0,
                tag_overlap=rules.tags > 0,
                semantic=sem.astype(np.float64) if mode != "rules" else None,
                similarity=combined.astype(np.float64),
                severity_rank=history.severity_rank,
                id_rank=history.id_rank,
            ),
            threshold=matches.threshold,
            outcomes=outcomes,
            now=now,
        )
        band = band_for(model.score)

        # "Ranking is ranking": every candidate the retriever returned is listed — the
        # precedents (also those below the threshold) and the semantic neighbours that are no
        # precedent — the counted precedents first, each group in people's order (rank_score).
        # The threshold applies to the score only. A neighbour that is no precedent ranks by
        # its semantic similarity alone, so a resource-type match never lifts it.
        retrieved = model.precedent | (sem > 0) if mode != "rules" else model.precedent
        listed = np.flatnonzero(retrieved)
        shown = np.where(model.precedent, combined, sem).astype(np.float64)
        below = ~model.scored[listed]
        candidates = listed[
            np.lexsort((history.id_rank[listed], -model.evidence[listed], -shown[listed], below))
        ][: max(10 * top_k, 50)]
        similar = _rank_and_list(
            history,
            action,
            matches,
            sorted(candidates.tolist()),  # equal ranks keep the history's order
            shown,
            top_k=top_k,
            ranking=ranking,
            now=now,
            later=~model.scored,
            keep=model.strongest,
        )
        top = history.incidents[model.strongest] if model.strongest is not None else None
        summary = PrecedentSummary(
            history_size=len(history),
            counted=int(model.scored.sum()),
            listed=int(model.precedent.sum()),
            strongest=_ref(top),
            moved=tuple(sorted(model.factors, key=lambda f: -abs(f.contribution))[:3]),
            score=model.score,
            band=band,
        )
        risk = RiskResult(
            score=model.score,
            band=band,
            reasoning=Reasoning((summary,)),
            most_relevant_incident=top.id if top else None,
            recommended_procedure=_procedure(top),
            factors=model.factors,
        )
        return HistoricalResult(
            risk=risk, similar=similar, similar_count=int(model.precedent.sum())
        )


RISK_MODELS: dict[str, Callable[[], RiskModel]] = {
    "seed": SeedRiskModel,
    "default": DefaultRiskModel,
}
"""The risk models by the name the settings use (``PRECEDENT_RISK_MODEL``)."""


def risk_model_named(name: str) -> RiskModel:
    """The risk model called ``name``; ValueError names the known ones."""
    try:
        return RISK_MODELS[name]()
    except KeyError:
        known = ", ".join(RISK_MODELS)
        raise ValueError(f"unknown risk model {name!r}: expected one of {known}") from None


def _ref(incident: Incident | None) -> IncidentRef | None:
    if incident is None:
        return None
    return IncidentRef(incident.id, incident.title, incident.severity, incident.outcome)


def _procedure(incident: Incident | None) -> str | None:
    if incident is None:
        return None
    return incident.recommended_procedure or incident.resolution or None


def _rank_and_list(
    history: History,
    action: ProposedAction,
    matches: Matches,
    candidates: Sequence[int],
    shown: npt.NDArray[Any],
    *,
    top_k: int,
    ranking: RankingWeights | None,
    now: datetime | None,
    later: npt.NDArray[np.bool_] | None = None,
    keep: int | None = None,
) -> list[SimilarIncident]:
    """The ``top_k`` of ``candidates`` in people's order (``rank_score``, computed by
    ``rank_scores``), as listed.

    ``later`` marks candidates listed after the others (each group in people's order); equal
    ranks keep the order of ``candidates``. ``keep`` is always listed (in the last place when
    people's order puts it further down), so a reader never sees a "most relevant incident"
    that the list leaves out. ``shown`` is the similarity each listed incident shows.
    """
    mode, sem = matches.mode, matches.semantic
    # The vector term of the incidents that can be listed only (element-wise: the same values
    # as over the whole history, without a pass over every incident per request).
    needed = np.asarray([*candidates, *([] if keep is None else [keep])], dtype=np.intp)
    vector = dict(
        zip(needed.tolist(), _vector_term(mode, shown[needed], sem[needed]).tolist(), strict=True)
    )

    def ranked(positions: Sequence[int]) -> list[tuple[int, float]]:
        scores = rank_scores(
            [history.incidents[p] for p in positions],
            [vector[p] for p in positions],
            resource_name=action.resource_name,
            now=now,
            weights=ranking,
            action=action.action,
        )
        entries = []
        for p, (uncapped, relevance) in zip(positions, scores, strict=True):
            group = bool(later[p]) if later is not None else False
            entries.append((group, -uncapped, p, relevance))
        entries.sort(key=lambda e: (e[0], e[1]))
        return [(p, relevance) for _, _, p, relevance in entries]

    order = ranked(candidates)[:top_k]
    if keep is not None and all(p != keep for p, _ in order):
        order = [*order[: top_k - 1], *ranked([keep])]
    return [
        _to_similar_incident(
            history.incidents[p],
            float(shown[p]),
            matches.rules.parts(p),
            float(sem[p]) if mode != "rules" else None,
            relevance,
            mode,
        )
        for p, relevance in order
    ]


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
