"""Playbook selection for a request: query a catalog, fall back when it fails, log and count.

:meth:`PlaybookSelector.select_query` never raises. With a remote catalog (behind the caching
catalog wiring puts in front of it, :class:`~precedent.adapters.cache.CachingCatalog`) it
answers, in order:

1. a fresh cached answer for the same normalised query (younger than the TTL, 5 min) —
   ``data_driven``;
2. the remote catalog's answer, which is then cached — ``data_driven``;
3. when the remote catalog fails (timeout, connection refused, 5xx after the retries, an
   invalid body, a refused query, an open circuit): the last good answer to the same query,
   however old — ``fallback``;
4. else the in-process catalog, if one is configured — ``fallback``;
5. else a ``manual_investigation`` recommendation whose reason names the failure.

The remote catalog gets one deadline for the whole query — every attempt, retry and backoff
(``PRECEDENT_SELECTION_DEADLINE_SECONDS``, 500 ms: seed 004's selection budget); past it the
selector falls back at once, so a hanging catalog costs at most the deadline per request, and
nothing once its circuit breaker is open.

The fallback reason is the start of the rationale. Every decision is logged on the
``precedent.catalog`` logger with its rationale (or its reason), and counted in
``ai_playbook_selections_total`` with bounded labels (see :class:`~precedent.metrics.BoundedLabel`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from precedent.core.playbooks import (
    CatalogAnswer,
    ConfidenceWeights,
    PlaybookCatalog,
    PlaybookQuery,
    SelectionMethod,
    decide,
    unavailable,
)
from precedent.core.ports import PlaybookDecision
from precedent.errors import CatalogUnavailable
from precedent.metrics import METRICS, BoundedLabel, Metrics

__all__ = ["PlaybookChoice", "PlaybookSelector"]

log = logging.getLogger("precedent.catalog")


@dataclass(frozen=True, slots=True)
class PlaybookChoice:
    """One selection: the decision for the core, and how it was reached."""

    query: PlaybookQuery
    """The query the selection answered."""
    decision: PlaybookDecision
    """The selection, its alternatives, or the manual-investigation recommendation."""
    method: SelectionMethod
    """``data_driven`` when the configured catalog answered, ``fallback`` otherwise."""
    source: str | None
    """The catalog whose answer was used (None when none could answer)."""
    reason: str | None = None
    """Why the configured catalog was not used (fallback only)."""
    answer: CatalogAnswer | None = None
    """The catalog answer the decision was made from."""
    cached: bool = False
    """The answer came from the cache (fresh, or last good in a fallback)."""

    @property
    def playbook_id(self) -> str:
        """The selected playbook's id, or ``manual_investigation``."""
        selection = self.decision.selection
        return selection.id if selection else "manual_investigation"


class PlaybookSelector:
    """Chooses a playbook per request from a catalog port, with cache and fallback."""

    def __init__(
        self,
        catalog: PlaybookCatalog,
        *,
        fallback: PlaybookCatalog | None = None,
        min_confidence: float = 0.7,
        max_results: int = 10,
        weights: ConfidenceWeights | None = None,
        metrics: Metrics = METRICS,
        clock: Callable[[], float] = time.monotonic,
        concurrency: int = 8,
        deadline_seconds: float = 0.5,
        declares: Callable[[str], bool] | None = None,
    ) -> None:
        if deadline_seconds <= 0:
            raise ValueError("deadline_seconds must be > 0")
        self.catalog = catalog
        self.fallback = fallback
        self.min_confidence = min_confidence
        self.max_results = max_results
        self.weights = weights or ConfidenceWeights()
        self.metrics = metrics
        self.concurrency = concurrency
        self.deadline_seconds = deadline_seconds
        self._clock = clock
        # Whether an incident type is one the in-process catalog's playbooks declare (None: a
        # remote catalog alone declares none, and only the cap on distinct values bounds them).
        self._declares = declares
        # Label values from input (request labels, a remote catalog's ids) stay bounded.
        self._incident_label = BoundedLabel(always=frozenset({"unknown"}))
        self._playbook_label = BoundedLabel(always=frozenset({"manual_investigation"}))

    async def aclose(self) -> None:
        """Release the remote catalog's connections."""
        await self.catalog.aclose()

    async def __aenter__(self) -> PlaybookSelector:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def select_many(self, queries: Sequence[PlaybookQuery]) -> list[PlaybookChoice]:
        """Select for many queries, ``concurrency`` catalog queries at a time, in order."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(query: PlaybookQuery) -> PlaybookChoice:
            async with gate:
                return await self.select_query(query)

        return list(await asyncio.gather(*(one(q) for q in queries)))

    async def select_query(self, query: PlaybookQuery) -> PlaybookChoice:
        """Select for a prepared query; never raises."""
        try:
            outcome = await self._select(query)
        except Exception as exc:  # the contract: never raise into the caller
            log.exception("playbook selection failed unexpectedly")
            reason = f"unexpected error: {type(exc).__name__}: {exc}"
            outcome = PlaybookChoice(query, unavailable(query, reason), "fallback", None, reason)
        return self._finish(outcome)

    async def _search(
        self, catalog: PlaybookCatalog, query: PlaybookQuery, budget: float | None = None
    ) -> CatalogAnswer:
        started = time.perf_counter()
        outcome = "error"
        answer: CatalogAnswer | None = None
        try:
            answer = await catalog.search(query, budget=budget)
            outcome = "success" if answer.stale_because is None else "error"
            return answer
        finally:
            # Queries sent are counted where they are sent (the HTTP adapter), not here; a
            # fresh cached answer asked nothing.
            if answer is None or answer.cached_age is None or answer.stale_because is not None:
                self.metrics.catalog_latency.labels(catalog.kind, outcome).observe(
                    time.perf_counter() - started
                )

    def _decide(
        self, query: PlaybookQuery, answer: CatalogAnswer, method: SelectionMethod, note: str | None
    ) -> PlaybookDecision:
        return decide(query, answer, method=method, note=note, weights=self.weights)

    async def _select(self, query: PlaybookQuery) -> PlaybookChoice:
        deadline = self._clock() + self.deadline_seconds
        try:
            answer = await self._search(self.catalog, query, deadline - self._clock())
        except CatalogUnavailable as exc:
            return await self._fall_back(query, exc.reason)
        if answer.stale_because is not None:
            reason = answer.stale_because
            where = f"Fallback: the catalog at {self.catalog.name} failed ({reason})"
            note = f"{where}; using its last good answer, {answer.cached_age or 0.0:.0f} s old."
            decision = self._decide(query, answer, "fallback", note)
            return PlaybookChoice(
                query, decision, "fallback", answer.source, reason, answer, cached=True
            )
        decision = self._decide(query, answer, "data_driven", None)
        return PlaybookChoice(
            query,
            decision,
            "data_driven",
            answer.source,
            answer=answer,
            cached=answer.cached_age is not None,
        )

    async def _fall_back(self, query: PlaybookQuery, reason: str) -> PlaybookChoice:
        where = f"Fallback: the catalog at {self.catalog.name} failed ({reason})"
        if self.fallback is not None:
            try:
                answer = await self._search(self.fallback, query)
            except Exception as exc:
                reason = f"{reason}; the in-process fallback failed too: {exc}"
            else:
                note = f"{where}; answered by the {self.fallback.name}."
                decision = self._decide(query, answer, "fallback", note)
                return PlaybookChoice(query, decision, "fallback", answer.source, reason, answer)
        return PlaybookChoice(
            query, unavailable(query, f"{self.catalog.name}: {reason}"), "fallback", None, reason
        )

    def _declared(self, incident_type: str) -> bool:
        return self._declares is None or self._declares(incident_type)

    @staticmethod
    def _answered(outcome: PlaybookChoice) -> bool:
        # A playbook id is known when a catalog answered with it, never from the request.
        selection = outcome.decision.selection
        answer = outcome.answer
        return (
            selection is not None
            and answer is not None
            and any(c.id == selection.id for c in answer.candidates)
        )

    def _finish(self, outcome: PlaybookChoice) -> PlaybookChoice:
        decision = outcome.decision
        self.metrics.playbook_selections.labels(
            self._incident_label(
                outcome.query.incident_type, known=self._declared(outcome.query.incident_type)
            ),
            self._playbook_label(outcome.playbook_id, known=self._answered(outcome)),
            outcome.method,
        ).inc()
        level = logging.INFO if outcome.method == "data_driven" else logging.WARNING
        if decision.selection is not None:
            log.log(
                level,
                "playbook selected: %s %s (confidence %.2f, %s): %s",
                decision.selection.id,
                decision.selection.version,
                decision.selection.confidence,
                outcome.method,
                decision.selection.rationale,
            )
        elif decision.recommendation is not None:
            log.log(
                level,
                "no playbook selected (%s, incident type %s): manual investigation: %s",
                outcome.method,
                outcome.query.incident_type,
                decision.recommendation.reason,
            )
        return outcome
