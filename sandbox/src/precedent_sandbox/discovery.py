"""Discovery documents: legacy (``APIResourceList`` …) and aggregated v2.

kopf reads the legacy documents; kubectl 1.32 asks for aggregated discovery
(``apidiscovery.k8s.io/v2``). The OpenAPI documents are :mod:`.openapi`'s.
"""

from __future__ import annotations

import hashlib
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
    "version_info",
]

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version order: GA > beta > alpha, higher numbers first; others last."""
    found = _VERSION.fullmatch(version)
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
