"""Quality of the operator's own answers over labelled sets: the ranking (MRR, hit@k, MAP@10),
the risk bands, and the playbook selection.

Each query is ranked by :meth:`IncidentScorer.rank` — the code that fills a request's
``similarIncidents`` — and each playbook chosen by the assessor's own selector, so
``precedent eval`` measures what the operator shows people.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from precedent.adapters.evaluation import EvalQuery
from precedent.adapters.loader import LabelledRequest, SelectionLabel
from precedent.core.context import ContextFacts
from precedent.core.evaluation import QueryResult, RetrievalMetrics, summarize
from precedent.core.playbooks.evaluation import SelectionResult
from precedent.core.risk_evaluation import BandResult, RiskEvaluation, evaluate_bands
from precedent.errors import InputError
from precedent.models import Assessment
from precedent.services.assessment import Assessor, IncidentScorer

__all__ = [
    "EVAL_DEPTH",
    "evaluate_risk",
    "rank_for_query",
    "run_evaluation",
    "select_for_labelled",
]

EVAL_DEPTH = 100
"""How many incidents are ranked per query (MAP@10 and MRR need only the top)."""


def rank_for_query(
    scorer: IncidentScorer,
    query: EvalQuery,
    depth: int = EVAL_DEPTH,
    *,
    now: datetime | None = None,
) -> list[str]:
    """Incident ids as the operator ranks them for the query, leaving out ``query.exclude``.

    ``now`` plays the request's creation time (the anchor of seed 001's recency boost);
    None applies no recency boost, so a labelled set scores the same whatever the date.
    """
    ranked = scorer.rank(query.action, depth + len(query.exclude), now=now)
    return [s.id for s in ranked if s.id not in query.exclude][:depth]


def run_evaluation(scorer: IncidentScorer, queries: Iterable[EvalQuery]) -> RetrievalMetrics:
    """MRR, hit@1, hit@5 and MAP@10 of the operator's ranking over ``queries``."""
    return summarize(QueryResult.of(rank_for_query(scorer, q), q.relevant) for q in queries)


async def evaluate_risk(
    assessor: Assessor,
    labelled: Sequence[LabelledRequest],
    facts: Callable[[str | None], ContextFacts] | None = None,
) -> RiskEvaluation:
    """Assess each labelled request as the operator does and compare its band with the label.

    ``facts`` gives the facts of a cluster (by the request's ``precedent.dev/cluster``, None
    when it names none): each request is then answered in its verified context, as the
    operator of that cluster answers it. Without it the requests' labels are used as claimed.
    """
    assessments = []
    if facts is None:
        assessments = await assessor.assess_many([item.request.spec for item in labelled])
    else:
        clusters: dict[str | None, list[int]] = {}
        for position, item in enumerate(labelled):
            clusters.setdefault(item.cluster, []).append(position)
        found: dict[int, Assessment] = {}
        for cluster, positions in clusters.items():
            answers = await assessor.with_facts(facts(cluster)).assess_many(
                [labelled[p].request.spec for p in positions],
                namespaces=[labelled[p].request.namespace for p in positions],
            )
            found.update(zip(positions, answers, strict=True))
        assessments = [found[p] for p in range(len(labelled))]
    return evaluate_bands(
        BandResult(
            name=item.request.name,
            expected=item.expected_band,
            predicted=assessment.risk.band,
            score=assessment.risk.score,
            reasoning=assessment.risk.reasoning.text,
            rationale=item.rationale,
        )
        for item, assessment in zip(labelled, assessments, strict=True)
    )


async def select_for_labelled(
    assessor: Assessor, labelled: Sequence[SelectionLabel]
) -> list[SelectionResult]:
    """Select a playbook for each labelled request as the operator does — the assessor's own
    normalisation and its playbook selector — and pair the answer with the label."""
    selector = assessor.selector
    if selector is None:
        raise InputError("no playbook catalog: pass --catalog PATH or set PRECEDENT_CATALOG")
    queries = [assessor.normalise(item.request.spec).query for item in labelled]
    choices = await selector.select_many(queries)
    results = []
    for item, choice in zip(labelled, choices, strict=True):
        selection = choice.decision.selection
        results.append(
            SelectionResult(
                name=item.request.name,
                acceptable=item.acceptable,
                chosen=choice.playbook_id,
                confidence=selection.confidence if selection is not None else None,
                split=item.split,
            )
        )
    return results
