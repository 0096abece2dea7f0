"""The fleet memory against a real OpenSearch (tests/opensearch_node.py: one node on loopback
with the k-NN plugin, started once per session): the index installed by ``precedent memory
init``, incidents written by one cluster and read by another, seed 001's query (filters, quality
floor, reranking) with the answers the openmock tests assume, and the knn clause over the
shipped ``knn_vector`` mapping. Each test uses its own index."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from prometheus_client import CollectorRegistry

from precedent.adapters.memory_opensearch import (
    OpenSearchMemory,
    build_client,
    load_index_manifests,
)
from precedent.cli import main
from precedent.core.memory_query import MemoryQuery, VectorField, incident_document
from precedent.core.normalize import normalize_request
from precedent.core.ports import MemoryFailure
from precedent.metrics import Metrics
from precedent.models import Incident, RemediationRequestSpec
from precedent.services.memory import FleetMemory
from precedent.settings import Settings
from precedent.wiring import Engine, build_service, load_history_files
from tests.memory_double import FakeMemoryClient
from tests.opensearch_node import OpenSearchCluster

pytestmark = [pytest.mark.integration, pytest.mark.opensearch]

REPO = Path(__file__).resolve().parents[2]
_numbers = itertools.count()


@pytest.fixture
def index(opensearch: OpenSearchCluster) -> Iterator[str]:
    """A fresh index name for one test (its index and template deleted afterwards)."""
    name = f"precedent-incidents-t{os.getpid()}-{next(_numbers)}"
    yield name
    with opensearch.client() as client:
        client.delete(f"/{name}")
        client.delete(f"/_index_template/{name}")


def refresh(cluster: OpenSearchCluster, index: str) -> None:
    """Make what was written searchable now (OpenSearch refreshes every second on its own)."""
    with cluster.client() as client:
        client.post(f"/{index}/_refresh").raise_for_status()


def stored(cluster: OpenSearchCluster, index: str) -> dict[str, dict[str, Any]]:
    """Every document of ``index`` by id."""
    refresh(cluster, index)
    with cluster.client() as client:
        answer = client.post(f"/{index}/_search", json={"size": 1000})
    answer.raise_for_status()
    return {h["_id"]: h["_source"] for h in answer.json()["hits"]["hits"]}


def store_on(cluster: OpenSearchCluster, index: str, *, detect_vector: bool = True) -> Any:
    return OpenSearchMemory(
        build_client(cluster.url, timeout_seconds=10),
        index=index,
        url=cluster.url,
        detect_vector=detect_vector,
    )


@pytest.fixture
async def store(opensearch: OpenSearchCluster, index: str) -> AsyncIterator[OpenSearchMemory]:
    """The adapter on ``index``, created from the shipped manifests."""
    memory = store_on(opensearch, index)
    assert await memory.create_index(opensearch.manifests) == "created"
    yield memory
    await memory.aclose()


def run_cli(cluster: OpenSearchCluster, index: str, *args: str) -> Result:
    env = {
        "PRECEDENT_MEMORY_URL": cluster.url,
        "PRECEDENT_MEMORY_INDEX": index,
        "PRECEDENT_MEMORY_AUTH": "none",
        "PRECEDENT_CLUSTER_NAME": "east",
    }
    if args[0] == "init":
        args = (*args, "--manifests", str(cluster.manifests))
    return CliRunner().invoke(main, ["memory", *args], env=env)


def incident(
    id_: str,
    *,
    name: str = "vol-9",
    kind: str = "volumeattachment",
    quality: float = 0.9,
    outcome: str = "unresolved",
    title: str = "Defragmentation corrupted the ext4 journal",
) -> Incident:
    return Incident.model_validate(
        {
            "id": id_,
            "title": title,
            "action": "defrag_volume",
            "resource": {"type": kind, "name": name},
            "severity": "critical",
            "outcome": outcome,
            "rootCause": "defrag during heavy writes",
            "recommendedProcedure": "snapshot first, defragment off-peak",
            "occurredAt": "2025-03-01T08:00:00Z",
            "qualityScore": quality,
        }
    )


REQUEST = {
    "action": "defrag_volume",
    "target": {"kind": "VolumeAttachment", "name": "vol-9"},
    "description": "Defragment vol-9 to recover write throughput",
}


# -- the index, as `precedent memory init` installs it ------------------------------------------


def test_memory_init_installs_the_shipped_template_and_mapping(
    opensearch: OpenSearchCluster, index: str
) -> None:
    first = run_cli(opensearch, index, "init")
    assert first.exit_code == 0, first.output + first.stderr
    assert first.output.strip() == f"index {opensearch.url}/{index}: created"

    body, template = load_index_manifests(opensearch.manifests)
    with opensearch.client() as client:
        mapping = client.get(f"/{index}/_mapping").json()[index]["mappings"]
        settings = client.get(f"/{index}/_settings").json()[index]["settings"]["index"]
        installed = client.get(f"/_index_template/{index}").json()["index_templates"]
    assert mapping["dynamic"] == "strict"
    assert mapping["properties"] == body["mappings"]["properties"]
    assert settings["knn"] == "true"
    [found] = installed
    assert found["index_template"]["index_patterns"] == [f"{index}*"]
    assert (
        found["index_template"]["template"]["mappings"]["properties"]
        == (template["template"]["mappings"]["properties"])
    )

    # A second init finds the index as the manifests describe it.
    again = run_cli(opensearch, index, "init")
    assert again.exit_code == 0, again.output + again.stderr
    assert again.output.strip() == f"index {opensearch.url}/{index}: exists"


def test_memory_init_names_a_field_the_existing_index_maps_differently(
    opensearch: OpenSearchCluster, index: str
) -> None:
    body, _ = load_index_manifests(opensearch.manifests)
    properties = {**body["mappings"]["properties"], "embedding": {"type": "float"}}
    with opensearch.client() as client:
        created = client.put(f"/{index}", json={"mappings": {"properties": properties}})
        created.raise_for_status()
    result = run_cli(opensearch, index, "init")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: memory {opensearch.url}/{index}: mapping mismatch: field embedding is float, "
        "expected knn_vector"
    ]


def test_push_then_search_through_the_cli(opensearch: OpenSearchCluster, index: str) -> None:
    assert run_cli(opensearch, index, "init").exit_code == 0
    history = str(REPO / "data" / "incidents")
    pushed = run_cli(opensearch, index, "push", "--history", history)
    assert pushed.exit_code == 0, pushed.output + pushed.stderr
    written = re.search(r"(\d+) incidents written to ", pushed.output)
    assert written is not None, pushed.output
    count = int(written.group(1))
    # Every bundled incident: the strict mapping refused none of their documents.
    assert count == len(load_history_files([REPO / "data" / "incidents"]))
    documents = stored(opensearch, index)
    assert len(documents) == count
    assert {d["cluster"] for d in documents.values()} == {"east"}
    # Pushing again rewrites the same documents (id = incident id).
    again = run_cli(opensearch, index, "push", "--history", history)
    assert again.exit_code == 0, again.output + again.stderr
    assert len(stored(opensearch, index)) == count

    # A bundled incident's own words find it, under its own resource type only.
    some = next(d for d in documents.values() if d["quality_score"] >= 0.7)
    words = " ".join(some["error_message"].split()[:8])
    found = run_cli(opensearch, index, "search", words, "--resource-type", some["resource_type"])
    assert found.exit_code == 0, found.output + found.stderr
    assert some["investigation_id"] in found.output
    elsewhere = "not-a-kind-anything-has"
    none = run_cli(opensearch, index, "search", words, "--resource-type", elsewhere)
    assert none.exit_code == 0
    assert some["investigation_id"] not in none.output


# -- seed 001's query: what openmock answers, the real engine answers too ----------------------


@pytest.fixture(params=["openmock", "opensearch"])
async def both(
    request: pytest.FixtureRequest, index: str
) -> AsyncIterator[tuple[str, OpenSearchMemory, Callable[[], None]]]:
    """The adapter over openmock's client and over the real node, and how to make writes
    searchable (nothing to do for openmock)."""
    if request.param == "openmock":
        memory = OpenSearchMemory(FakeMemoryClient(), index=index, detect_vector=False)
        yield request.param, memory, lambda: None
        await memory.aclose()
        return
    cluster: OpenSearchCluster = request.getfixturevalue("opensearch")
    memory = store_on(cluster, index)
    await memory.create_index(cluster.manifests)
    yield request.param, memory, lambda: refresh(cluster, index)
    await memory.aclose()


async def test_seed_001_filters_and_quality_floor_agree_with_openmock(
    both: tuple[str, OpenSearchMemory, Callable[[], None]],
) -> None:
    _, memory, searchable = both
    documents = [
        incident("INC-GOOD", quality=0.9),
        incident("INC-FLOOR", quality=0.7),  # the floor is inclusive (gte)
        incident("INC-LOW", quality=0.69),
        incident("INC-OTHER-KIND", kind="deployment"),
        incident("INC-OTHER-NAME", name="vol-1", quality=0.8),
    ]
    await memory.upsert([(i.id, incident_document(i, cluster="east")) for i in documents])
    searchable()
    query = MemoryQuery("defragment vol-9 journal corrupted", "volumeattachment", size=10)
    parsed = await memory.search(query)
    assert parsed.skipped == []
    assert {h.incident.id for h in parsed.hits} == {"INC-GOOD", "INC-FLOOR", "INC-OTHER-NAME"}
    assert {h.cluster for h in parsed.hits} == {"east"}
    # Nothing under another kind, whatever the words.
    assert (await memory.search(MemoryQuery("defragment journal", "statefulset"))).hits == []
    # Text that matches nothing returns nothing (the text match is required).
    assert (await memory.search(MemoryQuery("zzqx wvvk", "volumeattachment"))).hits == []


async def test_reranking_puts_the_exact_name_first_on_the_real_scores(
    both: tuple[str, OpenSearchMemory, Callable[[], None]],
) -> None:
    kind, memory, searchable = both
    config = Settings(history_path="", catalog="", cluster_name="west")
    documents = [
        incident("INC-A-OTHER", name="vol-1", outcome="resolved"),
        incident("INC-B-SAME", name="vol-9"),
        incident("INC-C-OTHER", name="vol-2"),
    ]
    await memory.upsert([(i.id, incident_document(i, cluster="east")) for i in documents])
    searchable()
    fleet = FleetMemory(
        memory, cluster_name="west", ranking=config.ranking.weights, metrics=_metrics()
    )
    action = normalize_request(RemediationRequestSpec.model_validate(REQUEST))
    recalled = await fleet.recall(action)
    assert recalled.problem is None, recalled.problem
    ids = [h.incident.id for h in recalled.hits]
    assert set(ids) == {"INC-A-OTHER", "INC-B-SAME", "INC-C-OTHER"}
    assert ids[0] == "INC-B-SAME", (kind, [(h.incident.id, h.score) for h in recalled.hits])


def _metrics() -> Metrics:
    return Metrics(CollectorRegistry())


def operator_on(cluster: OpenSearchCluster, index: str, name: str) -> Engine:
    """The operator's wiring from its settings for cluster ``name`` (hybrid: the 512-d lexical
    embedder, as the shipped mapping has), its fleet memory on ``index``."""
    config = Settings(
        history_path="",
        catalog="",
        cluster_name=name,
        memory_enabled=True,
        memory_url=cluster.url,
        memory_index=index,
    )
    return build_service(config, incidents=[], mode="hybrid", follows_cluster=True)


# -- one cluster writes, another reads -------------------------------------------------------


async def test_an_incident_one_cluster_writes_is_scored_by_another(
    opensearch: OpenSearchCluster, store: OpenSearchMemory, index: str
) -> None:
    east, west = operator_on(opensearch, index, "east"), operator_on(opensearch, index, "west")
    try:
        # East's Incident object (as the outcome loop creates it), written in the background.
        east.objects.upsert_incident(
            "inc-east-1",
            {
                "id": "INC-EAST-1",
                "title": "Defragmentation corrupted the ext4 journal",
                "action": "defrag_volume",
                "resource": {"type": "VolumeAttachment", "name": "vol-9"},
                "severity": "critical",
                "outcome": "unresolved",
                "occurredAt": "2025-03-01T08:00:00Z",
            },
        )
        assert east.objects.memory is not None
        await east.objects.memory.flush()
        document = stored(opensearch, index)["INC-EAST-1"]
        assert document["cluster"] == "east"
        assert document["resource_type"] == "volumeattachment"
        # The embedder's dimension matches the mapping's: the vector goes with the document.
        assert len(document["embedding"]) == 512

        assessment = await west.assess(REQUEST)
        listed = {s.id: s for s in assessment.similar_incidents}
        assert listed["INC-EAST-1"].source == "memory"
        assert listed["INC-EAST-1"].cluster == "east"
        assert assessment.engine.sources == ["memory"]
        assert assessment.risk.most_relevant_incident == "INC-EAST-1"
        assert "INC-EAST-1 from cluster east" in assessment.risk.reasoning
    finally:
        await east.aclose()
        await west.aclose()


# -- the knn clause over the shipped knn_vector mapping -----------------------------------------


async def test_the_mapping_s_vector_field_makes_the_query_hybrid_on_the_real_engine(
    opensearch: OpenSearchCluster, store: OpenSearchMemory, index: str
) -> None:
    field = await store.vector_field()
    assert field == VectorField("embedding", 512)

    def unit(position: int) -> list[float]:
        vector = [0.0] * 512
        vector[position] = 1.0
        return vector

    # Two incidents the text matches alike; only their vectors differ.
    near, far = incident("INC-NEAR"), incident("INC-FAR")
    await store.upsert(
        [
            (near.id, incident_document(near, cluster="east", vector=unit(3))),
            (far.id, incident_document(far, cluster="east", vector=unit(7))),
        ]
    )
    refresh(opensearch, index)
    text = MemoryQuery("defragment vol-9 journal", "volumeattachment")
    plain = await store.search(text)
    assert {h.incident.id for h in plain.hits} == {"INC-NEAR", "INC-FAR"}
    assert plain.hits[0].score == pytest.approx(plain.hits[1].score)

    for target, other in ((near, far), (far, near)):
        position = 3 if target is near else 7
        hybrid = await store.search(
            MemoryQuery(
                "defragment vol-9 journal",
                "volumeattachment",
                vector=unit(position),
                vector_field=field,
            )
        )
        scores = {h.incident.id: h.score for h in hybrid.hits}
        assert set(scores) == {"INC-NEAR", "INC-FAR"}
        # The knn clause adds its similarity to the nearer one only.
        assert scores[target.id] > scores[other.id]


async def test_a_vector_of_the_wrong_length_is_refused_naming_the_field(
    store: OpenSearchMemory,
) -> None:
    bad = incident("INC-SHORT")
    with pytest.raises(MemoryFailure) as caught:
        await store.upsert([(bad.id, incident_document(bad, cluster="east", vector=[0.5] * 8))])
    message = str(caught.value)
    assert "document INC-SHORT" in message
    assert "\n" not in message
