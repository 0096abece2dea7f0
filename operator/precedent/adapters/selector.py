"""Playbook selection for a request: query a catalog, fall back when it fails, log and count.

:meth:`PlaybookSelector.select` never raises. With a remote catalog it answers, in order:

1. a fresh cached answer for the same normalised query (younger than the TTL, 5 min) —
   ``data_driven``;
2. the remote catalog's answer, which is then cached — ``data_driven``;
3. when the remote catalog fails (timeout, connection refused, 5xx after the retries, an
   invalid body, a refused query, an open circuit): the last good answer to the same query,
   however old — ``fallback``;
4. else the in-process catalog, if one is configured — ``fallback``;
5. else a ``manual_investigation`` recommendation whose reason names the failure.

The fallback reason is the start of the rationale. Every decision is logged on the
``precedent.catalog`` logger with its rationale (or its reason), and counted in
``ai_playbook_selections_total``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from precedent.adapters.cache import TTLCache
from precedent.adapters.catalog_http import HttpPlaybookCatalog
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.retrieval import build_embedder
from precedent.core.playbooks import (
    CatalogAnswer,
    ConfidenceWeights,
    PlaybookCatalog,
    PlaybookQuery,
    SelectionMethod,
    SuccessPrior,
    decide,
    unavailable,
)
from precedent.core.ports import PlaybookDecision
from precedent.core.resilience import RetryPolicy
from precedent.errors import CatalogUnavailable, InputError
from precedent.metrics import METRICS, Metrics
from precedent.models import RemediationRequestSpec
from precedent.settings import DEFAULT_CATALOG_PATH, Settings

__all__ = [
    "PlaybookSelector",
    "SelectionOutcome",
    "build_catalog",
    "build_selector",
    "scoring",
    "select_all",
]

log = logging.getLogger("precedent.catalog")


@dataclass(frozen=True, slots=True)
class SelectionOutcome:
    """One selection: the decision for the core, and how it was reached."""

    query: PlaybookQuery
    """The query the selection answered."""
    decision: PlaybookDecision
    """What goes to ``Assessor.assess(spec, playbook=…)``."""
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
        fallback: LocalPlaybookCatalog | None = None,
        cache_ttl_seconds: float = 300.0,
        min_confidence: float = 0.7,
        max_results: int = 10,
        weights: ConfidenceWeights | None = None,
        metrics: Metrics = METRICS,
        clock: Callable[[], float] = time.monotonic,
        concurrency: int = 8,
    ) -> None:
        self.catalog = catalog
        self.fallback = fallback
        self.min_confidence = min_confidence
        self.max_results = max_results
        self.weights = weights or ConfidenceWeights()
        self.metrics = metrics
        self.concurrency = concurrency
        # Only a remote answer is worth caching; the in-process catalog is faster than a lookup.
        self.cache: TTLCache[CatalogAnswer] | None = (
            TTLCache(ttl_seconds=cache_ttl_seconds, clock=clock)
            if catalog.kind != "in_process"
            else None
        )

    async def aclose(self) -> None:
        """Release the remote catalog's connections."""
        close = getattr(self.catalog, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> PlaybookSelector:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def query_for(self, spec: RemediationRequestSpec) -> PlaybookQuery:
        """The catalog query for a request, with this selector's parameters."""
        return PlaybookQuery.from_spec(
            spec, min_confidence=self.min_confidence, max_results=self.max_results
        )

    async def select(self, spec: RemediationRequestSpec) -> SelectionOutcome:
        """Select a playbook for one request; never raises."""
        try:
            query = self.query_for(spec)
        except ValueError as exc:  # e.g. a label given twice after normalisation
            query = PlaybookQuery(text=spec.description, subject=spec.target.name)
            return self._finish(
                SelectionOutcome(query, unavailable(query, str(exc)), "fallback", None, str(exc))
            )
        return await self.select_query(query)

    async def select_many(self, specs: Sequence[RemediationRequestSpec]) -> list[SelectionOutcome]:
        """Select for many requests, ``concurrency`` catalog queries at a time, in order."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(spec: RemediationRequestSpec) -> SelectionOutcome:
            async with gate:
                return await self.select(spec)

        return list(await asyncio.gather(*(one(s) for s in specs)))

    async def select_query(self, query: PlaybookQuery) -> SelectionOutcome:
        """Select for a prepared query; never raises."""
        try:
            outcome = await self._select(query)
        except Exception as exc:  # the contract: never raise into the caller
            log.exception("playbook selection failed unexpectedly")
            reason = f"unexpected error: {type(exc).__name__}: {exc}"
            outcome = SelectionOutcome(query, unavailable(query, reason), "fallback", None, reason)
        return self._finish(outcome)

    async def _search(self, catalog: PlaybookCatalog, query: PlaybookQuery) -> CatalogAnswer:
        started = time.perf_counter()
        outcome = "error"
        try:
            answer = await catalog.search(query)
            outcome = "success"
            return answer
        finally:
            self.metrics.catalog_latency.labels(catalog.kind, outcome).observe(
                time.perf_counter() - started
            )
            self.metrics.success_rate_queries.labels(outcome).inc()

    def _decide(
        self, query: PlaybookQuery, answer: CatalogAnswer, method: SelectionMethod, note: str | None
    ) -> PlaybookDecision:
        return decide(query, answer, method=method, note=note, weights=self.weights)

    async def _select(self, query: PlaybookQuery) -> SelectionOutcome:
        key = query.cache_key()
        if self.cache is not None:
            hit = self.cache.fresh(key)
            self.metrics.catalog_cache.labels("hit" if hit else "miss").inc()
            if hit is not None:
                decision = self._decide(query, hit.value, "data_driven", None)
                return SelectionOutcome(
                    query, decision, "data_driven", hit.value.source, answer=hit.value, cached=True
                )
        try:
            answer = await self._search(self.catalog, query)
        except CatalogUnavailable as exc:
            return await self._fall_back(query, key, exc.reason)
        if self.cache is not None:
            self.cache.put(key, answer)
        decision = self._decide(query, answer, "data_driven", None)
        return SelectionOutcome(query, decision, "data_driven", answer.source, answer=answer)

    async def _fall_back(self, query: PlaybookQuery, key: str, reason: str) -> SelectionOutcome:
        where = f"Fallback: the catalog at {self.catalog.name} failed ({reason})"
        stale = self.cache.last_good(key) if self.cache is not None else None
        if stale is not None:
            self.metrics.catalog_cache.labels("stale").inc()
            note = f"{where}; using its last good answer, {stale.age:.0f} s old."
            decision = self._decide(query, stale.value, "fallback", note)
            return SelectionOutcome(
                query, decision, "fallback", stale.value.source, reason, stale.value, cached=True
            )
        if self.fallback is not None:
            try:
                answer = await self._search(self.fallback, query)
            except Exception as exc:
                reason = f"{reason}; the in-process fallback failed too: {exc}"
            else:
                note = f"{where}; answered by the {self.fallback.name}."
                decision = self._decide(query, answer, "fallback", note)
                return SelectionOutcome(query, decision, "fallback", answer.source, reason, answer)
        return SelectionOutcome(
            query, unavailable(query, f"{self.catalog.name}: {reason}"), "fallback", None, reason
        )

    def _finish(self, outcome: SelectionOutcome) -> SelectionOutcome:
        decision = outcome.decision
        self.metrics.playbook_selections.labels(
            outcome.query.incident_type, outcome.playbook_id, outcome.method
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


# ---------------------------------------------------------------------------------------------
# Construction from settings
# ---------------------------------------------------------------------------------------------


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def scoring(settings: Settings) -> tuple[ConfidenceWeights, SuccessPrior]:
    """Confidence weights and success prior from settings."""
    weights = ConfidenceWeights(
        semantic=settings.confidence_weight_semantic,
        labels=settings.confidence_weight_labels,
        historical=settings.confidence_weight_historical,
    )
    prior = SuccessPrior(settings.success_prior_successes, settings.success_prior_failures)
    return weights, prior


def build_catalog(location: str, settings: Settings) -> LocalPlaybookCatalog | HttpPlaybookCatalog:
    """A catalog for a path (in-process) or an http(s) URL (remote), configured by settings."""
    if _is_url(location):
        return HttpPlaybookCatalog(
            location,
            timeout=settings.catalog_timeout_seconds,
            retry=RetryPolicy(
                retries=settings.catalog_retries,
                base_delay=settings.catalog_backoff_base_seconds,
                max_delay=settings.catalog_backoff_max_seconds,
            ),
            failure_threshold=settings.breaker_failure_threshold,
            reset_seconds=settings.breaker_reset_seconds,
        )
    path = Path(location)
    if not path.exists():
        raise InputError(f"catalog {location}: no such file or directory")
    weights, prior = scoring(settings)
    return LocalPlaybookCatalog.from_paths(
        [path], embedder=build_embedder(settings), weights=weights, prior=prior
    )


def build_selector(location: str | None, settings: Settings) -> PlaybookSelector | None:
    """The selector for ``--catalog`` / ``$PRECEDENT_CATALOG`` / ``data/playbooks``, or None.

    A remote catalog gets the in-process fallback from ``$PRECEDENT_CATALOG_FALLBACK``, else
    ``data/playbooks`` when it exists.
    """
    location = location or settings.catalog
    if location is None:
        if not DEFAULT_CATALOG_PATH.exists():
            return None
        location = str(DEFAULT_CATALOG_PATH)
    catalog = build_catalog(location, settings)
    fallback = None
    if isinstance(catalog, HttpPlaybookCatalog):
        path = settings.catalog_fallback or DEFAULT_CATALOG_PATH
        if path.exists():
            weights, prior = scoring(settings)
            fallback = LocalPlaybookCatalog.from_paths(
                [path], embedder=build_embedder(settings), weights=weights, prior=prior
            )
        elif settings.catalog_fallback is not None:
            raise InputError(f"catalog fallback {path}: no such file or directory")
    weights, _ = scoring(settings)
    return PlaybookSelector(
        catalog,
        fallback=fallback,
        cache_ttl_seconds=settings.catalog_cache_ttl_seconds,
        min_confidence=settings.min_confidence,
        max_results=settings.max_playbooks,
        weights=weights,
    )


def select_all(
    selector: PlaybookSelector, specs: Sequence[RemediationRequestSpec]
) -> list[SelectionOutcome]:
    """Select for every request from synchronous code (the CLI), then close the selector."""

    async def run() -> list[SelectionOutcome]:
        async with selector:
            return await selector.select_many(specs)

    return asyncio.run(run())
