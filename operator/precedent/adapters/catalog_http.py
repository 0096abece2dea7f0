"""The remote playbook catalog: a Context API reached over HTTP with httpx.

One query is ``GET {base}/api/v1/context/playbooks`` with a per-attempt timeout (2 s), up to
3 retries with exponential backoff and jitter on connect errors, timeouts and 5xx — never on
4xx — behind a circuit breaker (see :mod:`precedent.core.resilience`). A ``budget`` bounds the
whole query: each attempt's timeout is cut to what is left of it, and no retry starts (nor
backoff sleeps) past it. A body over :data:`MAX_RESPONSE_BYTES` is an invalid response, read
no further. A failed query raises
:class:`~precedent.errors.CatalogUnavailable` with the reason; caching and the fallback live in
:class:`~precedent.services.selection.PlaybookSelector` and the caching catalog
(:class:`~precedent.adapters.cache.CachingCatalog`) that wiring puts in front of it.

The Context API's answer is the seed's minimal schema — id, version, description, confidence.
The client also asks for each playbook's confidence parts (``include_components=true``, an
extension of Precedent's Context API); a server that sends them gets them into the status, one
that ignores the parameter gives the total only. No execution count crosses the wire.

:class:`ContextApiResponse` is the response's one definition: the server builds its body from
it (:mod:`precedent.adapters.context_api`) and the client reads the body with it, so the wire
names of the parts (``semantic``, ``label_match``, ``historical``) are written only here.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from precedent.core.playbooks import (
    CatalogAnswer,
    ConfidenceParts,
    PlaybookQuery,
    ScoredPlaybook,
)
from precedent.core.resilience import BreakerState, CircuitBreaker, RetryPolicy
from precedent.errors import CatalogUnavailable
from precedent.metrics import METRICS, Metrics

__all__ = [
    "COMPONENTS_PARAM",
    "PLAYBOOKS_PATH",
    "ContextApiComponents",
    "ContextApiPlaybook",
    "ContextApiResponse",
    "HttpPlaybookCatalog",
    "query_params",
]

PLAYBOOKS_PATH = "/api/v1/context/playbooks"
MAX_RESPONSE_BYTES = 1024 * 1024
"""Largest Context API body read (1 MiB: 100 playbooks with 8 KiB descriptions fit easily)."""
MIN_ATTEMPT_SECONDS = 0.01
"""An attempt needs at least this much of the budget left to be worth sending."""
COMPONENTS_PARAM = "include_components"
"""Query parameter asking for each playbook's ``components`` (absent: the seed's four fields)."""


class ContextApiComponents(BaseModel):
    """The parts of one playbook's confidence, each 0–1, rounded to 4 places."""

    model_config = ConfigDict(extra="ignore")

    semantic: float = Field(ge=0, le=1, description="Semantic similarity.")
    label_match: float = Field(ge=0, le=1, description="Label match.")
    historical: float = Field(ge=0, le=1, description="Smoothed historical success.")


class ContextApiPlaybook(BaseModel):
    """One playbook in a Context API answer: seed 004's four fields, and the parts if asked."""

    model_config = ConfigDict(extra="ignore")

    playbook_id: str = Field(min_length=1, description="Playbook id.")
    version: str = Field(min_length=1, description="Playbook version.")
    description: str = Field(description="What the playbook does.")
    confidence: float = Field(ge=0, le=1, description="Confidence 0–1.")
    components: ContextApiComponents | None = Field(
        default=None, description="The confidence's parts (only with include_components=true)."
    )

    @classmethod
    def of(cls, scored: ScoredPlaybook, *, components: bool) -> ContextApiPlaybook:
        """The wire form of a scored playbook; its parts only when asked and known."""
        parts = scored.parts if components else None
        return cls(
            playbook_id=scored.id,
            version=scored.version,
            description=scored.description,
            confidence=round(scored.confidence, 4),
            components=ContextApiComponents(
                semantic=round(parts.semantic, 4),
                label_match=round(parts.label_match, 4),
                historical=round(parts.historical, 4),
            )
            if parts is not None
            else None,
        )

    def scored(self) -> ScoredPlaybook:
        """The core value: confidence, and its parts when the server sent them."""
        c = self.components
        parts = (
            ConfidenceParts(
                semantic=c.semantic,
                label_match=c.label_match,
                historical=c.historical,
                confidence=self.confidence,
            )
            if c is not None
            else None
        )
        return ScoredPlaybook(
            id=self.playbook_id,
            version=self.version,
            description=self.description,
            confidence=self.confidence,
            parts=parts,
        )


class ContextApiResponse(BaseModel):
    """A Context API answer: playbooks best first, and how many qualified."""

    model_config = ConfigDict(extra="ignore")

    playbooks: list[ContextApiPlaybook] = Field(description="Qualifying playbooks, best first.")
    total_results: int | None = Field(default=None, ge=0, description="How many qualified.")


def query_params(query: PlaybookQuery) -> tuple[tuple[str, str], ...]:
    """The query string for ``query``: description, repeated labels, the two parameters, the
    request's action (so the server scores it as the in-process catalog does), and the request
    for each playbook's confidence parts."""
    return (
        ("description", query.text),
        *(("labels", f"{key}:{value}") for key, value in query.labels),
        ("min_confidence", repr(query.min_confidence)),
        ("max_results", str(query.max_results)),
        *((("action", query.action),) if query.action else ()),
        (COMPONENTS_PARAM, "true"),
    )


def _problem_detail(response: httpx.Response) -> str:
    try:
        body: Any = response.json()
    except ValueError:
        return response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return str(body["detail"])
    return response.reason_phrase


class HttpPlaybookCatalog:
    """Catalog port adapter for a remote Context API (retries, timeout, circuit breaker)."""

    kind = "http"

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 2.0,
        retry: RetryPolicy | None = None,
        failure_threshold: int = 5,
        reset_seconds: float = 30.0,
        metrics: Metrics = METRICS,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.metrics = metrics
        self._transport = transport
        self._clock = clock
        self._sleep = sleep
        self._jitter = jitter
        self._client: httpx.AsyncClient | None = None
        gauge = metrics.circuit_state.labels(self.base_url)
        gauge.set(BreakerState.CLOSED.level)
        self.breaker = CircuitBreaker(
            clock=clock,
            failure_threshold=failure_threshold,
            reset_seconds=reset_seconds,
            on_change=lambda state: gauge.set(state.level),
        )

    @property
    def name(self) -> str:
        """The Context API's base URL."""
        return self.base_url

    def _http(self) -> httpx.AsyncClient:
        # Created on first use, inside the event loop that will use it.
        if self._client is None:
            self._client = httpx.AsyncClient(
                base_url=self.base_url,
                timeout=httpx.Timeout(self.timeout),
                headers={"Accept": "application/json"},
                transport=self._transport,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def search(self, query: PlaybookQuery, *, budget: float | None = None) -> CatalogAnswer:
        """Ask the Context API within ``budget`` seconds (None: the retries' own bounds);
        raises CatalogUnavailable (reason inside) when it cannot answer.

        ``ai_success_rate_queries_total`` counts the query only if it was sent: a refusal of
        the open circuit sends nothing.
        """
        if not self.breaker.allow():
            raise CatalogUnavailable(
                f"circuit open after {self.breaker.consecutive_failures} consecutive failures; "
                f"next trial in {self.breaker.retry_after():.0f} s"
            )
        if budget is not None and budget < MIN_ATTEMPT_SECONDS:
            raise CatalogUnavailable("no time left in the selection deadline (0 attempts)")
        deadline = None if budget is None else self._clock() + budget
        status = "error"
        try:
            answer = await self._search(query, deadline)
            status = "success"
            return answer
        finally:
            self.metrics.success_rate_queries.labels(status).inc()

    async def _search(self, query: PlaybookQuery, deadline: float | None) -> CatalogAnswer:
        try:
            response = await self._get_with_retries(query, deadline)
        except CatalogUnavailable:
            self.breaker.record_failure()
            raise
        if 400 <= response.status_code < 500:
            # The service is up and answered; the query itself was refused. Not retried.
            self.breaker.record_success()
            raise CatalogUnavailable(
                f"query rejected with HTTP {response.status_code}: {_problem_detail(response)}"
            )
        try:
            if response.status_code != 200:
                raise ValueError(f"unexpected HTTP {response.status_code}")
            if len(response.content) > MAX_RESPONSE_BYTES:
                raise ValueError(f"body larger than {MAX_RESPONSE_BYTES} bytes")
            body = ContextApiResponse.model_validate_json(response.content)
        except (ValueError, ValidationError) as exc:
            self.breaker.record_failure()
            first = str(exc).splitlines()[0]
            raise CatalogUnavailable(f"invalid response: {first}") from None
        self.breaker.record_success()
        ranked = sorted(body.playbooks, key=lambda p: (-p.confidence, p.playbook_id))
        candidates = tuple(p.scored() for p in ranked[: query.max_results])
        total = body.total_results if body.total_results is not None else len(body.playbooks)
        return CatalogAnswer(candidates=candidates, total=total, source=self.base_url)

    def _left(self, deadline: float | None) -> float:
        return float("inf") if deadline is None else deadline - self._clock()

    async def _get(self, params: tuple[tuple[str, str], ...], timeout: float) -> httpx.Response:
        # Streamed, so an oversized body is refused after MAX_RESPONSE_BYTES, not buffered.
        client = self._http()
        request = client.build_request(
            "GET", PLAYBOOKS_PATH, params=params, timeout=httpx.Timeout(timeout)
        )
        response = await client.send(request, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                chunks.append(chunk)
                if size > MAX_RESPONSE_BYTES:
                    break
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                content=b"".join(chunks),
                request=request,
            )
        finally:
            await response.aclose()

    async def _get_with_retries(
        self, query: PlaybookQuery, deadline: float | None
    ) -> httpx.Response:
        params = query_params(query)
        reason = "no time left in the selection deadline"
        sent = 0
        for attempt in range(1, self.retry.attempts + 1):
            if attempt > 1:
                delay = self.retry.delay(attempt - 1, self._jitter)
                if self._left(deadline) - delay < MIN_ATTEMPT_SECONDS:
                    break  # no time for another attempt: report the last failure now
                self.metrics.catalog_retries.labels(self.kind).inc()
                await self._sleep(delay)
            timeout = min(self.timeout, self._left(deadline))
            if timeout < MIN_ATTEMPT_SECONDS:
                break
            sent += 1
            try:
                response = await self._get(params, timeout)
            except httpx.TimeoutException:
                reason = f"timed out after {timeout:.3g} s"
                continue
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                continue
            except httpx.HTTPError as exc:
                raise CatalogUnavailable(f"{type(exc).__name__}: {exc}") from None
            if response.status_code >= 500:
                reason = f"HTTP {response.status_code}: {_problem_detail(response)}"
                continue
            return response
        cut = " within the selection deadline" if sent < self.retry.attempts else ""
        raise CatalogUnavailable(f"{reason} ({sent} attempt{'s' if sent != 1 else ''}{cut})")
