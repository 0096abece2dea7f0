"""Discovery documents: legacy (``APIResourceList`` …), aggregated v2, and OpenAPI v3.

kopf reads the legacy documents; kubectl 1.32 asks for aggregated discovery
(``apidiscovery.k8s.io/v2``) and reads ``/openapi/v3`` to learn that the server validates
fields itself (``fieldValidation``), so ``kubectl apply`` needs no ``--validate=false``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from precedent_sandbox.registry import STATUS_VERBS, ResourceType

__all__ = [
    "aggregated",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "openapi_document",
    "openapi_paths",
    "version_info",
]

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version order: GA > beta > alpha, higher numbers first; others last."""
    found = _VERSION.match(version)
    if not found:
        return (3, 0, 0, version)
    major, stage, minor = found.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


def version_info() -> dict[str, Any]:
    """``/version``."""
    return {
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-precedent-sandbox",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def _group_versions(types: Iterable[ResourceType]) -> dict[str, list[str]]:
    groups: dict[str, set[str]] = {}
    for rtype in types:
        groups.setdefault(rtype.group, set()).update(rtype.served_versions)
    return {g: sorted(v, key=version_priority) for g, v in groups.items()}


def api_versions(address: str) -> dict[str, Any]:
    """``/api``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(types: Iterable[ResourceType]) -> dict[str, Any]:
    """``/apis``."""
    groups = _group_versions(types)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(g, v) for g, v in sorted(groups.items()) if g],
    }


def api_group(types: Iterable[ResourceType], group: str) -> dict[str, Any] | None:
    """``/apis/{group}``, or None if no such group."""
    versions = _group_versions(types).get(group)
    if not versions or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _storage_hash(rtype: ResourceType) -> str:
    digest = hashlib.sha256(f"{rtype.group}/{rtype.version}/{rtype.kind}".encode()).digest()
    return digest[:8].hex()


def api_resource_list(
    types: Iterable[ResourceType], group: str, version: str
) -> dict[str, Any] | None:
    """``/api/v1`` or ``/apis/{group}/{version}``, or None if nothing is served there."""
    resources: list[dict[str, Any]] = []
    for rtype in sorted(types, key=lambda t: t.plural):
        if rtype.group != group or version not in rtype.served_versions:
            continue
        entry: dict[str, Any] = {
            "name": rtype.plural,
            "singularName": rtype.singular,
            "namespaced": rtype.namespaced,
            "kind": rtype.kind,
            "verbs": rtype.verbs,
            "storageVersionHash": _storage_hash(rtype),
        }
        if rtype.short_names:
            entry["shortNames"] = rtype.short_names
        if rtype.categories:
            entry["categories"] = rtype.categories
        resources.append(entry)
        for sub in rtype.subresources:
            resources.append(
                {
                    "name": f"{rtype.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rtype.namespaced,
                    "kind": rtype.kind if sub == "status" else "Scale",
                    "verbs": STATUS_VERBS,
                }
            )
    if not resources:
        return None
    group_version = f"{group}/{version}" if group else version
    body: dict[str, Any] = {"kind": "APIResourceList", "groupVersion": group_version}
    if group:
        body["apiVersion"] = "v1"
    body["resources"] = resources
    return body


def aggregated(types: Iterable[ResourceType], *, core: bool, version: str) -> dict[str, Any]:
    """``/api`` or ``/apis`` as an ``APIGroupDiscoveryList`` (``version`` is v2 or v2beta1)."""
    by_group: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for rtype in sorted(types, key=lambda t: t.plural):
        if (rtype.group == "") != core:
            continue
        for served in rtype.served_versions:
            kind = {"group": rtype.group, "version": served, "kind": rtype.kind}
            entry: dict[str, Any] = {
                "resource": rtype.plural,
                "responseKind": kind,
                "scope": "Namespaced" if rtype.namespaced else "Cluster",
                "singularResource": rtype.singular,
                "verbs": rtype.verbs,
            }
            if rtype.short_names:
                entry["shortNames"] = rtype.short_names
            if rtype.categories:
                entry["categories"] = rtype.categories
            if rtype.subresources:
                entry["subresources"] = [
                    {
                        "subresource": sub,
                        "responseKind": kind
                        if sub == "status"
                        else {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                        "verbs": STATUS_VERBS,
                    }
                    for sub in rtype.subresources
                ]
            by_group.setdefault(rtype.group, {}).setdefault(served, []).append(entry)
    items = []
    for group in sorted(by_group):
        versions = sorted(by_group[group], key=version_priority)
        items.append(
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {"version": v, "resources": by_group[group][v], "freshness": "Current"}
                    for v in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }


# -- OpenAPI v3 -------------------------------------------------------------------------------

_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


def _definition_name(rtype: ResourceType, version: str) -> str:
    reversed_group = (
        ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    )
    return f"{reversed_group}.{version}.{rtype.kind}"


def openapi_document(
    types: Iterable[ResourceType], group: str, version: str
) -> dict[str, Any] | None:
    """``/openapi/v3/apis/{group}/{version}``: paths with their PATCH parameters, and schemas."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rtype in types:
        if rtype.group != group or version not in rtype.served_versions:
            continue
        gvk = {"group": group, "version": version, "kind": rtype.kind}
        ref = f"#/components/schemas/{_definition_name(rtype, version)}"
        body = {"content": {"application/json": {"schema": {"$ref": ref}}}}
        params = [
            {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for n in ("dryRun", "fieldManager", "fieldValidation")
        ]
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        scope = "/namespaces/{namespace}" if rtype.namespaced else ""
        item_path = f"{prefix}{scope}/{rtype.plural}/{{name}}"
        operation = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": params,
            "responses": {"200": body},
        }
        paths[f"{prefix}{scope}/{rtype.plural}"] = {
            "get": {**operation, "x-kubernetes-action": "list"},
            "post": {**operation, "x-kubernetes-action": "post", "requestBody": body},
        }
        paths[item_path] = {
            "get": {**operation, "x-kubernetes-action": "get"},
            "put": {**operation, "x-kubernetes-action": "put", "requestBody": body},
            "patch": {
                **operation,
                "x-kubernetes-action": "patch",
                "requestBody": {
                    "content": {t: {"schema": {"type": "object"}} for t in _PATCH_TYPES}
                },
            },
            "delete": {**operation, "x-kubernetes-action": "delete"},
        }
        schema: dict[str, Any] = (
            dict(rtype.schema.raw) if rtype.schema is not None else {"type": "object"}
        )
        schema["x-kubernetes-group-version-kind"] = [gvk]
        schemas[_definition_name(rtype, version)] = schema
    if not paths:
        return None
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def openapi_paths(types: Iterable[ResourceType]) -> dict[str, Any]:
    """``/openapi/v3``: one entry per served group-version (``api/v1`` for core), with a hash.

    Their PATCH operations list ``fieldValidation`` (so kubectl leaves validation to the
    server) and no strategic-merge content type (so kubectl builds strategic merge patches for
    core types from its compiled-in types, not from a schema the sandbox does not have).
    """
    listed = list(types)
    paths: dict[str, Any] = {}
    for group, versions in _group_versions(listed).items():
        for version in versions:
            document = openapi_document(listed, group, version)
            digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
            key = f"apis/{group}/{version}" if group else f"api/{version}"
            url = f"/openapi/v3/{key}?hash={digest[:32].upper()}"
            paths[key] = {"serverRelativeURL": url}
    return {"paths": paths}
