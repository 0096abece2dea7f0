"""A manifest change read as the requests that would ask for it (``precedent score --diff``).

The objects as they are (in the cluster, or the target branch: BEFORE) and as a pull request
leaves them (AFTER) are paired by kind, namespace and name; each pair the guard would weigh
(core.guard: fewer replicas, a new image, a delete of a StatefulSet, PVC or Namespace, a
RoleBinding to a powerful role) becomes the RemediationRequest that would ask for exactly that
change. Objects only in BEFORE are deletes; objects only in AFTER are new, and only a new
RoleBinding is weighed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from precedent.adapters.loader import NamedRequest, iter_documents
from precedent.core.guard import change_of, plural_of, request_for
from precedent.models import RemediationRequestSpec

__all__ = ["load_manifest_changes"]

Key = tuple[str, str, str]


def _objects(paths: Iterable[str | Path]) -> dict[Key, tuple[Mapping[str, Any], str]]:
    found: dict[Key, tuple[Mapping[str, Any], str]] = {}
    for doc in iter_documents(paths):
        body = doc.body
        kind = body.get("kind")
        meta = body.get("metadata")
        if not isinstance(kind, str) or not isinstance(meta, Mapping):
            continue
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            continue
        namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
        found[(kind, str(namespace or ""), name)] = (body, doc.where)
    return found


def load_manifest_changes(
    before: Iterable[str | Path], after: Iterable[str | Path], requester: str = "a pull request"
) -> list[NamedRequest]:
    """The requests for every change from ``before`` to ``after`` the guard would weigh."""
    old, new = _objects(before), _objects(after)
    requests = []
    for key in sorted(set(old) | set(new)):
        kind, namespace, name = key
        plural = plural_of(kind)
        if plural is None:
            continue
        was, now = old.get(key), new.get(key)
        if was is not None and now is None:
            operation, where = "DELETE", f"{was[1]} (deleted)"
        elif was is None and now is not None:
            operation, where = "CREATE", now[1]
        elif was is not None and now is not None:
            operation, where = "UPDATE", now[1]
        else:  # pragma: no cover - the key came from one of the two
            continue
        change = change_of(
            plural,
            None,
            operation,
            namespace or None,
            name,
            was[0] if was else None,
            now[0] if now else None,
        )
        if change is None:
            continue
        body = request_for(change, requester)
        spec = RemediationRequestSpec.model_validate(body["spec"])
        requests.append(
            NamedRequest(
                f"{change.kind.lower()}-{name}"[:63],
                namespace or None,
                spec,
                where,
            )
        )
    return requests
