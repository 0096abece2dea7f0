"""Blast radius: who depends on a target (upstream), what it depends on (downstream).

The walk is breadth-first from the target, so every reached node has its fewest hops; among
the paths with that many hops, the one whose weakest edge is strongest wins (ties: the
smallest node key), so the answer is deterministic. Only the nodes reached are visited: a
query costs the size of its answer, not of the graph. ``limit`` bounds that for a node the
whole cluster depends on (the answer says it was cut).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, filterfalse, islice, repeat
from typing import Any

from precedent.core.graph.graph import DependencyGraph
from precedent.core.graph.model import WORKLOAD_KINDS, NodeKey, NodeType

__all__ = [
    "DEFAULT_LIMIT",
    "KIND_ALIASES",
    "BlastRadius",
    "Reached",
    "blast_radius",
    "resolve_target",
]

DEFAULT_LIMIT = 2_000
"""Most nodes one direction of a query reaches before it stops and says so ("2000+
upstream"; checked per edge, so a cut answer counts exactly this many): past that, the target
is a hub most of the cluster depends on, any threshold on the count is crossed, and the walk
would cost the size of the cluster."""

REMEMBER_FROM = 200
"""A blast radius reaching at least this many nodes is kept until a change touches a node it
read (:meth:`DependencyGraph.remember`): a hub is asked about again and again, and its answer is
the costly one; a smaller answer costs less to recompute than to keep."""

TOP_PATHS = 5
"""How many paths a blast radius lists."""

_DEPENDENT_KINDS = frozenset((*WORKLOAD_KINDS, "Ingress"))

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
    """True when a direction had more than :data:`DEFAULT_LIMIT` (or the given limit) nodes
    to reach: its count is then the limit."""
    upstream: tuple[Reached, ...] = ()
    """Who depends on it, by hops then key (filled when asked for ``detail``)."""
    downstream: tuple[Reached, ...] = ()
    """What it depends on, by hops then key (filled when asked for ``detail``)."""
    dependents: tuple[NodeKey, ...] = ()
    """The nearest workloads and Ingresses upstream, by hops then key, as many as asked for
    (``blast_radius(..., dependents=n)``): the names a status lists, without ``detail``."""

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
    adjacency: Mapping[int, Mapping[int, float]],
    keys: Sequence[NodeKey],
    start: int,
    limit: int,
) -> tuple[dict[int, tuple[int, float, int]], list[list[int]], bool]:
    # The hot loop of every query: integer ids, plain dicts and locals, no per-edge
    # allocation. Ties between equally strong paths go to the smaller node key (a tuple
    # comparison only on a tie), so the answer does not depend on the ids handed out.
    conf: dict[int, float] = {start: 1.0}
    result: dict[int, tuple[int, float, int]] = {start: (0, 1.0, start)}
    get = adjacency.get
    frontier = [start]
    layers: list[list[int]] = []  # the nodes reached at 1, 2, … hops
    depth = 0
    room = limit  # nodes the walk may still add
    while frontier:
        depth += 1
        layer: dict[int, float] = {}
        via: dict[int, int] = {}
        for node in frontier:
            edges = get(node)
            if not edges:
                continue
            here = conf[node]
            if not layer:
                # The layer's first node (a hub's whole first layer): its new neighbours in
                # edge order by C-level iteration, stopping one past the room left (a hub's
                # Service can have every workload as a caller); a cut keeps the first ones.
                fresh = list(islice(filterfalse(conf.__contains__, edges), room + 1))
                cut = len(fresh) > room
                if cut:
                    del fresh[room:]
                values: Iterable[float] = map(edges.__getitem__, fresh)
                if here < 1.0:
                    values = map(min, values, repeat(here))
                layer = dict(zip(fresh, values, strict=True))
                via = dict.fromkeys(fresh, node)
                room -= len(fresh)
                if cut:
                    for other, c in layer.items():
                        result[other] = (depth, c, node)
                    if fresh:
                        layers.append(fresh)
                    return result, layers, True
                continue
            for other, c in edges.items():
                if other in conf:
                    continue
                if here < c:
                    c = here
                seen = layer.get(other)
                if seen is None:
                    if not room:
                        # The cut-off is checked per edge: a hub's first layer alone can be
                        # the whole cluster, and reading all of it would cost as much.
                        for reached, c in layer.items():
                            result[reached] = (depth, c, via[reached])
                        if layer:
                            layers.append(list(layer))
                        return result, layers, True
                    room -= 1
                    layer[other] = c
                    via[other] = node
                elif c > seen or (c == seen and keys[node] < keys[via[other]]):
                    layer[other] = c
                    via[other] = node
        conf.update(layer)
        for other, c in layer.items():
            result[other] = (depth, c, via[other])
        frontier = list(layer)
        if frontier:
            layers.append(frontier)
    return result, layers, False


def blast_radius(
    graph: DependencyGraph,
    target: NodeKey,
    *,
    limit: int = DEFAULT_LIMIT,
    detail: bool = True,
    dependents: int = 0,
) -> BlastRadius:
    """Upstream and downstream of ``target`` (which must be in the graph).

    ``detail=False`` leaves out the per-node lists (types, confidences): counts, critical
    nodes, namespaces, PDBs and paths are what a status needs, and are cheaper.
    ``dependents`` fills :attr:`BlastRadius.dependents` with up to that many of the nearest
    workloads and Ingresses upstream (the names a status lists) without the per-node lists.
    """
    if target not in graph:
        raise KeyError(target)
    question = (blast_radius, target, limit, detail, dependents)
    remembered = graph.remembered(question)
    if isinstance(remembered, BlastRadius):
        return remembered
    start = graph.node_id(target)
    keys = graph.keys_by_id
    up, layers, cut_up = _walk(graph.incoming_ids, keys, start, limit)
    down, _, cut_down = _walk(graph.outgoing_ids, keys, start, limit)
    del up[start], down[start]
    answer = _answer(
        graph,
        target,
        start,
        (up, layers),
        down,
        cut_up or cut_down,
        detail=detail,
        dependents=dependents,
    )
    if len(up) + len(down) >= REMEMBER_FROM:
        # Kept until a change touches a node this answer read (see DependencyGraph.remember).
        graph.remember(question, answer, chain(up, down, (start,)))
    return answer


def _answer(
    graph: DependencyGraph,
    target: NodeKey,
    start: int,
    upstream: tuple[dict[int, tuple[int, float, int]], list[list[int]]],
    down: dict[int, tuple[int, float, int]],
    truncated: bool,
    *,
    detail: bool,
    dependents: int,
) -> BlastRadius:
    up, layers = upstream
    keys = graph.keys_by_id
    critical_ids = graph.critical_ids()
    # A Service is critical through its backends; list it only when its own annotation says
    # so and no critical backend of it is listed already (and the target's own Service is
    # not "critical upstream" because the target is critical: it is not annotated).
    if len(critical_ids) < len(up):
        listed = {i for i in critical_ids if i in up}
    else:
        listed = {i for i in up if i in critical_ids}
    outgoing = graph.outgoing_ids
    critical_ids_up = [
        i for i in listed if keys[i].kind != "Service" or listed.isdisjoint(outgoing.get(i, ()))
    ]
    critical_ids_up.sort(key=lambda i: (up[i][0], keys[i]))
    # Counted and collected by C-level iteration: these loops run once per reached node.
    kinds: dict[str, int] = {}
    for kind, n in Counter(map(graph.kinds_by_id.__getitem__, up)).items():
        label = "workload" if kind in WORKLOAD_KINDS else kind.lower()
        kinds[label] = kinds.get(label, 0) + n
    ns_of = graph.namespaces_by_id.__getitem__
    namespaces = {target.namespace, *map(ns_of, up), *map(ns_of, down)}
    return BlastRadius(
        target=target,
        upstream_count=len(up),
        downstream_count=len(down),
        upstream_by_kind=tuple(sorted(kinds.items())),
        namespaces=tuple(sorted(namespaces)),
        critical_upstream=tuple(keys[i] for i in critical_ids_up),
        pdbs=tuple(graph.pdbs_protecting(target)),
        paths=_paths(graph, target, start, up, layers, set(critical_ids_up)),
        truncated=truncated,
        upstream=_reached(graph, up) if detail else (),
        downstream=_reached(graph, down) if detail else (),
        dependents=_dependents(graph, layers, dependents) if dependents > 0 else (),
    )


def _dependents(graph: DependencyGraph, layers: list[list[int]], most: int) -> tuple[NodeKey, ...]:
    # Whole layers (fewest hops first) until ``most`` workloads or Ingresses are found, then
    # only those are ordered by hops and key.
    kinds = graph.kinds_by_id
    keys = graph.keys_by_id
    found: list[NodeKey] = []
    for layer in layers:
        named = [n for n in layer if kinds[n] in _DEPENDENT_KINDS]
        need = most - len(found)
        if len(named) > need:
            # A hub's layer can hold thousands: pick the first few by key, do not sort all.
            found += map(keys.__getitem__, heapq.nsmallest(need, named, key=keys.__getitem__))
            break
        found += sorted(map(keys.__getitem__, named))
    return tuple(found)


def _reached(
    graph: DependencyGraph, walk: Mapping[int, tuple[int, float, int]]
) -> tuple[Reached, ...]:
    keys = graph.keys_by_id
    out = []
    for node, (hops, conf, via) in walk.items():
        key = keys[node]
        info = graph.info(key)
        out.append(Reached(key, hops, conf, keys[via], info.type, info.critical))
    out.sort(key=lambda r: (r.hops, r.key))
    return tuple(out)


def _paths(
    graph: DependencyGraph,
    target: NodeKey,
    start: int,
    walk: Mapping[int, tuple[int, float, int]],
    layers: list[list[int]],
    critical: set[int],
) -> tuple[str, ...]:
    # Rank: entry points (no dependent inside the walk) first, then critical nodes, then the
    # longest paths, then the key. Only the few best candidates are ever followed, so the
    # candidates are produced group by group in that order, with set operations (C loops,
    # not a Python loop per reached node), and only the groups reached are ordered by key.
    keys = graph.keys_by_id
    # A set: set.isdisjoint(dict) is a C loop over the dict; a dict view's is generic.
    reached = set(walk)
    incoming = graph.incoming_ids.get
    chosen: list[str] = []
    covered: set[int] = set()
    want = TOP_PATHS * 8

    def follow(candidates: Sequence[int]) -> bool:
        return _follow(candidates, walk, start, keys, target.namespace, covered, chosen)

    def entries(nodes: Iterable[int]) -> set[int]:
        # The nodes none of whose dependents were reached (a C loop over their dependents).
        nodes = list(nodes)
        return set(compress(nodes, map(reached.isdisjoint, map(incoming, nodes, repeat(())))))

    marked = sorted(critical, key=lambda n: (-walk[n][0], keys[n]))
    entry_marked = entries(marked)
    # A layer's entry points are worked out when the ranking first reaches that layer: five
    # paths are usually found in the deepest one.
    entry_layers: dict[int, set[int]] = {}
    for entry in (True, False):
        if follow([n for n in marked if (n in entry_marked) is entry]):
            break
        for depth in range(len(layers) - 1, -1, -1):
            layer = layers[depth]
            entry_layer = entry_layers.get(depth)
            if entry_layer is None:
                entry_layer = entry_layers[depth] = entries(layer)
            group = set(entry_layer) if entry else set(layer).difference(entry_layer)
            group.difference_update(critical)
            if not group:
                continue
            # The best few of a group cover TOP_PATHS distinct paths almost always; order the
            # whole group only when they do not.
            best = heapq.nsmallest(want, group, key=keys.__getitem__)
            if follow(best):
                return tuple(chosen)
            if len(best) < len(group) and follow(
                sorted(group.difference(best), key=keys.__getitem__)
            ):
                return tuple(chosen)
    return tuple(chosen)


def _follow(
    candidates: Sequence[int],
    walk: Mapping[int, tuple[int, float, int]],
    start: int,
    keys: Sequence[NodeKey],
    namespace: str,
    covered: set[int],
    chosen: list[str],
) -> bool:
    """Add the path of each candidate not on a path already; True once TOP_PATHS are chosen."""
    for node in candidates:
        if node in covered:
            continue
        chain = [node]
        while chain[-1] != start:
            chain.append(walk[chain[-1]][2])
        covered.update(chain)
        chosen.append(" → ".join(keys[n].short(namespace) for n in chain))
        if len(chosen) == TOP_PATHS:
            return True
    return False
