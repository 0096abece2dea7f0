"""Fleet memory across two clusters: the real operator in each (two sandboxes), one memory
shared by both: openmock's async client in place of ``AsyncOpenSearch``, and a real OpenSearch
node (tests/opensearch_node.py). A failed outcome reported in cluster east becomes an Incident,
east writes it to the memory, and cluster west — which never saw it — finds it there."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from opensearchpy.exceptions import ConnectionError

from precedent.adapters.memory_opensearch import OpenSearchMemory, build_client
from precedent.core.outcomes import incident_name
from precedent.demo import apply
from precedent.metrics import METRICS
from precedent_sandbox import SandboxThread
from tests.integration.conftest import DATA, REPO, Cluster, eventually
from tests.integration.test_outcomes import defrag_request, handled, report
from tests.memory_double import FakeMemoryClient
from tests.opensearch_node import OpenSearchCluster

pytestmark = pytest.mark.integration

INDEX = "precedent-incidents"


@pytest.mark.parametrize(
    "memory", ["openmock", pytest.param("opensearch", marks=pytest.mark.opensearch)]
)
def test_a_failure_in_one_cluster_is_found_by_another_through_the_memory(
    cluster: Cluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memory: str,
    request: pytest.FixtureRequest,
) -> None:
    documents: Callable[[], list[dict[str, Any]]]
    if memory == "openmock":
        fake = FakeMemoryClient()
        monkeypatch.setattr(
            "precedent.adapters.memory_opensearch.AsyncOpenSearch", lambda **_: fake
        )
        monkeypatch.setenv("PRECEDENT_MEMORY_URL", "http://memory.test:9200")
        documents = partial(fake.documents, INDEX)
    else:
        # A real node (tests/opensearch_node.py), the index created as `precedent memory init`
        # does; the operator runs in hybrid mode, so its documents and queries carry vectors.
        node: OpenSearchCluster = request.getfixturevalue("opensearch")
        index = f"{INDEX}-operator-{os.getpid()}"
        monkeypatch.setenv("PRECEDENT_MEMORY_URL", node.url)
        monkeypatch.setenv("PRECEDENT_MEMORY_INDEX", index)
        asyncio.run(_create(node, index))
        request.addfinalizer(partial(_delete, node, index))
        documents = partial(_stored, node, index)
    monkeypatch.setenv("PRECEDENT_MEMORY_ENABLED", "true")
    monkeypatch.setenv("PRECEDENT_CLUSTER_NAME", "east")

    with cluster.operator():
        assert cluster.create(defrag_request("defrag-1")).status_code == 201
        first = cluster.wait_ready("defrag-1")
        assert "memory" in first["status"]["engine"]["sources"]
        uid = first["metadata"]["uid"]
        name = incident_name("default", "defrag-1", uid)
        response = report(cluster, "defrag-1", {"result": "failed", "message": "journal corrupted"})
        assert response.status_code == 200, response.text
        handled(cluster, "defrag-1")
        [document] = eventually(lambda: [d for d in documents() if d["investigation_id"] == name])
        assert document["cluster"] == "east"
        assert document["resource_type"] == "volumeattachment"

    monkeypatch.setenv("PRECEDENT_CLUSTER_NAME", "west")
    with SandboxThread(REPO / "crds") as sandbox:
        kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig-west")
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        with httpx.Client(base_url=sandbox.url, timeout=30) as client:
            apply(client, [DATA / "incidents", DATA / "playbooks"])
            west = Cluster(sandbox, client, kubeconfig)
            assert client.get(f"/apis/precedent.dev/v1alpha1/incidents/{name}").status_code == 404
            with west.operator():
                assert west.create(defrag_request("defrag-west")).status_code == 201
                status: dict[str, Any] = west.wait_ready("defrag-west")["status"]
    listed = {i["id"]: i for i in status["similarIncidents"]}
    assert listed[name]["source"] == "memory"
    assert listed[name]["cluster"] == "east"
    # Seed 001's boosts, by name: the same volume (exact name) and the record's quality.
    assert listed[name]["boosts"]["exactName"] == 1.5
    assert set(listed[name]["boosts"]) <= {"exactName", "outcome", "quality", "recency"}
    assert f"{name} from cluster east" in status["risk"]["reasoning"]
    assert status["risk"]["mostRelevantIncident"] == name
    assert status["engine"]["sources"] == ["cluster", "memory"]


async def _create(node: OpenSearchCluster, index: str) -> None:
    url = node.url
    store = OpenSearchMemory(build_client(url, timeout_seconds=30), index=index, url=url)
    try:
        await store.create_index(node.manifests)
    finally:
        await store.aclose()


def _stored(node: OpenSearchCluster, index: str) -> list[dict[str, Any]]:
    with node.client() as client:
        client.post(f"/{index}/_refresh").raise_for_status()
        answer = client.post(f"/{index}/_search", json={"size": 1000})
    answer.raise_for_status()
    return [h["_source"] for h in answer.json()["hits"]["hits"]]


def _delete(node: OpenSearchCluster, index: str) -> None:
    with node.client() as client:
        client.delete(f"/{index}")
        client.delete(f"/_index_template/{index}")


class _DownClient(FakeMemoryClient):
    """openmock's client whose searches fail as an unreachable OpenSearch does (opensearch-py's
    own ``ConnectionError``), or never answer (``hang``)."""

    def __init__(self, *, hang: bool) -> None:
        super().__init__()
        self.hang = hang

    async def search(self, *_: Any, **__: Any) -> dict[str, Any]:
        if self.hang:
            await asyncio.sleep(3600)
        raise ConnectionError("N/A", "connection refused", OSError("connection refused"))


def _queries(status: str) -> float:
    value = METRICS.memory_queries.labels(status=status)._value.get()
    return float(value)


@pytest.mark.parametrize(
    ("hang", "reason", "status"),
    [(True, "memory: timeout after 300 ms", "timeout"), (False, "unreachable", "unreachable")],
)
def test_a_memory_that_is_down_or_hangs_leaves_requests_ready_and_says_so(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, hang: bool, reason: str, status: str
) -> None:
    down = _DownClient(hang=hang)
    monkeypatch.setattr("precedent.adapters.memory_opensearch.AsyncOpenSearch", lambda **_: down)
    monkeypatch.setenv("PRECEDENT_MEMORY_ENABLED", "true")
    monkeypatch.setenv("PRECEDENT_MEMORY_URL", "http://memory.test:9200")
    monkeypatch.setenv("PRECEDENT_MEMORY_TIMEOUT_MS", "300")
    monkeypatch.setenv("PRECEDENT_BREAKER_FAILURE_THRESHOLD", "2")
    before = _queries(status), _queries("circuit_open")
    with cluster.operator():
        sources = []
        for n in range(3):
            assert cluster.create(defrag_request(f"down-{n}")).status_code == 201
            status_ = cluster.wait_ready(f"down-{n}")["status"]
            assert status_["risk"]["band"] in {"low", "medium", "high"}
            sources.append(status_["engine"]["sources"])
    # Assessed from the local history; the memory named as unavailable, with the reason.
    assert all(s[0] == "cluster" for s in sources)
    assert reason in sources[0][1]
    assert reason in sources[1][1]
    # Two failures open the breaker: the third request does not wait for the memory at all.
    assert sources[2][1] == "memory: circuit open"
    assert _queries(status) - before[0] == 2
    assert _queries("circuit_open") - before[1] == 1
    assert METRICS.memory_circuit_state._value.get() == 2
