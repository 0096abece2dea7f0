"""A real Context API (``precedent.adapters.context_api``) on a loopback port, in a thread of
its own, whose playbook endpoint fails the way the test says: ``hang`` (never answers),
``500``, ``garbage`` (a truncated JSON body) or ``close`` (the connection is dropped with no
response). It counts every playbook query that reached it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CollectorRegistry

from precedent.adapters.catalog_http import PLAYBOOKS_PATH
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.context_api import MAX_REQUEST_LINE, create_app
from precedent.metrics import Metrics
from tests.integration.conftest import DATA

FAULTS = ("hang", "500", "garbage", "close")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class FaultyCatalog:
    """The server's address, the fault it injects now, and the playbook queries it saw."""

    url: str = ""
    fault: str | None = None
    hits: dict[str, int] = field(default_factory=dict)
    closing: bool = False

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Inject :attr:`fault` into playbook queries; anything else is served as is."""
        if request.path != PLAYBOOKS_PATH or self.fault is None:
            return await handler(request)
        fault = self.fault
        self.hits[fault] = self.hits.get(fault, 0) + 1
        if fault == "hang":
            while not self.closing:  # until the server stops; the client gave up long ago
                await asyncio.sleep(0.05)
            return web.json_response({"detail": "shutting down"}, status=503)
        if fault == "500":
            return web.json_response({"detail": "injected 500"}, status=500)
        if fault == "garbage":
            return web.Response(
                text='{"playbooks": [{"playbook_id": ', content_type="application/json"
            )
        if fault == "close":
            assert request.transport is not None
            request.transport.abort()  # no status line, no body: the peer sees a reset
            raise asyncio.CancelledError
        raise AssertionError(f"unknown fault {fault!r}")


@contextmanager
def faulty_catalog() -> Iterator[FaultyCatalog]:
    """Serve the bundled catalog with :class:`FaultyCatalog` faults until the block ends."""
    server = FaultyCatalog()
    loop = asyncio.new_event_loop()
    app = create_app(
        LocalPlaybookCatalog.from_paths([DATA / "playbooks"]),
        metrics_registry=Metrics(CollectorRegistry()),
        middlewares=[server.middleware],
    )
    runner = web.AppRunner(app, max_line_size=MAX_REQUEST_LINE, shutdown_timeout=1.0)

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        server.url = f"http://{host}:{port}"

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=30)
    try:
        yield server
    finally:
        server.closing = True
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()
