"""Fixtures: a real Context API on a loopback port, with faults injected at the server."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.context_api import MAX_REQUEST_LINE, create_app
from precedent.metrics import Metrics
from tests.integration.catalog.faults import Clock, Faults, Server, Sleeps

CATALOG = Path(__file__).resolve().parents[2] / "data" / "playbooks"


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(CollectorRegistry())


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture(scope="session")
def local_catalog() -> LocalPlaybookCatalog:
    return LocalPlaybookCatalog.from_paths([CATALOG])


@pytest.fixture
async def server(local_catalog: LocalPlaybookCatalog) -> AsyncIterator[Server]:
    faults = Faults()
    server_metrics = Metrics(CollectorRegistry())
    app = create_app(
        local_catalog, metrics_registry=server_metrics, middlewares=[faults.middleware]
    )
    runner = web.AppRunner(app, max_line_size=MAX_REQUEST_LINE, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield Server(f"http://{host}:{port}", faults, local_catalog, server_metrics)
    finally:
        faults.release.set()
        await runner.cleanup()


@pytest.fixture
def refused_url() -> str:
    """A loopback URL nothing listens on: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
