"""Blast radius: who depends on a target (upstream), what it depends on (downstream).

The walk is breadth-first from the target, so every reached node has its fewest hops; among
the paths with that many hops, the one whose weakest edge is strongest wins (ties: the
smallest node key), so the answer is deterministic. Only the nodes reached are visited: a
query costs the size of its answer, not of the graph. ``limit`` bounds that for a node the
whole cluster depends on (the answer says it was cut).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from precedent.core.graph.graph import DependencyGraph
from precedent.core.graph.model import WORKLOAD_KINDS, Edge, NodeKey, NodeType

__all__ = [
    "DEFAULT_LIMIT",
    "KIND_ALIASES",
    "BlastRadius",
    "Reached",
    "blast_radius",
    "resolve_target",
]

DEFAULT_LIMIT = 10_000
"""Most nodes one direction of a query visits before it stops and says so."""

TOP_PATHS = 5
"""How many paths a blast radius lists."""

KIND_ALIASES = {
    **dict.fromkeys(("deploy", "deployment", "deployments"), "Deployment"),
    **dict.fromkeys(("sts", "statefulset", "statefulsets"), "StatefulSet"),
    **dict.fromkeys(("ds", "daemonset", "daemonsets"), "DaemonSet"),
    **dict.fromkeys(("svc", "service", "services"), "Service"),
    **dict.fromkeys(("ing", "ingress", "ingresses"), "Ingress"),
}
"""kubectl's names for the node kinds (lower-case) → the kind."""


@dataclass(frozen=True, slots=True)
class Reached:
    """A node a blast radius reaches."""

    key: NodeKey
    """The node."""
    hops: int
    """Edges between it and the target on the shortest path."""
    confidence: float
    """The weakest edge's confidence on the best shortest path."""
    via: NodeKey
    """The next node on that path toward the target."""
    type: NodeType
    """Seed 003's node type."""
    critical: bool
    """Marked ``precedent.dev/tier: critical`` (a Service: or one of its backends)."""


@dataclass(frozen=True, slots=True)
class BlastRadius:
    """What failing ``target`` touches."""

    target: NodeKey
    """The node the query resolved to."""
    upstream_count: int
    """How many nodes depend on it, transitively."""
    downstream_count: int
    """How many nodes it depends on, transitively."""
    upstream_by_kind: tuple[tuple[str, int], ...]
    """Upstream counts by kind (``workload``, ``service``, ``ingress``), sorted."""
    namespaces: tuple[str, ...]
    """Namespaces of the target and of every node reached, sorted."""
    critical_upstream: tuple[NodeKey, ...]
    """Critical workloads and Ingresses upstream, and Services annotated critical themselves."""
    pdbs: tuple[str, ...]
    """PodDisruptionBudgets protecting the target (a Service: its backends)."""
    paths: tuple[str, ...]
    """Up to :data:`TOP_PATHS` upstream paths ending at the target: from entry points (nodes
    nobody depends on) first, then from critical nodes, then longest; none inside another."""
    truncated: bool
    """True when a direction reached :data:`DEFAULT_LIMIT` (or the given limit) nodes."""
    upstream: tuple[Reached, ...] = ()
    """Who depends on it, by hops then key (filled when asked for ``detail``)."""
    downstream: tuple[Reached, ...] = ()
    """What it depends on, by hops then key (filled when asked for ``detail``)."""

    @property
    def summary(self) -> str:
        """One line: counts, namespaces, critical upstream, PDB."""
        t = self.target.short()
        by_kind = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in self.upstream_by_kind)
        more = "+" if self.truncated else ""
        parts = [
            f"{t} in {self.target.namespace}: {self.upstream_count}{more} upstream"
            + (f" ({by_kind})" if by_kind else ""),
            f"{self.downstream_count}{more} downstream",
            f"namespaces {', '.join(self.namespaces)}",
            "critical upstream: "
            + (", ".join(k.short(self.target.namespace) for k in self.critical_upstream) or "none"),
            f"PDB: {', '.join(self.pdbs)}" if self.pdbs else "no PDB",
        ]
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready camelCase mapping (for ``-o json`` and ``status.blastRadius``)."""

        def reached(r: Reached) -> dict[str, Any]:
            return {
                "kind": r.key.kind,
                "namespace": r.key.namespace,
                "name": r.key.name,
                "hops": r.hops,
                "confidence": r.confidence,
                "type": r.type.value,
                "critical": r.critical,
            }

        return {
            "target": {
                "kind": self.target.kind,
                "namespace": self.target.namespace,
                "name": self.target.name,
            },
            "upstreamCount": self.upstream_count,
            "downstreamCount": self.downstream_count,
            "namespaces": list(self.namespaces),
            "criticalUpstream": [k.short(self.target.namespace) for k in self.critical_upstream],
            "pdbs": list(self.pdbs),
            "paths": list(self.paths),
            "summary": self.summary,
            "truncated": self.truncated,
            "upstream": [reached(r) for r in self.upstream],
            "downstream": [reached(r) for r in self.downstream],
        }


def _split_resource_id(resource_id: str) -> tuple[str | None, str, str]:
    """``shop/deploy/checkout``, ``deploy/checkout`` or ``…/namespaces/shop/services/x`` →
    (namespace, kind, name)."""
    parts = [p for p in resource_id.strip().split("/") if p]
    if len(parts) < 2:
        return None, "", parts[0] if parts else ""
    kind, name = parts[-2], parts[-1]
    if "namespaces" in parts[:-2]:
        at = parts.index("namespaces")
        return (parts[at + 1] if at + 1 < len(parts) - 2 else None), kind, name
    return (parts[-3] if len(parts) >= 3 else None), kind, name


def resolve_target(
    graph: DependencyGraph,
    kind: str | None,
    name: str,
    namespace: str | None,
    resource_id: str | None = None,
) -> NodeKey | None:
    """The node a request's target names, or None.

    ``kind`` may be a kind or kubectl alias (``deploy``, ``svc``); a ``resource_id``
    (``shop/deploy/payment-api``) fills what the other fields leave out. An unknown kind (or a
    kind of the wrong flavour: a Service asked for as a Deployment) falls back to the name: a
    workload of that name, then the Service.
    """
    if resource_id:
        rid_ns, rid_kind, rid_name = _split_resource_id(resource_id)
        namespace = namespace or rid_ns
        kind = kind or rid_kind
        name = name or rid_name
    wanted = KIND_ALIASES.get((kind or "").lower(), kind or "")
    candidates = graph.named(name, namespace)
    for key in candidates:
        if key.kind == wanted:
            return key
    for preferred in (*WORKLOAD_KINDS, "Service", "Ingress"):
        for key in candidates:
            if key.kind == preferred:
                return key
    return None


def _walk(
    adjacency: Mapping[NodeKey, Mapping[NodeKey, Edge]], start: NodeKey, limit: int
) -> tuple[dict[NodeKey, tuple[int, float, NodeKey]], bool]:
    # The hot loop of every query: plain dicts and locals, no per-edge allocation.
    conf: dict[NodeKey, float] = {start: 1.0}
    result: dict[NodeKey, tuple[int, float, NodeKey]] = {start: (0, 1.0, start)}
    get = adjacency.get
    empty: Mapping[NodeKey, Edge] = {}
    frontier = [start]
    depth = 0
    while frontier:
        depth += 1
        layer: dict[NodeKey, float] = {}
        via: dict[NodeKey, NodeKey] = {}
        for node in frontier:
            here = conf[node]
            for other, edge in get(node, empty).items():
                if other in conf:
                    continue
                c = edge.confidence
                if here < c:
                    c = here
                seen = layer.get(other)
                if seen is None or c > seen or (c == seen and node < via[other]):
                    layer[other] = c
                    via[other] = node
        conf.update(layer)
        for other, c in layer.items():
            result[other] = (depth, c, via[other])
        if len(result) > limit:
            return result, True
        frontier = list(layer)
    return result, False


def blast_radius(
    graph: DependencyGraph,
    target: NodeKey,
    *,
    limit: int = DEFAULT_LIMIT,
    detail: bool = True,
) -> BlastRadius:
    """Upstream and downstream of ``target`` (which must be in the graph).

    ``detail=False`` leaves out the per-node lists (types, confidences): counts, critical
    nodes, namespaces, PDBs and paths are what a status needs, and are cheaper.
    """
    if target not in graph:
        raise KeyError(target)
    up, cut_up = _walk(graph.incoming_map, target, limit)
    down, cut_down = _walk(graph.outgoing_map, target, limit)
    del up[target], down[target]

    critical_keys = graph.critical_keys()
    # A Service is critical through its backends; list it only when its own annotation says
    # so and no critical backend of it is listed already (and the target's own Service is
    # not "critical upstream" because the target is critical: it is not annotated).
    if len(critical_keys) < len(up):
        listed = {k for k in critical_keys if k in up}
    else:
        listed = {k for k in up if k in critical_keys}
    critical = sorted(
        (
            k
            for k in listed
            if k.kind != "Service" or not any(t in listed for t in graph.outgoing(k))
        ),
        key=lambda k: (up[k][0], k),
    )
    kinds: dict[str, int] = {}
    for key in up:
        label = "workload" if key.kind in WORKLOAD_KINDS else key.kind.lower()
        kinds[label] = kinds.get(label, 0) + 1
    namespaces = {target.namespace} | {k.namespace for k in up} | {k.namespace for k in down}
    return BlastRadius(
        target=target,
        upstream_count=len(up),
        downstream_count=len(down),
        upstream_by_kind=tuple(sorted(kinds.items())),
        namespaces=tuple(sorted(namespaces)),
        critical_upstream=tuple(critical),
        pdbs=tuple(graph.pdbs_protecting(target)),
        paths=_paths(graph, target, up, set(critical)),
        truncated=cut_up or cut_down,
        upstream=_reached(graph, up) if detail else (),
        downstream=_reached(graph, down) if detail else (),
    )


def _reached(
    graph: DependencyGraph, walk: Mapping[NodeKey, tuple[int, float, NodeKey]]
) -> tuple[Reached, ...]:
    out = []
    for key, (hops, conf, via) in walk.items():
        info = graph.info(key)
        out.append(Reached(key, hops, conf, via, info.type, info.critical))
    out.sort(key=lambda r: (r.hops, r.key))
    return tuple(out)


def _paths(
    graph: DependencyGraph,
    target: NodeKey,
    walk: Mapping[NodeKey, tuple[int, float, NodeKey]],
    critical: set[NodeKey],
) -> tuple[str, ...]:
    def rank(key: NodeKey) -> tuple[bool, bool, int, NodeKey]:
        entry = not any(s in walk for s in graph.incoming(key))
        return (not entry, key not in critical, -walk[key][0], key)

    chosen: list[str] = []
    covered: set[NodeKey] = set()
    # The best few candidates cover TOP_PATHS distinct paths almost always; sort all only
    # when they do not.
    ranked = [(rank(k), k) for k in walk]
    best = [k for _, k in heapq.nsmallest(TOP_PATHS * 8, ranked)]
    order = best if len(best) == len(ranked) else [*best, *(k for _, k in sorted(ranked))]
    for key in order:
        if key in covered:
            continue
        chain = [key]
        while chain[-1] != target:
            chain.append(walk[chain[-1]][2])
        covered.update(chain)
        chosen.append(" → ".join(k.short(target.namespace) for k in chain))
        if len(chosen) == TOP_PATHS:
            break
    return tuple(chosen)
