"""The HTTP catalog client against a real server with faults injected at the server.

Every case ends in a correct ``data_driven`` or ``fallback`` outcome, and the selector never
raises. Backoff sleeps are recorded, not slept; the cache TTL and the breaker cool-down run
on a clock the test moves. Only the timeout case waits for real (4 × 0.2 s).
"""

from __future__ import annotations

import pytest

from precedent.adapters.cache import CachingCatalog
from precedent.adapters.catalog_http import HttpPlaybookCatalog
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.core.playbooks import PlaybookQuery
from precedent.core.resilience import RetryPolicy
from precedent.metrics import Metrics
from precedent.models import RemediationRequestSpec, Target
from precedent.services import PlaybookChoice, PlaybookSelector
from tests.integration.catalog.faults import Clock, Server, Sleeps

pytestmark = pytest.mark.integration

SPEC = RemediationRequestSpec(
    action="update_resource_limits",
    target=Target(kind="Deployment", name="checkout-api", namespace="shop"),
    description="High memory usage causing pod restarts",
    labels={"incident-type": "pod-oom-killer", "environment": "production"},
)


def client(
    url: str,
    metrics: Metrics,
    clock: Clock,
    sleeps: Sleeps,
    *,
    timeout: float = 2.0,
    failure_threshold: int = 5,
) -> HttpPlaybookCatalog:
    return HttpPlaybookCatalog(
        url,
        timeout=timeout,
        retry=RetryPolicy(retries=3, base_delay=0.1, max_delay=1.0),
        failure_threshold=failure_threshold,
        reset_seconds=30.0,
        metrics=metrics,
        clock=clock,
        sleep=sleeps,
        jitter=lambda: 0.0,
    )


async def ask(s: PlaybookSelector, spec: RemediationRequestSpec) -> PlaybookChoice:
    """Select for a request as the assessment service does: the query from the spec."""
    query = PlaybookQuery.from_spec(
        spec, min_confidence=s.min_confidence, max_results=s.max_results
    )
    return await s.select_query(query)


def selector(
    catalog: HttpPlaybookCatalog,
    metrics: Metrics,
    clock: Clock,
    fallback: LocalPlaybookCatalog | None,
) -> PlaybookSelector:
    return PlaybookSelector(
        CachingCatalog(catalog, ttl_seconds=300, clock=clock, metrics=metrics),
        fallback=fallback,
        min_confidence=0.5,
        max_results=10,
        metrics=metrics,
        clock=clock,
    )


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def assert_in_process_fallback(outcome: PlaybookChoice, url: str, reason: str) -> None:
    assert outcome.method == "fallback"
    assert outcome.reason is not None
    assert reason in outcome.reason
    selection = outcome.decision.selection
    assert selection is not None
    assert selection.id == "pod-oom-recovery"
    assert selection.selection_method == "fallback"
    assert set(selection.components) == {"semantic", "labelMatch", "historical"}
    assert selection.rationale.startswith(f"Fallback: the catalog at {url} failed (")
    assert "answered by the in-process catalog" in selection.rationale
    assert outcome.source is not None
    assert outcome.source.startswith("in-process")


async def test_healthy_remote_is_data_driven_and_agrees_with_in_process(
    server: Server, metrics: Metrics, clock: Clock, sleeps: Sleeps
) -> None:
    async with selector(client(server.url, metrics, clock, sleeps), metrics, clock, None) as s:
        outcome = await ask(s, SPEC)
    assert outcome.method == "data_driven"
    assert outcome.source == server.url
    selection = outcome.decision.selection
    assert selection is not None
    local = server.catalog.search_sync(PlaybookQuery.from_spec(SPEC, min_confidence=0.5))
    assert selection.id == local.candidates[0].id == "pod-oom-recovery"
    assert selection.confidence == round(local.candidates[0].confidence, 4)
    # The parts cross the wire (include_components=true), rounded as the status shows them.
    parts = local.candidates[0].parts
    assert parts is not None
    assert selection.components == {
        "semantic": round(parts.semantic, 4),
        "labelMatch": round(parts.label_match, 4),
        "historical": round(parts.historical, 4),
    }
    assert "strongest on" in selection.rationale
    assert [a.id for a in outcome.decision.alternatives] == [c.id for c in local.candidates[1:4]]
    assert server.faults.hits == 1
    assert sample(metrics, "ai_success_rate_queries_total", status="success") == 1
    selections = "ai_playbook_selections_total"
    labels = {"incident_type": "pod-oom-killer", "playbook_id": "pod-oom-recovery"}
    assert sample(metrics, selections, **labels, selection_method="data_driven") == 1


async def test_slow_server_beyond_the_timeout_falls_back_to_in_process(
    server: Server,
    metrics: Metrics,
    clock: Clock,
    sleeps: Sleeps,
    local_catalog: LocalPlaybookCatalog,
) -> None:
    server.faults.always = "hang"
    http = client(server.url, metrics, clock, sleeps, timeout=0.2)
    async with selector(http, metrics, clock, local_catalog) as s:
        outcome = await ask(s, SPEC)
    assert server.faults.hits == 4  # first attempt + 3 retries, each timed out
    assert_in_process_fallback(outcome, server.url, "timed out after 0.2 s (4 attempts)")
    assert sample(metrics, "precedent_catalog_retries_total", catalog="http") == 3
    assert sample(metrics, "ai_success_rate_queries_total", status="error") == 1
    # The in-process answer sent no query: only the remote one counts.
    assert sample(metrics, "ai_success_rate_queries_total", status="success") == 0


async def test_500s_then_success_is_data_driven_with_retries_counted(
    server: Server, metrics: Metrics, clock: Clock, sleeps: Sleeps
) -> None:
    server.faults.queue("500", "500")
    async with selector(client(server.url, metrics, clock, sleeps), metrics, clock, None) as s:
        outcome = await ask(s, SPEC)
    assert outcome.method == "data_driven"
    assert outcome.playbook_id == "pod-oom-recovery"
    assert server.faults.hits == 3
    assert sample(metrics, "precedent_catalog_retries_total", catalog="http") == 2
    assert sleeps.delays == pytest.approx([0.1, 0.2])  # exponential backoff (jitter fixed)
    assert sample(metrics, "ai_success_rate_queries_total", status="success") == 1
    assert sample(metrics, "ai_success_rate_queries_total", status="error") == 0


async def test_garbage_json_is_not_retried_and_falls_back_to_the_last_good_answer(
    server: Server,
    metrics: Metrics,
    clock: Clock,
    sleeps: Sleeps,
    local_catalog: LocalPlaybookCatalog,
) -> None:
    async with selector(
        client(server.url, metrics, clock, sleeps), metrics, clock, local_catalog
    ) as s:
        first = await ask(s, SPEC)
        assert first.method == "data_driven"
        clock.now += 301  # past the 5-minute TTL: the next query goes out
        server.faults.queue("garbage")
        outcome = await ask(s, SPEC)
    assert server.faults.hits == 2  # garbage is not retried
    assert outcome.method == "fallback"
    assert outcome.cached
    assert outcome.source == server.url
    assert outcome.reason is not None
    assert outcome.reason.startswith("invalid response")
    selection = outcome.decision.selection
    assert selection is not None
    assert selection.id == "pod-oom-recovery"
    assert selection.selection_method == "fallback"
    assert "using its last good answer, 301 s old" in selection.rationale
    assert sample(metrics, "precedent_catalog_cache_total", result="stale") == 1


async def test_wrong_shape_is_an_invalid_response(
    server: Server,
    metrics: Metrics,
    clock: Clock,
    sleeps: Sleeps,
    local_catalog: LocalPlaybookCatalog,
) -> None:
    server.faults.queue("wrong-shape")
    http = client(server.url, metrics, clock, sleeps)
    async with selector(http, metrics, clock, local_catalog) as s:
        outcome = await ask(s, SPEC)
    assert server.faults.hits == 1
    assert_in_process_fallback(outcome, server.url, "invalid response")
    assert http.breaker.consecutive_failures == 1


async def test_a_context_api_without_components_gives_the_total_only(
    server: Server, metrics: Metrics, clock: Clock, sleeps: Sleeps
) -> None:
    server.faults.queue("minimal")
    async with selector(client(server.url, metrics, clock, sleeps), metrics, clock, None) as s:
        outcome = await ask(s, SPEC)
    assert outcome.method == "data_driven"
    selection = outcome.decision.selection
    assert selection is not None
    assert (selection.id, selection.confidence) == ("pb", 0.81)
    assert selection.components == {}
    assert "reports the total only" in selection.rationale


async def test_connection_refused_falls_back_to_in_process(
    refused_url: str,
    metrics: Metrics,
    clock: Clock,
    sleeps: Sleeps,
    local_catalog: LocalPlaybookCatalog,
) -> None:
    http = client(refused_url, metrics, clock, sleeps)
    async with selector(http, metrics, clock, local_catalog) as s:
        outcome = await ask(s, SPEC)
    assert_in_process_fallback(outcome, refused_url, "ConnectError")
    assert len(sleeps.delays) == 3  # connect errors are retried


async def test_connection_refused_without_fallback_recommends_manual_investigation(
    refused_url: str, metrics: Metrics, clock: Clock, sleeps: Sleeps
) -> None:
    async with selector(client(refused_url, metrics, clock, sleeps), metrics, clock, None) as s:
        outcome = await ask(s, SPEC)
    assert outcome.method == "fallback"
    assert outcome.source is None
    assert outcome.decision.selection is None
    recommendation = outcome.decision.recommendation
    assert recommendation is not None
    assert recommendation.action == "manual_investigation"
    assert recommendation.reason.startswith(f"playbook catalog unavailable: {refused_url}")
    assert "ConnectError" in recommendation.reason
    assert any("Deployment shop/checkout-api" in a for a in recommendation.suggested_actions)
    selections = "ai_playbook_selections_total"
    labels = {"incident_type": "pod-oom-killer", "playbook_id": "manual_investigation"}
    assert sample(metrics, selections, **labels, selection_method="fallback") == 1


async def test_4xx_is_not_retried_and_does_not_trip_the_breaker(
    server: Server,
    metrics: Metrics,
    clock: Clock,
    sleeps: Sleeps,
    local_catalog: LocalPlaybookCatalog,
) -> None:
    server.faults.queue("400")
    http = client(server.url, metrics, clock, sleeps, failure_threshold=1)
    async with selector(http, metrics, clock, local_catalog) as s:
        outcome = await ask(s, SPEC)
    assert server.faults.hits == 1
    assert sleeps.delays == []
    assert_in_process_fallback(outcome, server.url, "query rejected with HTTP 400: injected 400")
    assert http.breaker.consecutive_failures == 0
    assert http.breaker.allow()


async def test_breaker_opens_after_consecutive_failures_and_recovers(
    server: Server,
    metrics: Metrics,
    clock: Clock,
    sleeps: Sleeps,
    local_catalog: LocalPlaybookCatalog,
) -> None:
    server.faults.always = "503"
    http = client(server.url, metrics, clock, sleeps, failure_threshold=2)
    gauge = "precedent_catalog_circuit_state"
    async with selector(http, metrics, clock, local_catalog) as s:
        for _ in range(2):
            failed = await ask(s, SPEC)
            assert_in_process_fallback(failed, server.url, "HTTP 503")
        assert server.faults.hits == 8  # two queries, four attempts each
        assert sample(metrics, gauge, catalog=server.url) == 2  # open

        refused = await ask(s, SPEC)
        assert server.faults.hits == 8  # the open circuit sent nothing
        assert_in_process_fallback(refused, server.url, "circuit open after 2 consecutive")

        clock.now += 30  # cool-down over: half-open, one trial goes out
        server.faults.always = None
        recovered = await ask(s, SPEC)
    assert server.faults.hits == 9
    assert recovered.method == "data_driven"
    assert recovered.playbook_id == "pod-oom-recovery"
    assert sample(metrics, gauge, catalog=server.url) == 0  # closed


async def test_failed_trial_reopens_the_breaker(
    server: Server,
    metrics: Metrics,
    clock: Clock,
    sleeps: Sleeps,
    local_catalog: LocalPlaybookCatalog,
) -> None:
    server.faults.always = "500"
    http = client(server.url, metrics, clock, sleeps, failure_threshold=1)
    async with selector(http, metrics, clock, local_catalog) as s:
        await ask(s, SPEC)
        clock.now += 30
        trial = await ask(s, SPEC)
        assert trial.method == "fallback"
        hits = server.faults.hits
        again = await ask(s, SPEC)
    assert server.faults.hits == hits  # open again: nothing sent
    assert again.reason is not None
    assert "circuit open" in again.reason


async def test_cache_answers_repeats_for_five_minutes(
    server: Server, metrics: Metrics, clock: Clock, sleeps: Sleeps
) -> None:
    async with selector(client(server.url, metrics, clock, sleeps), metrics, clock, None) as s:
        first = await ask(s, SPEC)
        spaced = SPEC.model_copy(
            update={"description": "  HIGH memory usage   causing pod restarts"}
        )
        second = await ask(s, spaced)  # same normalised query
        clock.now += 299
        third = await ask(s, SPEC)
        clock.now += 1
        fourth = await ask(s, SPEC)
    assert [o.cached for o in (first, second, third, fourth)] == [False, True, True, False]
    assert all(o.method == "data_driven" for o in (first, second, third, fourth))
    assert server.faults.hits == 2
    assert sample(metrics, "precedent_catalog_cache_total", result="hit") == 2
    assert sample(metrics, "precedent_catalog_cache_total", result="miss") == 2


async def test_many_requests_are_selected_concurrently_in_order(
    server: Server, metrics: Metrics, clock: Clock, sleeps: Sleeps
) -> None:
    specs = [
        SPEC,
        SPEC.model_copy(
            update={
                "description": "rare database failure",
                "labels": {"incident-type": "database-failure"},
            }
        ),
        # Nothing fits: no playbook runs this action or speaks of this (the request's action
        # counts as a label, so an unrelated text with a listed action could still qualify).
        SPEC.model_copy(
            update={
                "action": "review_costs",
                "description": "quarterly budget review",
                "labels": {},
            }
        ),
    ]
    async with selector(client(server.url, metrics, clock, sleeps), metrics, clock, None) as s:
        outcomes = await s.select_many(
            [PlaybookQuery.from_spec(spec, min_confidence=s.min_confidence) for spec in specs]
        )
    assert [o.playbook_id for o in outcomes] == [
        "pod-oom-recovery",
        "database-recovery",
        "manual_investigation",
    ]
    assert all(o.method == "data_driven" for o in outcomes)
    recommendation = outcomes[2].decision.recommendation
    assert recommendation is not None
    assert recommendation.reason.startswith("no playbook confident enough")
    assert server.url in recommendation.reason


class Broken:
    """A catalog port implementation that fails in an unexpected way."""

    kind = "in_process"
    name = "broken"

    async def search(self, query: PlaybookQuery, *, budget: float | None = None) -> object:
        raise RuntimeError("boom")

    async def aclose(self) -> None:
        pass


async def test_selection_never_raises_into_the_caller(metrics: Metrics) -> None:
    s = PlaybookSelector(Broken(), metrics=metrics)  # type: ignore[arg-type]
    outcome = await ask(s, SPEC)
    assert outcome.method == "fallback"
    recommendation = outcome.decision.recommendation
    assert recommendation is not None
    assert "unexpected error: RuntimeError: boom" in recommendation.reason
