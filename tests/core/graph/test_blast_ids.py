"""Queries on integer node ids: the status's nearest dependents equal the detailed answer's,
and ids handed back by deleted nodes and reused never change an answer."""

from __future__ import annotations

import random
from typing import Any

import pytest

from precedent.core.graph import WORKLOAD_KINDS, DependencyGraph, NodeKey, blast_radius
from tests.core.graph.test_graph import app, shop_objects


def _fan_in() -> list[dict[str, Any]]:
    """``core`` with 30 callers over three layers (more than a status lists)."""
    objects = app("core")
    for i in range(10):
        objects += app(f"a{i}", env={"CORE_URL": "http://core:8080"})
        objects += app(f"b{i}", env={"A_URL": f"http://a{i}:8080"})
        objects += app(f"c{i}", env={"B_URL": f"http://b{i}:8080"})
    return objects


def _nearest(graph: DependencyGraph, target: NodeKey, most: int) -> tuple[NodeKey, ...]:
    detailed = blast_radius(graph, target)
    keys = [r.key for r in detailed.upstream if r.key.kind in (*WORKLOAD_KINDS, "Ingress")]
    return tuple(keys[:most])


@pytest.mark.parametrize("most", [1, 2, 5, 10, 11, 20, 100])
def test_dependents_are_the_nearest_workloads_and_ingresses_by_hops_then_key(most: int) -> None:
    graph = DependencyGraph()
    graph.apply_all(_fan_in() + shop_objects())
    for target in graph.nodes():
        answer = blast_radius(graph, target, detail=False, dependents=most)
        assert answer.dependents == _nearest(graph, target, most), target
        assert answer.upstream == ()


def test_dependents_are_empty_unless_asked_for() -> None:
    graph = DependencyGraph()
    graph.apply_all(_fan_in())
    assert blast_radius(graph, NodeKey("Deployment", "shop", "core")).dependents == ()


def test_answers_do_not_depend_on_the_ids_deleted_nodes_gave_back() -> None:
    objects = _fan_in() + shop_objects()
    rng = random.Random(7)
    graph = DependencyGraph()
    graph.apply_all(objects)
    for _ in range(5):
        gone = rng.sample(objects, 15)
        for obj in gone:
            meta = obj["metadata"]
            graph.delete(obj["kind"], meta.get("namespace", ""), meta["name"])
        rng.shuffle(gone)
        graph.apply_all(gone)
    fresh = DependencyGraph()
    fresh.apply_all(objects)
    assert graph.nodes() == fresh.nodes()
    # Not cut (which nodes make a cut follows the order edges were added, which churn moves).
    for target in fresh.nodes():
        ours = blast_radius(graph, target, dependents=5)
        theirs = blast_radius(fresh, target, dependents=5)
        assert ours.to_dict() == theirs.to_dict(), target
        assert ours.dependents == theirs.dependents, target
