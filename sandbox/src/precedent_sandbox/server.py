"""The HTTP face of the sandbox: an aiohttp server speaking the Kubernetes REST API.

:class:`Sandbox` runs it on the current event loop (``async with Sandbox() as sb``);
:class:`SandboxThread` runs it on a loop of its own in a background thread, for synchronous
tests and for a kopf operator started in the same process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from precedent_sandbox import discovery
from precedent_sandbox import errors as api_errors
from precedent_sandbox.errors import ApiError
from precedent_sandbox.meta import FieldSelector, LabelSelector
from precedent_sandbox.protobuf import decode_object
from precedent_sandbox.registry import ResourceType
from precedent_sandbox.store import Event, Store, Stored, Watcher, encode
from precedent_sandbox.table import make_table

__all__ = ["DEFAULT_CRDS_DIR", "Sandbox", "SandboxThread", "load_crd_documents"]

log = logging.getLogger(__name__)

# The repository's crds/ (operator/precedent/sandbox/server.py → repo root); absent in a wheel.
DEFAULT_CRDS_DIR = Path(__file__).resolve().parents[3] / "crds"

_JSON = "application/json"
_PROTOBUF = "application/vnd.kubernetes.protobuf"
_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "unsupported",
}


# libyaml's loader when present: the pure-Python one dominates a sandbox's start-up time.
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PARSED: dict[tuple[str, float], list[Any]] = {}


def _documents(path: Path) -> list[Any]:
    # Parsed once per file version: test suites start many sandboxes from the same crds/.
    key = (str(path), path.stat().st_mtime)
    if key not in _PARSED:
        _PARSED[key] = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER))
    return _PARSED[key]


def load_crd_documents(directory: str | Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in the YAML/JSON files of ``directory`` (sorted by name)."""
    found: list[dict[str, Any]] = []
    folder = Path(directory)
    for path in sorted(folder.iterdir()):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        for document in _documents(path):
            if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
                found.append(json.loads(json.dumps(document)))
    return found


# -- content negotiation ----------------------------------------------------------------------


class Output:
    """What the client's ``Accept`` header asks for."""

    __slots__ = ("discovery", "kind", "table_version")

    def __init__(self, accept: str) -> None:
        self.kind = "json"
        self.table_version = "v1"
        self.discovery: str | None = None
        if not accept:
            return
        acceptable = False
        for media in accept.split(","):
            kind, *raw_params = [p.strip() for p in media.split(";")]
            params = dict(p.partition("=")[::2] for p in raw_params)
            role = params.get("as")
            if role == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io":
                if self.discovery is None and params.get("v") in ("v2", "v2beta1"):
                    self.discovery = params["v"]
                continue
            if role == "Table" and params.get("g") == "meta.k8s.io":
                if not acceptable:
                    self.kind = "table"
                    self.table_version = params.get("v", "v1")
                    acceptable = True
                continue
            if role in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                if not acceptable:
                    self.kind = "partial"
                    acceptable = True
                continue
            if role:
                continue
            if kind in (_JSON, "*/*", "application/*", "application/yaml", "") and not acceptable:
                self.kind = "json"
                acceptable = True
        if not acceptable and self.discovery is None:
            raise api_errors.not_acceptable()


def _json_response(body: Any, status: int = 200, content_type: str = _JSON) -> web.Response:
    raw = body if isinstance(body, bytes) else encode(body)
    return web.Response(body=raw, status=status, headers={"Content-Type": content_type})


def _status_response(error: ApiError) -> web.Response:
    return _json_response(error.status(), error.code)


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


# -- the application --------------------------------------------------------------------------


class ApiServer:
    """Routes REST requests to the store and renders its answers."""

    def __init__(
        self, store: Store, *, bookmark_interval: float = 60.0, watch_timeout: float = 1800.0
    ) -> None:
        self.store = store
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.address = "127.0.0.1:0"

    def make_app(self) -> web.Application:
        """The aiohttp application: one catch-all route, parsed here."""
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_shutdown.append(self._on_shutdown)
        return app

    async def _on_shutdown(self, _: web.Application) -> None:
        self.store.close_watches()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one request; every API error becomes a ``Status`` response."""
        try:
            return await self._route(request)
        except ApiError as error:
            return _status_response(error)
        except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as error:
            return _status_response(
                api_errors.bad_request(f"the body of the request could not be decoded: {error}")
            )

    async def _route(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if not parts:
            return _json_response(
                {"paths": ["/api", "/api/v1", "/apis", "/openapi/v3", "/version"]}
            )
        head = parts[0]
        if head in ("healthz", "livez", "readyz") and len(parts) == 1:
            return web.Response(text="ok", content_type="text/plain")
        if head == "version" and len(parts) == 1:
            return _json_response(discovery.version_info())
        if head == "openapi":
            return self._openapi(parts[1:])
        if head == "api":
            return await self._core(request, parts[1:])
        if head == "apis":
            return await self._apis(request, parts[1:])
        raise api_errors.path_not_found()

    # -- discovery -------------------------------------------------------------------------

    def _types(self) -> list[ResourceType]:
        return list(self.store.types.values())

    def _aggregated(self, request: web.Request, *, core: bool) -> web.Response | None:
        wanted = Output(request.headers.get("Accept", "")).discovery
        if wanted is None:
            return None
        body = discovery.aggregated(self._types(), core=core, version=wanted)
        content_type = f"application/json;g=apidiscovery.k8s.io;v={wanted};as=APIGroupDiscoveryList"
        return _json_response(body, content_type=content_type)

    async def _core(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        if not parts:
            if request.method != "GET":
                raise api_errors.method_not_allowed()
            aggregated = self._aggregated(request, core=True)
            return aggregated or _json_response(discovery.api_versions(self.address))
        if parts[0] != "v1":
            raise api_errors.path_not_found()
        if len(parts) == 1:
            listed = discovery.api_resource_list(self._types(), "", "v1")
            if listed is None:
                raise api_errors.path_not_found()
            return _json_response(listed)
        return await self._resource(request, "", "v1", parts[1:])

    async def _apis(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        if not parts:
            if request.method != "GET":
                raise api_errors.method_not_allowed()
            aggregated = self._aggregated(request, core=False)
            return aggregated or _json_response(discovery.api_group_list(self._types()))
        group = parts[0]
        if len(parts) == 1:
            found = discovery.api_group(self._types(), group)
            if found is None:
                raise api_errors.path_not_found()
            return _json_response(found)
        version = parts[1]
        if len(parts) == 2:
            listed = discovery.api_resource_list(self._types(), group, version)
            if listed is None:
                raise api_errors.path_not_found()
            return _json_response(listed)
        return await self._resource(request, group, version, parts[2:])

    def _openapi(self, parts: list[str]) -> web.Response:
        # /openapi/v2 stays 404: kubectl then relies on /openapi/v3 (or on server validation).
        if parts[:1] != ["v3"]:
            raise api_errors.path_not_found()
        rest = parts[1:]
        if not rest:
            return _json_response(discovery.openapi_paths(self._types()))
        document = None
        if rest[0] == "apis" and len(rest) == 3:
            document = discovery.openapi_document(self._types(), rest[1], rest[2])
        elif rest[0] == "api" and len(rest) == 2:
            document = discovery.openapi_document(self._types(), "", rest[1])
        if document is not None:
            return _json_response(document)
        raise api_errors.path_not_found()

    # -- resources -------------------------------------------------------------------------

    async def _resource(
        self, request: web.Request, group: str, version: str, parts: list[str]
    ) -> web.StreamResponse:
        namespace: str | None = None
        if (
            parts[0] == "namespaces"
            and len(parts) >= 3
            and (group, parts[2]) in self.store.types
            and self.store.types[(group, parts[2])].namespaced
        ):
            namespace = parts[1]
            parts = parts[2:]
        if len(parts) > 3:
            raise api_errors.path_not_found()
        rtype = self.store.lookup(group, version, parts[0])
        name = parts[1] if len(parts) > 1 else None
        subresource = parts[2] if len(parts) > 2 else None
        if subresource is not None and subresource not in rtype.subresources:
            raise api_errors.path_not_found()
        if namespace is not None and not rtype.namespaced:
            raise api_errors.path_not_found()
        if rtype.namespaced and namespace is None and name is not None:
            raise api_errors.path_not_found()
        method = request.method
        query = request.query
        if name is None:
            if method == "GET":
                labels = LabelSelector(query.get("labelSelector"))
                fields = FieldSelector(query.get("fieldSelector"), rtype.field_selectors)
                if _flag(query.get("watch")):
                    return await self._watch(request, rtype, version, namespace, labels, fields)
                return self._list(request, rtype, version, namespace, labels, fields)
            if method == "POST":
                if rtype.namespaced and namespace is None:
                    raise api_errors.method_not_allowed()
                body = await self._body(request)
                result = self.store.create(
                    rtype,
                    namespace or "",
                    body,
                    dry_run=self._dry_run(request),
                    validation=self._validation(request),
                )
                return self._object(
                    request, rtype, version, result.stored, result.code, result.warnings
                )
            if method == "DELETE":
                labels = LabelSelector(query.get("labelSelector"))
                fields = FieldSelector(query.get("fieldSelector"), rtype.field_selectors)
                deleted = self.store.delete_collection(rtype, namespace, labels, fields)
                return self._items(rtype, version, deleted, self.store.rv)
            raise api_errors.method_not_allowed()
        space = namespace or ""
        if method == "GET":
            stored = self.store.get(rtype, space, name)
            return self._object(request, rtype, version, stored)
        if method == "PUT":
            body = await self._body(request)
            result = self.store.replace(
                rtype,
                space,
                name,
                body,
                subresource=subresource,
                dry_run=self._dry_run(request),
                validation=self._validation(request),
            )
            return self._object(
                request, rtype, version, result.stored, result.code, result.warnings
            )
        if method == "PATCH":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            patch_type = _PATCH_TYPES.get(content_type)
            if patch_type is None or patch_type == "unsupported":
                raise api_errors.unsupported_media_type(content_type)
            text = await request.text()
            patch = yaml.safe_load(text) if patch_type == "apply" else json.loads(text)
            result = self.store.patch(
                rtype,
                space,
                name,
                patch_type,
                patch,
                subresource=subresource,
                dry_run=self._dry_run(request),
                validation=self._validation(request),
                field_manager=query.get("fieldManager"),
            )
            return self._object(
                request, rtype, version, result.stored, result.code, result.warnings
            )
        if method == "DELETE":
            if subresource is not None:
                raise api_errors.method_not_allowed()
            text = await request.text()
            options = json.loads(text) if text.strip() else {}
            result = self.store.delete(
                rtype,
                space,
                name,
                options if isinstance(options, dict) else {},
                dry_run=self._dry_run(request),
            )
            return self._object(request, rtype, version, result.stored, 200)
        raise api_errors.method_not_allowed()

    async def _body(self, request: web.Request) -> Any:
        content_type = request.headers.get("Content-Type", _JSON).split(";")[0].strip()
        if content_type == _PROTOBUF:
            try:
                decoded = decode_object(await request.read())
            except (ValueError, IndexError, UnicodeDecodeError):
                decoded = None
            if decoded is None:
                raise api_errors.unsupported_media_type(content_type)
            return decoded
        text = await request.text()
        if content_type in ("application/yaml", "application/x-yaml", "text/yaml"):
            return yaml.safe_load(text)
        if content_type not in (_JSON, "", "text/plain", "*/*"):
            raise api_errors.unsupported_media_type(content_type)
        return json.loads(text)

    @staticmethod
    def _dry_run(request: web.Request) -> bool:
        return "All" in request.query.getall("dryRun", [])

    @staticmethod
    def _validation(request: web.Request) -> str:
        value = request.query.get("fieldValidation", "Warn")
        if value not in ("Strict", "Warn", "Ignore"):
            raise api_errors.bad_request(
                f'fieldValidation must be one of "Ignore", "Warn", or "Strict", not "{value}"'
            )
        return value

    # -- rendering -------------------------------------------------------------------------

    @staticmethod
    def _raw(rtype: ResourceType, version: str, stored: Stored) -> bytes:
        if version == rtype.version:
            return stored.raw
        return encode({**stored.obj, "apiVersion": rtype.api_version(version)})

    @staticmethod
    def _obj(rtype: ResourceType, version: str, stored: Stored) -> dict[str, Any]:
        if version == rtype.version:
            return stored.obj
        return {**stored.obj, "apiVersion": rtype.api_version(version)}

    def _object(
        self,
        request: web.Request,
        rtype: ResourceType,
        version: str,
        stored: Stored,
        code: int = 200,
        warnings: Iterable[str] = (),
    ) -> web.Response:
        output = Output(request.headers.get("Accept", ""))
        if output.kind == "table":
            body: Any = self._table(
                request, rtype, version, [stored], {"resourceVersion": str(stored.rv)}, output
            )
        elif output.kind == "partial":
            body = _partial(stored.obj)
        else:
            body = self._raw(rtype, version, stored)
        response = _json_response(body, code)
        for warning in warnings:
            response.headers.add("Warning", f'299 - "{_escape(warning)}"')
        return response

    def _table(
        self,
        request: web.Request,
        rtype: ResourceType,
        version: str,
        items: list[Stored],
        metadata: dict[str, Any],
        output: Output,
    ) -> dict[str, Any]:
        include = request.query.get("includeObject", "Metadata")
        now = datetime.now(UTC)
        rows = [(rtype.table_cells(s.obj, now), self._obj(rtype, version, s)) for s in items]
        table = make_table(rtype.table_columns(), rows, include, metadata)
        table["apiVersion"] = f"meta.k8s.io/{output.table_version}"
        return table

    def _list(
        self,
        request: web.Request,
        rtype: ResourceType,
        version: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> web.Response:
        query = request.query
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise api_errors.bad_request("limit must be an integer") from None
        result = self.store.list_objects(
            rtype, namespace, labels, fields, limit=max(limit, 0), token=query.get("continue", "")
        )
        metadata: dict[str, Any] = {"resourceVersion": str(result.rv)}
        if result.token:
            metadata["continue"] = result.token
            metadata["remainingItemCount"] = result.remaining
        output = Output(request.headers.get("Accept", ""))
        if output.kind == "table":
            return _json_response(
                self._table(request, rtype, version, result.items, metadata, output)
            )
        if output.kind == "partial":
            return _json_response(
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": metadata,
                    "items": [_partial(s.obj) for s in result.items],
                }
            )
        return self._items(rtype, version, result.items, result.rv, metadata)

    def _items(
        self,
        rtype: ResourceType,
        version: str,
        items: list[Stored],
        rv: int,
        metadata: dict[str, Any] | None = None,
    ) -> web.Response:
        # Built from each object's stored bytes: no re-encoding of the items.
        head = {
            "kind": rtype.list_kind,
            "apiVersion": rtype.api_version(version),
            "metadata": metadata or {"resourceVersion": str(rv)},
        }
        raw = (
            encode(head)[:-1]
            + b',"items":['
            + b",".join(self._raw(rtype, version, s) for s in items)
            + b"]}"
        )
        return _json_response(raw)

    # -- watches ---------------------------------------------------------------------------

    async def _watch(
        self,
        request: web.Request,
        rtype: ResourceType,
        version: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> web.StreamResponse:
        query = request.query
        output = Output(request.headers.get("Accept", ""))
        bookmarks = _flag(query.get("allowWatchBookmarks"))
        send_initial = _flag(query.get("sendInitialEvents"))
        try:
            timeout = float(query.get("timeoutSeconds") or self.watch_timeout)
        except ValueError:
            raise api_errors.bad_request("timeoutSeconds must be a number") from None
        response = web.StreamResponse(status=200, headers={"Content-Type": _JSON})
        response.enable_chunked_encoding()
        try:
            watcher, initial = self.store.watch(
                rtype,
                namespace,
                labels,
                fields,
                query.get("resourceVersion"),
                send_initial=send_initial,
            )
        except ApiError as error:
            if error.code != 410:
                raise
            # Like the real server: HTTP 200, then one ERROR event carrying the 410 Status.
            await response.prepare(request)
            await response.write(encode({"type": "ERROR", "object": error.status()}) + b"\n")
            await response.write_eof()
            return response
        try:
            await response.prepare(request)
            chunks = [
                self._event_line(request, rtype, version, kind, e, output) for kind, e in initial
            ]
            if send_initial and bookmarks:
                chunks.append(self._bookmark(rtype, version, initial_end=True))
            if chunks:
                await response.write(b"".join(chunks))
            await self._stream(
                request, response, watcher, rtype, version, output, bookmarks, timeout
            )
        except (ConnectionResetError, ConnectionError):
            pass  # the client went away; nothing to tell it
        finally:
            self.store.unwatch(rtype, watcher)
        with contextlib.suppress(ConnectionResetError, ConnectionError):
            await response.write_eof()
        return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        watcher: Watcher,
        rtype: ResourceType,
        version: str,
        output: Output,
        bookmarks: bool,
        timeout: float,
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        next_bookmark = loop.time() + self.bookmark_interval
        while True:
            if not watcher.pending and not watcher.closed:
                wait = min(deadline, next_bookmark if bookmarks else deadline) - loop.time()
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(watcher.wake.wait(), wait)
            watcher.wake.clear()
            batch, watcher.pending = watcher.pending, []
            chunks = [
                self._event_line(request, rtype, version, kind, e, output) for kind, e in batch
            ]
            now = loop.time()
            finished = watcher.closed or now >= deadline
            if bookmarks and (now >= next_bookmark or finished):
                chunks.append(self._bookmark(rtype, version))
                next_bookmark = now + self.bookmark_interval
            if chunks:
                await response.write(b"".join(chunks))
            if finished:
                return

    def _event_line(
        self,
        request: web.Request,
        rtype: ResourceType,
        version: str,
        kind: str,
        event: Event,
        output: Output,
    ) -> bytes:
        if output.kind == "json" and version == rtype.version:
            return event.line(kind)
        stored = Stored.__new__(Stored)
        stored.obj, stored.raw, stored.rv = event.obj, event.raw, event.rv
        if output.kind == "table":
            table = self._table(
                request, rtype, version, [stored], {"resourceVersion": str(event.rv)}, output
            )
            return encode({"type": kind, "object": table}) + b"\n"
        if output.kind == "partial":
            return encode({"type": kind, "object": _partial(event.obj)}) + b"\n"
        return (
            b'{"type":"'
            + kind.encode()
            + b'","object":'
            + self._raw(rtype, version, stored)
            + b"}\n"
        )

    def _bookmark(self, rtype: ResourceType, version: str, *, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(self.store.rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        body = {"kind": rtype.kind, "apiVersion": rtype.api_version(version), "metadata": meta}
        return encode({"type": "BOOKMARK", "object": body}) + b"\n"


def _partial(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


# -- public API -------------------------------------------------------------------------------


class Sandbox:
    """An in-memory Kubernetes API server on loopback, run on the current event loop.

    ``async with Sandbox() as sb:`` starts it with the repository's ``crds/`` registered;
    ``sb.url`` is its address and ``sb.write_kubeconfig(path)`` points kubectl or kopf at it.
    """

    def __init__(
        self,
        crds_dir: str | Path | None = DEFAULT_CRDS_DIR,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        crds: Iterable[Mapping[str, Any]] = (),
        history_size: int = 50_000,
        bookmark_interval: float = 60.0,
        watch_timeout: float = 1800.0,
        access_log: bool = False,
    ) -> None:
        self.host = host
        self.access_log = access_log
        self.requested_port = port
        self.store = Store(history_size=history_size)
        documents: list[Mapping[str, Any]] = []
        if crds_dir is not None and Path(crds_dir).is_dir():
            documents.extend(load_crd_documents(crds_dir))
        elif crds_dir is not None and Path(crds_dir) != DEFAULT_CRDS_DIR:
            raise FileNotFoundError(f"CRD directory not found: {crds_dir}")
        documents.extend(crds)
        for document in documents:
            self.store.load_crd(json.loads(json.dumps(document)))
        self.api = ApiServer(
            self.store, bookmark_interval=bookmark_interval, watch_timeout=watch_timeout
        )
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` once started."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Listen on ``host:port`` (port 0 picks a free one)."""
        runner = web.AppRunner(
            self.api.make_app(),
            handle_signals=False,
            handler_cancellation=True,
            shutdown_timeout=1.0,
            # Off by default: one log line per request would dominate a benchmark.
            access_log=logging.getLogger("aiohttp.access") if self.access_log else None,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.requested_port)
        await site.start()
        self._runner = runner
        address = runner.addresses[0]
        self.port = int(address[1])
        self.api.address = f"{self.host}:{self.port}"
        log.info("sandbox API server listening on %s", self.url)

    async def stop(self) -> None:
        """Close open watches and stop listening."""
        runner, self._runner = self._runner, None
        if runner is not None:
            self.store.close_watches()
            await runner.cleanup()

    async def __aenter__(self) -> Sandbox:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    def kubeconfig(self, *, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig for this sandbox: one cluster, one context, a placeholder token."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "precedent-sandbox", "cluster": {"server": self.url}}],
            "users": [{"name": "precedent-sandbox", "user": {"token": "sandbox"}}],
            "contexts": [
                {
                    "name": "precedent-sandbox",
                    "context": {
                        "cluster": "precedent-sandbox",
                        "user": "precedent-sandbox",
                        "namespace": namespace,
                    },
                }
            ],
            "current-context": "precedent-sandbox",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """Write :meth:`kubeconfig` to ``path`` (parents created) and return the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(namespace=namespace), sort_keys=False))
        return target


class SandboxThread:
    """A :class:`Sandbox` on its own event loop in a background thread.

    ``with SandboxThread() as sb:`` (or ``start()``/``stop()``) for synchronous code, or to run
    an operator's event loop in the same process without sharing a loop with the server.
    """

    def __init__(self, crds_dir: str | Path | None = DEFAULT_CRDS_DIR, **options: Any) -> None:
        self.sandbox = Sandbox(crds_dir, **options)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return self.sandbox.url

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self.sandbox.port

    @property
    def store(self) -> Store:
        """The object store (read it from the sandbox's thread: see :meth:`call`)."""
        return self.sandbox.store

    def kubeconfig(self, *, namespace: str = "default") -> dict[str, Any]:
        """See :meth:`Sandbox.kubeconfig`."""
        return self.sandbox.kubeconfig(namespace=namespace)

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """See :meth:`Sandbox.write_kubeconfig`."""
        return self.sandbox.write_kubeconfig(path, namespace=namespace)

    def start(self, timeout: float = 30.0) -> SandboxThread:
        """Start the thread and return once the server listens."""
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name="precedent-sandbox", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the sandbox did not start in time")
        if self._error is not None:
            raise RuntimeError("the sandbox failed to start") from self._error
        return self

    def call(self, function: Any, *args: Any) -> Any:
        """Run ``function(*args)`` on the sandbox's loop (safe access to the store)."""
        if self._loop is None:
            raise RuntimeError("the sandbox is not running")

        async def invoke() -> Any:
            return function(*args)

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server and join the thread."""
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if loop is not None and stopping is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> SandboxThread:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:  # reported to start(); the thread must not die silently
            self._error = error
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            await self.sandbox.start()
        except BaseException as error:
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            await self.sandbox.stop()
