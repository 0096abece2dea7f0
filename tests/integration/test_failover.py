"""Two operator processes with kopf peering: one works, the other takes over when it dies."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.faults.rig import operator_process
from tests.helpers import eventually
from tests.integration.conftest import REPO, Cluster, is_true

pytestmark = pytest.mark.integration

PEERING = REPO / "manifests" / "peering.yaml"


def install_peering(cluster: Cluster) -> None:
    """The ClusterKopfPeering object from the shipped manifest (its CRD is in ``crds/``)."""
    assert cluster.client.get("/apis/kopf.dev/v1").status_code == 200
    for doc in yaml.safe_load_all(PEERING.read_text()):
        if doc["kind"] != "ClusterKopfPeering":
            continue  # RBAC: the sandbox here runs without authorization
        response = cluster.client.post("/apis/kopf.dev/v1/clusterkopfpeerings", json=doc)
        assert response.status_code in (200, 201), response.text


@contextmanager
def operator(cluster: Cluster, priority: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """An operator process peering as ``precedent`` with ``priority`` (a 4 s peering lifetime)."""
    with operator_process(
        cluster.kubeconfig,
        log,
        peering="precedent",
        PRECEDENT_PEERING_PRIORITY=str(priority),
        PRECEDENT_PEERING_LIFETIME_SECONDS="4",
    ) as process:
        yield process


def request(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "action": "restart_service",
            "target": {"kind": "managedClusters", "name": "payment-api"},
        },
    }


def test_the_standby_takes_over_with_no_request_lost_or_answered_twice(
    cluster: Cluster, tmp_path: Path
) -> None:
    install_peering(cluster)
    first = [f"before-{i}" for i in range(10)]
    second = [f"after-{i}" for i in range(10)]
    peering = "/apis/kopf.dev/v1/clusterkopfpeerings/precedent"

    def peers() -> int:
        return len(cluster.client.get(peering).json().get("status") or {})

    with operator(cluster, 200, tmp_path / "active.log") as active:
        eventually(lambda: peers() >= 1)  # the active replica has registered
        with operator(cluster, 100, tmp_path / "standby.log"):
            eventually(lambda: peers() >= 2)  # the standby has seen the active one
            _serve_and_fail_over(cluster, active, first, second)
    standby_log = (tmp_path / "standby.log").read_text(errors="replace")
    active_log = (tmp_path / "active.log").read_text(errors="replace")
    # The standby stood by while the active replica lived, and answered after it died.
    assert all(f"[default/{name}]" in active_log for name in first)
    assert not any(f"[default/{name}] risk" in standby_log for name in first)
    assert all(f"[default/{name}] risk" in standby_log for name in second)
    for name in first + second:
        obj = cluster.get_request(name)
        assert is_true(obj, "Ready"), name
        decisions = [e for e in cluster.events_for(name) if e["reason"] == "Denied"]
        assert len(decisions) == 1, (name, decisions)


def _serve_and_fail_over(
    cluster: Cluster, active: subprocess.Popen[bytes], first: list[str], second: list[str]
) -> None:
    for name in first:
        assert cluster.create(request(name)).status_code == 201
    for name in first:
        cluster.wait_ready(name, timeout=90)
    active.send_signal(signal.SIGKILL)  # no goodbye: its peering record has to expire
    active.wait()
    for name in second:
        assert cluster.create(request(name)).status_code == 201
    for name in second:
        cluster.wait_ready(name, timeout=90)
