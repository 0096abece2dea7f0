"""The OpenAPI documents kube-apiserver serves, built from the kinds the sandbox serves.

``/openapi/v3`` lists one document per group-version (``{"paths": {"apis/apps/v1":
{"serverRelativeURL": "/openapi/v3/apis/apps/v1?hash=…"}}}``); each has the REST ``paths`` of its
kinds and their schemas under ``components.schemas``. ``/openapi/v2`` is the whole API as one
swagger 2.0 document (``definitions``). Built-in kinds have Kubernetes 1.36's own definitions
(:mod:`.builtin_schemas`); a custom resource has its CRD's ``openAPIV3Schema`` with ``apiVersion``,
``kind`` and ``metadata`` (a reference to ``ObjectMeta``) added, as kube-apiserver builds it.
Both are rebuilt from the registry on every request, so a CRD created, changed or deleted shows
at once (with a new hash in the v3 index).

Every kind's PATCH operation lists the ``fieldValidation`` query parameter: kubectl 1.32 then
validates nothing itself and sends ``fieldValidation=Strict`` (unknown and duplicate fields are
refused by the server, see :mod:`.admission`). The PATCH operations list no strategic-merge
content type, so kubectl builds strategic merge patches for built-in kinds from its compiled-in
types, not from these documents.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from precedent_sandbox import builtin_schemas
from precedent_sandbox.registry import ResourceType

__all__ = ["definition_name", "v2_document", "v3_document", "v3_index"]

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_V2_REF = "#/definitions/"
_V3_REF = "#/components/schemas/"
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_QUERY = ("dryRun", "fieldManager", "fieldValidation")


def _prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def definition_name(rtype: ResourceType, version: str) -> str:
    """``io.k8s.api.apps.v1.Deployment`` for a built-in kind, ``dev.precedent.v1alpha1.Playbook``
    (the group reversed) for a custom resource, as kube-apiserver names them."""
    if rtype.schema is None:
        found = builtin_schemas.definition_for(rtype.group, version, rtype.kind)
        if found is not None:
            return found
    reversed_group = (
        ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    )
    return f"{reversed_group}.{version}.{rtype.kind}"


def _custom_schema(rtype: ResourceType, version: str) -> dict[str, Any]:
    """A CRD's schema as kube-apiserver publishes it: apiVersion, kind and metadata added."""
    schema: dict[str, Any] = copy.deepcopy(rtype.schema.raw) if rtype.schema else {}
    schema.setdefault("type", "object")
    # The wording of the three added fields is the API's own (from any built-in kind).
    standard = builtin_schemas.definitions()["io.k8s.api.core.v1.ConfigMap"]["properties"]
    properties = schema.setdefault("properties", {})
    for field in ("apiVersion", "kind"):
        properties[field] = copy.deepcopy(standard[field])
    properties["metadata"] = {
        "$ref": _V2_REF + _OBJECT_META,
        "description": standard["metadata"]["description"],
    }
    gvk = {"group": rtype.group, "version": version, "kind": rtype.kind}
    schema["x-kubernetes-group-version-kind"] = [gvk]
    return schema


def _schemas(types: Iterable[tuple[ResourceType, str]]) -> dict[str, Any]:
    """Definition name → swagger 2.0 schema: the kinds' own and every definition they reach."""
    builtin = builtin_schemas.definitions()
    found: dict[str, Any] = {}
    todo: list[str] = []
    for rtype, version in types:
        name = definition_name(rtype, version)
        if name in builtin and rtype.schema is None:
            todo.append(name)
        else:
            found[name] = _custom_schema(rtype, version)
            todo.append(_OBJECT_META)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found[name] = builtin[name]
        todo.extend(_refs(found[name]))
    return dict(sorted(found.items()))


def _refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.append(value.removeprefix(_V2_REF))
            elif key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    found.extend(_refs(sub))
            else:
                found.extend(_refs(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_refs(item))
    return found


def _to_v3(node: Any) -> Any:
    """A swagger 2.0 schema as OpenAPI v3: references to ``#/components/schemas/``; a reference
    with sibling keys (a description) wrapped in ``allOf``, as kube-apiserver's v3 has it."""
    if isinstance(node, list):
        return [_to_v3(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref":
            continue
        if key == "properties" and isinstance(value, dict):
            # Property names are not keywords (JSONSchemaProps has a property called "$ref").
            out[key] = {name: _to_v3(sub) for name, sub in value.items()}
        else:
            out[key] = _to_v3(value)
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = {"$ref": _V3_REF + ref.removeprefix(_V2_REF)}
        if out:
            out["allOf"] = [target]
        else:
            out = target
    return out


@functools.cache
def _builtin_v3(name: str) -> Any:
    converted = _to_v3(builtin_schemas.definitions()[name])
    return converted


def _operations(
    rtype: ResourceType, version: str, ref: str, *, v3: bool
) -> dict[str, dict[str, Any]]:
    """The collection and item paths of one kind, with the verbs and PATCH parameters."""
    gvk = {"group": rtype.group, "version": version, "kind": rtype.kind}
    params: list[dict[str, Any]]
    if v3:
        params = [
            {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for n in _QUERY
        ]
        body: dict[str, Any] = {"content": {"application/json": {"schema": {"$ref": ref}}}}
        response: dict[str, Any] = {"200": {"description": "OK", **body}}
    else:
        params = [{"name": n, "in": "query", "type": "string", "uniqueItems": True} for n in _QUERY]
        response = {"200": {"description": "OK", "schema": {"$ref": ref}}}
    common = {"x-kubernetes-group-version-kind": gvk, "responses": response}

    def op(action: str, **extra: Any) -> dict[str, Any]:
        return {**common, "x-kubernetes-action": action, "parameters": params, **extra}

    def with_body(action: str) -> dict[str, Any]:
        if v3:
            return op(action, requestBody=body)
        payload = {"name": "body", "in": "body", "required": True, "schema": {"$ref": ref}}
        return op(action, parameters=[payload, *params])

    if v3:
        patch_body = {"content": {t: {"schema": {"type": "object"}} for t in _PATCH_TYPES}}
        patch = op("patch", requestBody=patch_body)
    else:
        payload = {"name": "body", "in": "body", "required": True, "schema": {"type": "object"}}
        patch = op("patch", consumes=list(_PATCH_TYPES), parameters=[payload, *params])
    scope = "/namespaces/{namespace}" if rtype.namespaced else ""
    collection = f"{_prefix(rtype.group, version)}{scope}/{rtype.plural}"
    return {
        collection: {"get": op("list"), "post": with_body("post")},
        f"{collection}/{{name}}": {
            "get": op("get"),
            "put": with_body("put"),
            "patch": patch,
            "delete": op("delete"),
        },
    }


def _served(types: Iterable[ResourceType]) -> list[tuple[ResourceType, str]]:
    return sorted(
        ((t, v) for t in types for v in t.served_versions),
        key=lambda tv: (tv[0].group, tv[1], tv[0].plural),
    )


def v3_document(types: Iterable[ResourceType], group: str, version: str) -> dict[str, Any] | None:
    """``/openapi/v3/apis/{group}/{version}`` (``/openapi/v3/api/v1``), or None if not served."""
    chosen = [(t, v) for t, v in _served(types) if t.group == group and v == version]
    if not chosen:
        return None
    paths: dict[str, Any] = {}
    for rtype, served in chosen:
        ref = _V3_REF + definition_name(rtype, served)
        paths.update(_operations(rtype, served, ref, v3=True))
    builtin = builtin_schemas.definitions()
    schemas = {
        name: _builtin_v3(name) if builtin.get(name) is schema else _to_v3(schema)
        for name, schema in _schemas(chosen).items()
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v{builtin_schemas.KUBERNETES_VERSION}"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def v3_index(types: Iterable[ResourceType]) -> dict[str, Any]:
    """``/openapi/v3``: each served group-version (``api/v1`` for core) and its document's URL,
    whose ``hash`` changes when the document does (kubectl caches documents by URL)."""
    listed = list(types)
    paths: dict[str, Any] = {}
    for group, version in sorted({(t.group, v) for t, v in _served(listed)}):
        document = v3_document(listed, group, version)
        digest = hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()
        key = _prefix(group, version).lstrip("/")
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest[:128].upper()}"}
    return {"paths": paths}


def v2_document(types: Iterable[ResourceType]) -> dict[str, Any]:
    """``/openapi/v2``: every served kind's paths, and the definitions, as swagger 2.0."""
    chosen = _served(types)
    paths: dict[str, Any] = {}
    for rtype, served in chosen:
        paths.update(_operations(rtype, served, _V2_REF + definition_name(rtype, served), v3=False))
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": f"v{builtin_schemas.KUBERNETES_VERSION}"},
        "paths": dict(sorted(paths.items())),
        "definitions": _schemas(chosen),
    }
