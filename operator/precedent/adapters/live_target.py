"""Read a request's live target: from the API server (the operator) or from manifests (the CLI).

Both give a :class:`~precedent.core.change.LiveTarget` built by the same function
(``core.change.live_target_of``) from the object and the objects that size a change to it: the
HorizontalPodAutoscalers and PodDisruptionBudgets of its namespace, and a Namespace's
PersistentVolumeClaims. Kinds outside :data:`KIND_PATHS` are not read (None): their unknowns
are read the riskier way. Secrets are never read.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from precedent.adapters.kube_api import KubeApi
from precedent.adapters.loader import iter_documents
from precedent.core.change import LiveTarget, live_target_of
from precedent.core.kinds import KIND_PATHS
from precedent.core.normalize import canonical_resource_type
from precedent.errors import DependencyError, InputError

__all__ = ["KIND_PATHS", "ApiTargets", "ManifestTargets"]


_WORKLOADS = frozenset({"deployment", "statefulset", "replicaset"})
_MAX_CLAIMS = 500
_REUSED_READS = 1024  # targets whose last read is kept for reuse (the most recent ones)
_Key = tuple[str, str, str]  # canonical kind, namespace, name


def _related_kinds(kind: str) -> tuple[str, ...]:
    if kind in _WORKLOADS:
        return ("horizontalpodautoscaler", "poddisruptionbudget")
    if kind == "namespace":
        return ("persistentvolumeclaim",)
    return ()


def _with_kind(items: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    names = {
        "horizontalpodautoscaler": "HorizontalPodAutoscaler",
        "poddisruptionbudget": "PodDisruptionBudget",
        "persistentvolumeclaim": "PersistentVolumeClaim",
    }
    return [{**item, "kind": names.get(kind, kind)} for item in items]


class ApiTargets:
    """Reads targets from the API server with the operator's credentials (get, and list in
    the target's namespace for HPAs, PDBs and a Namespace's PVCs).

    A read is reused for ``reuse_seconds`` by the requests about the same target, and
    requests asking while it is under way wait for it: a storm of requests about one
    Deployment (every alert of an incident asking to restart it) reads it, its HPAs and its
    PDBs once per interval, not three API calls per request. The answer is for the target
    as it was up to that long ago, as the API server's watch cache already lags; what runs is
    checked against the live object (``kubectl precedent apply`` refuses a moved target and
    asks for a new answer), and such an answer (``fresh``) reads the target again. 0: every
    request reads it.
    """

    def __init__(
        self,
        api: KubeApi,
        *,
        reuse_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._reuse = reuse_seconds
        self._clock = clock
        # Target → (when its read started, the read): a task, so that the requests waiting
        # for it are not cancelled with the one that started it.
        self._reads: OrderedDict[_Key, tuple[float, asyncio.Task[LiveTarget | None]]] = (
            OrderedDict()
        )

    async def read(
        self,
        kind: str,
        name: str,
        namespace: str | None,
        api_version: str | None,
        *,
        fresh: bool = False,
    ) -> LiveTarget | None:
        """The target, or None when its kind is not read or the server cannot tell;
        ``fresh``: read now, not an earlier request's read."""
        canon = canonical_resource_type(kind)
        where = KIND_PATHS.get(canon)
        if where is None:
            return None
        if where[2] and not namespace:
            return None
        if self._reuse <= 0:
            return await self._read(canon, kind, name, namespace)
        key = (canon, namespace or "", name)
        now = self._clock()
        found = self._reads.get(key)
        if found is not None and not fresh and now - found[0] < self._reuse:
            task = found[1]
            if not task.done() or (not task.cancelled() and task.exception() is None):
                return await asyncio.shield(task)
        task = asyncio.ensure_future(self._read(canon, kind, name, namespace))
        self._reads[key] = (now, task)
        self._reads.move_to_end(key)
        while len(self._reads) > _REUSED_READS or (
            self._reads and now - next(iter(self._reads.values()))[0] >= self._reuse
        ):
            self._reads.popitem(last=False)  # the oldest: expired, or one too many
        return await asyncio.shield(task)

    async def _read(
        self, canon: str, kind: str, name: str, namespace: str | None
    ) -> LiveTarget | None:
        prefix, plural, namespaced = KIND_PATHS[canon]
        base = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
        try:
            # From the API server's cache: what runs is checked against the target as it is
            # then (`kubectl precedent apply` refuses a moved target), so the cache's lag
            # cannot let a change through; an etcd read per request would cost the API
            # server more than the answer's own writes.
            obj = await self._api.get_object(f"{base}/{name}", cached=True)
            related: list[Mapping[str, Any]] = []
            if obj is not None:
                space = name if canon == "namespace" else namespace
                for other in _related_kinds(canon):
                    o_prefix, o_plural, _ = KIND_PATHS[other]
                    items = await self._api.list_path(
                        f"{o_prefix}/namespaces/{space}/{o_plural}", limit=_MAX_CLAIMS
                    )
                    related.extend(_with_kind(items, other))
        except (DependencyError, InputError):
            return None  # forbidden or unreachable: not known, read the riskier way
        return live_target_of(obj, kind, name, namespace, related=related)


class ManifestTargets:
    """Reads targets from manifests (``precedent score -f``): the objects given stand for
    the cluster; a target that is not among them is not known (None), not absent."""

    def __init__(self, paths: Iterable[str | Path]) -> None:
        self._objects: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for doc in iter_documents(paths):
            body = doc.body
            kind = body.get("kind")
            meta = body.get("metadata")
            if not isinstance(kind, str) or not isinstance(meta, Mapping):
                continue
            name = meta.get("name")
            if not isinstance(name, str):
                continue
            ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
            key = (canonical_resource_type(kind), str(ns or ""), name)
            self._objects[key] = body

    async def read(
        self,
        kind: str,
        name: str,
        namespace: str | None,
        api_version: str | None,
        *,
        fresh: bool = False,
    ) -> LiveTarget | None:
        """The target among the manifests, or None when it is not there (``fresh`` changes
        nothing: the manifests do not move)."""
        canon = canonical_resource_type(kind)
        key = (canon, namespace or "", name)
        obj = self._objects.get(key)
        if obj is None and canon in KIND_PATHS and not KIND_PATHS[canon][2]:
            obj = self._objects.get((canon, "", name))
        if obj is None:
            return None
        space = name if canon == "namespace" else (namespace or "")
        related = [
            o
            for (k, ns, _), o in self._objects.items()
            if ns == space and k in _related_kinds(canon)
        ]
        return live_target_of(
            obj, kind, name, namespace, related=related, source="the manifests given (-f)"
        )
