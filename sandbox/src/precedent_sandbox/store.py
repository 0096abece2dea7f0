"""The in-memory object store: reads, writes and watches with the API server's semantics.

Every write goes through one place (:meth:`Store.commit`), which bumps the single
server-wide ``resourceVersion`` counter, encodes the object once (the same bytes serve GETs,
lists and every watcher), appends the event to the resource's bounded history and hands it to
the open watches. Stored objects are never mutated after commit; writers build new objects
from freshly decoded copies. Nothing here awaits, so each request's read-modify-write is
atomic on the event loop.

What a write must look like lives in :mod:`~precedent_sandbox.admission`, what the server
sets and cleans up over an object's life in :mod:`~precedent_sandbox.lifecycle`, and the
event history and watchers in :mod:`~precedent_sandbox.watch`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import logging
from dataclasses import dataclass
from typing import Any

from precedent_sandbox import admission, lifecycle, rbac
from precedent_sandbox import errors as api_errors
from precedent_sandbox.auth import CURRENT_USER
from precedent_sandbox.errors import FieldError
from precedent_sandbox.meta import FieldSelector, LabelSelector, generate_name
from precedent_sandbox.mutation import MutatingPolicyAdmission
from precedent_sandbox.objects import Obj, Stored, encode
from precedent_sandbox.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from precedent_sandbox.policy import PolicyAdmission
from precedent_sandbox.registry import BUILTINS, ResourceType, resource_type_from_crd
from precedent_sandbox.watch import Bucket, Event, Watcher, replay

__all__ = ["Event", "ListResult", "Store", "Stored", "Watcher", "WriteResult", "encode"]

log = logging.getLogger(__name__)

_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(slots=True)
class WriteResult:
    """What a write produced: the stored object, its HTTP code, and any warnings."""

    stored: Stored
    code: int = 200
    warnings: tuple[str, ...] = ()
    gone: bool = False
    """A DELETE removed the object at once (no finalizer held it): kube-apiserver then answers
    a ``Status`` of ``Success``, not the object."""


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
        # ValidatingAdmissionPolicies apply whatever the authorization mode, as in Kubernetes;
        # their ``authorizer`` allows everything until the sandbox turns RBAC on.
        self.policies = PolicyAdmission(self, lambda user, attrs: (True, ""))
        # MutatingAdmissionPolicies run before validation (and share the matcher above).
        self.mutations = MutatingPolicyAdmission(self)
        # Set when RBAC is on: writes of roles and bindings are checked for escalation.
        self.rbac: rbac.RbacAuthorizer | None = None
        self._aggregating = False
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

    def unregister(self, group: str, plural: str) -> None:
        """Stop serving a resource type (its CRD was deleted); its watches end."""
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
            initial = replay(bucket, watcher, str(since))
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
        obj = admission.decode_body(rtype, body)
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
        unknown = admission.normalize(rtype, obj)
        lifecycle.stamp_created(rtype, obj)
        admission.defaults_on_create(rtype, obj)
        warnings = admission.field_validation(rtype, unknown, validation)
        obj = self._mutate("CREATE", rtype, namespace, name, obj, None, None, dry_run)
        admission.validate(rtype, obj, None, name)
        admission.allocate(rtype, obj, None, lambda: self._others(rtype, namespace, name))
        if rtype.namespaced:
            lifecycle.check_namespace(self, rtype, namespace, name)
        warnings += self._admit("CREATE", rtype, namespace, name, obj, None, None, dry_run)
        bucket = self.bucket(rtype)
        if name in bucket.objects.get(namespace, {}):
            raise api_errors.already_exists(rtype.qualified, name)
        if rtype.plural == "customresourcedefinitions":
            lifecycle.accept_crd(obj)
        if dry_run:
            return WriteResult(Stored(obj, 0), 201, warnings)
        stored = self.commit(rtype, namespace, name, obj, None)
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
        obj = admission.decode_body(rtype, body)
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
        if patch_type == "strategic" and rtype.is_custom:
            # Custom resources have no patch strategies: kube-apiserver refuses the media type
            # before it looks the object up.
            raise api_errors.unsupported_media_type(
                "application/strategic-merge-patch+json", custom=True
            )
        if patch_type == "apply" and not field_manager:
            raise api_errors.invalid_options(
                "PatchOptions.meta.k8s.io",
                [FieldError("required", "fieldManager", detail="is required for apply patch")],
            )
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
            obj = apply_strategic_merge_patch(base, patch, keyed=not rtype.is_custom)
        elif patch_type == "apply":
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
        admission.check_preconditions(rtype, current, options or {})
        meta = current.obj["metadata"]
        self._admit("DELETE", rtype, namespace, name, None, current.obj, None, dry_run)
        if dry_run:
            return WriteResult(current)
        if rtype.plural == "namespaces":
            return WriteResult(lifecycle.terminate_namespace(self, current))
        if rtype.plural == "customresourcedefinitions":
            lifecycle.drop_crd(self, current)
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return WriteResult(current, 202)
            deleting = lifecycle.mark_deleting(rtype, current)
            return WriteResult(self.commit(rtype, namespace, name, deleting, current), 202)
        return WriteResult(self.remove(rtype, current), gone=True)

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
        obj = admission.decode_body(rtype, obj)
        meta = obj["metadata"]
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv not in (None, "") and str(wanted_rv) != str(current.rv):
            raise api_errors.conflict(rtype.qualified, name)
        unknown = admission.normalize(rtype, obj)
        if subresource is None:
            admission.defaults_on_update(rtype, obj)
        obj = lifecycle.updated_object(rtype, current, obj, subresource)
        meta = obj["metadata"]
        if subresource is None:
            admission.allocate(rtype, obj, old, lambda: self._others(rtype, namespace, name))
        lifecycle.check_finalizers(rtype, obj, old)
        warnings = admission.field_validation(rtype, unknown, validation)
        obj = self._mutate("UPDATE", rtype, namespace, name, obj, old, subresource, dry_run)
        meta = obj["metadata"]
        if obj == old:
            return WriteResult(current, 200, warnings)  # no-op: no new RV, no event
        admission.validate(rtype, obj, old, name)
        if rtype.plural == "customresourcedefinitions":
            admission.check_crd_update(obj, old)
            lifecycle.accept_crd(obj)
        warnings += self._admit("UPDATE", rtype, namespace, name, obj, old, subresource, dry_run)
        if dry_run:
            return WriteResult(Stored(obj, current.rv), 200, warnings)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            meta.pop("resourceVersion", None)
            return WriteResult(self.remove(rtype, current, obj), 200, warnings)
        return WriteResult(self.commit(rtype, namespace, name, obj, current), 200, warnings)

    def _others(self, rtype: ResourceType, namespace: str, name: str) -> list[Obj]:
        """Every stored object of ``rtype`` but ``namespace/name`` (what allocation must avoid)."""
        return [
            stored.obj
            for space, objects in self.bucket(rtype).objects.items()
            for key, stored in objects.items()
            if (space, key) != (namespace, name)
        ]

    def _mutate(
        self,
        operation: str,
        rtype: ResourceType,
        namespace: str,
        name: str,
        obj: Obj,
        old: Obj | None,
        subresource: str | None,
        dry_run: bool,
    ) -> Obj:
        """Mutating admission (before validation, as in kube-apiserver); the result is pruned
        to the schema again, as a webhook's patch would be."""
        mutated = self.mutations.mutate(
            operation, rtype, namespace, name, obj, old, subresource, dry_run=dry_run
        )
        if mutated is not obj:
            mutated["metadata"] = {
                **mutated.get("metadata", {}),
                **{k: obj["metadata"][k] for k in ("name", "uid") if k in obj["metadata"]},
            }
            if obj["metadata"].get("namespace"):
                mutated["metadata"]["namespace"] = obj["metadata"]["namespace"]
            admission.normalize(rtype, mutated)
        return mutated

    def _admit(
        self,
        operation: str,
        rtype: ResourceType,
        namespace: str,
        name: str,
        obj: Obj | None,
        old: Obj | None,
        subresource: str | None,
        dry_run: bool,
    ) -> tuple[str, ...]:
        """RBAC escalation checks and ValidatingAdmissionPolicies; returns their warnings."""
        if self.rbac is not None and obj is not None and rtype.group == rbac.GROUP:
            self.rbac.check_escalation(CURRENT_USER.get(), rtype.plural, obj, namespace)
        return self.policies.admit(
            operation, rtype, namespace, name, obj, old, subresource, dry_run=dry_run
        )

    def _roles_changed(self, rtype: ResourceType) -> None:
        # The aggregation controller, run at once rather than eventually.
        if rtype.plural == "clusterroles" and rtype.group == rbac.GROUP and not self._aggregating:
            self._aggregating = True
            try:
                rbac.aggregate_cluster_roles(self)
            finally:
                self._aggregating = False

    def commit(
        self, rtype: ResourceType, namespace: str, name: str, obj: Obj, old: Stored | None
    ) -> Stored:
        """Store ``obj`` as the next version (ADDED, or MODIFIED over ``old``) and tell watchers."""
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
        elif rtype.plural == "clusterroles":
            self._roles_changed(rtype)
        return stored

    def remove(self, rtype: ResourceType, current: Stored, final: Obj | None = None) -> Stored:
        """Delete ``current`` now (as ``final`` if given): a DELETED event at a new version."""
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
            lifecycle.maybe_finish_namespace(self, namespace)
        elif rtype.plural == "clusterroles":
            self._roles_changed(rtype)
        return stored


# -- helpers ----------------------------------------------------------------------------------


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
