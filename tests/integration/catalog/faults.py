"""Test doubles at the edge of the Context API: server-side faults, a clock, recorded sleeps.

``Faults`` is an aiohttp middleware in front of the playbook endpoint of a real server. Tests
queue what the next requests get — ``hang`` (held until the test ends, past any client
timeout), ``500``, ``503``, ``400``, ``garbage`` (200 with a body that is not JSON),
``wrong-shape`` (JSON, not the schema), ``minimal`` (the seed's four fields only, as a Context
API that ignores ``include_components`` answers) — or set ``always``; ``None`` lets the request
through to the real handler.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web

from precedent.adapters.catalog_http import PLAYBOOKS_PATH
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.context_api import Handler
from precedent.metrics import Metrics


class Faults:
    """Server-side fault injection for the playbook endpoint; counts the requests it saw."""

    def __init__(self) -> None:
        self.plan: list[str | None] = []
        self.always: str | None = None
        self.hits = 0
        self.release = asyncio.Event()

    def queue(self, *faults: str | None) -> None:
        self.plan.extend(faults)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path != PLAYBOOKS_PATH:
            return await handler(request)
        self.hits += 1
        fault = self.plan.pop(0) if self.plan else self.always
        if fault is None:
            return await handler(request)
        if fault == "hang":
            await self.release.wait()
            return await handler(request)
        if fault in {"500", "503", "400"}:
            return web.json_response({"detail": f"injected {fault}"}, status=int(fault))
        if fault == "garbage":
            return web.Response(
                text='{"playbooks": [{"playbook_id": ', content_type="application/json"
            )
        if fault == "wrong-shape":
            return web.json_response({"items": []})
        if fault == "minimal":  # a Context API that ignores include_components
            playbook = {
                "playbook_id": "pb",
                "version": "v1",
                "description": "d",
                "confidence": 0.81,
            }
            return web.json_response({"playbooks": [playbook], "total_results": 1})
        raise AssertionError(f"unknown fault {fault!r}")


class Clock:
    """A clock the test moves: the cache's TTL and the breaker's cool-down read it."""

    def __init__(self) -> None:
        self.now = 10_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Sleeps:
    """Backoff delays the client asked for; recorded, not slept."""

    delays: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


@dataclass
class Server:
    url: str
    faults: Faults
    catalog: LocalPlaybookCatalog
    metrics: Metrics
