"""Retrieval metrics: MRR, hit@k and MAP@10 over ranked incident ids.

For one query with ranking ``r`` (best first) and relevant set ``R``:

- reciprocal rank = 1 / rank of the first relevant id (0 if none is ranked);
- hit@k = 1 if a relevant id is among the first k;
- AP@10 = Σ over ranks i ≤ 10 holding a relevant id of precision@i, divided by min(|R|, 10).

Each is averaged over the queries.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["QueryResult", "RetrievalMetrics", "average_precision", "summarize"]

MAP_DEPTH = 10


@dataclass(frozen=True, slots=True)
class QueryResult:
    """One query's reciprocal rank, hits and AP@10."""

    reciprocal_rank: float
    hit_at_1: bool
    hit_at_5: bool
    average_precision: float

    @classmethod
    def of(cls, ranking: Sequence[str], relevant: Collection[str]) -> QueryResult:
        """Score one ranking against its relevant ids."""
        first = next((i for i, key in enumerate(ranking) if key in relevant), None)
        return cls(
            reciprocal_rank=0.0 if first is None else 1.0 / (first + 1),
            hit_at_1=first is not None and first < 1,
            hit_at_5=first is not None and first < 5,
            average_precision=average_precision(ranking, relevant),
        )


def average_precision(
    ranking: Sequence[str], relevant: Collection[str], depth: int = MAP_DEPTH
) -> float:
    """AP@depth: precision at each relevant rank ≤ depth, over min(|relevant|, depth)."""
    if not relevant:
        return 0.0
    hits, total = 0, 0.0
    for i, key in enumerate(ranking[:depth], start=1):
        if key in relevant:
            hits += 1
            total += hits / i
    return total / min(len(relevant), depth)


@dataclass(frozen=True, slots=True)
class RetrievalMetrics:
    """Averages over the queries scored."""

    mrr: float
    hit_at_1: float
    hit_at_5: float
    map: float
    queries: int

    def as_dict(self) -> dict[str, float | int]:
        """The JSON shape ``precedent eval retrieval -o json`` prints."""
        return {
            "mrr": round(self.mrr, 4),
            "hit@1": round(self.hit_at_1, 4),
            "hit@5": round(self.hit_at_5, 4),
            "map": round(self.map, 4),
            "queries": self.queries,
        }


def summarize(outcomes: Iterable[QueryResult]) -> RetrievalMetrics:
    """Average the per-query outcomes (all zeros for no queries)."""
    items = list(outcomes)
    n = len(items)
    if n == 0:
        return RetrievalMetrics(0.0, 0.0, 0.0, 0.0, 0)
    return RetrievalMetrics(
        mrr=sum(o.reciprocal_rank for o in items) / n,
        hit_at_1=sum(o.hit_at_1 for o in items) / n,
        hit_at_5=sum(o.hit_at_5 for o in items) / n,
        map=sum(o.average_precision for o in items) / n,
        queries=n,
    )
