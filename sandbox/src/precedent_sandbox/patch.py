"""Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and strategic merge.

Custom resources have no patch strategies, so the real server rejects strategic merge patches
for them; the sandbox accepts them everywhere and applies them as merge patches after
dropping the ``$``-directives, which is what they amount to for maps and atomic lists. For the
built-in kinds, the keyed lists kubectl patches (containers, ports, env, volumes …) merge item
by item on their merge key, as ``kubectl apply`` of a changed Deployment expects.
"""

from __future__ import annotations

import copy
from typing import Any

from precedent_sandbox.errors import bad_request, unprocessable

__all__ = ["apply_json_patch", "apply_merge_patch", "apply_strategic_merge_patch"]


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = apply_merge_patch(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


# patchMergeKey of the keyed lists in the built-in kinds the sandbox serves (k8s.io/api struct
# tags). ``ports`` is keyed by ``containerPort`` in a container and by ``port`` in a Service.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "conditions": "type",
    "ownerReferences": "uid",
}
_ORDER = "$setElementOrder/"


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        keyed = [i for i in items if isinstance(i, dict)]
        if keyed and all("containerPort" in i for i in keyed):
            return "containerPort"
        if keyed and all("port" in i for i in keyed):
            return "port"
        return None
    return _MERGE_KEYS.get(field)


def _merge_list(current: Any, patch: list[Any], key: str, keyed: bool) -> list[Any]:
    result = [copy.deepcopy(i) for i in current] if isinstance(current, list) else []
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            result.append(copy.deepcopy(item))
            continue
        at = next(
            (
                n
                for n, old in enumerate(result)
                if isinstance(old, dict) and old.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if at is not None:
                del result[at]
        elif at is None:
            result.append({k: copy.deepcopy(v) for k, v in item.items() if not k.startswith("$")})
        else:
            result[at] = apply_strategic_merge_patch(result[at], item, keyed=keyed)
    return result


def _reorder(items: list[Any], order: list[Any], key: str) -> list[Any]:
    wanted = [o.get(key) for o in order if isinstance(o, dict)]
    ranked = [i for w in wanted for i in items if isinstance(i, dict) and i.get(key) == w]
    return ranked + [i for i in items if not any(i is r for r in ranked)]


def apply_strategic_merge_patch(target: Any, patch: Any, *, keyed: bool = False) -> Any:
    """A strategic merge patch: maps merge, ``$patch``/``$retainKeys`` directives apply, and with
    ``keyed`` (the built-in kinds) the lists with a merge key merge item by item; other lists
    are replaced, as for custom resources, which have no patch strategies."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if not k.startswith("$")}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue  # $setElementOrder/…, $retainKeys, $deleteFromPrimitiveList/…
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = apply_strategic_merge_patch(result.get(key), value, keyed=keyed)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif keyed and isinstance(value, list) and (merge := _merge_key(key, value)):
            result[key] = _merge_list(result.get(key), value, merge, keyed)
        else:
            result[key] = copy.deepcopy(value)
    if keyed:
        for key, order in patch.items():
            field = key.removeprefix(_ORDER)
            if key.startswith(_ORDER) and isinstance(result.get(field), list):
                merge = _merge_key(field, result[field])
                if merge and isinstance(order, list):
                    result[field] = _reorder(result[field], order, merge)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        # e.g. a Deployment's strategy: switching to Recreate drops rollingUpdate.
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise unprocessable(f'the server rejected our request: invalid JSON pointer "{path}"')
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    current = doc
    for part in parts:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise unprocessable(f'doc is missing path: "{path}": missing value')
    return current


def _index(container: list[Any], part: str, path: str, *, adding: bool) -> int:
    if adding and part == "-":
        return len(container)
    if not part.isdigit():
        raise unprocessable(f'doc is missing path: "{path}": invalid index')
    index = int(part)
    limit = len(container) if adding else len(container) - 1
    if index > limit:
        raise unprocessable(f'doc is missing path: "{path}": index out of range')
    return index


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, adding=True), value)
    else:
        raise unprocessable(f'doc is missing path: "{path}": missing value')
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    parts = _pointer(path)
    if not parts:
        raise unprocessable("the server rejected our request: cannot remove the root")
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, path, adding=False))
    raise unprocessable(f'doc is missing path: "{path}": missing value')


def apply_json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902, in place on ``target`` (pass a copy); a failed ``test`` or missing path is 422."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = target
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation:
            raise bad_request("invalid JSON patch operation: missing 'op'")
        op = operation["op"]
        path = operation.get("path")
        if not isinstance(path, str):
            raise bad_request(f"invalid JSON patch operation {op!r}: missing 'path'")
        if op == "add":
            doc = _add(doc, path, copy.deepcopy(operation.get("value")))
        elif op == "remove":
            doc, _ = _remove(doc, path)
        elif op == "replace":
            parts = _pointer(path)
            if not parts:
                doc = copy.deepcopy(operation.get("value"))
                continue
            _walk(doc, parts, path)  # must exist
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(operation.get("value")))
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise bad_request(f"invalid JSON patch operation {op!r}: missing 'from'")
            if op == "move":
                doc, value = _remove(doc, source)
            else:
                value = copy.deepcopy(_walk(doc, _pointer(source), source))
            doc = _add(doc, path, value)
        elif op == "test":
            try:
                actual = _walk(doc, _pointer(path), path)
            except Exception:
                actual = None
            if actual != operation.get("value"):
                raise unprocessable(f"testing value {path} failed: test failed")
        else:
            raise bad_request(f"unexpected JSON patch operation: {op!r}")
    return doc
