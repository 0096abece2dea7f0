"""The in-memory object store with the API server's object semantics.

Every write goes through one place (:meth:`Store._commit`), which bumps the single
server-wide ``resourceVersion`` counter, encodes the object once (the same bytes serve GETs,
lists and every watcher), appends the event to the resource's bounded history and hands it to
the open watches. Stored objects are never mutated after commit; writers build new objects
from freshly decoded copies. Nothing here awaits, so each request's read-modify-write is
atomic on the event loop.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import json
import logging
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from precedent_sandbox import errors as api_errors
from precedent_sandbox.cel import check_rules
from precedent_sandbox.errors import FieldError
from precedent_sandbox.meta import (
    FieldSelector,
    LabelSelector,
    generate_name,
    now_rfc3339,
    validate_metadata,
)
from precedent_sandbox.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from precedent_sandbox.registry import (
    BUILTINS,
    ResourceType,
    crd_problems,
    resource_type_from_crd,
)

__all__ = ["Event", "Store", "Stored", "Watcher", "WriteResult", "encode"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

# ObjectMeta fields a client may send; anything else under metadata is pruned (and reported).
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# Set by the server only: carried over from the stored object on every update.
_SERVER_META = (
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def encode(obj: Any) -> bytes:
    """Compact JSON, as the API server writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class Stored:
    """One committed object and its encoded form."""

    __slots__ = ("obj", "raw", "rv")

    def __init__(self, obj: Obj, rv: int) -> None:
        self.obj = obj
        self.rv = rv
        self.raw = encode(obj)

    def copy(self) -> Obj:
        """A private deep copy to build the next version from."""
        result: Obj = json.loads(self.raw)
        return result


class Event:
    """One change in a resource's history."""

    __slots__ = ("_line", "namespace", "obj", "old", "raw", "rv", "type")

    def __init__(self, kind: str, stored: Stored, old: Obj | None) -> None:
        self.type = kind
        self.rv = stored.rv
        self.obj = stored.obj
        self.raw = stored.raw
        self.old = old
        self.namespace = stored.obj.get("metadata", {}).get("namespace", "")
        self._line: bytes | None = None

    def line(self, kind: str | None = None) -> bytes:
        """``{"type":…,"object":…}`` + newline; the common case is encoded once, shared."""
        if kind is None or kind == self.type:
            if self._line is None:
                self._line = b'{"type":"' + self.type.encode() + b'","object":' + self.raw + b"}\n"
            return self._line
        return b'{"type":"' + kind.encode() + b'","object":' + self.raw + b"}\n"


class Watcher:
    """An open watch: its filters and the events waiting to be written."""

    # A watcher that falls this far behind is closed; its client re-watches from its last RV.
    MAX_PENDING = 200_000

    def __init__(self, namespace: str | None, labels: LabelSelector, fields: FieldSelector) -> None:
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.pending: list[tuple[str, Event]] = []
        self.wake = asyncio.Event()
        self.closed = False
        self.filtered = not labels.empty or not fields.empty

    def selects(self, obj: Obj) -> bool:
        """Whether ``obj`` passes the namespace, label and field filters."""
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if not self.filtered:
            return True
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)

    def offer(self, event: Event) -> None:
        """Queue ``event`` if it concerns this watch (objects leaving a selector → DELETED)."""
        if self.closed:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        kind = event.type
        if self.filtered:
            now_in = self.selects(event.obj)
            if kind == "MODIFIED" and event.old is not None:
                was_in = self.selects(event.old)
                if now_in and not was_in:
                    kind = "ADDED"
                elif was_in and not now_in:
                    kind = "DELETED"
                elif not now_in:
                    return
            elif not now_in:
                return
        self.pending.append((kind, event))
        if len(self.pending) > self.MAX_PENDING:
            self.close()
        self.wake.set()

    def close(self) -> None:
        """End the watch; the handler writes what it has and returns."""
        self.closed = True
        self.wake.set()


class Bucket:
    """The objects, history and watchers of one resource type."""

    def __init__(self, rtype: ResourceType, history_size: int) -> None:
        self.rtype = rtype
        self.objects: dict[str, dict[str, Stored]] = {}
        self.history: deque[Event] = deque(maxlen=history_size)
        # Watches from an RV below this cannot be replayed: 410 Expired.
        self.floor = 0
        self.watchers: set[Watcher] = set()

    def record(self, event: Event) -> None:
        """Append to the history and notify the watchers."""
        if len(self.history) == self.history.maxlen:
            self.floor = self.history[0].rv
        self.history.append(event)
        for watcher in self.watchers:
            watcher.offer(event)


@dataclass(slots=True)
class WriteResult:
    """What a write produced: the stored object, its HTTP code, and any warnings."""

    stored: Stored
    code: int = 200
    warnings: tuple[str, ...] = ()


@dataclass(slots=True)
class ListResult:
    """A list: the selected objects, the list's resourceVersion and a continue token."""

    items: list[Stored]
    rv: int
    token: str = ""
    remaining: int | None = None


class Store:
    """All objects of the sandbox; the API semantics live here, HTTP lives in the server."""

    def __init__(self, *, history_size: int = 50_000) -> None:
        self.rv = 0
        self.history_size = history_size
        self.types: dict[tuple[str, str], ResourceType] = {}
        self.buckets: dict[tuple[str, str], Bucket] = {}
        for rtype in BUILTINS():
            self._register(rtype)
        for name in ("default", "kube-system", "kube-public"):
            self.create(self.lookup("", "v1", "namespaces"), "", {"metadata": {"name": name}})

    # -- resource types --------------------------------------------------------------------

    def _register(self, rtype: ResourceType) -> None:
        key = (rtype.group, rtype.plural)
        self.types[key] = rtype
        bucket = self.buckets.get(key)
        if bucket is None:
            self.buckets[key] = Bucket(rtype, self.history_size)
        else:
            bucket.rtype = rtype

    def _unregister(self, group: str, plural: str) -> None:
        self.types.pop((group, plural), None)
        bucket = self.buckets.pop((group, plural), None)
        if bucket is not None:
            for watcher in list(bucket.watchers):
                watcher.close()

    def lookup(self, group: str, version: str, plural: str) -> ResourceType:
        """The resource served at ``group/version/plural``; 404 if none."""
        rtype = self.types.get((group, plural))
        if rtype is None or version not in rtype.served_versions:
            raise api_errors.path_not_found()
        return rtype

    def bucket(self, rtype: ResourceType) -> Bucket:
        """The storage of ``rtype``."""
        return self.buckets[(rtype.group, rtype.plural)]

    def load_crd(self, crd: Obj) -> None:
        """Create or update a CRD from a file at start-up (422 if it is not acceptable).

        The object is recorded as ``kubectl apply`` would have left it, so applying the same
        file later reports ``unchanged`` rather than a missing-annotation warning.
        """
        crds = self.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        crd = copy.deepcopy(crd)
        meta = crd.setdefault("metadata", {})
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != _APPLIED}
        meta["annotations"] = annotations
        applied = json.dumps(crd, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        # Go's encoder escapes these; kubectl compares the annotation byte for byte.
        for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            applied = applied.replace(char, escaped)
        meta["annotations"] = {**annotations, _APPLIED: applied + "\n"}
        name = meta.get("name", "")
        current = self.bucket(crds).objects.get("", {}).get(name)
        if current is None:
            self.create(crds, "", crd)
        else:
            body = copy.deepcopy(crd)
            body.setdefault("metadata", {})["resourceVersion"] = str(current.rv)
            self.replace(crds, "", name, body)

    # -- reads -----------------------------------------------------------------------------

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Stored:
        """One object; 404 if absent."""
        found = self.bucket(rtype).objects.get(namespace, {}).get(name)
        if found is None:
            raise api_errors.not_found(rtype.qualified, name)
        return found

    def list_objects(
        self,
        rtype: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        limit: int = 0,
        token: str = "",
    ) -> ListResult:
        """Objects sorted by namespace and name; ``limit``/``continue`` page through them."""
        bucket = self.bucket(rtype)
        pinned = fields.name()
        spaces = [namespace] if namespace is not None else sorted(bucket.objects)
        start = _decode_token(token) if token else None
        picked: list[Stored] = []
        for space in spaces:
            objects = bucket.objects.get(space)
            if not objects:
                continue
            if pinned is not None:
                names = [pinned] if pinned in objects else []
            else:
                names = sorted(objects)
            for name in names:
                if start is not None and (space, name) <= start:
                    continue
                stored = objects[name]
                if not labels.empty and not labels.matches(stored.obj["metadata"].get("labels")):
                    continue
                if not fields.empty and not fields.matches(stored.obj):
                    continue
                picked.append(stored)
        if limit and len(picked) > limit:
            last = picked[limit - 1].obj["metadata"]
            next_token = _encode_token(self.rv, last.get("namespace", ""), last["name"])
            return ListResult(picked[:limit], self.rv, next_token, len(picked) - limit)
        return ListResult(picked, self.rv)

    # -- watches ---------------------------------------------------------------------------

    def watch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        since: str | None,
        *,
        send_initial: bool = False,
    ) -> tuple[Watcher, list[tuple[str, Event]]]:
        """Open a watch; returns it with the events to send first.

        No ``resourceVersion`` (or ``0``, or ``sendInitialEvents``): the current objects as
        ADDED. ``resourceVersion=N``: every event after N still in history, or 410 Expired.
        Registration and replay happen in one step, so nothing is lost or sent twice.
        """
        bucket = self.bucket(rtype)
        watcher = Watcher(namespace, labels, fields)
        initial: list[tuple[str, Event]] = []
        if send_initial or since in (None, "", "0"):
            listed = self.list_objects(rtype, namespace, labels, fields)
            initial = [("ADDED", Event("ADDED", stored, None)) for stored in listed.items]
        else:
            try:
                version = int(str(since))
            except ValueError:
                raise api_errors.bad_request(
                    f'invalid resource version "{since}": strconv.ParseUint: parsing "{since}": '
                    "invalid syntax"
                ) from None
            if version < bucket.floor:
                raise api_errors.expired(f"too old resource version: {version} ({bucket.floor})")
            for event in _events_after(bucket.history, version):
                before = len(watcher.pending)
                watcher.offer(event)
                initial.extend(watcher.pending[before:])
            watcher.pending.clear()
            watcher.wake.clear()
        bucket.watchers.add(watcher)
        return watcher, initial

    def unwatch(self, rtype: ResourceType, watcher: Watcher) -> None:
        """Forget a watch whose stream ended."""
        bucket = self.buckets.get((rtype.group, rtype.plural))
        if bucket is not None:
            bucket.watchers.discard(watcher)

    def close_watches(self) -> None:
        """End every open watch (server shutdown)."""
        for bucket in self.buckets.values():
            for watcher in list(bucket.watchers):
                watcher.close()

    # -- writes ----------------------------------------------------------------------------

    def create(
        self,
        rtype: ResourceType,
        namespace: str,
        body: Any,
        *,
        dry_run: bool = False,
        validation: str = "Warn",
    ) -> WriteResult:
        """POST: a new object with uid, creationTimestamp, generation 1 and a fresh RV."""
        obj = self._decode_body(rtype, body)
        meta = obj["metadata"]
        if rtype.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                raise api_errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            objects = self.bucket(rtype).objects.get(namespace, {})
            candidate = generate_name(str(meta["generateName"]))
            while candidate in objects:
                candidate = generate_name(str(meta["generateName"]))
            meta["name"] = candidate
        name = str(meta.get("name") or "")
        unknown = self._normalize(rtype, obj)
        if rtype.has_status and rtype.is_custom:
            obj.pop("status", None)  # create cannot set status when it is a subresource
        for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(key, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rtype.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        self._defaults_on_create(rtype, obj)
        warnings = self._field_validation(rtype, obj, unknown, validation)
        self._validate(rtype, obj, None, name)
        if rtype.namespaced:
            self._check_namespace(rtype, namespace, name)
        bucket = self.bucket(rtype)
        if name in bucket.objects.get(namespace, {}):
            raise api_errors.already_exists(rtype.qualified, name)
        if rtype.plural == "customresourcedefinitions":
            self._accept_crd(obj)
        if dry_run:
            return WriteResult(Stored(obj, 0), 201, warnings)
        stored = self._commit(rtype, namespace, name, obj, None)
        return WriteResult(stored, 201, warnings)

    def replace(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        validation: str = "Warn",
    ) -> WriteResult:
        """PUT: replace the object (or only its status via ``/status``); 409 on a stale RV."""
        current = self.get(rtype, namespace, name)
        obj = self._decode_body(rtype, body)
        meta = obj["metadata"]
        if meta.get("name") not in (None, name):
            raise api_errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the "
                f"URL ({name})"
            )
        if rtype.is_custom and not meta.get("resourceVersion"):
            raise api_errors.invalid(
                rtype.kind,
                rtype.group,
                name,
                [
                    FieldError(
                        "invalid",
                        "metadata.resourceVersion",
                        api_errors.GoLiteral("0x0"),
                        "must be specified for an update",
                    )
                ],
            )
        return self._update(
            rtype, current, obj, subresource, dry_run=dry_run, validation=validation
        )

    def patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        validation: str = "Warn",
        field_manager: str | None = None,
    ) -> WriteResult:
        """PATCH with a merge, JSON, strategic-merge or apply patch."""
        bucket = self.bucket(rtype)
        current = bucket.objects.get(namespace, {}).get(name)
        if current is None:
            if patch_type == "apply":
                return self._apply_create(rtype, namespace, name, patch, dry_run, validation)
            raise api_errors.not_found(rtype.qualified, name)
        base = current.copy()
        if patch_type == "merge":
            if not isinstance(patch, dict):
                raise api_errors.bad_request("a merge patch must be a JSON object")
            obj = apply_merge_patch(base, patch)
        elif patch_type == "json":
            obj = apply_json_patch(base, patch)
        elif patch_type == "strategic":
            if not isinstance(patch, dict):
                raise api_errors.bad_request("a strategic merge patch must be a JSON object")
            obj = apply_strategic_merge_patch(base, patch)
        elif patch_type == "apply":
            if not field_manager:
                raise api_errors.bad_request(
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                    "required for apply patch"
                )
            obj = apply_merge_patch(base, _drop_nulls(patch))
        else:
            raise api_errors.unsupported_media_type(patch_type)
        if not isinstance(obj, dict):
            raise api_errors.unprocessable("the patched object is not a JSON object")
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict) or meta.get("name") != name:
            raise api_errors.bad_request("metadata.name cannot be changed by a patch")
        return self._update(
            rtype, current, obj, subresource, dry_run=dry_run, validation=validation
        )

    def _apply_create(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        dry_run: bool,
        validation: str,
    ) -> WriteResult:
        if not isinstance(patch, dict):
            raise api_errors.bad_request("an apply patch must be an object")
        patch.setdefault("metadata", {})["name"] = name
        return self.create(rtype, namespace, patch, dry_run=dry_run, validation=validation)

    def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        options: Obj | None = None,
        *,
        dry_run: bool = False,
    ) -> WriteResult:
        """DELETE: gone now, or marked with deletionTimestamp while finalizers remain."""
        current = self.get(rtype, namespace, name)
        _check_preconditions(rtype, current, options or {})
        meta = current.obj["metadata"]
        if dry_run:
            return WriteResult(current)
        if rtype.plural == "namespaces":
            return WriteResult(self._terminate_namespace(current))
        if rtype.plural == "customresourcedefinitions":
            self._drop_crd(current)
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return WriteResult(current, 202)
            obj = current.copy()
            obj["metadata"]["deletionTimestamp"] = now_rfc3339()
            obj["metadata"]["deletionGracePeriodSeconds"] = 0
            if rtype.has_generation:
                obj["metadata"]["generation"] = int(meta.get("generation", 1)) + 1
            return WriteResult(self._commit(rtype, namespace, name, obj, current), 202)
        return WriteResult(self._remove(rtype, current))

    def delete_collection(
        self,
        rtype: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> list[Stored]:
        """DELETE on a collection: every selected object, as by one DELETE each."""
        listed = self.list_objects(rtype, namespace, labels, fields)
        results = []
        for stored in listed.items:
            meta = stored.obj["metadata"]
            results.append(self.delete(rtype, meta.get("namespace", ""), meta["name"]).stored)
        return results

    # -- write internals -------------------------------------------------------------------

    def _decode_body(self, rtype: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise api_errors.bad_request(
                f"the body of the request could not be decoded as a {rtype.kind}"
            )
        kind = body.get("kind")
        api_version = body.get("apiVersion")
        if kind not in (None, "", rtype.kind):
            raise api_errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rtype.api_version()})"
                if api_version not in (None, "", rtype.api_version())
                else f'{kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
                "the kind does not match"
            )
        if api_version not in (None, "") and api_version not in [
            rtype.api_version(v) for v in rtype.served_versions
        ]:
            raise api_errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rtype.api_version()})"
            )
        body["kind"] = rtype.kind
        body["apiVersion"] = rtype.api_version()
        meta = body.get("metadata")
        if meta is None:
            meta = body["metadata"] = {}
        if not isinstance(meta, dict):
            raise api_errors.bad_request("metadata must be an object")
        return body

    def _normalize(self, rtype: ResourceType, obj: Obj) -> list[str]:
        """Prune metadata to ObjectMeta and the rest to the schema; return unknown paths."""
        unknown: list[str] = []
        meta = obj["metadata"]
        for key in list(meta):
            if key not in OBJECT_META_FIELDS:
                del meta[key]
                unknown.append(f"metadata.{key}")
        if meta.get("managedFields") is not None:
            meta.pop("managedFields")  # field management is not emulated
        schema = rtype.schema
        if schema is None:
            return unknown
        head = {k: obj.pop(k) for k in ("apiVersion", "kind", "metadata")}
        schema.normalize(obj, "", unknown)
        obj.update(head)
        return unknown

    def _field_validation(
        self, rtype: ResourceType, obj: Obj, unknown: list[str], directive: str
    ) -> tuple[str, ...]:
        if not unknown or directive == "Ignore":
            return ()
        if directive == "Strict":
            listed = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise api_errors.bad_request(
                f'{rtype.kind} in version "{rtype.version}" cannot be handled as a '
                f"{rtype.kind}: strict decoding error: {listed}"
            )
        return tuple(f'unknown field "{u}"' for u in unknown)

    def _validate(self, rtype: ResourceType, obj: Obj, old: Obj | None, name: str) -> None:
        meta = obj["metadata"]
        found = validate_metadata(meta, namespace_like=rtype.plural == "namespaces")
        schema = rtype.schema
        if schema is not None:
            body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
            schema_errors: list[FieldError] = []
            schema.validate(body, "", schema_errors)
            found.extend(schema_errors)
            if not schema_errors and schema.has_rules:
                previous = (
                    {k: v for k, v in old.items() if k not in ("apiVersion", "kind", "metadata")}
                    if old is not None
                    else None
                )
                check_rules(schema, body, previous, "", found)
        if rtype.plural == "customresourcedefinitions":
            found.extend(crd_problems(obj))
        if found:
            raise api_errors.invalid(rtype.kind, rtype.group, name or "", found)

    def _defaults_on_create(self, rtype: ResourceType, obj: Obj) -> None:
        if rtype.plural == "namespaces":
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
            labels = obj["metadata"].setdefault("labels", {})
            if isinstance(labels, dict):
                labels["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")
        elif rtype.plural == "secrets" and not obj.get("type"):
            obj["type"] = "Opaque"

    def _check_namespace(self, rtype: ResourceType, namespace: str, name: str) -> None:
        space = self.buckets[("", "namespaces")].objects.get("", {}).get(namespace)
        if space is None:
            raise api_errors.not_found("namespaces", namespace)
        if space.obj["metadata"].get("deletionTimestamp"):
            raise api_errors.forbidden(
                rtype.qualified,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
            )

    def _update(
        self,
        rtype: ResourceType,
        current: Stored,
        obj: Obj,
        subresource: str | None,
        *,
        dry_run: bool,
        validation: str,
    ) -> WriteResult:
        old = current.obj
        old_meta = old["metadata"]
        name = old_meta["name"]
        namespace = old_meta.get("namespace", "")
        obj = self._decode_body(rtype, obj)
        meta = obj["metadata"]
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv not in (None, "") and str(wanted_rv) != str(current.rv):
            raise api_errors.conflict(rtype.qualified, name)
        unknown = self._normalize(rtype, obj)
        if subresource == "status":
            # A status write changes status only: everything else comes from the stored object.
            fresh = current.copy()
            if "status" in obj:
                fresh["status"] = obj["status"]
            else:
                fresh.pop("status", None)
            obj = fresh
            meta = obj["metadata"]
        else:
            if rtype.has_status:
                # A main-resource write never changes status when status is a subresource.
                if "status" in old:
                    obj["status"] = old["status"]
                else:
                    obj.pop("status", None)
            for key in _SERVER_META:
                if key in old_meta:
                    meta[key] = old_meta[key]
                else:
                    meta.pop(key, None)
            meta["name"] = name
            if rtype.namespaced:
                meta["namespace"] = namespace
            else:
                meta.pop("namespace", None)
            if rtype.plural == "namespaces":
                obj["spec"] = old.get("spec", {})
                obj["status"] = old.get("status", {})
            if rtype.has_generation and _spec_changed(rtype, obj, old):
                meta["generation"] = int(old_meta.get("generation", 1)) + 1
        meta["resourceVersion"] = str(current.rv)
        if old_meta.get("deletionTimestamp"):
            added = [
                f
                for f in meta.get("finalizers") or []
                if f not in (old_meta.get("finalizers") or [])
            ]
            if added:
                raise api_errors.invalid(
                    rtype.kind,
                    rtype.group,
                    name,
                    [
                        FieldError(
                            "forbidden",
                            "metadata.finalizers",
                            None,
                            "no new finalizers can be added if the object is being deleted, "
                            f"found new finalizers {_go_strings(added)}",
                        )
                    ],
                )
        warnings = self._field_validation(rtype, obj, unknown, validation)
        if obj == old:
            return WriteResult(current, 200, warnings)  # no-op: no new RV, no event
        self._validate(rtype, obj, old, name)
        if rtype.plural == "customresourcedefinitions":
            self._check_crd_update(obj, old)
            self._accept_crd(obj)
        if dry_run:
            return WriteResult(Stored(obj, current.rv), 200, warnings)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            meta.pop("resourceVersion", None)
            return WriteResult(self._remove(rtype, current, obj), 200, warnings)
        return WriteResult(self._commit(rtype, namespace, name, obj, current), 200, warnings)

    def _commit(
        self, rtype: ResourceType, namespace: str, name: str, obj: Obj, old: Stored | None
    ) -> Stored:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        stored = Stored(obj, self.rv)
        bucket = self.bucket(rtype)
        bucket.objects.setdefault(namespace, {})[name] = stored
        bucket.record(
            Event("ADDED" if old is None else "MODIFIED", stored, old.obj if old else None)
        )
        if rtype.plural == "customresourcedefinitions":
            self._register(resource_type_from_crd(obj))
        return stored

    def _remove(self, rtype: ResourceType, current: Stored, final: Obj | None = None) -> Stored:
        obj = final if final is not None else current.copy()
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        stored = Stored(obj, self.rv)
        bucket = self.bucket(rtype)
        objects = bucket.objects.get(namespace, {})
        objects.pop(meta["name"], None)
        if not objects:
            bucket.objects.pop(namespace, None)
        bucket.record(Event("DELETED", stored, None))
        if rtype.namespaced:
            self._maybe_finish_namespace(namespace)
        return stored

    # -- CRDs ------------------------------------------------------------------------------

    def _accept_crd(self, obj: Obj) -> None:
        """Set the status the apiextensions controllers would: names accepted, established."""
        spec = obj["spec"]
        names = dict(spec["names"])
        names.setdefault("singular", str(names["kind"]).lower())
        names.setdefault("listKind", f"{names['kind']}List")
        now = now_rfc3339()
        previous = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}

        def condition(kind: str, reason: str, message: str) -> Obj:
            since = previous.get(kind, {}).get("lastTransitionTime", now)
            return {
                "type": kind,
                "status": "True",
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }

        storage = [v["name"] for v in spec["versions"] if v.get("storage")]
        stored_versions = list((obj.get("status") or {}).get("storedVersions") or [])
        for version in storage:
            if version not in stored_versions:
                stored_versions.append(version)
        obj["status"] = {
            "acceptedNames": names,
            "conditions": [
                condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                condition(
                    "Established", "InitialNamesAccepted", "the initial names have been accepted"
                ),
            ],
            "storedVersions": stored_versions,
        }

    def _check_crd_update(self, obj: Obj, old: Obj) -> None:
        if obj["spec"].get("scope") != old["spec"].get("scope"):
            raise api_errors.invalid(
                "CustomResourceDefinition",
                "apiextensions.k8s.io",
                obj["metadata"]["name"],
                [
                    FieldError(
                        "invalid", "spec.scope", obj["spec"].get("scope"), "field is immutable"
                    )
                ],
            )

    def _drop_crd(self, current: Stored) -> None:
        """Deleting a CRD deletes its objects at once (their finalizers are not waited for)."""
        spec = current.obj.get("spec", {})
        key = (spec.get("group", ""), spec.get("names", {}).get("plural", ""))
        rtype = self.types.get(key)
        if rtype is None or not rtype.is_custom:
            return
        bucket = self.buckets[key]
        for space in list(bucket.objects):
            for stored in list(bucket.objects.get(space, {}).values()):
                self._remove(rtype, stored)
        self._unregister(*key)

    # -- namespaces ------------------------------------------------------------------------

    def _terminate_namespace(self, current: Stored) -> Stored:
        """Mark a namespace Terminating, delete its content, and remove it once empty."""
        namespaces = self.types[("", "namespaces")]
        name = current.obj["metadata"]["name"]
        if not current.obj["metadata"].get("deletionTimestamp"):
            obj = current.copy()
            obj["metadata"]["deletionTimestamp"] = now_rfc3339()
            obj["metadata"]["deletionGracePeriodSeconds"] = 0
            obj["status"] = {"phase": "Terminating"}
            current = self._commit(namespaces, "", name, obj, current)
        for key, bucket in list(self.buckets.items()):
            rtype = self.types.get(key)
            if rtype is None or not rtype.namespaced:
                continue
            for stored in list(bucket.objects.get(name, {}).values()):
                if not stored.obj["metadata"].get("deletionTimestamp"):
                    self.delete(rtype, name, stored.obj["metadata"]["name"])
        return self._maybe_finish_namespace(name) or current

    def _maybe_finish_namespace(self, name: str) -> Stored | None:
        namespaces = self.buckets.get(("", "namespaces"))
        if namespaces is None:
            return None
        space = namespaces.objects.get("", {}).get(name)
        if space is None or not space.obj["metadata"].get("deletionTimestamp"):
            return None
        for key, bucket in self.buckets.items():
            rtype = self.types.get(key)
            if rtype is not None and rtype.namespaced and bucket.objects.get(name):
                return None
        return self._remove(namespaces.rtype, space)


# -- helpers ----------------------------------------------------------------------------------


def _spec_changed(rtype: ResourceType, new: Obj, old: Obj) -> bool:
    """Whether anything outside metadata (and status, if a subresource) changed."""
    skip = {"metadata", "apiVersion", "kind"}
    if rtype.has_status:
        skip.add("status")
    keys = (set(new) | set(old)) - skip
    return any(new.get(k) != old.get(k) for k in keys)


def _events_after(history: deque[Event], version: int) -> Iterable[Event]:
    # History is ordered by RV; scanning back from the end stops at the first older event.
    newer: list[Event] = []
    for event in reversed(history):
        if event.rv <= version:
            break
        newer.append(event)
    newer.reverse()
    return newer


def _check_preconditions(rtype: ResourceType, current: Stored, options: Obj) -> None:
    pre = options.get("preconditions") or {}
    meta = current.obj["metadata"]
    name = meta["name"]
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise api_errors.conflict(
            rtype.qualified,
            name,
            f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
            f"{meta.get('uid')}",
        )
    if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(current.rv):
        raise api_errors.conflict(
            rtype.qualified,
            name,
            "Precondition failed: ResourceVersion in precondition: "
            f"{pre['resourceVersion']}, ResourceVersion in object meta: {current.rv}",
        )


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    return value


def _go_strings(values: list[str]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _encode_token(rv: int, namespace: str, name: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{namespace}/{name}"})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_token(token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, _, name = str(data["start"]).partition("/")
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise api_errors.bad_request("continue key is not valid: incorrect encoded start") from None
    return namespace, name
