"""Blast radius with the real operator against the sandbox: the demo shop's graph in answers.

The shop (``data/shop``) is applied before the operator starts, so the graph comes from kopf's
initial listing; deleting a Deployment afterwards reaches the graph through the watch.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import CliRunner

from precedent.adapters.kube_api import ApiConnection, KubeApi
from precedent.demo import apply, object_path
from precedent.plugin import main
from precedent.services.blast_radius import BlastRadiusService
from tests.helpers import eventually
from tests.integration.conftest import DATA, Cluster

pytestmark = pytest.mark.integration


def request(name: str, action: str, kind: str, target: str, namespace: str) -> dict[str, Any]:
    """A RemediationRequest aimed at ``kind/target`` in ``namespace``."""
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "action": action,
            "target": {"kind": kind, "name": target, "namespace": namespace},
            "description": f"{action} on {target} after a stuck config reload",
            "labels": {"environment": "staging"},
        },
    }


def assessed(cluster: Cluster, body: dict[str, Any]) -> dict[str, Any]:
    """Create the request and return its status once Ready."""
    response = cluster.create(body)
    assert response.status_code == 201, response.text
    return dict(cluster.wait_ready(body["metadata"]["name"])["status"])


def test_blast_radius_follows_the_shop(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    apply(cluster.client, [DATA / "shop"])
    # The periodic full list runs too, against the sandbox's list endpoints (paged).
    monkeypatch.setenv("PRECEDENT_BLAST_RADIUS_RESYNC_SECONDS", "1")
    with cluster.operator() as runner:
        # restart payment-api: the ingress, the storefront and checkout depend on it.
        status = assessed(
            cluster,
            request("restart-payment-api", "restart_service", "Deployment", "payment-api", "shop"),
        )
        blast = status["blastRadius"]
        assert blast["inGraph"] is True
        assert {"deploy/checkout", "deploy/storefront", "ingress/shop"} <= set(
            blast["upstreamWorkloads"]
        )
        assert (
            "ingress/shop → svc/storefront → deploy/storefront → svc/checkout → deploy/checkout"
            " → svc/payment-api → deploy/payment-api"
        ) in blast["topPaths"]
        assert blast["pdbProtected"] is True
        assert blast["upstreamCount"] == 6
        assert "deploy/checkout" in status["risk"]["reasoning"]
        explained = CliRunner().invoke(main, ["-n", "default", "explain", "rr/restart-payment-api"])
        assert explained.exit_code == 0, explained.output
        assert "  blast radius: deploy/payment-api in shop: 6 upstream" in explained.stdout
        assert (
            "    depend on it: deploy/checkout, deploy/storefront, ingress/shop" in explained.stdout
        )
        assert "    path: ingress/shop → svc/storefront" in explained.stdout

        # A leaf nobody calls: within the limits, the low band's decision stands.
        leaf = assessed(
            cluster,
            request("restart-email-worker", "restart_pod", "Deployment", "email-worker", "shop"),
        )
        assert leaf["blastRadius"]["upstreamCount"] == 0
        assert leaf["risk"]["band"] == "low"
        assert leaf["risk"]["decision"] == "Approved"

        # Low risk, but the critical payment-api calls fraud-check: escalated, with the reason.
        fraud = assessed(
            cluster,
            request("restart-fraud-check", "restart_pod", "Deployment", "fraud-check", "payments"),
        )
        assert fraud["risk"]["band"] == "low"
        assert fraud["risk"]["decision"] == "Escalated"
        assert fraud["blastRadius"]["criticalServices"] == ["shop/deploy/payment-api"]
        reason = fraud["policy"]["reason"]
        assert "1 critical service upstream: shop/deploy/payment-api" in reason
        assert reason in fraud["risk"]["reasoning"]

        # A target the graph does not hold says so.
        node = assessed(
            cluster, request("cordon-node", "cordon_node", "Node", "aks-nodepool1-0", "")
        )
        assert node["blastRadius"]["inGraph"] is False
        assert "not in the dependency graph" in node["blastRadius"]["summary"]

        # Deleting checkout reaches the graph through the watch: later answers drop it.
        gone = cluster.client.delete(object_path("Deployment", "shop", "checkout"))
        assert gone.status_code == 200, gone.text

        def without_checkout() -> dict[str, Any] | None:
            name = f"restart-payment-api-{len(attempts)}"
            attempts.append(name)
            status = assessed(
                cluster,
                request(name, "restart_service", "Deployment", "payment-api", "shop"),
            )
            listed = status["blastRadius"]["upstreamWorkloads"]
            return status if "deploy/checkout" not in listed else None

        attempts: list[str] = []
        later = eventually(without_checkout, 60)
        blast = later["blastRadius"]
        assert "deploy/storefront" not in blast["upstreamWorkloads"]  # it reached via checkout
        assert not any("checkout" in p.split(" → ")[0] for p in blast["topPaths"])
        assert blast["upstreamCount"] < 6
    assert "graph resync of" not in runner.output  # nothing to fix, and no list failed


def test_the_resync_lists_in_pages_and_equals_the_watch(cluster: Cluster) -> None:
    apply(cluster.client, [DATA / "shop"])
    service = BlastRadiusService()

    async def listed() -> list[dict[str, Any]]:
        api = KubeApi(ApiConnection(server=cluster.sandbox.url, headers={}, verify=True))
        try:
            return await api.list_objects("/apis/apps/v1", "deployments", page=2)
        finally:
            await api.aclose()

    items = asyncio.run(listed())
    assert sorted(i["metadata"]["name"] for i in items) == [
        "catalog",
        "checkout",
        "email-worker",
        "fraud-check",
        "payment-api",
        "redis",
        "storefront",
    ]
    result = service.resync("Deployment", items, service.mark())
    assert len(result.applied) == 7
    assert not service.resync("Deployment", items, service.mark())  # same versions: nothing
