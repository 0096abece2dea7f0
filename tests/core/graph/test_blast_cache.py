"""Remembered blast radii and the per-edge cut-off: a change upstream of a remembered hub
changes its next answer; an unchanged re-apply keeps it; a cut answer counts exactly ``limit``."""

from __future__ import annotations

import random

import pytest

from precedent.core.graph import ANNOTATION_TIER, DependencyGraph, NodeKey, blast_radius
from precedent.core.graph import blast as blast_module
from tests.core.graph.test_graph import D, app, deploy, service, shop, shop_objects


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


@pytest.mark.usefixtures("remember_all")
def test_a_change_no_remembered_answer_read_keeps_it() -> None:
    graph = shop()
    graph.apply_all(app("newsletter", ns="marketing"))
    first = blast_radius(graph, D("payment-api"))
    generation = graph.generation
    # a new app elsewhere, and a new image for one already there, neither reached from it
    graph.apply_all(app("mailer", ns="marketing", env={"NEWS_URL": "http://newsletter:80"}))
    graph.apply(deploy("newsletter", ns="marketing", image="example/app:2"))
    assert graph.generation > generation
    assert blast_radius(graph, D("payment-api")) is first
    # a change to a node it reached drops it
    graph.apply(deploy("checkout", env={"PAYMENT_URL": "http://payment-api:8080"}, image="x:2"))
    assert blast_radius(graph, D("payment-api")) is not first


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("limit", [2_000, 4])
def test_remembered_answers_always_equal_answers_worked_out_afresh(
    seed: int, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random changes between queries: whatever the remembering graph returns equals what a
    twin graph given the same changes in the same order (never asked before) works out."""
    rng = random.Random(seed)
    upstream = ["checkout", "ledger", "payment-api", "storefront"]
    objects = shop_objects()
    for i in range(12):
        objects += app(f"extra-{i}", env={"UP_URL": f"http://{rng.choice(upstream)}:80"})
    remembering, twin = DependencyGraph(), DependencyGraph()
    for graph in (remembering, twin):
        graph.apply_all(objects)
    nodes = remembering.nodes()
    for _ in range(25):
        for target in rng.sample(nodes, 6):
            if target not in remembering:
                continue
            monkeypatch.setattr(blast_module, "REMEMBER_FROM", 0)
            kept = blast_radius(remembering, target, limit=limit, dependents=3)
            monkeypatch.setattr(blast_module, "REMEMBER_FROM", 1 << 62)
            fresh = blast_radius(twin, target, limit=limit, dependents=3)
            assert kept.to_dict() == fresh.to_dict(), target
            assert kept.dependents == fresh.dependents, target
        obj = rng.choice(objects)
        meta = obj["metadata"]
        deleting = rng.random() < 0.5
        for graph in (remembering, twin):
            if deleting:
                graph.delete(obj["kind"], meta.get("namespace", ""), meta["name"])
            else:
                graph.apply(obj)
        if rng.random() < 0.3:
            changed = deploy(
                rng.choice(["checkout", "extra-1", "extra-2"]),
                env={"UP_URL": f"http://{rng.choice(['ledger', 'extra-3', 'storefront'])}:80"},
            )
            for graph in (remembering, twin):
                graph.apply(changed)


@pytest.mark.usefixtures("remember_all")
def test_a_new_annotation_on_a_node_reached_downstream_changes_a_remembered_answer() -> None:
    graph = shop()
    fraud = NodeKey("Deployment", "payments", "fraud-check")
    before = blast_radius(graph, D("payment-api"))
    # a leaf: nothing it depends on is touched when its own object changes
    assert not graph.outgoing(fraud)
    assert [r.critical for r in before.downstream if r.key == fraud] == [False]
    obj = next(
        o
        for o in shop_objects()
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "fraud-check"
    )
    obj["metadata"].setdefault("annotations", {})["precedent.dev/tier"] = "critical"
    graph.apply(obj)
    after = blast_radius(graph, D("payment-api"))
    assert [r.critical for r in after.downstream if r.key == fraud] == [True]


@pytest.mark.usefixtures("remember_all")
def test_a_new_annotation_on_a_service_without_backends_changes_a_remembered_answer() -> None:
    graph = DependencyGraph()
    graph.apply_all(app("web", env={"SMTP_URL": "http://smtp:25"}))
    graph.apply(service("smtp", selector={"app": "no-such-pods"}))
    smtp = NodeKey("Service", "shop", "smtp")
    before = blast_radius(graph, D("web"))
    assert [r.critical for r in before.downstream if r.key == smtp] == [False]
    graph.apply(
        service("smtp", selector={"app": "no-such-pods"}, annotations={ANNOTATION_TIER: "critical"})
    )
    after = blast_radius(graph, D("web"))
    assert [r.critical for r in after.downstream if r.key == smtp] == [True]
