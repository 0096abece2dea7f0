"""A small async client for the few calls kopf does not make: creating Incident objects and
Events, patching a Playbook's status, and reading and patching the request an approval points at.

It talks to the API server with the same credentials kopf logs in with: the handlers turn
kopf's ``ConnectionInfo`` into an :class:`ApiConnection` (server, auth headers, TLS context) and
hand over a ``login`` callable that produces a fresh one, used once after a 401 (service account
tokens are rotated on disk). No Kubernetes client library is needed for two verbs on two paths.

It is an aiohttp session, the HTTP client kopf itself talks to the API server with: every answered
request posts a decision Event through it, and aiohttp's keep-alive pool costs about a sixth of
the CPU per request that an httpx/httpcore pool of the same size did (the operator benchmark).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp

from precedent.errors import DependencyError, InputError

__all__ = ["API_PREFIX", "ApiConnection", "KubeApi"]

API_PREFIX = "/apis/precedent.dev/v1alpha1"
"""Where Precedent's own resources are served."""

Created = Literal["created", "exists"]


@dataclass(frozen=True, slots=True)
class ApiConnection:
    """Where the API server is and how to authenticate to it."""

    server: str
    """Base URL, e.g. ``https://10.0.0.1:443``."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Authorization headers (bearer token or basic auth)."""
    verify: ssl.SSLContext | bool = True
    """TLS: a context with the cluster CA and any client certificate, or a bool."""


Login = Callable[[], Awaitable[ApiConnection]]


@dataclass(frozen=True, slots=True)
class _Response:
    """A read response: the status and the body."""

    status: int
    body: bytes

    @property
    def is_success(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)


class KubeApi:
    """Creates Incidents and Events and merges Playbook status over one pooled session."""

    def __init__(
        self,
        connection: ApiConnection,
        *,
        login: Login | None = None,
        timeout: float = 10.0,
        connections: int = 32,
    ) -> None:
        self._login = login
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        # Every connection is kept between bursts (no reconnect per request).
        self._connections = connections
        self._connection = connection
        # Made on first use: an aiohttp session belongs to the running event loop.
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    def _client(self) -> aiohttp.ClientSession:
        if self._closed:  # a late call after shutdown opens no session nobody would close
            raise DependencyError("the API client is closed (the operator is stopping)")
        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers=dict(self._connection.headers),
                timeout=self._timeout,
                connector=aiohttp.TCPConnector(
                    limit=self._connections, ssl=self._connection.verify
                ),
            )
        return self._session

    async def _request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
        params: Mapping[str, str] | None = None,
    ) -> _Response:
        data = None if body is None else json.dumps(dict(body)).encode()
        headers = {"Content-Type": content_type} if data is not None else None
        for attempt in (1, 2):
            try:
                url = self._connection.server.rstrip("/") + path
                async with self._client().request(
                    method, url, data=data, headers=headers, params=params
                ) as response:
                    status, content = response.status, await response.read()
            except (TimeoutError, aiohttp.ClientError) as exc:
                reason = str(exc) or type(exc).__name__
                raise DependencyError(
                    f"API server unreachable ({method} {path}): {reason}"
                ) from exc
            if status == 401 and attempt == 1 and self._login is not None:
                # Credentials expired (a rotated token): log in again, retry once.
                self._connection = await self._login()
                stale, self._session = self._session, None
                if stale is not None:
                    await stale.close()
                continue
            return _Response(status, content)
        raise AssertionError("unreachable")  # pragma: no cover - the loop always returns

    async def _send(
        self, method: str, path: str, body: Mapping[str, Any], content_type: str
    ) -> _Response:
        return await self._request(method, path, body=body, content_type=content_type)

    async def list_objects(
        self, prefix: str, plural: str, *, page: int = 500
    ) -> list[dict[str, Any]]:
        """Every object of ``plural`` under ``prefix`` (``/apis/apps/v1``) in all namespaces,
        read in pages of ``page``; each item gets no ``kind`` (lists leave it out)."""
        path = f"{prefix}/{plural}"
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            params = {"limit": str(page), **({"continue": token} if token else {})}
            response = await self._request("GET", path, params=params)
            _raise_for(response, f"list {plural}")
            body = response.json()
            items.extend(dict(item) for item in body.get("items") or [])
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    async def get_object(self, path: str, *, cached: bool = False) -> dict[str, Any] | None:
        """GET one object at ``path``; None if it does not exist (404). ``cached``: as the API
        server's watch cache has it (``resourceVersion=0``: no read from etcd, at most the
        cache's lag behind it), for reads that are checked again before anything acts on
        them."""
        params = {"resourceVersion": "0"} if cached else None
        response = await self._request("GET", path, params=params)
        if response.status == 404:
            return None
        _raise_for(response, f"get {path}")
        return dict(response.json())

    async def list_path(self, path: str, *, limit: int = 500) -> list[dict[str, Any]]:
        """The first ``limit`` objects of the list at ``path`` (one page)."""
        response = await self._request("GET", path, params={"limit": str(limit)})
        _raise_for(response, f"list {path}")
        return [dict(item) for item in response.json().get("items") or []]

    async def create_incident(self, body: Mapping[str, Any]) -> Created:
        """POST an Incident; ``exists`` when an object of that name is already there (409)."""
        response = await self._send("POST", f"{API_PREFIX}/incidents", body, "application/json")
        if response.status == 409:
            return "exists"
        _raise_for(response, "create Incident")
        return "created"

    async def patch_playbook_status(self, name: str, status: Mapping[str, Any]) -> bool:
        """Merge ``status`` into Playbook ``name``'s status; False if the playbook is gone."""
        response = await self._send(
            "PATCH",
            f"{API_PREFIX}/playbooks/{name}/status",
            {"status": dict(status)},
            "application/merge-patch+json",
        )
        if response.status == 404:
            return False
        _raise_for(response, f"patch Playbook {name} status")
        return True

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> Created:
        """POST a core/v1 Event; ``exists`` when one of that name is already there (409)."""
        response = await self._send(
            "POST", f"/api/v1/namespaces/{namespace}/events", body, "application/json"
        )
        if response.status == 409:
            return "exists"
        _raise_for(response, "create Event")
        return "created"

    async def get_request(self, namespace: str, name: str) -> dict[str, Any] | None:
        """GET RemediationRequest ``namespace/name``; None if it does not exist."""
        path = f"{API_PREFIX}/namespaces/{namespace}/remediationrequests/{name}"
        response = await self._request("GET", path)
        if response.status == 404:
            return None
        _raise_for(response, f"get RemediationRequest {namespace}/{name}")
        return dict(response.json())

    async def patch_request_status(
        self, namespace: str, name: str, status: Mapping[str, Any], resource_version: str
    ) -> None:
        """Merge into a request's status if it is unchanged since ``resource_version``;
        DependencyError on a conflict (someone wrote it meanwhile: judge again)."""
        response = await self._send(
            "PATCH",
            f"{API_PREFIX}/namespaces/{namespace}/remediationrequests/{name}/status",
            {"metadata": {"resourceVersion": resource_version}, "status": dict(status)},
            "application/merge-patch+json",
        )
        _raise_for(response, f"patch RemediationRequest {namespace}/{name} status")

    async def list_requests(self, namespace: str) -> list[dict[str, Any]]:
        """Every RemediationRequest of ``namespace``."""
        return await self.list_path(
            f"{API_PREFIX}/namespaces/{namespace}/remediationrequests", limit=500
        )

    async def create_request(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST a RemediationRequest (``generateName`` allowed); the object created."""
        response = await self._send(
            "POST",
            f"{API_PREFIX}/namespaces/{namespace}/remediationrequests",
            body,
            "application/json",
        )
        _raise_for(response, f"create RemediationRequest in {namespace}")
        return dict(response.json())

    async def patch_object(
        self, path: str, body: Mapping[str, Any], content_type: str = "application/merge-patch+json"
    ) -> dict[str, Any]:
        """PATCH the object at ``path``; the object after."""
        response = await self._send("PATCH", path, body, content_type)
        _raise_for(response, f"patch {path}")
        return dict(response.json())

    async def create_object(self, path: str, body: Mapping[str, Any]) -> Created:
        """POST ``body`` to the list at ``path``; ``exists`` when it is there already (409)."""
        response = await self._send("POST", path, body, "application/json")
        if response.status == 409:
            return "exists"
        _raise_for(response, f"create in {path}")
        return "created"

    async def list_cluster_objects(self, plural: str, *, page: int = 500) -> list[dict[str, Any]]:
        """Every object of a Precedent resource (``incidents``, ``playbooks``; requests in all
        namespaces), read in pages of ``page``."""
        return await self.list_objects(API_PREFIX, plural, page=page)

    async def aclose(self) -> None:
        """Close the pooled connections; later calls fail instead of opening new ones."""
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None


def _raise_for(response: _Response, what: str) -> None:
    if response.is_success:
        return
    try:
        message = str(response.json().get("message", response.text))
    except ValueError:
        message = response.text
    text = f"cannot {what}: HTTP {response.status}: {message.strip()[:500]}"
    if response.status in (400, 422):
        raise InputError(text)  # the body itself was refused: the same write cannot succeed
    # 403 (RBAC not granted yet), 5xx, 429: retrying later can succeed.
    raise DependencyError(text)
