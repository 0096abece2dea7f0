"""Remembered blast radii and the per-edge cut-off: a change upstream of a remembered hub
changes its next answer; an unchanged re-apply keeps it; a cut answer counts exactly ``limit``."""

from __future__ import annotations

import pytest

from precedent.core.graph import DependencyGraph, NodeKey, blast_radius
from precedent.core.graph import blast as blast_module
from tests.core.graph.test_graph import D, app, deploy, shop, shop_objects


@pytest.fixture
def remember_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remember every answer, however small (the shop's answers are below the threshold)."""
    monkeypatch.setattr(blast_module, "REMEMBER_FROM", 0)


def _pdb(name: str, app_label: str) -> dict[str, object]:
    return {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app_label}}},
    }


@pytest.mark.usefixtures("remember_all")
def test_a_remembered_answer_is_returned_until_the_graph_changes() -> None:
    graph = shop()
    first = blast_radius(graph, D("payment-api"))
    assert blast_radius(graph, D("payment-api")) is first
    # a different question is a different answer
    assert blast_radius(graph, D("payment-api"), detail=False) is not first


@pytest.mark.usefixtures("remember_all")
def test_a_new_caller_upstream_of_a_remembered_target_changes_its_answer() -> None:
    graph = shop()
    before = blast_radius(graph, D("payment-api"))
    # mobile-bff calls checkout, which calls payment-api: two hops further upstream
    graph.apply(deploy("mobile-bff", env={"CHECKOUT_URL": "http://checkout:8080"}))
    after = blast_radius(graph, D("payment-api"))
    assert after.upstream_count == before.upstream_count + 1
    assert D("mobile-bff") in {r.key for r in after.upstream}
    graph.delete("Deployment", "shop", "mobile-bff")
    assert blast_radius(graph, D("payment-api")).to_dict() == before.to_dict()


@pytest.mark.usefixtures("remember_all")
def test_deleting_an_upstream_node_changes_a_remembered_answer() -> None:
    graph = shop()
    before = blast_radius(graph, D("payment-api"))
    graph.delete("Deployment", "shop", "checkout")
    after = blast_radius(graph, D("payment-api"))
    assert D("checkout") in {r.key for r in before.upstream}
    assert D("checkout") not in {r.key for r in after.upstream}


@pytest.mark.usefixtures("remember_all")
def test_a_new_pdb_or_criticality_changes_a_remembered_answer() -> None:
    graph = shop()
    before = blast_radius(graph, NodeKey("StatefulSet", "shop", "ledger"))
    assert before.pdbs == ()
    graph.apply(_pdb("ledger", "ledger"))
    assert blast_radius(graph, NodeKey("StatefulSet", "shop", "ledger")).pdbs == (
        "ledger (minAvailable: 1)",
    )
    checkout = next(
        o
        for o in shop_objects()
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "checkout"
    )
    checkout["metadata"].setdefault("annotations", {})["precedent.dev/tier"] = "critical"
    graph.apply(checkout)
    critical = blast_radius(graph, NodeKey("StatefulSet", "shop", "ledger")).critical_upstream
    assert D("checkout") in critical


@pytest.mark.usefixtures("remember_all")
def test_an_unchanged_reapply_keeps_the_answer_and_the_generation() -> None:
    graph = shop()
    first = blast_radius(graph, D("payment-api"))
    generation = graph.generation
    for obj in shop_objects():
        graph.apply(obj)
    assert graph.generation == generation
    assert blast_radius(graph, D("payment-api")) is first


def test_a_hub_above_the_threshold_is_remembered_and_forgotten_on_change() -> None:
    graph = DependencyGraph()
    graph.apply_all(app("auth"))
    callers = blast_module.REMEMBER_FROM
    for i in range(callers):
        graph.apply(deploy(f"caller-{i}", env={"AUTH_URL": "http://auth:8080"}))
    first = blast_radius(graph, D("auth"), detail=False)
    assert first.upstream_count == callers + 1  # the Service and every caller
    assert blast_radius(graph, D("auth"), detail=False) is first
    graph.apply(deploy("one-more", env={"AUTH_URL": "http://auth:8080"}))
    assert blast_radius(graph, D("auth"), detail=False).upstream_count == callers + 2


def test_the_cut_off_counts_exactly_the_limit() -> None:
    graph = DependencyGraph()
    graph.apply_all(app("auth"))
    for i in range(30):
        graph.apply(deploy(f"caller-{i}", env={"AUTH_URL": "http://auth:8080"}))
    # 31 upstream: the Service and 30 callers, all but one in a single layer
    whole = blast_radius(graph, D("auth"), limit=31)
    assert (whole.upstream_count, whole.truncated) == (31, False)
    cut = blast_radius(graph, D("auth"), limit=10)
    assert (cut.upstream_count, cut.truncated) == (10, True)
    assert "10+ upstream" in cut.summary
