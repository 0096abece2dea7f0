"""The guard's reads and writes through the operator's API client (services.guard)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from precedent.adapters.kube_api import KubeApi
from precedent.core.guard import GuardedChange
from precedent.core.kinds import KIND_PATHS
from precedent.core.normalize import canonical_resource_type

__all__ = ["ApiGuardCluster"]

COMPONENT = "precedent-guard"


class ApiGuardCluster:
    """Lists a namespace's requests, records a request's use and writes records."""

    def __init__(self, api: KubeApi) -> None:
        self._api = api

    async def requests_in(self, namespace: str) -> list[dict[str, Any]]:
        """Every RemediationRequest of ``namespace``."""
        return await self._api.list_requests(namespace)

    async def mark_used(
        self, namespace: str, name: str, resource_version: str, used: Mapping[str, Any]
    ) -> None:
        """``status.guard`` written if the request is unchanged since ``resource_version``."""
        await self._api.patch_request_status(
            namespace, name, {"guard": dict(used)}, resource_version
        )

    async def record(self, change: GuardedChange, body: Mapping[str, Any], event: str) -> None:
        """The record request and a Warning Event on the target."""
        await self._api.create_request(change.home, body)
        # An Event lives in its object's namespace; a cluster-scoped object's in default.
        namespace = change.namespace or "default"
        prefix, _, _ = KIND_PATHS.get(canonical_resource_type(change.kind), ("/api/v1", "", True))
        api_version = prefix.removeprefix("/apis/").removeprefix("/api/")
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        reason = "GuardBreakGlass" if event.startswith("break-glass") else "GuardWarned"
        await self._api.create_event(
            namespace,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{change.name[:200]}.guard-", "namespace": namespace},
                "involvedObject": {
                    "apiVersion": api_version,
                    "kind": change.kind,
                    "name": change.name,
                    **({"namespace": change.namespace} if change.namespace else {}),
                },
                "reason": reason,
                "message": event[:1024],
                "type": "Warning",
                "source": {"component": COMPONENT},
                "reportingComponent": COMPONENT,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            },
        )
