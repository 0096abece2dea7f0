"""The blast-radius service: watch events and full lists keep the graph equal to the cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from precedent.adapters.loader import iter_documents
from precedent.core.graph import KINDS
from precedent.models import BlastNote, Target, TopologyEdge, TopologyHints
from precedent.services.blast_radius import BlastRadiusService

SHOP = Path(__file__).resolve().parents[2] / "data" / "shop"


def shop() -> list[dict[str, Any]]:
    """The demo shop's objects of the kinds the graph reads, each with a resourceVersion."""
    out = []
    for i, doc in enumerate(iter_documents([SHOP])):
        if doc.kind in KINDS:
            body = dict(doc.body)
            body["metadata"] = {**body["metadata"], "resourceVersion": str(i + 1)}
            out.append(body)
    return out


def loaded(**kwargs: Any) -> BlastRadiusService:
    """A service that saw the shop's initial listing."""
    service = BlastRadiusService(**kwargs)
    for obj in shop():
        service.observe(obj["kind"], None, obj)
    return service


PAYMENT = Target(kind="Deployment", name="payment-api", namespace="shop")


def find(kind: str, name: str) -> dict[str, Any]:
    """One shop object."""
    return next(o for o in shop() if o["kind"] == kind and o["metadata"]["name"] == name)


def test_the_report_names_dependents_paths_and_the_pdb() -> None:
    status, impact = loaded().report(PAYMENT)
    assert status.in_graph
    assert status.upstream_workloads == ["deploy/checkout", "deploy/storefront", "ingress/shop"]
    assert status.upstream_count == 6
    assert status.pdb_protected
    assert status.pdbs == ["payment-api (minAvailable: 2)"]
    assert status.top_paths[0].startswith("ingress/shop → svc/storefront")
    assert status.namespaces == ["payments", "shop"]
    assert impact is not None
    assert impact.upstream_count == 6
    assert impact.target == "deploy/payment-api"
    text = BlastNote(status).text()
    assert "6 nodes depend on it (deploy/checkout, deploy/storefront, ingress/shop)" in text


def test_an_unknown_target_says_so() -> None:
    status, impact = loaded().report(Target(kind="Node", name="aks-nodepool1-0"))
    assert not status.in_graph
    assert impact is None
    assert status.summary.startswith("Node aks-nodepool1-0 is not in the dependency graph")
    assert "not in the dependency graph" in BlastNote(status).text()


def test_deleted_removes_and_a_new_version_replaces() -> None:
    service = loaded()
    checkout = find("Deployment", "checkout")
    service.observe("Deployment", "DELETED", checkout)
    status, _ = service.report(PAYMENT)
    assert "deploy/checkout" not in status.upstream_workloads
    service.observe("Deployment", "ADDED", checkout)
    assert "deploy/checkout" in service.report(PAYMENT)[0].upstream_workloads


def test_a_malformed_update_drops_the_object() -> None:
    service = loaded()
    broken = find("Deployment", "checkout")
    broken["spec"] = {"template": "not a mapping"}
    service.observe("Deployment", "MODIFIED", broken)
    assert "deploy/checkout" not in service.report(PAYMENT)[0].upstream_workloads


def test_a_full_list_drops_what_the_watch_never_reported_deleted() -> None:
    service = loaded()
    mark = service.mark()
    listed = [
        o for o in shop() if o["kind"] == "Deployment" and o["metadata"]["name"] != "checkout"
    ]
    result = service.resync("Deployment", listed, mark)
    assert result.removed == (("Deployment", "shop", "checkout"),)
    assert result.applied == ()  # the same versions are not applied again
    assert "deploy/checkout" not in service.report(PAYMENT)[0].upstream_workloads
    # Other kinds are not touched by a list of Deployments.
    assert service.report(Target(kind="Service", name="checkout", namespace="shop"))[0].in_graph


def test_a_full_list_leaves_what_the_watch_changed_after_it_was_requested() -> None:
    service = loaded()
    mark = service.mark()
    stale = [o for o in shop() if o["kind"] == "Deployment" and o["metadata"]["name"] != "checkout"]
    # The watch re-adds checkout while the (older) list is on its way: the list must not drop it.
    service.observe("Deployment", "MODIFIED", find("Deployment", "checkout"))
    assert not service.resync("Deployment", stale, mark).removed
    assert "deploy/checkout" in service.report(PAYMENT)[0].upstream_workloads


def test_a_full_list_does_not_resurrect_what_the_watch_deleted_after_it() -> None:
    service = loaded()
    mark = service.mark()
    everything = [o for o in shop() if o["kind"] == "Deployment"]
    service.observe("Deployment", "DELETED", find("Deployment", "checkout"))
    result = service.resync("Deployment", everything, mark)
    assert ("Deployment", "shop", "checkout") not in result.applied
    assert "deploy/checkout" not in service.report(PAYMENT)[0].upstream_workloads


def test_a_full_list_applies_what_the_watch_missed() -> None:
    service = BlastRadiusService()
    listed = [o for o in shop() if o["kind"] == "Deployment"]
    result = service.resync("Deployment", listed, service.mark())
    assert ("Deployment", "shop", "checkout") in result.applied
    assert service.held() == len(listed) == len(result.applied)


def test_the_namespace_limit() -> None:
    service = loaded(namespaces=["shop"])
    status, impact = service.report(PAYMENT)
    assert status.namespaces == ["shop"]  # fraud-check in payments is not followed
    assert (
        service.report(Target(kind="Deployment", name="fraud-check", namespace="payments"))[
            0
        ].in_graph
        is False
    )
    assert impact is not None


def test_fleet_memory_hints_naming_the_target_are_listed() -> None:
    hints = TopologyHints(
        edges=[
            TopologyEdge(
                source="checkout",
                relation="CALLS",
                target="payment-api",
                confidence=0.8,
                observed_at="2026-01-01T00:00:00Z",
            ),
            TopologyEdge(
                source="search",
                relation="CALLS",
                target="catalog",
                confidence=0.9,
                observed_at="2026-01-01T00:00:00Z",
            ),
        ]
    )
    status, _ = loaded().report(PAYMENT, hints)
    assert status.hints == ["checkout CALLS payment-api (confidence 0.80, fleet memory)"]


def test_a_kind_outside_the_graph_is_not_matched_by_name() -> None:
    service = loaded()
    arm = Target(kind="managedClusters", name="payment-api")
    assert service.report(arm)[0].in_graph is False
    assert service.report(Target(kind="Pod", name="payment-api", namespace="shop"))[1] is None
    for kind in ("deploy", "deployment", "Deployment", "deployments"):
        assert service.report(Target(kind=kind, name="payment-api"))[0].in_graph, kind
    assert service.report(Target(kind="svc", name="ledger", namespace="shop"))[0].in_graph


def _caller(name: str, calls: str) -> list[dict[str, Any]]:
    """A Deployment calling ``calls`` by URL, and its own Service."""
    return [
        {
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "resourceVersion": "1"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "containers": [
                            {
                                "name": "main",
                                "image": "example/app:1",
                                "env": [{"name": "DEP_URL", "value": f"http://{calls}:8080"}],
                            }
                        ]
                    },
                }
            },
        },
        {
            "kind": "Service",
            "metadata": {"name": name, "namespace": "shop", "resourceVersion": "1"},
            "spec": {"selector": {"app": name}},
        },
    ]


def test_the_report_lists_the_nearest_dependents_of_many_by_hops_then_name() -> None:
    service = loaded()
    # 15 direct callers of payment-api's Service, each called by one more: 30 more dependents
    for i in range(15):
        for obj in _caller(f"near-{i:02}", "payment-api") + _caller(f"far-{i:02}", f"near-{i:02}"):
            service.observe(obj["kind"], None, obj)
    status, _ = service.report(PAYMENT)
    detailed = service.radius(PAYMENT)
    assert detailed is not None
    everyone = [
        r.key.short("shop") for r in detailed.upstream if r.key.kind in ("Deployment", "Ingress")
    ]
    assert len(everyone) > 20
    assert status.upstream_workloads == everyone[:20]
    assert status.upstream_workloads[:2] == ["deploy/checkout", "deploy/near-00"]
    assert status.upstream_count == detailed.upstream_count
