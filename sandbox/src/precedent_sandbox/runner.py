"""Running the sandbox: :class:`Sandbox` on the current event loop, :class:`SandboxThread` on
a loop of its own in a background thread (for synchronous tests and for a kopf operator started
in the same process), and loading the CRDs registered at start.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from precedent_sandbox.routing import ApiServer
from precedent_sandbox.store import Store

__all__ = ["Sandbox", "SandboxThread", "load_crd_documents"]

log = logging.getLogger(__name__)

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


class Sandbox:
    """An in-memory Kubernetes API server on loopback, run on the current event loop.

    ``async with Sandbox("crds") as sb:`` starts it with the CRDs in ``crds/`` registered
    (``crds_dir=None``: none; ``kubectl apply`` can add them later); ``sb.url`` is its address
    and ``sb.write_kubeconfig(path)`` points kubectl or kopf at it.
    """

    def __init__(
        self,
        crds_dir: str | Path | None = None,
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
        if crds_dir is not None:
            if not Path(crds_dir).is_dir():
                raise FileNotFoundError(f"CRD directory not found: {crds_dir}")
            documents.extend(load_crd_documents(crds_dir))
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

    def __init__(self, crds_dir: str | Path | None = None, **options: Any) -> None:
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
