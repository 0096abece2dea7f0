"""The incremental dependency graph: ``apply(obj)`` / ``delete(kind, ns, name)``, no rebuilds.

Each change recomputes only the outgoing edges of the nodes it touches, found through indexes:

* workloads by (namespace, label key, label value): a Service's selector finds its backends
  without scanning the namespace;
* workloads by the Service key they name (env, args, ConfigMaps, annotations), whether or not
  that Service exists yet: a Service that appears later links its callers at once;
* workloads by the ConfigMaps they read, Ingresses by their backend Services, topology hints by
  node name.

Memory is the parsed objects (the fields the graph reads, not the manifests) plus one
:class:`~precedent.core.graph.model.Edge` per dependent pair; ``tests/bench/bench_graph.py``
measures it per workload.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from precedent.core.graph.model import (
    WORKLOAD_KINDS,
    Confidence,
    Edge,
    EdgeType,
    NodeKey,
    NodeType,
)
from precedent.core.graph.objects import (
    Hpa,
    Ingress,
    NetworkPolicy,
    Pdb,
    Service,
    ValueRef,
    Workload,
    infer_node_type,
    parse_configmap,
    parse_hpa,
    parse_ingress,
    parse_network_policy,
    parse_pdb,
    parse_service,
    parse_workload,
)
from precedent.core.graph.references import HostRef, references_in_value, verb_of_key

__all__ = ["KINDS", "DependencyGraph", "NodeInfo", "TopologyHint"]

KINDS = (
    *WORKLOAD_KINDS,
    "Service",
    "Ingress",
    "ConfigMap",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "HorizontalPodAutoscaler",
)
"""The kinds :meth:`DependencyGraph.apply` reads; any other kind is ignored."""

# A Service is as specific as its most specific backend: a Service in front of postgres is a
# database even if a sidecar image says nothing.
_TYPE_ORDER = (
    NodeType.DATABASE,
    NodeType.QUEUE,
    NodeType.CACHE,
    NodeType.STORAGE,
    NodeType.EXTERNAL,
    NodeType.GATEWAY,
    NodeType.COMPUTE,
)

_DATA_TYPES = frozenset({NodeType.DATABASE, NodeType.CACHE, NodeType.QUEUE, NodeType.STORAGE})


@dataclass(frozen=True, slots=True)
class TopologyHint:
    """A relation some past investigation recorded (fleet memory), by resource name."""

    source: str
    """The dependent's name (a Service or workload name)."""
    target: str
    """What it depends on."""
    relation: str
    """As recorded: CALLS, READS, …."""
    confidence: float
    """The investigation's confidence, 0–1 (capped by ``Confidence.TOPOLOGY_HINT_CAP``)."""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What the graph knows of one node, for reports."""

    key: NodeKey
    """Kind, namespace, name."""
    type: NodeType
    """Seed 003's node type."""
    critical: bool
    """``precedent.dev/tier: critical`` (a Service also when a backend is critical)."""
    attributes: tuple[tuple[str, str], ...]
    """Sorted extras: replicas, HPA bounds, PDBs, ExternalName."""


class DependencyGraph:
    """Nodes and edges of one cluster, kept current one object at a time."""

    def __init__(self) -> None:
        """An empty graph."""
        self._workloads: dict[NodeKey, Workload] = {}
        self._services: dict[NodeKey, Service] = {}
        self._ingresses: dict[NodeKey, Ingress] = {}
        self._configmaps: dict[tuple[str, str], dict[str, tuple[str, list[HostRef]]]] = {}
        self._policies: dict[tuple[str, str], NetworkPolicy] = {}
        self._pdbs: dict[tuple[str, str], Pdb] = {}
        self._hpas: dict[tuple[str, str], Hpa] = {}
        self._hints: dict[tuple[str, str], TopologyHint] = {}
        # indexes
        self._by_label: defaultdict[tuple[str, str, str], set[NodeKey]] = defaultdict(set)
        self._workloads_in: defaultdict[str, set[NodeKey]] = defaultdict(set)
        self._services_in: defaultdict[str, set[NodeKey]] = defaultdict(set)
        # Services by (namespace, first selector pair): a Service selecting a workload has that
        # pair among the workload's labels, so a workload's labels find its Services without
        # scanning the namespace (the scan made a restart quadratic in namespace size).
        self._selecting: defaultdict[tuple[str, str, str], set[NodeKey]] = defaultdict(set)
        self._policies_in: defaultdict[str, set[str]] = defaultdict(set)
        self._pdbs_in: defaultdict[str, set[str]] = defaultdict(set)
        self._hpa_for: defaultdict[NodeKey, set[tuple[str, str]]] = defaultdict(set)
        self._callers: defaultdict[NodeKey, set[NodeKey]] = defaultdict(set)
        self._named: dict[NodeKey, set[NodeKey]] = {}
        self._cm_readers: defaultdict[tuple[str, str], set[NodeKey]] = defaultdict(set)
        self._ingresses_of: defaultdict[NodeKey, set[NodeKey]] = defaultdict(set)
        self._by_name: defaultdict[str, set[NodeKey]] = defaultdict(set)
        self._hints_to: defaultdict[str, set[tuple[str, str]]] = defaultdict(set)
        self._service_type: dict[NodeKey, NodeType] = {}
        self._critical_cache: frozenset[NodeKey] | None = None
        # Answers computed from the graph (blast radii of hubs), dropped on every change.
        self._generation = 0
        self._answers: dict[Hashable, tuple[object, frozenset[int] | None]] = {}
        # Nodes changed since the answers were last checked, by id (and whether a change
        # could alter every answer): answers are dropped lazily, at the next query.
        self._touched: set[int] = set()
        self._forget_all = False
        # edges, both directions
        self._out: defaultdict[NodeKey, dict[NodeKey, Edge]] = defaultdict(dict)
        self._in: defaultdict[NodeKey, dict[NodeKey, Edge]] = defaultdict(dict)
        # The same edges on integer node ids, confidence only, kept in step with ``_out`` and
        # ``_in`` (same insertion order): a walk hashes an int per visit instead of a
        # three-string tuple. Ids are handed out to nodes with edges and reused once free.
        self._ids: dict[NodeKey, int] = {}
        self._keys: list[NodeKey] = []
        self._kind_of: list[str] = []
        self._ns_of: list[str] = []
        self._free: list[int] = []
        self._out_ids: dict[int, dict[int, float]] = {}
        self._in_ids: dict[int, dict[int, float]] = {}
        self._critical_ids_cache: frozenset[int] | None = None

    # ------------------------------------------------------------------ reading the graph

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is a workload, Service or Ingress in the graph."""
        return key in self._workloads or key in self._services or key in self._ingresses

    def nodes(self) -> list[NodeKey]:
        """Every node, sorted."""
        return sorted([*self._workloads, *self._services, *self._ingresses])

    def edges(self) -> list[Edge]:
        """Every edge, sorted by source then target."""
        return sorted(
            (e for out in self._out.values() for e in out.values()),
            key=lambda e: (e.source, e.target),
        )

    @property
    def edge_count(self) -> int:
        """How many edges the graph holds."""
        return sum(len(out) for out in self._out.values())

    @property
    def workload_count(self) -> int:
        """How many workloads the graph holds."""
        return len(self._workloads)

    @property
    def outgoing_ids(self) -> Mapping[int, Mapping[int, float]]:
        """Every node's outgoing edges on node ids (:meth:`node_id`): target id → confidence."""
        return self._out_ids

    @property
    def incoming_ids(self) -> Mapping[int, Mapping[int, float]]:
        """Every node's incoming edges on node ids: source id → confidence."""
        return self._in_ids

    @property
    def keys_by_id(self) -> Sequence[NodeKey]:
        """Node id → key (an id is only meaningful while the graph is unchanged)."""
        return self._keys

    @property
    def kinds_by_id(self) -> Sequence[str]:
        """Node id → kind."""
        return self._kind_of

    @property
    def namespaces_by_id(self) -> Sequence[str]:
        """Node id → namespace."""
        return self._ns_of

    def node_id(self, key: NodeKey) -> int:
        """The integer id of ``key`` (given out on first use; the walks run on ids)."""
        found = self._ids.get(key)
        if found is not None:
            return found
        if self._free:
            found = self._free.pop()
            self._keys[found] = key
            self._kind_of[found] = key.kind
            self._ns_of[found] = key.namespace
        else:
            found = len(self._keys)
            self._keys.append(key)
            self._kind_of.append(key.kind)
            self._ns_of.append(key.namespace)
        self._ids[key] = found
        return found

    def _release(self, key: NodeKey) -> None:
        """Free the id of a node that left the graph (its edges are gone)."""
        found = self._ids.get(key)
        if found is None or found in self._out_ids or found in self._in_ids:
            return
        del self._ids[key]
        self._free.append(found)

    def outgoing(self, key: NodeKey) -> Mapping[NodeKey, Edge]:
        """What ``key`` depends on, directly (target → edge)."""
        return self._out.get(key, {})

    def incoming(self, key: NodeKey) -> Mapping[NodeKey, Edge]:
        """Who depends on ``key`` directly (source → edge)."""
        return self._in.get(key, {})

    def named(self, name: str, namespace: str | None = None) -> list[NodeKey]:
        """Nodes called ``name`` (in ``namespace`` if given), sorted."""
        keys = self._by_name.get(name, set())
        return sorted(k for k in keys if namespace is None or k.namespace == namespace)

    def namespaces(self) -> list[str]:
        """Namespaces with at least one node, sorted."""
        return sorted({k.namespace for k in self.nodes()})

    def info(self, key: NodeKey) -> NodeInfo:
        """Type, criticality and attributes of a node (KeyError if absent)."""
        attrs: dict[str, str] = {}
        if key in self._workloads:
            w = self._workloads[key]
            node_type, critical = w.node_type, w.critical
            if w.replicas is not None:
                attrs["replicas"] = str(w.replicas)
            for ref in sorted(self._hpa_for.get(key, ())):
                hpa = self._hpas[ref]
                attrs["hpa"] = f"{hpa.name} min {hpa.min_replicas} max {hpa.max_replicas}"
            pdbs = self.pdbs_protecting(key)
            if pdbs:
                attrs["pdb"] = ", ".join(pdbs)
        elif key in self._services:
            svc = self._services[key]
            node_type = self._service_type.get(key, NodeType.COMPUTE)
            critical = svc.critical or any(
                self._workloads[t].critical for t in self._out.get(key, {}) if t in self._workloads
            )
            if svc.external_name:
                attrs["externalName"] = svc.external_name
        elif key in self._ingresses:
            node_type, critical = NodeType.GATEWAY, self._ingresses[key].critical
        else:
            raise KeyError(key)
        return NodeInfo(key, node_type, critical, tuple(sorted(attrs.items())))

    def critical_keys(self) -> frozenset[NodeKey]:
        """Workloads, Services and Ingresses annotated ``precedent.dev/tier: critical``."""
        if self._critical_cache is None:
            self._critical_cache = frozenset(
                k
                for store in (self._workloads, self._services, self._ingresses)
                for k, node in store.items()
                if node.critical
            )
        return self._critical_cache

    def critical_ids(self) -> frozenset[int]:
        """:meth:`critical_keys` as node ids."""
        if self._critical_ids_cache is None:
            self._critical_ids_cache = frozenset(self.node_id(k) for k in self.critical_keys())
        return self._critical_ids_cache

    def pdbs_protecting(self, key: NodeKey) -> list[str]:
        """Names of the PodDisruptionBudgets whose selector matches a workload's pods, with
        their budget (``payment-api (minAvailable: 2)``); for a Service, its backends'."""
        if key.kind == "Service":
            found: set[str] = set()
            for target in self._out.get(key, {}):
                found.update(self.pdbs_protecting(target))
            return sorted(found)
        workload = self._workloads.get(key)
        if workload is None:
            return []
        out = []
        for name in sorted(self._pdbs_in.get(key.namespace, ())):
            pdb = self._pdbs[(key.namespace, name)]
            if not pdb.selector.empty and pdb.selector.matches(workload.labels):
                out.append(f"{name} ({pdb.budget})" if pdb.budget else name)
        return out

    # ------------------------------------------------------------------ remembered answers

    ANSWERS_KEPT = 64
    """Most answers :meth:`remember` keeps (the oldest goes first): a few hubs' blast radii."""

    @property
    def generation(self) -> int:
        """A counter that moves on every change to the graph (never on an unchanged apply)."""
        return self._generation

    def remembered(self, key: Hashable) -> object | None:
        """An answer stored with :meth:`remember` that no change since could have altered."""
        if self._touched or self._forget_all:
            self._settle()
        kept = self._answers.get(key)
        return None if kept is None else kept[0]

    def remember(self, key: Hashable, answer: object, reach: Iterable[int] | None = None) -> None:
        """Keep ``answer`` (computed from the graph as it is) until a change can alter it.

        ``reach``: the ids (:meth:`node_id`) of every node the answer read. A change drops
        the answer only when it touches one of them (a node whose object, edges or incoming
        edges changed); without ``reach``, any change drops it. A walk reads only the edges
        of the nodes it reached, so a change elsewhere in a busy cluster keeps a hub's
        answer, and nothing is walked per change.
        """
        if self._touched or self._forget_all:
            self._settle()
        if len(self._answers) >= self.ANSWERS_KEPT:
            del self._answers[next(iter(self._answers))]
        self._answers[key] = (answer, None if reach is None else frozenset(reach))

    def _changed(self, *, everything: bool = False) -> None:
        """A change begins; ``everything``: it can alter any answer (a PDB, HPA, hints)."""
        self._generation += 1
        self._critical_cache = None
        self._critical_ids_cache = None
        if everything:
            self._forget_all = True

    def _touch(self, key: NodeKey) -> None:
        """Answers that read ``key`` are no longer current (dropped at the next query)."""
        found = self._ids.get(key)
        if found is not None and self._answers:
            self._touched.add(found)

    def _settle(self) -> None:
        """Drop the remembered answers the changes since the last query touched."""
        if self._forget_all:
            self._answers.clear()
        else:
            touched = self._touched
            stale = [
                k
                for k, (_, reach) in self._answers.items()
                if reach is None or not reach.isdisjoint(touched)
            ]
            for k in stale:
                del self._answers[k]
        self._touched = set()
        self._forget_all = False

    # ------------------------------------------------------------------ changes

    def apply(self, obj: Mapping[str, Any]) -> None:
        """Add or replace one object (a manifest or an API object as a mapping).

        Kinds outside :data:`KINDS` are ignored. A malformed object raises GraphInputError
        naming the field, and leaves the graph as it was.
        """
        kind = obj.get("kind")
        if kind not in KINDS:
            return
        # An object applied again unchanged (a status update, a resync after a restart of the
        # watch) changes nothing: return before relinking, and keep the remembered answers.
        if kind in WORKLOAD_KINDS:
            workload = parse_workload(obj)
            if self._workloads.get(workload.key) == workload:
                return
            self._changed()
            self._apply_workload(workload)
        elif kind == "Service":
            service = parse_service(obj)
            if self._services.get(service.key) == service:
                return
            self._changed()
            self._apply_service(service)
        elif kind == "Ingress":
            ingress = parse_ingress(obj)
            if self._ingresses.get(ingress.key) == ingress:
                return
            self._changed()
            self._apply_ingress(ingress)
        elif kind == "ConfigMap":
            namespace, name, data = parse_configmap(obj)
            stored = self._configmaps.get((namespace, name))
            if stored is not None and {k: v for k, (v, _) in stored.items()} == data:
                return
            self._changed()
            self._configmaps[(namespace, name)] = {
                k: (v, references_in_value(v, k)) for k, v in data.items()
            }
            self._relink_workloads(self._cm_readers.get((namespace, name), set()))
        elif kind == "NetworkPolicy":
            policy = parse_network_policy(obj)
            if self._policies.get((policy.namespace, policy.name)) == policy:
                return
            self._changed()
            self._policies[(policy.namespace, policy.name)] = policy
            self._policies_in[policy.namespace].add(policy.name)
            self._relink_for_policy(policy.namespace)
        elif kind == "PodDisruptionBudget":
            pdb = parse_pdb(obj)
            if self._pdbs.get((pdb.namespace, pdb.name)) == pdb:
                return
            self._changed(everything=True)
            self._pdbs[(pdb.namespace, pdb.name)] = pdb
            self._pdbs_in[pdb.namespace].add(pdb.name)
        elif kind == "HorizontalPodAutoscaler":
            hpa = parse_hpa(obj)
            if self._hpas.get((hpa.namespace, hpa.name)) == hpa:
                return
            self._changed(everything=True)
            self._drop_hpa((hpa.namespace, hpa.name))
            self._hpas[(hpa.namespace, hpa.name)] = hpa
            self._hpa_for[hpa.target].add((hpa.namespace, hpa.name))

    def apply_all(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Apply each object in turn."""
        for obj in objects:
            self.apply(obj)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        """Forget one object; unknown objects are ignored."""
        key = NodeKey(kind, namespace, name)
        # A PDB or HPA is not a node: which answers it reaches is not tracked.
        self._changed(everything=kind in ("PodDisruptionBudget", "HorizontalPodAutoscaler"))
        if kind in WORKLOAD_KINDS and key in self._workloads:
            self._delete_workload(key)
        elif kind == "Service" and key in self._services:
            self._delete_service(key)
        elif kind == "Ingress" and key in self._ingresses:
            del self._ingresses[key]
            self._by_name[name].discard(key)
            self._set_edges(key, {})
            self._release(key)
        elif kind == "ConfigMap" and (namespace, name) in self._configmaps:
            del self._configmaps[(namespace, name)]
            self._relink_workloads(self._cm_readers.get((namespace, name), set()))
        elif kind == "NetworkPolicy" and (namespace, name) in self._policies:
            del self._policies[(namespace, name)]
            self._policies_in[namespace].discard(name)
            self._relink_for_policy(namespace)
        elif kind == "PodDisruptionBudget":
            self._pdbs.pop((namespace, name), None)
            self._pdbs_in[namespace].discard(name)
        elif kind == "HorizontalPodAutoscaler":
            self._drop_hpa((namespace, name))

    def set_hints(self, hints: Iterable[TopologyHint]) -> None:
        """Replace the fleet-memory topology hints (edges between nodes found by name)."""
        self._changed(everything=True)
        old_sources = {h.source for h in self._hints.values()}
        self._hints = {(h.source, h.target): h for h in hints}
        self._hints_to = defaultdict(set)
        for ref in self._hints:
            self._hints_to[ref[1]].add(ref)
        for name in sorted(old_sources | {h.source for h in self._hints.values()}):
            self._relink_source(name)

    # ------------------------------------------------------------------ workloads

    def _apply_workload(self, workload: Workload) -> None:
        key = workload.key
        old = self._workloads.get(key)
        if old is not None:
            self._unindex_labels(old)
            for use in old.configmaps:
                self._cm_readers[(key.namespace, use.name)].discard(key)
        self._workloads[key] = workload
        self._workloads_in[key.namespace].add(key)
        self._by_name[key.name].add(key)
        for label in workload.labels.items():
            self._by_label[(key.namespace, *label)].add(key)
        self._link_workload(key)
        # Services that selected the old labels or select the new ones.
        affected = {s for s in self._in.get(key, {}) if s.kind == "Service"}
        for label in workload.labels.items():
            affected.update(
                s
                for s in self._selecting.get((key.namespace, *label), ())
                if self._selects(self._services[s], workload)
            )
        changed = (
            old is None or old.labels != workload.labels or old.node_type != workload.node_type
        )
        for svc in sorted(affected):
            self._link_service(svc, relink_callers=changed)
        self._relink_named(key.name)

    def _delete_workload(self, key: NodeKey) -> None:
        workload = self._workloads.pop(key)
        self._unindex_labels(workload)
        self._workloads_in[key.namespace].discard(key)
        self._by_name[key.name].discard(key)
        services = [s for s in self._in.get(key, {}) if s.kind == "Service"]
        self._set_edges(key, {})
        self._set_named(key, set())
        for use in workload.configmaps:
            self._cm_readers[(key.namespace, use.name)].discard(key)
        self._drop_incoming(key)
        for svc in sorted(services):
            self._link_service(svc, relink_callers=True)
        self._release(key)

    def _unindex_labels(self, workload: Workload) -> None:
        for label in workload.labels.items():
            bucket = self._by_label.get((workload.key.namespace, *label))
            if bucket is not None:
                bucket.discard(workload.key)
                if not bucket:
                    del self._by_label[(workload.key.namespace, *label)]

    def _workload_refs(self, workload: Workload) -> Iterator[ValueRef]:
        yield from workload.refs
        ns = workload.key.namespace
        for use in workload.configmaps:
            self._cm_readers[(ns, use.name)].add(workload.key)
            data = self._configmaps.get((ns, use.name))
            if data is None:
                continue
            keys = [use.key] if use.key is not None else sorted(data)
            for data_key in keys:
                env_name = use.env_name or f"{use.prefix}{data_key}"
                value, refs = data.get(data_key, ("", []))
                for ref in refs:
                    yield ValueRef(
                        ref,
                        f"ConfigMap {use.name} {data_key}={value} (env {env_name}) read by "
                        f"{workload.key.kind} {workload.key.name}",
                        verb_of_key(env_name),
                    )

    def _link_workload(self, key: NodeKey) -> None:
        workload = self._workloads[key]
        named: set[NodeKey] = set()
        found: dict[NodeKey, list[ValueRef]] = defaultdict(list)
        for value_ref in self._workload_refs(workload):
            ref = value_ref.ref
            target = NodeKey("Service", ref.namespace or key.namespace, ref.name)
            named.add(target)
            service = self._services.get(target)
            # A workload naming its own Service (SERVICE_NAME=checkout) does not depend on it.
            if service is None or self._selects(service, workload):
                continue
            found[target].append(value_ref)
        self._set_named(key, named)
        edges: dict[NodeKey, Edge] = {}
        for target, refs in found.items():
            refs.sort(key=lambda r: -r.ref.confidence)
            evidence = list(dict.fromkeys(r.evidence for r in refs))
            confidence = refs[0].ref.confidence
            policy = self._allowing_policy(workload, target)
            if policy is not None and confidence < 1.0:
                confidence = min(1.0, round(confidence + Confidence.NETWORK_POLICY_BONUS, 4))
                evidence.append(policy)
            verb = next((r.verb for r in refs if r.verb is not None), None)
            if verb is None:
                data = self._service_type.get(target) in _DATA_TYPES
                verb = EdgeType.DEPENDS_ON if data else EdgeType.CALLS
            edges[target] = Edge(key, target, verb, confidence, tuple(evidence))
        self._add_hint_edges(key, edges)
        self._set_edges(key, edges)

    def _set_named(self, key: NodeKey, named: set[NodeKey]) -> None:
        for old in self._named.get(key, set()) - named:
            self._callers[old].discard(key)
            if not self._callers[old]:
                del self._callers[old]
        for new in named:
            self._callers[new].add(key)
        if named:
            self._named[key] = named
        else:
            self._named.pop(key, None)

    def _relink_workloads(self, keys: Iterable[NodeKey]) -> None:
        for key in sorted(keys):
            if key in self._workloads:
                self._link_workload(key)

    # ------------------------------------------------------------------ Services, Ingresses

    @staticmethod
    def _selects(service: Service, workload: Workload) -> bool:
        if not service.selector or service.key.namespace != workload.key.namespace:
            return False
        return all(workload.labels.get(k) == v for k, v in service.selector)

    def _backends(self, service: Service) -> set[NodeKey]:
        if not service.selector:
            return set()
        ns = service.key.namespace
        buckets = [self._by_label.get((ns, k, v), set()) for k, v in service.selector]
        smallest = min(buckets, key=len)
        return {w for w in smallest if all(w in b for b in buckets)}

    def _index_selector(self, service: Service, *, add: bool) -> None:
        if not service.selector:
            return
        ref = (service.key.namespace, *service.selector[0])
        if add:
            self._selecting[ref].add(service.key)
            return
        bucket = self._selecting.get(ref)
        if bucket is not None:
            bucket.discard(service.key)
            if not bucket:
                del self._selecting[ref]

    def _apply_service(self, service: Service) -> None:
        key = service.key
        old = self._services.get(key)
        if old is not None:
            self._index_selector(old, add=False)
        self._services[key] = service
        self._index_selector(service, add=True)
        self._services_in[key.namespace].add(key)
        self._by_name[key.name].add(key)
        self._link_service(key, relink_callers=False)
        # A new or changed Service: its callers gain or lose their edge to it.
        self._relink_workloads(self._callers.get(key, set()))
        for ingress in sorted(self._ingresses_of.get(key, ())):
            self._link_ingress(ingress)
        self._relink_named(key.name)

    def _delete_service(self, key: NodeKey) -> None:
        self._index_selector(self._services.pop(key), add=False)
        self._services_in[key.namespace].discard(key)
        self._by_name[key.name].discard(key)
        self._service_type.pop(key, None)
        self._set_edges(key, {})
        self._drop_incoming(key)
        self._relink_workloads(self._callers.get(key, set()))
        for ingress in sorted(self._ingresses_of.get(key, ())):
            self._link_ingress(ingress)
        self._release(key)

    def _link_service(self, key: NodeKey, *, relink_callers: bool) -> None:
        service = self._services[key]
        backends = self._backends(service)
        edges = {
            w: Edge(
                key,
                w,
                EdgeType.CALLS,
                Confidence.SERVICE_SELECTOR,
                (
                    f"selector {','.join(f'{k}={v}' for k, v in service.selector)} of Service "
                    f"{key.name} matches the pod template of {w.kind} {w.name}",
                ),
            )
            for w in sorted(backends)
        }
        self._add_hint_edges(key, edges)
        self._set_edges(key, edges)
        node_type = service.declared_type
        if node_type is None:
            types = {self._workloads[w].node_type for w in backends}
            node_type = next((t for t in _TYPE_ORDER if t in types), None)
        if node_type is None:
            node_type = infer_node_type(key.name)
        changed = self._service_type.get(key) != node_type
        self._service_type[key] = node_type
        # Callers' edges depend on the Service's type (the edge type) and, through
        # NetworkPolicies, on its backends: relink them only when one of those can change.
        if changed or (relink_callers and self._policies):
            self._relink_workloads(self._callers.get(key, set()))

    def _apply_ingress(self, ingress: Ingress) -> None:
        old = self._ingresses.get(ingress.key)
        if old is not None:
            for svc, _ in old.backends:
                self._ingresses_of[NodeKey("Service", ingress.key.namespace, svc)].discard(
                    ingress.key
                )
        self._ingresses[ingress.key] = ingress
        self._by_name[ingress.key.name].add(ingress.key)
        for svc, _ in ingress.backends:
            self._ingresses_of[NodeKey("Service", ingress.key.namespace, svc)].add(ingress.key)
        self._link_ingress(ingress.key)

    def _link_ingress(self, key: NodeKey) -> None:
        ingress = self._ingresses.get(key)
        if ingress is None:
            return
        edges = {}
        for svc, evidence in ingress.backends:
            target = NodeKey("Service", key.namespace, svc)
            if target in self._services:
                edges[target] = Edge(
                    key, target, EdgeType.CALLS, Confidence.INGRESS_BACKEND, (evidence,)
                )
        self._set_edges(key, edges)

    # ------------------------------------------------------------------ NetworkPolicies

    def _relink_for_policy(self, namespace: str) -> None:
        """A policy in ``namespace`` can corroborate edges from its workloads (egress) and
        edges into its Services (ingress): relink both sets of callers."""
        keys = set(self._workloads_in.get(namespace, ()))
        for svc in self._services_in.get(namespace, ()):
            keys.update(self._callers.get(svc, ()))
        self._relink_workloads(keys)

    def _allowing_policy(self, source: Workload, service_key: NodeKey) -> str | None:
        """Evidence that a NetworkPolicy allows ``source`` to reach the Service's pods."""
        backends = [
            self._workloads[w] for w in self._out.get(service_key, {}) if w in self._workloads
        ]
        if not backends:
            return None
        src_ns = source.key.namespace
        for name in sorted(self._policies_in.get(src_ns, ())):
            policy = self._policies[(src_ns, name)]
            if not policy.pods.matches(source.labels):
                continue
            for peer in policy.egress_to:
                if peer.specific and any(
                    peer.admits(b.key.namespace, b.labels, src_ns) for b in backends
                ):
                    return f"NetworkPolicy {src_ns}/{name} allows egress to {service_key.name}"
        for backend in backends:
            dst_ns = backend.key.namespace
            for name in sorted(self._policies_in.get(dst_ns, ())):
                policy = self._policies[(dst_ns, name)]
                if not policy.pods.matches(backend.labels):
                    continue
                for peer in policy.ingress_from:
                    if peer.specific and peer.admits(src_ns, source.labels, dst_ns):
                        return (
                            f"NetworkPolicy {dst_ns}/{name} allows ingress from "
                            f"{source.key.kind} {source.key.name}"
                        )
        return None

    # ------------------------------------------------------------------ topology hints

    def _hint_node(self, name: str) -> NodeKey | None:
        """A hint's name as a node: the Service of that name, else the workload (sorted first)."""
        keys = sorted(self._by_name.get(name, ()), key=lambda k: (k.kind != "Service", k))
        return next((k for k in keys if k.kind != "Ingress"), None)

    def _add_hint_edges(self, key: NodeKey, edges: dict[NodeKey, Edge]) -> None:
        if not self._hints or self._hint_node(key.name) != key:
            return
        for (source, target_name), hint in sorted(self._hints.items()):
            if source != key.name:
                continue
            target = self._hint_node(target_name)
            if target is None or target == key or target in edges:
                continue
            edges[target] = Edge(
                key,
                target,
                EdgeType.DEPENDS_ON,
                min(hint.confidence, Confidence.TOPOLOGY_HINT_CAP),
                (f"fleet memory: {source} {hint.relation} {target_name}",),
            )

    def _relink_named(self, name: str) -> None:
        """Relink the nodes whose topology hints name ``name`` (or are named ``name``)."""
        if not self._hints:
            return
        names = {name} | {source for source, _ in self._hints_to.get(name, ())}
        for source in sorted(names):
            self._relink_source(source)

    def _relink_source(self, name: str) -> None:
        """Relink the node a hint's source name resolves to, if any."""
        node = self._hint_node(name)
        if node is None:
            return
        if node.kind == "Service":
            self._link_service(node, relink_callers=False)
        else:
            self._link_workload(node)

    # ------------------------------------------------------------------ plumbing

    def _set_edges(self, source: NodeKey, edges: dict[NodeKey, Edge]) -> None:
        """Replace every outgoing edge of ``source`` (on keys and on ids, in step)."""
        sid = self.node_id(source)
        ids = self._ids
        # Touched nodes only matter while an answer is remembered (a restart records none).
        touched = self._touched if self._answers else set()
        touched.add(sid)
        for target in self._out.get(source, {}):
            touched.add(ids[target])
            if target not in edges:
                incoming = self._in.get(target)
                if incoming is not None:
                    incoming.pop(source, None)
                    if not incoming:
                        del self._in[target]
                tid = ids[target]
                incoming_ids = self._in_ids.get(tid)
                if incoming_ids is not None:
                    incoming_ids.pop(sid, None)
                    if not incoming_ids:
                        del self._in_ids[tid]
        if edges:
            self._out[source] = edges
            out_ids: dict[int, float] = {}
            for target, edge in edges.items():
                self._in[target][source] = edge
                tid = self.node_id(target)
                touched.add(tid)
                out_ids[tid] = edge.confidence
                self._in_ids.setdefault(tid, {})[sid] = edge.confidence
            self._out_ids[sid] = out_ids
        else:
            self._out.pop(source, None)
            self._out_ids.pop(sid, None)

    def _drop_incoming(self, key: NodeKey) -> None:
        """Remove every edge into ``key`` (its sources are relinked by the caller)."""
        kid = self._ids.get(key)
        self._touch(key)
        for source in list(self._in.get(key, {})):
            self._touch(source)
            out = self._out.get(source)
            if out is not None:
                out.pop(key, None)
                if not out:
                    del self._out[source]
            sid = self._ids[source]
            out_ids = self._out_ids.get(sid)
            if out_ids is not None and kid is not None:
                out_ids.pop(kid, None)
                if not out_ids:
                    del self._out_ids[sid]
        self._in.pop(key, None)
        if kid is not None:
            self._in_ids.pop(kid, None)

    def _drop_hpa(self, ref: tuple[str, str]) -> None:
        hpa = self._hpas.pop(ref, None)
        if hpa is not None:
            self._hpa_for[hpa.target].discard(ref)
            if not self._hpa_for[hpa.target]:
                del self._hpa_for[hpa.target]
