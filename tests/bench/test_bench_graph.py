"""Smoke test of the graph benchmark on a small cluster: it runs and its figures are coherent.

No time is asserted; ``python -m tests.bench graph`` prints the real figures.
"""

from __future__ import annotations

import pytest

from tests.bench import bench_graph


def test_graph_bench_runs_on_a_small_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_graph, "NAMESPACES", 4)
    monkeypatch.setattr(bench_graph, "PER_NAMESPACE", 10)
    objects = bench_graph.cluster()
    figures = bench_graph.measure(objects, queries=20)
    assert figures["workloads"] == 40
    # 40 selector edges, up to 3 calls each inside a namespace, one platform call from the
    # 30 workloads outside platform-0
    assert 40 + 30 < figures["edges"] <= 40 + 40 * 3 + 30
    assert figures["bytes_per_workload"] > 0
    assert len(figures["random_ms"]) == 20
    assert max(figures["hub_up"]) > 0  # the platform Services have callers upstream
