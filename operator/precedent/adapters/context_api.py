"""The API server, with aiohttp: the Context API (seed 004) and the incident search API.

One server on one port (``precedent serve``; ``precedent catalog serve`` is the same server):
the playbook routes below, ``POST /api/v1/incidents/search`` and
``GET /api/v1/incidents/stats`` (adapters/search_api.py, when a history is served), and the
OpenAPI 3.1 document of all of them at ``GET /openapi.json`` (adapters/openapi.py).

``GET /api/v1/context/playbooks?description=…&labels=k:v&labels=…&min_confidence=…&max_results=…``
answers the seed's minimal schema and nothing more::

    {"playbooks": [{"playbook_id", "version", "description", "confidence"}], "total_results": N}

An optional ``action`` (a RemediationRequest's action name, e.g. ``rollback``) lets the default
label rule count the request's action as a label, as the operator's in-process catalog does;
without it the answer rests on the description and labels alone (the seed's query).
With ``include_components=true`` each playbook also carries ``components``: ``{"semantic",
"label_match", "historical"}``, the parts of its confidence (Precedent's own client asks for
them; the seed keeps them from the model, so they are off by default).
``total_results`` counts every playbook that qualified; ``playbooks`` holds the first
``max_results`` of them, best first. Bad parameters get 400 and a description over 8 KiB gets
413, each with an RFC 9457 ``application/problem+json`` body that names the parameter.

Input is bounded before it is parsed: the request line at :data:`MAX_REQUEST_LINE`, a request
body at :data:`MAX_BODY_BYTES` (the incident search's JSON), the query string at
:data:`MAX_QUERY_PARAMETERS` parameters and :data:`MAX_LABELS` labels — each refused with 400
naming the parameter.
``GET /healthz`` reports liveness and the catalog size; ``GET /metrics`` is Prometheus text.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from precedent.adapters.catalog_http import (
    COMPONENTS_PARAM,
    PLAYBOOKS_PATH,
    ContextApiPlaybook,
    ContextApiResponse,
)
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.openapi import OPENAPI_PATH, Health, openapi_document
from precedent.adapters.problems import PROBLEM_BASE, PROBLEM_JSON, ProblemError
from precedent.adapters.search_api import SEARCH_KEY, IncidentSearch, add_search_routes
from precedent.core.playbooks import (
    DEFAULT_MAX_RESULTS,
    DEFAULT_MIN_CONFIDENCE,
    MAX_DESCRIPTION_BYTES,
    MAX_RESULTS_LIMIT,
    PlaybookQuery,
    parse_label,
)
from precedent.metrics import METRICS, Metrics

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_LABELS",
    "MAX_QUERY_PARAMETERS",
    "MAX_REQUEST_LINE",
    "PROBLEM_BASE",
    "PROBLEM_JSON",
    "ProblemError",
    "create_app",
    "parse_query",
    "run",
]

MAX_REQUEST_LINE = 64 * 1024
"""Request-line limit of the server: room for an 8 KiB description, percent-encoded, so an
over-long one reaches the handler and gets a 413 rather than aiohttp's bare 400."""

MAX_BODY_BYTES = 64 * 1024
"""Largest request body aiohttp accepts (the endpoints are GETs: a body is never needed)."""
MAX_QUERY_PARAMETERS = 64
"""Most query parameters in one request, counting repeats."""
MAX_LABELS = 32
"""Most ``labels`` parameters in one query (a request has a handful)."""

_ACTION = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
log = logging.getLogger("precedent.context_api")

CATALOG_KEY: web.AppKey[LocalPlaybookCatalog] = web.AppKey("catalog", LocalPlaybookCatalog)
METRICS_KEY: web.AppKey[Metrics] = web.AppKey("metrics", Metrics)


def _invalid(parameter: str, detail: str) -> ProblemError:
    return ProblemError(400, "invalid-parameter", "Invalid query parameter", detail, parameter)


def _single(request: web.Request, name: str) -> str | None:
    values = request.query.getall(name, [])
    if len(values) > 1:
        raise _invalid(name, f"{name} is given {len(values)} times; give it once")
    return values[0] if values else None


def _description(request: web.Request) -> str:
    text = _single(request, "description")
    if text is None or not text.strip():
        raise _invalid("description", "description is required and must not be blank")
    size = len(text.encode())
    if size > MAX_DESCRIPTION_BYTES:
        raise ProblemError(
            413,
            "description-too-long",
            "Description too long",
            f"description is {size} bytes; the limit is {MAX_DESCRIPTION_BYTES} (8 KiB)",
            "description",
        )
    return text


def _min_confidence(request: web.Request) -> float:
    raw = _single(request, "min_confidence")
    if raw is None:
        return DEFAULT_MIN_CONFIDENCE
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise _invalid("min_confidence", f"min_confidence must be a number in [0, 1], got {raw!r}")
    return value


def _max_results(request: web.Request) -> int:
    raw = _single(request, "max_results")
    if raw is None:
        return DEFAULT_MAX_RESULTS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_RESULTS_LIMIT:
        raise _invalid(
            "max_results", f"max_results must be an integer in 1..{MAX_RESULTS_LIMIT}, got {raw!r}"
        )
    return value


def _include_components(request: web.Request) -> bool:
    raw = _single(request, COMPONENTS_PARAM)
    if raw is None:
        return False
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise _invalid(COMPONENTS_PARAM, f"{COMPONENTS_PARAM} must be true or false, got {raw!r}")
    return value == "true"


def _labels(request: web.Request) -> list[tuple[str, str]]:
    given = request.query.getall("labels", [])
    if len(given) > MAX_LABELS:
        raise _invalid("labels", f"labels is given {len(given)} times; the limit is {MAX_LABELS}")
    labels = []
    for raw in given:
        try:
            labels.append(parse_label(raw))
        except ValueError as exc:
            raise _invalid("labels", f"labels: {exc}") from None
    return labels


def _action(request: web.Request) -> str | None:
    raw = _single(request, "action")
    if raw is None:
        return None
    value = raw.strip().lower()
    if not _ACTION.match(value):
        raise _invalid(
            "action",
            f"action must be an action name such as restart_service (a-z, 0-9, _ and -, "
            f"at most 63 characters), got {raw[:80]!r}",
        )
    return value


def parse_query(request: web.Request) -> PlaybookQuery:
    """Validate the query string into a PlaybookQuery; ProblemError names the bad parameter."""
    count = len(request.query)
    if count > MAX_QUERY_PARAMETERS:
        raise ProblemError(
            400,
            "too-many-parameters",
            "Too many query parameters",
            f"{count} query parameters; the limit is {MAX_QUERY_PARAMETERS}",
        )
    description = _description(request)
    min_confidence = _min_confidence(request)
    max_results = _max_results(request)
    labels = _labels(request)
    action = _action(request)
    try:
        return PlaybookQuery.create(
            description,
            labels,
            min_confidence=min_confidence,
            max_results=max_results,
            action=action,
        )
    except ValueError as exc:  # the same key twice with two values
        raise _invalid("labels", f"labels: {exc}") from None


async def playbooks(request: web.Request) -> web.Response:
    """``GET /api/v1/context/playbooks``: the seed's four fields, and the parts if asked."""
    query = parse_query(request)
    components = _include_components(request)
    answer = request.app[CATALOG_KEY].search_sync(query)
    log.info(
        "playbook query: %r labels=%s min_confidence=%g max_results=%d → %d of %d",
        query.text[:80],
        ",".join(f"{k}:{v}" for k, v in query.labels) or "-",
        query.min_confidence,
        query.max_results,
        len(answer.candidates),
        answer.total,
    )
    body = ContextApiResponse(
        playbooks=[ContextApiPlaybook.of(c, components=components) for c in answer.candidates],
        total_results=answer.total,
    )
    return web.json_response(body.model_dump(mode="json", exclude_none=True))


async def healthz(request: web.Request) -> web.Response:
    """``GET /healthz``: ok, with the catalog size and embedder (and the history's size)."""
    catalog = request.app[CATALOG_KEY]
    health = Health(status="ok", playbooks=len(catalog), embedder=catalog.embedder_name)
    service = request.app.get(SEARCH_KEY)
    if service is not None:
        health.incidents = len(service.history.snapshot)
        health.mode = service.config.mode
    return web.json_response(health.model_dump(mode="json", exclude_none=True))


async def openapi(request: web.Request) -> web.Response:
    """``GET /openapi.json``: the OpenAPI 3.1 document of the routes this server has."""
    return web.json_response(openapi_document(search=SEARCH_KEY in request.app))


async def metrics(request: web.Request) -> web.Response:
    """``GET /metrics``: Prometheus text exposition of this process's registry."""
    body = generate_latest(request.app[METRICS_KEY].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def _endpoint(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "unmatched"


@web.middleware
async def problem_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error as ``application/problem+json``; request latency into the histogram."""
    started = time.perf_counter()
    status = 500
    try:
        try:
            response = await handler(request)
        except ProblemError as problem:
            response = problem.response(request.path)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            slug = exc.reason.lower().replace(" ", "-")
            response = ProblemError(exc.status, slug, exc.reason, exc.reason).response(request.path)
        except Exception:
            log.exception("Context API request failed: %s", request.path_qs[:200])
            response = ProblemError(
                500, "internal-error", "Internal error", "the server failed to answer"
            ).response(request.path)
        status = response.status
        return response
    finally:
        request.app[METRICS_KEY].context_api_latency.labels(
            _endpoint(request), str(status)
        ).observe(time.perf_counter() - started)


def create_app(
    catalog: LocalPlaybookCatalog,
    *,
    search: IncidentSearch | None = None,
    clock: Callable[[], datetime] | None = None,
    metrics_registry: Metrics = METRICS,
    middlewares: Sequence[Callable[..., Any]] = (),
) -> web.Application:
    """The API application: the Context API, and the incident search API over ``search``
    (the operator's assessment service) when given; ``clock`` anchors the search's recency
    boosts (default: now). ``middlewares`` run inside the problem middleware."""
    app = web.Application(
        middlewares=[problem_middleware, *middlewares], client_max_size=MAX_BODY_BYTES
    )
    app[CATALOG_KEY] = catalog
    app[METRICS_KEY] = metrics_registry
    app.router.add_get(PLAYBOOKS_PATH, playbooks)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get(OPENAPI_PATH, openapi)
    if search is not None:
        if clock is None:
            add_search_routes(app, search)
        else:
            add_search_routes(app, search, clock=clock)
    return app


def run(
    catalog: LocalPlaybookCatalog,
    *,
    host: str,
    port: int,
    search: IncidentSearch | None = None,
    announce: Callable[[str], None] | None = print,
) -> None:
    """Serve until interrupted (``precedent serve``, ``precedent catalog serve``)."""
    if announce is not None:
        announce(
            f"Context API: {len(catalog)} playbooks from {catalog.name} on http://{host}:{port}"
        )
        if search is not None:
            announce(
                f"Incident search: {len(search.history.snapshot)} incidents "
                f"({search.config.mode} mode) on http://{host}:{port}/api/v1/incidents/search"
            )
    web.run_app(
        create_app(catalog, search=search),
        host=host,
        port=port,
        print=None,
        access_log=None,
        max_line_size=MAX_REQUEST_LINE,
    )
