"""The dependency graph at 10,000 workloads and 50,000 edges (issue 15).

    python -m tests.bench graph

A synthetic cluster: 100 namespaces of 100 Deployments, each behind its own Service (10,000
selector edges). Inside a namespace the workloads form layers: each calls up to three
Services a little further down, in one of the reference forms the rules read (URL, host:port,
``svc.ns``, the cluster FQDN, a ConfigMap-free env var); every workload also calls one of 20
shared "platform" Services in namespace ``platform-0`` (auth, billing, …), picked with a skew,
so a few targets have most of the cluster upstream. About 40,000 reference edges in all.

Prints: the full build (what a restart costs: every object applied once), the memory the
graph holds per workload (tracemalloc, the manifests themselves excluded), blast-radius query
p50/p99 over random targets (the operator's own call, ``BlastRadiusService.report``, and the
bare query with and without per-node detail) and over the platform hubs with nothing
remembered (the cost right after any change), the hubs again once remembered, and one
workload re-applied unchanged (a status update) and changed (a new image).
"""

from __future__ import annotations

import copy
import gc
import random
import statistics
import time
import tracemalloc
from typing import Any

from precedent.core.graph import DependencyGraph, NodeKey, blast_radius
from precedent.core.graph import blast as blast_module
from precedent.models import Target
from precedent.services.blast_radius import BlastRadiusService

NAMESPACES = 100
PER_NAMESPACE = 100
CALLS = 3
PLATFORM = 20
QUERIES = 2_000


def _ref(rng: random.Random, name: str, ns: str, own_ns: str) -> str:
    forms = [
        f"http://{name}.{ns}.svc.cluster.local:8080/v1",
        f"{name}.{ns}:8080",
        f"grpc://{name}.{ns}.svc:9090",
    ]
    if ns == own_ns:
        forms += [f"http://{name}:8080", f"{name}:5432"]
    return rng.choice(forms)


def cluster(seed: int = 1) -> list[dict[str, Any]]:
    """The synthetic objects: Services first, then Deployments (the graph links any order)."""
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = []
    deployments: list[dict[str, Any]] = []
    for n in range(NAMESPACES):
        ns = f"team-{n}" if n else "platform-0"
        for k in range(PER_NAMESPACE):
            name = f"svc-{k}"
            objects.append(
                {
                    "kind": "Service",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"selector": {"app": name, "team": ns}},
                }
            )
            env = [{"name": "LOG_LEVEL", "value": "info"}]
            later = list(range(k + 1, min(PER_NAMESPACE, k + 15)))
            for i, j in enumerate(rng.sample(later, min(CALLS, len(later)))):
                env.append({"name": f"DEP_{i}_URL", "value": _ref(rng, f"svc-{j}", ns, ns)})
            if n:
                hub = min(int(rng.paretovariate(1.2)) - 1, PLATFORM - 1)
                env.append(
                    {"name": "PLATFORM_URL", "value": _ref(rng, f"svc-{hub}", "platform-0", ns)}
                )
            deployments.append(
                {
                    "kind": "Deployment",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {
                        "replicas": 2,
                        "template": {
                            "metadata": {"labels": {"app": name, "team": ns}},
                            "spec": {
                                "containers": [
                                    {"name": "app", "image": f"registry/{ns}/{name}:1", "env": env}
                                ]
                            },
                        },
                    },
                }
            )
    return objects + deployments


def build(objects: list[dict[str, Any]]) -> DependencyGraph:
    """Apply every object once: what the operator does after a restart."""
    graph = DependencyGraph()
    graph.apply_all(objects)
    return graph


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(objects: list[dict[str, Any]], queries: int) -> dict[str, Any]:
    """Every figure the report prints (the smoke test runs it on a small cluster)."""
    gc.collect()
    started = time.perf_counter()
    graph = build(objects)
    build_s = time.perf_counter() - started
    del graph
    gc.collect()
    tracemalloc.start()
    graph = build(objects)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    rng = random.Random(5)
    workloads = [k for k in graph.nodes() if k.kind == "Deployment"]
    hubs = [NodeKey("Deployment", "platform-0", f"svc-{i}") for i in range(min(PLATFORM, 5))]
    hubs = [h for h in hubs if h in graph]

    def timed(targets: list[NodeKey], *, detail: bool) -> tuple[list[float], list[int]]:
        times, sizes = [], []
        for target in targets:
            t = time.perf_counter()
            radius = blast_radius(graph, target, detail=detail)
            times.append((time.perf_counter() - t) * 1000)
            sizes.append(radius.upstream_count)
        return times, sizes

    targets = [rng.choice(workloads) for _ in range(queries)]
    service = BlastRadiusService(graph)
    # The two builds leave garbage and a pending full collection: collect it now so the first
    # timed row does not pay for it (a running operator is past its start-up collections).
    gc.collect()

    def reported(targets: list[NodeKey]) -> tuple[list[float], list[int]]:
        # The operator's own call for a request (resolving the target, the lock, the status).
        times, sizes = [], []
        for key in targets:
            target = Target(kind=key.kind, name=key.name, namespace=key.namespace)
            t = time.perf_counter()
            status, _ = service.report(target)
            times.append((time.perf_counter() - t) * 1000)
            sizes.append(status.upstream_count)
        return times, sizes

    # Cold figures first: nothing remembered (what a query costs right after any change).
    remember_from = blast_module.REMEMBER_FROM
    blast_module.REMEMBER_FROM = 1 << 62
    try:
        report_ms, report_up = reported(targets)
        random_ms, random_up = timed(targets, detail=False)
        detail_ms, detail_up = timed(targets[: max(1, queries // 4)], detail=True)
        hub_ms, hub_up = timed(hubs * 5, detail=False)
    finally:
        blast_module.REMEMBER_FROM = remember_from
    for hub in hubs:
        blast_radius(graph, hub, detail=False)
    remembered_ms, remembered_up = timed(hubs * 5, detail=False)
    update_ms = []
    changed_ms = []
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    for obj in rng.sample(deployments, min(200, len(deployments))):
        t = time.perf_counter()
        graph.apply(obj)
        update_ms.append((time.perf_counter() - t) * 1000)
        changed = copy.deepcopy(obj)
        container = changed["spec"]["template"]["spec"]["containers"][0]
        container["image"] = container["image"].replace(":1", ":2")
        t = time.perf_counter()
        graph.apply(changed)
        changed_ms.append((time.perf_counter() - t) * 1000)
    return {
        "workloads": graph.workload_count,
        "edges": graph.edge_count,
        "build_s": build_s,
        "bytes_per_workload": held / max(1, graph.workload_count),
        "held_mb": held / 1e6,
        "report_ms": report_ms,
        "report_up": report_up,
        "random_ms": random_ms,
        "random_up": random_up,
        "detail_ms": detail_ms,
        "detail_up": detail_up,
        "hub_ms": hub_ms,
        "hub_up": hub_up,
        "remembered_ms": remembered_ms,
        "remembered_up": remembered_up,
        "update_ms": update_ms,
        "changed_ms": changed_ms,
    }


def main() -> None:
    """Print the table."""
    figures = measure(cluster(), QUERIES)
    print(
        f"graph: {figures['workloads']:,} workloads, {figures['edges']:,} edges; full build "
        f"{figures['build_s']:.2f} s; memory {figures['held_mb']:.1f} MB = "
        f"{figures['bytes_per_workload']:,.0f} bytes per workload"
    )
    print(f"{'query':<30}{'n':>6}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'upstream p50':>14}")
    for label, ms, up in (
        ("operator's report, random", figures["report_ms"], figures["report_up"]),
        ("blast radius, random", figures["random_ms"], figures["random_up"]),
        ("  with per-node detail", figures["detail_ms"], figures["detail_up"]),
        ("blast radius, platform hubs", figures["hub_ms"], figures["hub_up"]),
        ("  hubs, remembered", figures["remembered_ms"], figures["remembered_up"]),
        ("re-apply, unchanged", figures["update_ms"], [0]),
        ("apply a changed Deployment", figures["changed_ms"], [0]),
    ):
        print(
            f"{label:<30}{len(ms):>6}{statistics.median(ms):>10.3f}{_pct(ms, 0.99):>10.3f}"
            f"{max(ms):>10.3f}{statistics.median(up):>14.0f}"
        )


if __name__ == "__main__":
    main()
