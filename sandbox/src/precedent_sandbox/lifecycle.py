"""Object lifecycle: what the server sets, keeps and cleans up over an object's life.

Server-owned metadata on create (uid, creationTimestamp, generation) and carried over on every
update, generation bumps, status as a subresource, finalizers and ``deletionTimestamp``, CRDs
becoming established (and their objects going with them), and namespaces terminating. The
functions that change other objects write through the :class:`~precedent_sandbox.store.Store`.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from precedent_sandbox import errors as api_errors
from precedent_sandbox.errors import FieldError
from precedent_sandbox.meta import now_rfc3339
from precedent_sandbox.objects import Obj, Stored
from precedent_sandbox.registry import ResourceType
from precedent_sandbox.workloads import initial_status

if TYPE_CHECKING:
    from precedent_sandbox.store import Store

__all__ = [
    "accept_crd",
    "check_finalizers",
    "check_namespace",
    "drop_crd",
    "mark_deleting",
    "maybe_finish_namespace",
    "stamp_created",
    "terminate_namespace",
    "updated_object",
]

# Set by the server only: carried over from the stored object on every update.
_SERVER_META = (
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def stamp_created(rtype: ResourceType, obj: Obj) -> None:
    """Server-owned metadata of a new object: uid, creationTimestamp, generation 1, no status."""
    meta = obj["metadata"]
    if rtype.has_status and rtype.is_custom:
        obj.pop("status", None)  # create cannot set status when it is a subresource
    elif rtype.strategy is not None and rtype.has_status:
        # Built-in kinds reset status on create (PrepareForCreate): only /status writes it.
        obj["status"] = initial_status(rtype.strategy)
    for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_rfc3339()
    if rtype.has_generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)


def updated_object(rtype: ResourceType, current: Stored, obj: Obj, subresource: str | None) -> Obj:
    """The next version of ``current`` from a normalized write ``obj`` (main or ``/status``).

    A status write changes status only; a main-resource write keeps the stored status (when it
    is a subresource) and the server-owned metadata, and bumps ``generation`` when anything
    outside metadata and status changed.
    """
    old = current.obj
    old_meta = old["metadata"]
    if subresource == "status":
        # A status write changes status only: everything else comes from the stored object.
        fresh = current.copy()
        if "status" in obj:
            fresh["status"] = obj["status"]
        else:
            fresh.pop("status", None)
        obj = fresh
    else:
        meta = obj["metadata"]
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
        meta["name"] = old_meta["name"]
        if rtype.namespaced:
            meta["namespace"] = old_meta.get("namespace", "")
        else:
            meta.pop("namespace", None)
        if rtype.plural == "namespaces":
            obj["spec"] = old.get("spec", {})
            obj["status"] = old.get("status", {})
        if rtype.has_generation and _spec_changed(rtype, obj, old):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
    obj["metadata"]["resourceVersion"] = str(current.rv)
    return obj


def check_finalizers(rtype: ResourceType, obj: Obj, old: Obj) -> None:
    """422 when an update adds finalizers to an object that is being deleted."""
    meta, old_meta = obj["metadata"], old["metadata"]
    if not old_meta.get("deletionTimestamp"):
        return
    added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
    if added:
        raise api_errors.invalid(
            rtype.kind,
            rtype.group,
            old_meta["name"],
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


def mark_deleting(rtype: ResourceType, current: Stored) -> Obj:
    """``current`` with ``deletionTimestamp`` set: kept while its finalizers remain."""
    obj = current.copy()
    obj["metadata"]["deletionTimestamp"] = now_rfc3339()
    obj["metadata"]["deletionGracePeriodSeconds"] = 0
    if rtype.has_generation:
        obj["metadata"]["generation"] = int(current.obj["metadata"].get("generation", 1)) + 1
    return obj


# -- CRDs ----------------------------------------------------------------------------------------


def accept_crd(obj: Obj) -> None:
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


def drop_crd(store: Store, current: Stored) -> None:
    """Deleting a CRD deletes its objects at once (their finalizers are not waited for)."""
    spec = current.obj.get("spec", {})
    key = (spec.get("group", ""), spec.get("names", {}).get("plural", ""))
    rtype = store.types.get(key)
    if rtype is None or not rtype.is_custom:
        return
    bucket = store.buckets[key]
    for space in list(bucket.objects):
        for stored in list(bucket.objects.get(space, {}).values()):
            store.remove(rtype, stored)
    store.unregister(*key)


# -- namespaces ------------------------------------------------------------------------------


def check_namespace(store: Store, rtype: ResourceType, namespace: str, name: str) -> None:
    """404 for a missing namespace, 403 for one being terminated."""
    space = store.buckets[("", "namespaces")].objects.get("", {}).get(namespace)
    if space is None:
        raise api_errors.not_found("namespaces", namespace)
    if space.obj["metadata"].get("deletionTimestamp"):
        raise api_errors.forbidden(
            rtype.qualified,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
        )


def terminate_namespace(store: Store, current: Stored) -> Stored:
    """Mark a namespace Terminating, delete its content, and remove it once empty."""
    namespaces = store.types[("", "namespaces")]
    name = current.obj["metadata"]["name"]
    if not current.obj["metadata"].get("deletionTimestamp"):
        obj = current.copy()
        obj["metadata"]["deletionTimestamp"] = now_rfc3339()
        obj["status"] = {"phase": "Terminating"}
        current = store.commit(namespaces, "", name, obj, current)
    for key, bucket in list(store.buckets.items()):
        rtype = store.types.get(key)
        if rtype is None or not rtype.namespaced:
            continue
        for stored in list(bucket.objects.get(name, {}).values()):
            if not stored.obj["metadata"].get("deletionTimestamp"):
                store.delete(rtype, name, stored.obj["metadata"]["name"])
    return maybe_finish_namespace(store, name) or current


def maybe_finish_namespace(store: Store, name: str) -> Stored | None:
    """Remove a Terminating namespace once nothing is left in it."""
    namespaces = store.buckets.get(("", "namespaces"))
    if namespaces is None:
        return None
    space = namespaces.objects.get("", {}).get(name)
    if space is None or not space.obj["metadata"].get("deletionTimestamp"):
        return None
    for key, bucket in store.buckets.items():
        rtype = store.types.get(key)
        if rtype is not None and rtype.namespaced and bucket.objects.get(name):
            return None
    return store.remove(namespaces.rtype, space)


# -- helpers ----------------------------------------------------------------------------------


def _spec_changed(rtype: ResourceType, new: Obj, old: Obj) -> bool:
    """Whether anything outside metadata (and status, if a subresource) changed."""
    skip = {"metadata", "apiVersion", "kind"}
    if rtype.has_status:
        skip.add("status")
    keys = (set(new) | set(old)) - skip
    return any(new.get(k) != old.get(k) for k in keys)


def _go_strings(values: list[str]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
