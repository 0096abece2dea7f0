"""One deadline for the whole playbook selection (seed 004: 500 ms), against a real Context API
server with injected faults: attempts, retries and backoff all fit in it, then the fallback
answers; the breaker then spares the catalog; only queries actually sent are counted.

Time is asserted on a clock the test controls, or as a number of attempts — never wall time.
"""

from __future__ import annotations

import time

import pytest

from precedent.adapters.cache import CachingCatalog
from precedent.adapters.catalog_http import HttpPlaybookCatalog
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.core.playbooks import PlaybookQuery
from precedent.core.resilience import RetryPolicy
from precedent.metrics import Metrics
from precedent.models import RemediationRequestSpec
from precedent.services import PlaybookSelector
from precedent.settings import Settings
from precedent.wiring import build_embedder, build_selector
from tests.integration.catalog.faults import Clock, Server

pytestmark = pytest.mark.integration

SPEC = RemediationRequestSpec.model_validate(
    {
        "action": "restart_pod",
        "target": {"kind": "Pod", "name": "checkout-7f9c"},
        "description": "OOMKilled pod keeps restarting",
        "labels": {"incident-type": "pod-oom-killer"},
    }
)


class RunningClock(Clock):
    """The monotonic clock plus the backoff the test skipped: a hang's real wait is seen."""

    def __call__(self) -> float:
        return time.monotonic() + self.now


class AdvancingSleep:
    """Backoff that moves the test's clock instead of sleeping: the budget sees every delay."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.clock.now += seconds


def catalog(
    url: str, metrics: Metrics, clock: Clock, sleep: AdvancingSleep, timeout: float = 2.0
) -> HttpPlaybookCatalog:
    return HttpPlaybookCatalog(
        url,
        timeout=timeout,
        retry=RetryPolicy(retries=3, base_delay=0.1, max_delay=1.0),
        failure_threshold=5,
        reset_seconds=30.0,
        metrics=metrics,
        clock=clock,
        sleep=sleep,
        jitter=lambda: 0.0,
    )


def selector(
    primary: HttpPlaybookCatalog,
    fallback: LocalPlaybookCatalog,
    metrics: Metrics,
    clock: Clock,
    deadline: float,
) -> PlaybookSelector:
    return PlaybookSelector(
        CachingCatalog(primary, clock=clock, metrics=metrics),
        fallback=fallback,
        min_confidence=0.5,
        metrics=metrics,
        clock=clock,
        deadline_seconds=deadline,
    )


def query(number: int = 0) -> PlaybookQuery:
    # A different description each time, so no answer comes from the cache.
    spec = SPEC.model_copy(update={"description": f"{SPEC.description} #{number}"})
    return PlaybookQuery.from_spec(spec, min_confidence=0.5)


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_retries_and_backoff_stop_at_the_deadline(
    server: Server, metrics: Metrics, clock: Clock, local_catalog: LocalPlaybookCatalog
) -> None:
    server.faults.always = "503"
    sleep = AdvancingSleep(clock)
    started = clock.now
    async with selector(
        catalog(server.url, metrics, clock, sleep), local_catalog, metrics, clock, deadline=0.25
    ) as s:
        outcome = await s.select_query(query())
    # 0.1 s of backoff fits in 0.25 s; the next 0.2 s would not: 2 attempts, not 4.
    assert server.faults.hits == 2
    assert sleep.delays == pytest.approx([0.1])
    assert clock.now - started <= 0.25
    assert outcome.method == "fallback"
    assert outcome.reason is not None
    assert "(2 attempts within the selection deadline)" in outcome.reason
    assert sample(metrics, "ai_success_rate_queries_total", status="error") == 1


async def test_a_hanging_catalog_costs_one_attempt_cut_to_the_deadline(
    server: Server, metrics: Metrics, local_catalog: LocalPlaybookCatalog
) -> None:
    server.faults.always = "hang"
    clock = RunningClock()
    sleep = AdvancingSleep(clock)
    # A 2 s attempt timeout, cut to the 0.2 s deadline: one attempt, then the fallback.
    async with selector(
        catalog(server.url, metrics, clock, sleep), local_catalog, metrics, clock, deadline=0.2
    ) as s:
        outcome = await s.select_query(query())
    assert server.faults.hits == 1
    assert sleep.delays == []
    assert outcome.reason is not None
    assert "timed out after 0.2 s (1 attempt within the selection deadline)" in outcome.reason
    assert outcome.decision.selection is not None  # the in-process catalog answered


async def test_an_outage_opens_the_breaker_and_only_sent_queries_count(
    server: Server, metrics: Metrics, local_catalog: LocalPlaybookCatalog
) -> None:
    server.faults.always = "hang"
    clock = RunningClock()
    sleep = AdvancingSleep(clock)
    async with selector(
        catalog(server.url, metrics, clock, sleep), local_catalog, metrics, clock, deadline=0.1
    ) as s:
        outcomes = [await s.select_query(query(n)) for n in range(20)]
    # Five queries of one cut attempt each open the breaker; the other 15 send nothing. The
    # client sent five (the error count below); the server may see fewer: an attempt cut at
    # 0.1 s on a loaded machine can be abandoned before its request reaches the server.
    assert 1 <= server.faults.hits <= 5
    assert all(o.method == "fallback" and o.decision.selection is not None for o in outcomes)
    assert all("circuit open" in (o.reason or "") for o in outcomes[5:])
    assert sample(metrics, "ai_success_rate_queries_total", status="error") == 5
    assert sample(metrics, "ai_success_rate_queries_total", status="success") == 0


def test_the_deadline_is_a_setting_of_500_ms_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECEDENT_CATALOG", "http://127.0.0.1:9")
    monkeypatch.setenv("PRECEDENT_CATALOG_FALLBACK", "")
    settings = Settings()
    assert settings.catalog.selection_deadline_seconds == 0.5
    selector, _ = build_selector(settings.catalog, build_embedder(settings.retrieval))
    assert selector.deadline_seconds == 0.5
    monkeypatch.setenv("PRECEDENT_SELECTION_DEADLINE_SECONDS", "0.2")
    selector, _ = build_selector(Settings().catalog, build_embedder(settings.retrieval))
    assert selector.deadline_seconds == 0.2
