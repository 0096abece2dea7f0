"""Fleet memory across two clusters: the real operator in each (two sandboxes), one memory
double shared by both (openmock's async client in place of ``AsyncOpenSearch``, since no
OpenSearch server runs here). A failed outcome reported in cluster east becomes an Incident,
east writes it to the memory, and cluster west — which never saw it — finds it there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from precedent.core.outcomes import incident_name
from precedent.demo import apply
from precedent_sandbox import SandboxThread
from tests.integration.conftest import DATA, REPO, Cluster, eventually
from tests.integration.test_outcomes import defrag_request, handled, report
from tests.memory_double import FakeMemoryClient

pytestmark = pytest.mark.integration

INDEX = "precedent-incidents"


def test_a_failure_in_one_cluster_is_found_by_another_through_the_memory(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeMemoryClient()
    monkeypatch.setattr("precedent.adapters.memory_opensearch.AsyncOpenSearch", lambda **_: fake)
    monkeypatch.setenv("PRECEDENT_MEMORY_ENABLED", "true")
    monkeypatch.setenv("PRECEDENT_MEMORY_URL", "http://memory.test:9200")
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
        [document] = eventually(
            lambda: [d for d in fake.documents(INDEX) if d["investigation_id"] == name]
        )
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
