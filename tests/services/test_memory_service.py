"""The fleet memory in the assessment: asked before scoring, merged into the request's history
view with where each incident came from, never in the way when slow or down, and written to in
the background. The store is the OpenSearch adapter over openmock's async client."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from precedent.adapters.memory_opensearch import OpenSearchMemory
from precedent.core.memory_query import MemoryQuery, ParsedHits, VectorField, incident_document
from precedent.core.ports import MemoryFailure
from precedent.core.resilience import RetryPolicy
from precedent.metrics import Metrics
from precedent.models import Incident
from precedent.services.memory import FleetMemory
from precedent.settings import MemorySettings, Settings
from precedent.wiring import Engine, build_memory, build_service
from tests.memory_double import FakeMemoryClient

INDEX = "precedent-incidents"
REQUEST = {
    "action": "defrag_volume",
    "target": {"kind": "VolumeAttachment", "name": "vol-9"},
    "description": "Defragment vol-9 to recover write throughput",
}


def shared(id_: str, *, name: str = "vol-9", cluster: str = "east") -> tuple[str, dict[str, Any]]:
    incident = Incident.model_validate(
        {
            "id": id_,
            "title": "Defragmentation corrupted the ext4 journal",
            "action": "defrag_volume",
            "resource": {"type": "volumeattachment", "name": name},
            "severity": "critical",
            "outcome": "unresolved",
            "occurredAt": "2025-03-01T08:00:00Z",
        }
    )
    return id_, incident_document(incident, cluster=cluster)


def service_with(
    store: Any,
    *,
    incidents: Sequence[Incident] = (),
    metrics: Metrics | None = None,
    **settings: Any,
) -> Engine:
    config = Settings(history_path="", catalog="", cluster_name="west", **settings)
    # The operator's wiring with the adapter over a double instead of a real OpenSearch.
    memory = _memory(config, store, metrics or Metrics(CollectorRegistry()))
    return build_service(
        config, incidents=list(incidents), mode="rules", follows_cluster=True, memory=memory
    )


def _memory(config: Settings, store: Any = None, metrics: Metrics | None = None) -> Any:
    """``build_memory`` as ``build_service`` calls it, with the memory turned on."""
    enabled = MemorySettings.model_validate({**config.memory.model_dump(), "enabled": True})
    return build_memory(
        enabled,
        cluster_name=config.context.cluster_name,
        ranking=config.ranking,
        breaker=config.catalog.breaker,
        store=store,
        metrics=metrics or Metrics(CollectorRegistry()),
    )


def _built(config: Settings) -> Any:
    return build_memory(
        config.memory,
        cluster_name=config.context.cluster_name,
        ranking=config.ranking,
        breaker=config.catalog.breaker,
    )


async def test_an_incident_another_cluster_wrote_is_scored_and_listed_with_its_source() -> None:
    client = FakeMemoryClient()
    store = OpenSearchMemory(client, index=INDEX)
    await store.upsert([shared("INC-EAST-1")])
    service = service_with(store)
    assessment = await service.assess(REQUEST)
    [listed] = assessment.similar_incidents
    assert (listed.id, listed.source, listed.cluster) == ("INC-EAST-1", "memory", "east")
    assert assessment.risk.most_relevant_incident == "INC-EAST-1"
    assert assessment.engine.sources == ["memory"]
    assert assessment.engine.history_size == 1

    # Without the memory the same request has no precedent and a lower score.
    alone = service_with(FailingStore(MemoryFailure("unreachable", "memory x: unreachable")))
    without = await alone.assess(REQUEST)
    assert without.similar_incidents == []
    assert without.risk.score < assessment.risk.score
    assert without.engine.sources == ["memory: memory x: unreachable"]
    assert without.input_hash != assessment.input_hash


async def test_a_local_incident_wins_over_the_memorys_copy_of_the_same_id() -> None:
    client = FakeMemoryClient()
    store = OpenSearchMemory(client, index=INDEX)
    await store.upsert([shared("INC-1")])
    local = Incident.model_validate(
        {
            "id": "INC-1",
            "title": "Local record of the defrag failure",
            "action": "defrag_volume",
            "resource": {"type": "volumeattachment", "name": "vol-9"},
        }
    )
    service = service_with(store, incidents=[local])
    assessment = await service.assess(REQUEST)
    [listed] = assessment.similar_incidents
    assert (listed.title, listed.source, listed.cluster) == (local.title, "bundled", None)
    assert assessment.engine.sources == ["bundled", "memory"]
    assert assessment.engine.history_size == 1


class SlowStore:
    """A store that answers after ``delay`` seconds."""

    location = "slow"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0

    async def vector_field(self) -> VectorField | None:
        return None

    async def search(self, query: MemoryQuery) -> ParsedHits:
        self.calls += 1
        await asyncio.sleep(self.delay)
        return ParsedHits([], [])

    async def upsert(self, documents: Sequence[tuple[str, Mapping[str, Any]]]) -> int:
        return len(documents)

    async def aclose(self) -> None:
        return None


class FailingStore(SlowStore):
    """A store whose every call fails with ``failure``."""

    def __init__(self, failure: MemoryFailure) -> None:
        super().__init__(0.0)
        self.failure = failure
        self.writes = 0

    async def search(self, query: MemoryQuery) -> ParsedHits:
        self.calls += 1
        raise self.failure

    async def upsert(self, documents: Sequence[tuple[str, Mapping[str, Any]]]) -> int:
        self.writes += 1
        raise self.failure


async def test_a_slow_memory_times_out_and_the_request_is_scored_without_it() -> None:
    metrics = Metrics(CollectorRegistry())
    service = service_with(SlowStore(5.0), metrics=metrics, memory_timeout_ms=50)
    assessment = await service.assess(REQUEST)
    assert assessment.engine.sources == ["memory: timeout after 50 ms"]
    assert (
        metrics.registry.get_sample_value("precedent_memory_queries_total", {"status": "timeout"})
        == 1.0
    )


async def test_the_circuit_opens_after_consecutive_failures_and_stops_asking() -> None:
    metrics = Metrics(CollectorRegistry())
    store = FailingStore(MemoryFailure("unreachable", "memory x: unreachable"))
    service = service_with(store, metrics=metrics, breaker_failure_threshold=2)
    for _ in range(2):
        await service.assess(REQUEST)
    assert metrics.registry.get_sample_value("precedent_memory_circuit_state") == 2.0
    third = await service.assess(REQUEST)
    assert third.engine.sources == ["memory: circuit open"]
    assert store.calls == 2
    assert (
        metrics.registry.get_sample_value(
            "precedent_memory_queries_total", {"status": "circuit_open"}
        )
        == 1.0
    )


async def test_incidents_of_this_cluster_are_written_once_in_the_background() -> None:
    client = FakeMemoryClient()
    store = OpenSearchMemory(client, index=INDEX)
    service = service_with(store)
    spec = {
        "id": "INC-WEST-1",
        "title": "Node drain evicted the only replica",
        "action": "drain_node",
        "resource": {"type": "Node", "name": "pool-a-1"},
    }
    service.objects.upsert_incident("inc-west-1", spec)
    service.objects.upsert_incident("inc-west-1", spec)  # a replayed event
    assert service.objects.memory is not None
    await service.objects.memory.flush()
    [document] = client.documents(INDEX)
    assert document["investigation_id"] == "INC-WEST-1"
    assert document["cluster"] == "west"
    assert document["resource_type"] == "node"


async def test_a_failing_write_is_retried_a_bounded_number_of_times_then_dropped() -> None:
    metrics = Metrics(CollectorRegistry())
    store = FailingStore(MemoryFailure("throttled", "memory x: too many requests (429)"))
    delays: list[float] = []

    async def no_wait(seconds: float) -> None:
        delays.append(seconds)

    memory = FleetMemory(
        store, write_retry=RetryPolicy(retries=2, base_delay=0.5), metrics=metrics, sleep=no_wait
    )
    memory.remember(Incident.model_validate({"id": "INC-9", "title": "t"}))
    await memory.flush()
    assert store.writes == 3
    assert len(delays) == 2
    assert (
        metrics.registry.get_sample_value("precedent_memory_writes_total", {"status": "dropped"})
        == 1.0
    )
    await memory.aclose()


def test_enabled_but_misconfigured_memory_names_the_variable() -> None:
    from precedent.errors import InputError

    with pytest.raises(InputError, match="PRECEDENT_MEMORY_URL"):
        _built(Settings(memory_enabled=True))
    with pytest.raises(InputError, match="PRECEDENT_MEMORY_API_KEY"):
        _built(Settings(memory_enabled=True, memory_url="https://os:9200", memory_auth="api_key"))
    assert _built(Settings()) is None
    assert Settings(memory_edge_max_age="2d").memory.edge_max_age.total_seconds() == 172800


async def test_a_memory_incident_shows_its_boosts_and_the_reasoning_names_it() -> None:
    client = FakeMemoryClient()
    store = OpenSearchMemory(client, index=INDEX)
    await store.upsert([shared("INC-EAST-1")])
    service = service_with(store)
    assessment = await service.assess(REQUEST)
    [listed] = assessment.similar_incidents
    # Seed 001's boosts that applied: the exact name (vol-9) and the record's quality; an
    # unresolved outcome and a time far from ``now`` add none.
    assert listed.boosts == {"exactName": 1.5, "quality": 1.0}
    assert "Fleet memory: 1 listed incident came from other clusters" in assessment.risk.reasoning
    assert "INC-EAST-1 from cluster east" in assessment.risk.reasoning
    assert "most relevant incident INC-EAST-1 is from cluster east" in assessment.risk.reasoning


async def test_a_memory_incident_is_compared_by_meaning_as_well_as_by_the_rules() -> None:
    client = FakeMemoryClient()
    store = OpenSearchMemory(client, index=INDEX)
    await store.upsert([shared("INC-EAST-1")])
    local = Incident.model_validate(
        {
            "id": "INC-LOCAL",
            "title": "Certificate renewal broke the ingress",
            "action": "certificate_renewal",
            "resource": {"type": "secret", "name": "tls-ingress"},
        }
    )
    config = Settings(history_path="", catalog="", cluster_name="west")
    memory = _memory(config, store)
    service = build_service(
        config, incidents=[local], mode="hybrid", follows_cluster=True, memory=memory
    )
    assessment = await service.assess(REQUEST)
    listed = {s.id: s for s in assessment.similar_incidents}
    semantic = listed["INC-EAST-1"].parts.semantic
    # Embedded and scored like an indexed incident: the defrag request and the defrag
    # incident share their words (which the local history never saw), so the semantic
    # similarity is well above nothing.
    assert semantic is not None
    assert semantic > 0.3
    assert listed["INC-EAST-1"].source == "memory"
    assert assessment.engine.embedder is not None


class ListStore(SlowStore):
    """A store that keeps documents by id; ``down`` fails writes, ``gone`` fails the next
    search as a deleted index does, ``dimension`` is its vector field's length (0: none), read
    once and again after a refused document (as the OpenSearch adapter does)."""

    def __init__(self, dimension: int = 0) -> None:
        super().__init__(0.0)
        self.documents: dict[str, Mapping[str, Any]] = {}
        self.down = False
        self.gone = False
        self.dimension = dimension
        self.read: int | None = None
        self.refused = 0

    async def vector_field(self) -> VectorField | None:
        if self.read is None:
            self.read = self.dimension
        return VectorField("embedding", self.read) if self.read else None

    async def search(self, query: MemoryQuery) -> ParsedHits:
        if self.gone:
            self.gone = False
            raise MemoryFailure("not_found", "memory x: index_not_found_exception (404)")
        return ParsedHits([], [])

    async def upsert(self, documents: Sequence[tuple[str, Mapping[str, Any]]]) -> int:
        if self.down:
            raise MemoryFailure("unreachable", "memory x: unreachable")
        for _, document in documents:
            vector = document.get("embedding")
            if vector is not None and len(vector) != self.dimension:
                self.refused += 1
                self.read = None
                raise MemoryFailure("mapping", "memory x: document: mapper_parsing_exception")
        self.documents.update(documents)
        return len(documents)


async def _no_wait(seconds: float) -> None:
    return None


def _action() -> Any:
    from precedent.core.normalize import normalize_request
    from precedent.models import RemediationRequestSpec

    return normalize_request(RemediationRequestSpec.model_validate(REQUEST))


async def test_a_write_given_up_is_written_once_the_memory_answers_again() -> None:
    metrics = Metrics(CollectorRegistry())
    store = ListStore()
    memory = FleetMemory(store, write_retry=RetryPolicy(retries=1), metrics=metrics, sleep=_no_wait)
    store.down = True
    memory.remember(Incident.model_validate({"id": "INC-1", "title": "t"}))
    await memory.flush()
    assert store.documents == {}
    assert (
        metrics.registry.get_sample_value("precedent_memory_writes_total", {"status": "dropped"})
        == 1.0
    )
    store.down = False
    await memory.flush()
    assert store.documents == {}  # not retried on its own: the memory has not answered yet
    assert (await memory.recall(_action())).problem is None
    await memory.flush()
    assert set(store.documents) == {"INC-1"}
    await memory.aclose()


async def test_a_newer_version_replaces_the_write_given_up() -> None:
    store = ListStore()
    memory = FleetMemory(store, write_retry=RetryPolicy(retries=0), sleep=_no_wait)
    store.down = True
    memory.remember(Incident.model_validate({"id": "INC-1", "title": "old"}))
    await memory.flush()
    store.down = False
    memory.remember(Incident.model_validate({"id": "INC-1", "title": "new"}))
    await memory.flush()
    await memory.recall(_action())
    await memory.flush()
    assert store.documents["INC-1"]["title"] == "new"
    await memory.aclose()


async def test_a_query_that_finds_the_index_gone_writes_this_cluster_s_incidents_again() -> None:
    store = ListStore()
    memory = FleetMemory(store, sleep=_no_wait)
    memory.remember(Incident.model_validate({"id": "INC-1", "title": "t"}))
    await memory.flush()
    store.documents.clear()  # the index deleted
    store.gone = True
    gone = await memory.recall(_action())
    assert gone.problem == "memory x: index_not_found_exception (404)"
    await memory.flush()
    assert set(store.documents) == {"INC-1"}
    await memory.aclose()


class _Embedder:
    """Vectors of ``dimension`` ones."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        return np.ones((len(texts), self.dimension), dtype=np.float32)


async def test_a_write_refused_by_a_changed_mapping_is_rebuilt_for_the_mapping_read_again() -> None:
    store = ListStore(dimension=8)
    memory = FleetMemory(
        store,
        embedder=_Embedder(8),  # type: ignore[arg-type]
        write_retry=RetryPolicy(retries=2),
        sleep=_no_wait,
    )
    memory.remember(Incident.model_validate({"id": "INC-1", "title": "t"}))
    await memory.flush()
    assert len(store.documents["INC-1"]["embedding"]) == 8
    store.dimension = 4  # the index re-created for another embedder
    memory.remember(Incident.model_validate({"id": "INC-2", "title": "t"}))
    await memory.flush()
    assert store.refused == 1
    assert "embedding" not in store.documents["INC-2"]
    await memory.aclose()
