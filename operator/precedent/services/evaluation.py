"""Retrieval quality of the operator's own ranking: MRR, hit@k and MAP@10 over labelled queries.

Each query is ranked by :meth:`AssessmentService.rank` — the code that fills a request's
``similarIncidents`` — so ``precedent eval`` measures what the operator shows people.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from precedent.adapters.evaluation import EvalQuery
from precedent.adapters.loader import LabelledRequest
from precedent.core.evaluation import QueryResult, RetrievalMetrics, summarize
from precedent.core.risk_evaluation import BandResult, RiskEvaluation, evaluate_bands
from precedent.services.assessment import AssessmentService

__all__ = ["EVAL_DEPTH", "evaluate_risk", "rank_for_query", "run_evaluation"]

EVAL_DEPTH = 100
"""How many incidents are ranked per query (MAP@10 and MRR need only the top)."""


def rank_for_query(
    service: AssessmentService,
    query: EvalQuery,
    depth: int = EVAL_DEPTH,
    *,
    now: datetime | None = None,
) -> list[str]:
    """Incident ids as the operator ranks them for the query, leaving out ``query.exclude``.

    ``now`` plays the request's creation time (the anchor of seed 001's recency boost);
    None applies no recency boost, so a labelled set scores the same whatever the date.
    """
    ranked = service.rank(query.action, depth + len(query.exclude), now=now)
    return [s.id for s in ranked if s.id not in query.exclude][:depth]


def run_evaluation(service: AssessmentService, queries: Iterable[EvalQuery]) -> RetrievalMetrics:
    """MRR, hit@1, hit@5 and MAP@10 of the operator's ranking over ``queries``."""
    return summarize(QueryResult.of(rank_for_query(service, q), q.relevant) for q in queries)


async def evaluate_risk(
    service: AssessmentService, labelled: Sequence[LabelledRequest]
) -> RiskEvaluation:
    """Assess each labelled request as the operator does and compare its band with the label."""
    assessments = await service.assess_many([item.request.spec for item in labelled])
    return evaluate_bands(
        BandResult(
            name=item.request.name,
            expected=item.expected_band,
            predicted=assessment.risk.band,
            score=assessment.risk.score,
            reasoning=assessment.risk.reasoning,
            rationale=item.rationale,
        )
        for item, assessment in zip(labelled, assessments, strict=True)
    )
