"""The fleet memory on a real OpenSearch that fails: a node paused (SIGSTOP) past the deadline,
the index deleted under the operator, its mapping changed, a node killed mid-run in a two-node
cluster and the node the operator talks to killed and restarted. Answers keep coming within
their deadline, marked without the memory; no write is lost (retried, or counted, logged and
written once the memory answers again); the breaker opens and closes as docs/fleet-memory.md
says."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from precedent.adapters.memory_opensearch import OpenSearchMemory, build_client
from precedent.core.normalize import ProposedAction, normalize_request
from precedent.metrics import Metrics
from precedent.models import RemediationRequestSpec
from precedent.services.memory import FleetMemory
from precedent.settings import MemorySettings, Settings
from precedent.wiring import build_memory
from tests.integration.test_memory_real_opensearch import REQUEST, incident, operator_on, stored
from tests.opensearch_node import OpenSearchCluster, opensearch_pair

__all__ = ["opensearch_pair"]  # the two-node cluster of this module (tests/opensearch_node.py)

pytestmark = [pytest.mark.integration, pytest.mark.opensearch]

_numbers = itertools.count()
ACTION: ProposedAction = normalize_request(RemediationRequestSpec.model_validate(REQUEST))


def fresh_index() -> str:
    return f"precedent-faults-t{os.getpid()}-{next(_numbers)}"


@pytest.fixture
def index(opensearch: OpenSearchCluster) -> Iterator[str]:
    name = fresh_index()
    yield name
    with opensearch.client() as client:
        client.delete(f"/{name}")
        client.delete(f"/_index_template/{name}")


async def create(cluster: OpenSearchCluster, index: str) -> None:
    """The index and template as `precedent memory init` creates them."""
    url = cluster.url
    store = OpenSearchMemory(build_client(url, timeout_seconds=30), index=index, url=url)
    try:
        assert await store.create_index(cluster.manifests) == "created"
    finally:
        await store.aclose()


def fleet(url: str, index: str, metrics: Metrics, **settings: Any) -> tuple[FleetMemory, Settings]:
    """The fleet memory as the operator builds it (``build_memory``) from ``settings``."""
    config = Settings(
        history_path="",
        catalog="",
        cluster_name="east",
        memory_url=url,
        memory_index=index,
        **settings,
    )
    enabled = MemorySettings.model_validate({**config.memory.model_dump(), "enabled": True})
    memory = build_memory(
        enabled,
        cluster_name=config.context.cluster_name,
        ranking=config.ranking,
        breaker=config.catalog.breaker,
        metrics=metrics,
    )
    assert memory is not None
    return memory, config


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def writes(metrics: Metrics, status: str) -> float:
    return sample(metrics, "precedent_memory_writes_total", status=status)


def circuit(metrics: Metrics) -> float:
    return sample(metrics, "precedent_memory_circuit_state")


@pytest.fixture
async def closing() -> AsyncIterator[list[FleetMemory]]:
    """Fleet memories a test opened, closed after it."""
    opened: list[FleetMemory] = []
    yield opened
    for memory in opened:
        await memory.aclose()


# -- one node ---------------------------------------------------------------------------------


async def test_a_paused_node_costs_answers_the_memory_within_the_deadline_and_no_write(
    opensearch: OpenSearchCluster, index: str, closing: list[FleetMemory]
) -> None:
    await create(opensearch, index)
    metrics = Metrics(CollectorRegistry())
    memory, _ = fleet(
        opensearch.url,
        index,
        metrics,
        memory_timeout_ms=500,
        breaker_failure_threshold=2,
        breaker_reset_seconds=1,
        memory_write_retries=5,
    )
    closing.append(memory)
    assert (await memory.recall(ACTION)).problem is None  # reads the mapping once
    node = opensearch.nodes[0]
    node.pause()
    try:
        first, second = await memory.recall(ACTION), await memory.recall(ACTION)
        assert first.problem == second.problem == "timeout after 500 ms"
        assert first.hits == second.hits == []
        # Two failures open the breaker: the next answer does not wait for the memory at all.
        assert (await memory.recall(ACTION)).problem == "circuit open"
        assert circuit(metrics) == 2
        assert sample(metrics, "precedent_memory_queries_total", status="timeout") == 2

        # A write while the node is paused: its first attempt times out, the node comes
        # back during the retries, a retry writes it.
        memory.remember(incident("INC-PAUSED"))
        while writes(metrics, "retry") < 1:
            await asyncio.sleep(0.05)
    finally:
        node.resume()
    await memory.flush()
    assert writes(metrics, "success") == 1
    assert writes(metrics, "dropped") == 0
    assert stored(opensearch, index)["INC-PAUSED"]["cluster"] == "east"

    # After the cool-down one trial goes out; it is answered and the breaker closes.
    await asyncio.sleep(1.1)
    again = await memory.recall(ACTION)
    assert again.problem is None
    assert [h.incident.id for h in again.hits] == ["INC-PAUSED"]
    assert circuit(metrics) == 0


async def test_an_index_deleted_under_the_operator_is_written_again(
    opensearch: OpenSearchCluster, index: str, closing: list[FleetMemory]
) -> None:
    await create(opensearch, index)
    metrics = Metrics(CollectorRegistry())
    memory, _ = fleet(opensearch.url, index, metrics)
    closing.append(memory)
    for name in ("INC-1", "INC-2"):
        memory.remember(incident(name))
    await memory.flush()
    assert set(stored(opensearch, index)) == {"INC-1", "INC-2"}

    with opensearch.client() as client:
        client.delete(f"/{index}").raise_for_status()
    gone = await memory.recall(ACTION)
    assert gone.problem is not None
    assert f"memory {opensearch.url}/{index}: index_not_found_exception: no such index" in (
        gone.problem
    )
    assert gone.problem.endswith("(404): create it with `precedent memory init`")

    # The answer that found the index gone queued what this process wrote: written again,
    # the index re-created by the write from the template (strict mapping, the vector field).
    await memory.flush()
    assert set(stored(opensearch, index)) == {"INC-1", "INC-2"}
    with opensearch.client() as client:
        mapping = client.get(f"/{index}/_mapping").json()[index]["mappings"]
    assert mapping["dynamic"] == "strict"
    assert mapping["properties"]["embedding"]["type"] == "knn_vector"
    back = await memory.recall(ACTION)
    assert back.problem is None
    assert {h.incident.id for h in back.hits} == {"INC-1", "INC-2"}
    assert writes(metrics, "dropped") == 0


async def test_a_mapping_changed_under_the_operator_is_read_again(
    opensearch: OpenSearchCluster, index: str
) -> None:
    await create(opensearch, index)
    west = operator_on(opensearch, index, "west")
    east = operator_on(opensearch, index, "east")
    try:
        assert (await west.assess(REQUEST)).engine.sources == ["memory"]  # 512-d mapping read
        # Someone re-creates the index for another embedder: a 384-d vector field.
        with opensearch.client() as client:
            client.delete(f"/{index}").raise_for_status()
            client.delete(f"/_index_template/{index}").raise_for_status()
            created = client.put(
                f"/{index}",
                json={
                    "settings": {"index": {"knn": True}},
                    "mappings": {
                        "properties": {
                            "investigation_id": {"type": "keyword"},
                            "resource_type": {"type": "keyword"},
                            "quality_score": {"type": "float"},
                            "created_at": {"type": "date"},
                            "embedding": {"type": "knn_vector", "dimension": 384},
                        }
                    },
                },
            )
            created.raise_for_status()
        # The first answer after the change carries the 512-d clause the index refuses; it
        # says why, and makes the mapping be read again: the next has no knn clause.
        first = await west.assess(REQUEST)
        assert first.engine.sources == [
            f"memory: memory {opensearch.url}/{index}: HTTP 400: query_shard_exception: failed "
            "to create query: Query vector has invalid dimension: 512. Dimension should be: 384"
        ]
        second = await west.assess(REQUEST)
        assert second.engine.sources == ["memory"]

        # A cluster that wrote with the old mapping: the 512-d document is refused, the
        # mapping read again, the retry writes it without a vector.
        assert east.objects.memory is not None
        east.objects.memory.remember(incident("INC-MAPPED"))  # reads the 384-d mapping
        await east.objects.memory.flush()
        document = stored(opensearch, index)["INC-MAPPED"]
        assert "embedding" not in document
    finally:
        await west.aclose()
        await east.aclose()


async def test_a_512_d_write_refused_by_a_changed_mapping_is_retried_without_the_vector(
    opensearch: OpenSearchCluster, index: str
) -> None:
    east = operator_on(opensearch, index, "east")
    await create(opensearch, index)
    try:
        memory = east.objects.memory
        assert memory is not None
        memory.remember(incident("INC-BEFORE"))
        await memory.flush()
        assert len(stored(opensearch, index)["INC-BEFORE"]["embedding"]) == 512
        with opensearch.client() as client:
            client.delete(f"/{index}").raise_for_status()
            client.delete(f"/_index_template/{index}").raise_for_status()
            client.put(
                f"/{index}",
                json={
                    "settings": {"index": {"knn": True}},
                    "mappings": {
                        "dynamic": "true",
                        "properties": {
                            "embedding": {"type": "knn_vector", "dimension": 384},
                        },
                    },
                },
            ).raise_for_status()
        memory.remember(incident("INC-AFTER"))  # the 512-d mapping still cached
        await memory.flush()
        document = stored(opensearch, index)["INC-AFTER"]
        assert "embedding" not in document
        assert document["investigation_id"] == "INC-AFTER"
    finally:
        await east.aclose()


# -- two nodes --------------------------------------------------------------------------------


def wait_green(cluster: OpenSearchCluster, index: str) -> None:
    with cluster.client() as client:
        health = client.get(
            f"/_cluster/health/{index}", params={"wait_for_status": "green", "timeout": "60s"}
        ).json()
    assert health["status"] == "green", health


async def test_a_data_node_killed_mid_run_loses_no_write_and_answers_keep_coming(
    opensearch_pair: OpenSearchCluster, closing: list[FleetMemory]
) -> None:
    cluster = opensearch_pair
    index = fresh_index()
    await create(cluster, index)
    wait_green(cluster, index)  # a primary and a replica, one on each node
    metrics = Metrics(CollectorRegistry())
    memory, _ = fleet(cluster.url, index, metrics, memory_timeout_ms=2000)
    closing.append(memory)
    answers = []
    for n in range(40):
        memory.remember(incident(f"INC-{n:02d}"))
        if n == 15:
            cluster.nodes[1].kill()  # mid-run: writes queued and in flight
        answers.append(await memory.recall(ACTION))
    await memory.flush()
    assert set(stored(cluster, index)) == {f"INC-{n:02d}" for n in range(40)}
    assert writes(metrics, "dropped") == 0
    # Every answer came back; any that missed its deadline during the fail-over says so.
    problems = {a.problem for a in answers} - {None}
    assert problems <= {"timeout after 2000 ms"}, problems
    assert answers[-1].problem is None
    # One node left: what was written is found (five best of the forty alike).
    after = await memory.recall(ACTION)
    assert after.problem is None
    assert len(after.hits) == 5


async def test_the_node_the_operator_talks_to_killed_and_restarted(
    opensearch_pair: OpenSearchCluster,
    closing: list[FleetMemory],
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = opensearch_pair
    index = fresh_index()
    await create(cluster, index)
    metrics = Metrics(CollectorRegistry())
    memory, _ = fleet(
        cluster.url,
        index,
        metrics,
        breaker_failure_threshold=2,
        breaker_reset_seconds=1,
        memory_write_retries=1,
    )
    closing.append(memory)
    memory.remember(incident("INC-BEFORE"))
    await memory.flush()
    assert (await memory.recall(ACTION)).problem is None

    node = cluster.nodes[0]
    node.kill()
    refused = [await memory.recall(ACTION), await memory.recall(ACTION)]
    for answer in refused:
        assert answer.problem is not None
        assert f"memory {cluster.url}/{index}: unreachable" in answer.problem
    assert (await memory.recall(ACTION)).problem == "circuit open"
    assert circuit(metrics) == 2

    # A write while the node is down: retried, then counted and logged, and kept.
    with caplog.at_level(logging.WARNING, logger="precedent.services.memory"):
        memory.remember(incident("INC-DURING"))
        await memory.flush()
    assert writes(metrics, "retry") == 1
    assert writes(metrics, "dropped") == 1
    assert any("1 incident(s) not written after 2 attempts" in r.message for r in caplog.records)

    node.start()
    node.wait_ready()
    await asyncio.sleep(1.1)  # the breaker's cool-down
    back = await memory.recall(ACTION)
    assert back.problem is None
    assert circuit(metrics) == 0
    # The answered query queued the write given up: it is in the memory now.
    await memory.flush()
    assert set(stored(cluster, index)) == {"INC-BEFORE", "INC-DURING"}
