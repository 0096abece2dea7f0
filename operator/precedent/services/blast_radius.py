"""The cluster's dependency graph, kept current by the operator's watches, and the blast radius
of a request's target (issue 15).

The operator's kopf watches hand every event of the kinds the graph reads
(:data:`precedent.core.graph.KINDS`) to :meth:`BlastRadiusService.observe`: a DELETED event
removes the object, anything else (ADDED, MODIFIED, or kopf's initial listing) applies it. The
graph changes one object at a time (no rebuild per request or per event).

A watch alone cannot drop what it never saw deleted: kopf re-lists after a broken stream or a
410 Gone and hands each listed object over, but never says which objects the new list lacks,
and a watch resumed against a restored API server delivers no deletions. The rule the history
and the catalog follow applies here too: a full list (:meth:`BlastRadiusService.resync`) is
compared with what the watch applied; objects the list lacks are dropped unless the watch
touched them after the list was requested, and objects the watch changed meanwhile are newer
than the list and left alone.

Every change and every query takes one lock: kopf runs synchronous handlers in threads and
requests are scored on the assessment thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from precedent.core.graph import (
    KIND_ALIASES,
    KINDS,
    WORKLOAD_KINDS,
    BlastRadius,
    DependencyGraph,
    GraphInputError,
    blast_radius,
    resolve_target,
)
from precedent.core.policy import BlastImpact
from precedent.models import BlastRadiusStatus, Target, TopologyHints
from precedent.services.mirror import ObjectMirror, ResyncPlan

__all__ = ["BlastRadiusService", "ObjectRef", "ResyncResult"]

logger = logging.getLogger(__name__)

QUERY_LIMIT = 2_000
"""Most nodes one direction of a status query visits (the answer then says it was cut)."""

LISTED = 20
"""Names a status lists at most (its counts are complete)."""

ObjectRef = tuple[str, str, str]
"""(kind, namespace, name) of an object the graph holds."""


ResyncResult = ResyncPlan[ObjectRef]
"""What a full list of one kind changed in the graph (keys are :data:`ObjectRef`)."""


def _ref(kind: str, obj: Mapping[str, Any]) -> tuple[ObjectRef, str]:
    meta = obj.get("metadata") or {}
    ref = (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    return ref, str(meta.get("resourceVersion") or "")


class BlastRadiusService:
    """Owns the dependency graph: applies and deletes objects, answers blast-radius queries."""

    def __init__(
        self,
        graph: DependencyGraph | None = None,
        *,
        namespaces: Iterable[str] = (),
        limit: int = QUERY_LIMIT,
    ) -> None:
        """An empty graph (or ``graph``); ``namespaces`` limits what is followed (empty: all)."""
        self.graph = graph or DependencyGraph()
        self.namespaces = frozenset(namespaces)
        self.limit = limit
        self._lock = threading.Lock()
        # The history's bookkeeping (which version the watch applied, and when), under the
        # lock the queries take: one mirror for every kind, a list resynced one kind at a time.
        self._mirror = ObjectMirror[ObjectRef]("graph", lock=self._lock)

    # -- following the cluster -------------------------------------------------------------------

    def follows(self, namespace: str | None) -> bool:
        """Whether objects in ``namespace`` are followed (the namespace limit)."""
        return not self.namespaces or (namespace or "") in self.namespaces

    def observe(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """One watch event of ``kind``: DELETED removes the object, any other type applies it.

        A malformed object is logged (naming the field) and dropped from the graph: its last
        valid version no longer describes the cluster.
        """
        if kind not in KINDS:
            return
        ref, version = _ref(kind, obj)
        if not self.follows(ref[1]):
            return
        if event_type == "DELETED":
            self._mirror.remove(ref, lambda: self.graph.delete(*ref))
        else:
            self._mirror.apply(ref, version, lambda: self._apply(ref, obj))

    def _apply(self, ref: ObjectRef, obj: Mapping[str, Any]) -> None:
        body = obj if obj.get("kind") == ref[0] else {**obj, "kind": ref[0]}
        try:
            self.graph.apply(body)
        except GraphInputError as exc:
            logger.warning("dependency graph: ignoring %s %s/%s: %s", *ref, exc)
            self.graph.delete(*ref)

    def mark(self) -> int:
        """Taken just before a list is requested: what the watch does after it is newer."""
        return self._mirror.mark()

    def resync(self, kind: str, listed: Sequence[Mapping[str, Any]], mark: int) -> ResyncResult:
        """Make the graph's objects of ``kind`` equal a full list requested after :meth:`mark`."""
        followed: dict[ObjectRef, Mapping[str, Any]] = {}
        for obj in listed:
            ref, _ = _ref(kind, obj)
            if self.follows(ref[1]):
                followed[ref] = obj
        return self._mirror.resync(
            followed,
            mark,
            upsert=lambda obj: self._apply(_ref(kind, obj)[0], obj),
            delete=lambda ref: self.graph.delete(*ref),
            scope=lambda ref: ref[0] == kind,
        )

    def held(self) -> int:
        """How many objects the graph follows (every kind)."""
        return len(self._mirror.names())

    # -- answering ---------------------------------------------------------------------------------

    def radius(
        self, target: Target, *, detail: bool = True, dependents: int = 0
    ) -> BlastRadius | None:
        """The target's blast radius, or None when the graph does not hold it.

        Only a kind the graph has nodes of (or kubectl's name for one) is looked up: a Node, a
        Pod or an ARM resource that happens to share a workload's name is not that workload.
        ``detail`` and ``dependents`` are passed to :func:`blast_radius`.
        """
        if _node_kind(target.kind) is None:
            return None
        with self._lock:
            key = resolve_target(
                self.graph, target.kind, target.name, target.namespace, target.resource_id
            )
            if key is None:
                return None
            return blast_radius(
                self.graph, key, limit=self.limit, detail=detail, dependents=dependents
            )

    def report(
        self, target: Target, hints: TopologyHints | None = None
    ) -> tuple[BlastRadiusStatus, BlastImpact | None]:
        """The status part for ``target`` and what the policy weighs (None: not in the graph)."""
        hint_lines = _hints_for(target.name, hints)
        # Only what the status shows: counts, critical nodes, paths and the nearest LISTED
        # dependents' names, not every reached node's detail (a hub reaches thousands).
        radius = self.radius(target, detail=False, dependents=LISTED)
        if radius is None:
            where = f" in namespace {target.namespace}" if target.namespace else ""
            summary = (
                f"{target.kind} {target.name}{where} is not in the dependency graph "
                f"(it follows {', '.join(WORKLOAD_KINDS)}, Services and Ingresses): "
                "blast radius unknown"
            )
            return BlastRadiusStatus(in_graph=False, summary=summary, hints=hint_lines), None
        ns = radius.target.namespace
        dependents = [k.short(ns) for k in radius.dependents]
        critical = [k.short(ns) for k in radius.critical_upstream]
        status = BlastRadiusStatus(
            in_graph=True,
            upstream_count=radius.upstream_count,
            downstream_count=radius.downstream_count,
            upstream_workloads=[d[:512] for d in dependents[:LISTED]],
            critical_services=[c[:512] for c in critical[:LISTED]],
            namespaces=list(radius.namespaces[:LISTED]),
            pdb_protected=bool(radius.pdbs),
            pdbs=list(radius.pdbs[:10]),
            summary=radius.summary[:1024],
            top_paths=[p[:4096] for p in radius.paths],
            hints=hint_lines,
            truncated=radius.truncated,
        )
        impact = BlastImpact(
            target=radius.target.short(),
            upstream_count=radius.upstream_count,
            critical_upstream=tuple(critical),
        )
        return status, impact


_NODE_KINDS = {k.lower(): k for k in (*WORKLOAD_KINDS, "Service", "Ingress")}


def _node_kind(kind: str) -> str | None:
    """The graph's node kind a request's ``target.kind`` names, or None."""
    lowered = kind.strip().lower()
    return KIND_ALIASES.get(lowered) or _NODE_KINDS.get(lowered)


def _hints_for(name: str, hints: TopologyHints | None) -> list[str]:
    """Fleet-memory edges that name the target, most confident first (never scored)."""
    if hints is None:
        return []
    lines = [
        f"{e.source} {e.relation} {e.target} (confidence {e.confidence:.2f}, fleet memory)"
        for e in hints.edges
        if name in (e.source, e.target)
    ]
    return lines[:10]
