"""Fixtures: the real API server (Context API + incident search) on a loopback port.

The server runs the operator's own assessment service (``build_service``) over the bundled
evaluation history, in a thread with its own event loop, so that synchronous clients
(httpx, schemathesis) can talk to it from the test.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from precedent.adapters.context_api import MAX_REQUEST_LINE, create_app
from precedent.metrics import Metrics
from precedent.services import IncidentScorer
from precedent.settings import Settings
from precedent.wiring import Engine, build_service

ROOT = Path(__file__).resolve().parents[3]
HISTORY = ROOT / "tests" / "data" / "eval" / "history.jsonl"
CATALOG = ROOT / "tests" / "data" / "playbooks"
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
"""The server's clock: the recency boosts are measured from a fixed time."""


@dataclass
class Api:
    """A running server, its service and a client."""

    url: str
    service: IncidentScorer
    client: httpx.Client

    def search(self, body: Any) -> httpx.Response:
        """POST a JSON body to the search route."""
        return self.client.post("/api/v1/incidents/search", json=body)


@contextmanager
def serve_in_thread(app: web.Application) -> Iterator[str]:
    """Run ``app`` on 127.0.0.1 (a free port) in a thread; yield its base URL."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, max_line_size=MAX_REQUEST_LINE, shutdown_timeout=1.0)
    ready = threading.Event()
    found: dict[str, str] = {}

    def main() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0).start())
        host, port = runner.addresses[0][:2]
        found["url"] = f"http://{host}:{port}"
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=main, name="api-server", daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the API server did not start")
    try:
        yield found["url"]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


@pytest.fixture(scope="module")
def service() -> Engine:
    """The operator's engine over the evaluation history and the test catalog."""
    settings = Settings(history_path=HISTORY, catalog=str(CATALOG))
    return build_service(settings, history=[HISTORY], catalog=str(CATALOG), require_history=True)


@pytest.fixture(scope="module")
def api(service: Engine) -> Iterator[Api]:
    """The server answering from ``service``, and a client for it."""
    app = create_app(
        service.objects.catalog,
        search=service.assessor.scorer,
        clock=lambda: NOW,
        metrics_registry=Metrics(CollectorRegistry()),
    )
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield Api(url, service.assessor.scorer, client)
