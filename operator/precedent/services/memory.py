"""The fleet memory use case: ask it before scoring, write this cluster's incidents to it.

Reading (:meth:`FleetMemory.recall`), once per request, in the event loop before the scoring
thread runs: behind a circuit breaker (core/resilience.py, the one the catalog client uses) and
a deadline (``PRECEDENT_MEMORY_TIMEOUT_MS``, seed 001: 2 s). It never raises: a memory that is
down, slow, refusing or misconfigured gives a :class:`MemoryRecall` with the reason
(``memory: timeout after 2000 ms``, ``memory: circuit open``) and the request is scored on the
local history alone.

Writing (:meth:`FleetMemory.remember`): incidents this cluster holds are queued and written in
the background, in batches, with bounded retries; the document id is the incident id, so a
replay or a restart rewrites the same document. Scoring never waits for a write. A batch given
up after its retries is counted (``dropped``), logged and kept: it is queued again as soon as a
query is answered. A query that finds the index gone queues again everything this process
wrote (a write then re-creates the index from the template).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from precedent.core.memory_query import (
    MemoryHit,
    MemoryQuery,
    TopologyLimits,
    VectorField,
    incident_document,
    rerank,
    topology_hints,
)
from precedent.core.normalize import ProposedAction
from precedent.core.ports import Embedder, IncidentMemory, MemoryFailure
from precedent.core.ranking import RankingWeights
from precedent.core.resilience import BreakerState, CircuitBreaker, RetryPolicy
from precedent.metrics import METRICS, Metrics
from precedent.models import Incident, TopologyHints

__all__ = ["FleetMemory", "MemoryRecall"]

logger = logging.getLogger(__name__)

_BATCH = 100


@dataclass(frozen=True, slots=True)
class MemoryRecall:
    """What the memory answered for one request (or why it did not)."""

    hits: list[MemoryHit] = field(default_factory=list)
    """Re-ranked hits, best first (not yet de-duplicated against the local history)."""
    topology: TopologyHints | None = None
    """Topology hints from the hits' stored nodes and edges."""
    problem: str | None = None
    """Why the memory did not answer (None: it answered, perhaps with nothing)."""

    @property
    def source(self) -> str:
        """``memory`` or ``memory: <reason>`` for ``status.engine.sources``."""
        return "memory" if self.problem is None else f"memory: {self.problem}"


class FleetMemory:
    """Reads and writes the fleet's shared incidents through an ``IncidentMemory``."""

    def __init__(
        self,
        store: IncidentMemory,
        *,
        cluster_name: str | None = None,
        max_results: int = 5,
        min_quality: float = 0.7,
        timeout_ms: int = 2000,
        topology: TopologyLimits | None = None,
        ranking: RankingWeights | None = None,
        embedder: Embedder | None = None,
        failure_threshold: int = 5,
        reset_seconds: float = 30.0,
        write_retry: RetryPolicy | None = None,
        metrics: Metrics = METRICS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.store = store
        self.cluster_name = cluster_name
        self.max_results = max_results
        self.min_quality = min_quality
        self.timeout_ms = timeout_ms
        self.topology = topology or TopologyLimits()
        self.ranking = ranking
        self.embedder = embedder
        self.write_retry = write_retry or RetryPolicy(retries=3, base_delay=0.5, max_delay=5.0)
        self.metrics = metrics
        self._sleep = sleep
        gauge = metrics.memory_circuit_state
        gauge.set(BreakerState.CLOSED.level)
        self.breaker = CircuitBreaker(
            clock=clock,
            failure_threshold=failure_threshold,
            reset_seconds=reset_seconds,
            on_change=lambda state: gauge.set(state.level),
        )
        # Writes come from kopf's handler threads and from the event loop.
        self._lock = threading.Lock()
        self._pending: dict[str, Incident] = {}
        self._written: dict[str, Incident] = {}  # what this process already stored, by id
        # Given up after the bounded retries: tried again once a query is answered.
        self._parked: dict[str, Incident] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writer: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        with contextlib.suppress(RuntimeError):  # built inside the operator's event loop
            asyncio.get_running_loop()
            self._bind()

    # -- reading ------------------------------------------------------------------------------

    async def recall(self, action: ProposedAction, *, now: datetime | None = None) -> MemoryRecall:
        """The memory's incidents for ``action``, re-ranked; never raises."""
        self._bind()
        if not self.breaker.allow():
            self._count("circuit_open", None)
            return MemoryRecall(problem="circuit open")
        started = time.perf_counter()
        try:
            hits = await asyncio.wait_for(
                self._search(action, now), timeout=self.timeout_ms / 1000.0
            )
        except TimeoutError:
            self.breaker.record_failure()
            self._count("timeout", started)
            return MemoryRecall(problem=f"timeout after {self.timeout_ms} ms")
        except MemoryFailure as exc:
            self.breaker.record_failure()
            self._count(exc.kind, started)
            logger.warning("fleet memory did not answer: %s", exc)
            if exc.kind == "not_found":
                self._requeue_written()
            if exc.kind == "timeout":
                # The client's own timeout is the deadline too (build_memory); whichever of
                # the two fires first, the answer says the same.
                return MemoryRecall(problem=f"timeout after {self.timeout_ms} ms")
            return MemoryRecall(problem=str(exc))
        self.breaker.record_success()
        self._count("success", started)
        self._requeue_parked()
        moment = now or datetime.now(UTC)
        return MemoryRecall(
            hits=hits, topology=topology_hints(hits, now=moment, limits=self.topology)
        )

    async def _search(self, action: ProposedAction, now: datetime | None) -> list[MemoryHit]:
        field_ = await self.store.vector_field()
        vector = None
        if (
            field_ is not None
            and self.embedder is not None
            and self.embedder.dimension == field_.dimension
        ):
            vector = self.embedder.embed([action.text])[0].tolist()
        query = MemoryQuery(
            text=action.text or action.display,
            resource_type=action.resource_type,
            size=self.max_results,
            min_quality=self.min_quality,
            vector=vector,
            vector_field=field_,
        )
        parsed = await self.store.search(query)
        for line in parsed.skipped:
            logger.warning("fleet memory %s: skipped %s", self.store.location, line)
        return rerank(
            parsed.hits,
            resource_name=action.resource_name,
            now=now,
            limit=self.max_results,
            weights=self.ranking,
        )

    def _count(self, status: str, started: float | None) -> None:
        self.metrics.memory_queries.labels(status=status).inc()
        if started is not None:
            self.metrics.memory_latency.labels(status=status).observe(time.perf_counter() - started)

    # -- writing ------------------------------------------------------------------------------

    def remember(self, incident: Incident) -> None:
        """Queue ``incident`` for the memory (any thread); unchanged ones are not rewritten."""
        with self._lock:
            self._parked.pop(incident.id, None)  # this version replaces the one given up
            if self._written.get(incident.id) == incident:
                return
            self._pending[incident.id] = incident
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # written once the memory is first used inside the event loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._kick()
        else:
            loop.call_soon_threadsafe(self._kick)

    def _requeue_written(self) -> None:
        """The index is gone (deleted; perhaps re-created from the template by a write): what
        this process wrote is written again, since nothing else would rewrite an unchanged
        incident."""
        with self._lock:
            written, self._written = self._written, {}
            for key, incident in written.items():
                self._pending.setdefault(key, incident)
        if written:
            logger.warning(
                "fleet memory %s: index not found: writing this cluster's %d incident(s) again",
                self.store.location,
                len(written),
            )
            self._kick()

    def _requeue_parked(self) -> None:
        """The memory answers again: writes given up while it did not are tried once more."""
        with self._lock:
            parked, self._parked = self._parked, {}
            for key, incident in parked.items():
                self._pending.setdefault(key, incident)
        if parked:
            self._kick()

    def _bind(self) -> None:
        """Adopt the running event loop for background writes (first use inside it)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._wake = asyncio.Event()
            self._idle = asyncio.Event()
            self._idle.set()
            self._writer = self._loop.create_task(self._write_loop(), name="precedent-memory")
            self._kick()

    def start(self) -> None:
        """Start background writing in the running event loop (the operator's start-up)."""
        self._bind()

    def _kick(self) -> None:
        with self._lock:
            waiting = bool(self._pending)
        if waiting and self._wake is not None and self._idle is not None:
            self._idle.clear()
            self._wake.set()

    async def _write_loop(self) -> None:
        assert self._wake is not None
        assert self._idle is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    batch = dict(list(self._pending.items())[:_BATCH])
                    for key in batch:
                        del self._pending[key]
                if not batch:
                    break
                await self._write(list(batch.values()))
            self._idle.set()

    async def _vector_embedder(self) -> tuple[VectorField | None, Embedder | None]:
        """The index's vector field and the embedder to fill it with (None: no vector)."""
        try:
            field_ = await self.store.vector_field()
        except MemoryFailure:
            field_ = None  # written without a vector; the text match still finds it
        embed = (
            self.embedder
            if field_ is not None
            and self.embedder is not None
            and self.embedder.dimension == field_.dimension
            else None
        )
        return field_, embed

    async def _write(self, incidents: list[Incident]) -> None:
        field_, embed = await self._vector_embedder()
        documents = [(i.id, self._document(i, embed)) for i in incidents]
        failure: MemoryFailure | None = None
        for attempt in range(self.write_retry.attempts):
            if attempt:
                self.metrics.memory_writes.labels(status="retry").inc()
                await self._sleep(self.write_retry.delay(attempt, random.random))
                # A store that refused the documents or lost the index reads its mapping
                # again: a vector field of another dimension (or none) rebuilds the documents.
                again, embed = await self._vector_embedder()
                if again != field_:
                    field_ = again
                    documents = [(i.id, self._document(i, embed)) for i in incidents]
            try:
                await self.store.upsert(documents)
            except MemoryFailure as exc:
                failure = exc
                continue
            except Exception as exc:  # a bug in a client must not kill the writer
                failure = MemoryFailure("error", f"{type(exc).__name__}: {exc}")
                continue
            with self._lock:
                for incident in incidents:
                    self._written[incident.id] = incident
                    self._parked.pop(incident.id, None)
            self.metrics.memory_writes.labels(status="success").inc(len(documents))
            return
        self.metrics.memory_writes.labels(status="dropped").inc(len(documents))
        with self._lock:
            for incident in incidents:
                if incident.id not in self._pending:  # else a newer version is queued
                    self._parked[incident.id] = incident
        logger.warning(
            "fleet memory: %d incident(s) not written after %d attempts (tried again once "
            "the memory answers a query): %s",
            len(documents),
            self.write_retry.attempts,
            failure,
        )

    def _document(self, incident: Incident, embedder: Embedder | None) -> dict[str, Any]:
        vector = embedder.embed([incident.text()])[0].tolist() if embedder is not None else None
        return incident_document(incident, cluster=self.cluster_name, vector=vector)

    async def flush(self) -> None:
        """Wait until every queued write was tried (tests, shutdown)."""
        self._bind()
        self._kick()
        assert self._idle is not None
        await self._idle.wait()

    async def aclose(self) -> None:
        """Stop writing and close the store's connections."""
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None
        await self.store.aclose()
