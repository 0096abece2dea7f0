"""Running the sandbox: :class:`Sandbox` on the current event loop, :class:`SandboxThread` on
a loop of its own in a background thread (for synchronous tests and for a kopf operator started
in the same process), and loading the CRDs registered at start.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from precedent_sandbox.auth import MASTERS, UserInfo, read_token_file
from precedent_sandbox.rbac import GROUP as RBAC_GROUP
from precedent_sandbox.rbac import RbacAuthorizer, bootstrap_policy
from precedent_sandbox.routing import ApiServer
from precedent_sandbox.store import Store
from precedent_sandbox.tls import (
    TlsFiles,
    generate_self_signed,
    server_context,
    temporary_directory,
)

__all__ = ["AUTHORIZATION_MODES", "Sandbox", "SandboxThread", "load_crd_documents"]

AUTHORIZATION_MODES = ("AlwaysAllow", "RBAC")

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


def save_kubeconfig(path: str | Path, config: dict[str, Any]) -> Path:
    """Write a kubeconfig to ``path`` (parents created) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


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
        token_auth_file: str | Path | None = None,
        authorization_mode: str | None = None,
        tls: bool | None = None,
        tls_cert_file: str | Path | None = None,
        tls_private_key_file: str | Path | None = None,
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
        # Authentication is on with a token file; RBAC then follows unless told otherwise.
        self.tokens: dict[str, UserInfo] | None = (
            read_token_file(token_auth_file) if token_auth_file is not None else None
        )
        mode = authorization_mode or ("RBAC" if self.tokens is not None else "AlwaysAllow")
        if mode not in AUTHORIZATION_MODES:
            raise ValueError(
                f"authorization mode {mode!r} is not one of {', '.join(AUTHORIZATION_MODES)}"
            )
        self.authorization_mode = mode
        # kubectl sends a token only over HTTPS: authentication implies TLS unless told not to.
        self.tls = (
            tls if tls is not None else (self.tokens is not None or tls_cert_file is not None)
        )
        self._tls_given = (
            TlsFiles(Path(tls_cert_file), Path(tls_private_key_file or tls_cert_file))
            if tls_cert_file is not None
            else None
        )
        self.tls_files: TlsFiles | None = None
        self._tls_dir: Any = None
        authorizer: RbacAuthorizer | None = None
        if mode == "RBAC":
            authorizer = RbacAuthorizer(self.store)
            self._bootstrap_rbac()
            self.store.rbac = authorizer
            self.store.policies.authorize = authorizer.authorize
        self.api = ApiServer(
            self.store,
            bookmark_interval=bookmark_interval,
            watch_timeout=watch_timeout,
            tokens=self.tokens,
            authorizer=authorizer,
        )
        self._runner: web.AppRunner | None = None
        self.port = 0

    def _bootstrap_rbac(self) -> None:
        roles, bindings = bootstrap_policy()
        cluster_roles = self.store.lookup(RBAC_GROUP, "v1", "clusterroles")
        cluster_bindings = self.store.lookup(RBAC_GROUP, "v1", "clusterrolebindings")
        for role in roles:
            self.store.create(cluster_roles, "", role)
        for binding in bindings:
            self.store.create(cluster_bindings, "", binding)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` once started."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def ca_file(self) -> Path | None:
        """The certificate clients should trust (HTTPS only), once started."""
        return self.tls_files.cert if self.tls_files is not None else None

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
        context = None
        if self.tls:
            if self._tls_given is not None:
                self.tls_files = self._tls_given
            elif self.tls_files is None:
                self._tls_dir = temporary_directory()
                self.tls_files = generate_self_signed(Path(self._tls_dir.name), self.host)
            context = server_context(self.tls_files)
        site = web.TCPSite(runner, self.host, self.requested_port, ssl_context=context)
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
        if self._tls_dir is not None:
            self._tls_dir.cleanup()
            self._tls_dir, self.tls_files = None, None

    async def __aenter__(self) -> Sandbox:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    def token_for(self, user: str) -> str:
        """The token of ``user`` in the token file; KeyError if the file has none."""
        for token, info in (self.tokens or {}).items():
            if info.name == user:
                return token
        raise KeyError(f"no token for user {user!r} in the token file")

    def kubeconfig(
        self, *, namespace: str = "default", user: str | None = None, token: str | None = None
    ) -> dict[str, Any]:
        """A kubeconfig for this sandbox.

        ``user`` (a user of the token file) or ``token``: one context, ``precedent-sandbox``,
        with that token. Neither: without authentication, one context with a placeholder
        token; with a token file, one context per user (named after it), the current one a
        ``system:masters`` member if there is one, else the file's first user.
        """
        chosen: list[tuple[str, str]]
        if token is not None or user is not None:
            chosen = [
                ("precedent-sandbox", token if token is not None else self.token_for(user or ""))
            ]
            current = "precedent-sandbox"
        elif self.tokens:
            chosen = [(info.name, value) for value, info in self.tokens.items()]
            masters = [info.name for info in self.tokens.values() if MASTERS in info.groups]
            current = masters[0] if masters else chosen[0][0]
        else:
            chosen = [("precedent-sandbox", "sandbox")]
            current = "precedent-sandbox"
        cluster: dict[str, Any] = {"server": self.url}
        if self.tls_files is not None:
            cluster["certificate-authority-data"] = base64.b64encode(
                self.tls_files.cert.read_bytes()
            ).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "precedent-sandbox", "cluster": cluster}],
            "users": [{"name": name, "user": {"token": value}} for name, value in chosen],
            "contexts": [
                {
                    "name": name,
                    "context": {
                        "cluster": "precedent-sandbox",
                        "user": name,
                        "namespace": namespace,
                    },
                }
                for name, _ in chosen
            ],
            "current-context": current,
            "preferences": {},
        }

    def write_kubeconfig(
        self,
        path: str | Path,
        *,
        namespace: str = "default",
        user: str | None = None,
        token: str | None = None,
    ) -> Path:
        """Write :meth:`kubeconfig` to ``path`` (parents created) and return the path."""
        return save_kubeconfig(path, self.kubeconfig(namespace=namespace, user=user, token=token))


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

    def kubeconfig(
        self, *, namespace: str = "default", user: str | None = None, token: str | None = None
    ) -> dict[str, Any]:
        """See :meth:`Sandbox.kubeconfig`."""
        return self.sandbox.kubeconfig(namespace=namespace, user=user, token=token)

    def write_kubeconfig(
        self,
        path: str | Path,
        *,
        namespace: str = "default",
        user: str | None = None,
        token: str | None = None,
    ) -> Path:
        """See :meth:`Sandbox.write_kubeconfig`."""
        return self.sandbox.write_kubeconfig(path, namespace=namespace, user=user, token=token)

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
