"""The incident search API (seed 002's retrieval over HTTP), ranked by the operator's own code.

``POST /api/v1/incidents/search`` takes query text (``query_text``, or ``title`` and
``description``) or request fields (``action``, ``target``, ``labels``, with an optional
description), ``top_k`` (1–100), ``domain_filter`` and the ranking's weights for this request
only, and answers seed 002's shape: ``similar_incidents`` (each with ``similarity_score``,
``vector_similarity``, ``metadata_score``, priority, labels, resolution time, domain and
resolution), ``search_metadata`` and ``config_used``. The ranking is the assessment service's
(``score``): the list a RemediationRequest's status shows, with the request's weights in place
of the configured ones for this call alone — nothing shared is changed.

``GET /api/v1/incidents/stats`` reports the vector index: vectors, dimension, kind and the
count per domain.

This module knows the service only through :class:`IncidentSearch` (adapters sit below the
services); :func:`add_search_routes` registers both routes on an aiohttp application.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any, Protocol

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from precedent.adapters.problems import ProblemError
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.historical import HistoricalResult
from precedent.core.normalize import ProposedAction, normalize_request
from precedent.core.ports import SemanticNeighbours
from precedent.core.ranking import RankingWeights, rank_score
from precedent.core.snapshot import History
from precedent.errors import describe_validation
from precedent.models import RemediationRequestSpec, Severity

__all__ = [
    "MAX_BODY_BYTES",
    "SEARCH_PATH",
    "STATS_PATH",
    "IncidentSearch",
    "IndexStatsResponse",
    "PriorityWeights",
    "SearchMetadata",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
    "add_search_routes",
]

SEARCH_PATH = "/api/v1/incidents/search"
STATS_PATH = "/api/v1/incidents/stats"
MAX_BODY_BYTES = 64 * 1024
"""Largest search body accepted; larger ones get 413 (the text fields alone allow 8 KiB each)."""
MAX_TEXT = 8192
_SOME_WORD = r"[A-Za-z0-9]"
# A text field must hold at least one letter or digit, else there is nothing to search.
_Words = Annotated[str, Field(max_length=MAX_TEXT, pattern=_SOME_WORD)]
_Action = Annotated[str, Field(max_length=63, pattern=r"^[a-z][a-z0-9_]*$")]
_Weight = Annotated[float, Field(ge=0, le=1)]
_WORDS = "query_text"


class _Snapshots(Protocol):
    @property
    def snapshot(self) -> History: ...

    @property
    def lock(self) -> AbstractContextManager[Any]: ...


class _Config(Protocol):
    @property
    def mode(self) -> str: ...

    @property
    def ranking(self) -> RankingWeights: ...


class IncidentSearch(Protocol):
    """What the search API needs of the assessment service."""

    @property
    def history(self) -> _Snapshots:
        """The incident history (its current snapshot)."""
        ...

    @property
    def neighbours(self) -> SemanticNeighbours | None:
        """The semantic neighbour source (None in rules mode)."""
        ...

    @property
    def config(self) -> _Config:
        """The similarity mode and the configured ranking weights."""
        ...

    def score(
        self,
        action: ProposedAction,
        *,
        top_k: int | None = None,
        now: datetime | None = None,
        ranking: RankingWeights | None = None,
    ) -> tuple[History, HistoricalResult]:
        """The operator's similarity, risk and ranked similar incidents."""
        ...


# -- the request ------------------------------------------------------------------------------


def _no_null(schema: dict[str, Any], **extra: Any) -> None:
    """Leave null out of the request schema: an optional field may be null (the same as
    absent), but generated requests should exercise real values."""
    for prop in schema.get("properties", {}).values():
        options = prop.get("anyOf")
        if options and {"type": "null"} in options:
            rest = [o for o in prop.pop("anyOf") if o != {"type": "null"}]
            if len(rest) == 1:
                prop.update(rest[0])
            else:
                prop["anyOf"] = rest
        if "default" in prop and prop["default"] is None:
            del prop["default"]
    schema.update(extra)


class PriorityWeights(BaseModel):
    """Seed 002's priority weights (by Precedent's priority names); omitted ones keep theirs."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, json_schema_extra=lambda s, _: _no_null(s)
    )

    critical: _Weight | None = Field(default=None, description="Default 1.0.")
    high: _Weight | None = Field(default=None, description="Default 0.8.")
    medium: _Weight | None = Field(default=None, description="Default 0.5.")
    low: _Weight | None = Field(default=None, description="Default 0.3.")


class SearchTarget(BaseModel):
    """The resource a request-shaped query aims at."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda s, _: _no_null(s))

    kind: str = Field(min_length=1, max_length=253, description="Resource type, e.g. Deployment.")
    name: str = Field(min_length=1, max_length=253, description="Short name of the resource.")
    namespace: Annotated[str, Field(max_length=63)] | None = Field(
        default=None, description="Namespace, if any."
    )


class SearchRequest(BaseModel):
    """A search: text or request fields, how many, which domain, and the ranking's weights.

    Optional fields may be null (the same as absent); the schema leaves null out.
    """

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        # What the handler checks beyond the fields, said in the schema too: some words or a
        # request (action with target), and labels only with a request.
        json_schema_extra=lambda schema, _: _no_null(
            schema,
            anyOf=[
                {"required": ["query_text"]},
                {"required": ["title"]},
                {"required": ["description"]},
                {"required": ["action", "target"]},
            ],
            dependentRequired={
                "action": ["target"],
                "target": ["action"],
                "labels": ["action", "target"],
            },
        ),
    )

    query_text: _Words | None = Field(default=None, description="Free text to search for.")
    title: _Words | None = Field(
        default=None, description="Ticket title (joined with description)."
    )
    description: _Words | None = Field(default=None, description="Ticket or request description.")
    action: _Action | None = Field(
        default=None,
        description="A RemediationRequest's action, e.g. restart_service (needs target).",
    )
    target: SearchTarget | None = Field(default=None, description="The request's target.")
    labels: dict[str, str] = Field(
        default_factory=dict, description="The request's labels (with action and target)."
    )
    top_k: int = Field(default=20, ge=1, le=100, description="Results to return, 1–100.")
    domain_filter: Annotated[str, Field(min_length=1, max_length=63)] | None = Field(
        default=None,
        description="Only incidents of this domain (fetches top_k × 3, keeps the domain's).",
    )
    vector_weight: _Weight | None = Field(
        default=None, description="Weight of the similarity (default 0.7)."
    )
    metadata_weight: _Weight | None = Field(
        default=None, description="Weight of the metadata score (default 0.3)."
    )
    priority_weights: PriorityWeights | None = Field(
        default=None, description="Priority weights of the metadata score."
    )
    time_normalization_hours: Annotated[float, Field(gt=0, le=1_000_000)] | None = Field(
        default=None,
        description="Resolution hours at which the time score reaches 0 (default 100).",
    )

    def text(self) -> str:
        """The query's words: ``query_text``, else title and description."""
        if self.query_text is not None and self.query_text.strip():
            return self.query_text
        return "\n".join(t for t in (self.title, self.description) if t and t.strip())

    def ranking(self, base: RankingWeights) -> RankingWeights:
        """``base`` with this request's weights; a new value, ``base`` is left alone."""
        changes: dict[str, Any] = {}
        if self.vector_weight is not None:
            changes["vector_weight"] = self.vector_weight
        if self.metadata_weight is not None:
            changes["metadata_weight"] = self.metadata_weight
        if self.time_normalization_hours is not None:
            changes["time_normalization_hours"] = self.time_normalization_hours
        if self.priority_weights is not None:
            weights = dict(base.priority_weights)
            for severity in Severity:
                value = getattr(self.priority_weights, severity.value)
                if value is not None:
                    weights[severity] = value
            changes["priority_weights"] = weights
        return replace(base, **changes)


# -- the answer -------------------------------------------------------------------------------


class SearchResult(BaseModel):
    """One past incident, ranked (seed 002's SimilarTicket, for incidents)."""

    incident_id: str = Field(description="Incident id.")
    title: str = Field(description="One-line summary.")
    description: str = Field(description="What happened.")
    similarity_score: float = Field(
        ge=0, le=1, description="The ranking score: hybrid score × boosts, capped at 1."
    )
    vector_similarity: float = Field(
        ge=0, le=1, description="The similarity the ranking used (rule, semantic or the larger)."
    )
    semantic_similarity: float | None = Field(
        description="Calibrated embedding similarity (null in rules mode)."
    )
    rule_similarity: float = Field(ge=0, le=1, description="Seed 000's rule similarity.")
    metadata_score: float = Field(ge=0, le=1, description="0.6 × priority + 0.4 × time.")
    boost: float = Field(ge=0, description="Seed 001's rerank boosts, multiplied.")
    priority: str = Field(description="critical, high, medium or low.")
    labels: list[str] = Field(description="The incident's tags.")
    resolution_time_hours: float | None = Field(description="Hours to resolve, if recorded.")
    domain: str | None = Field(description="The incident's domain.")
    resolution: str | None = Field(description="How it was resolved, if recorded.")
    outcome: str = Field(description="How it ended.")


class SearchMetadata(BaseModel):
    """About the search (seed 002's SearchMetadata)."""

    query_domain: str | None = Field(description="The domain filter applied.")
    total_found: int = Field(ge=0, description="Results returned.")
    avg_similarity: float = Field(ge=0, le=1, description="Mean similarity_score of the results.")
    top_similarity: float = Field(ge=0, le=1, description="Highest similarity_score.")
    index_total: int = Field(ge=0, description="Incidents the search ran over.")


class SearchResponse(BaseModel):
    """Ranked incidents, what the search did and the parameters it used."""

    similar_incidents: list[SearchResult] = Field(description="Best first.")
    search_metadata: SearchMetadata
    config_used: dict[str, Any] = Field(description="The parameters this search used.")


class IndexStatsResponse(BaseModel):
    """What the incident index holds (seed 002's index stats)."""

    total_vectors: int = Field(ge=0, description="Vectors in the index (0 in rules mode).")
    dimension: int = Field(ge=0, description="Vector length (0 in rules mode).")
    index_kind: str = Field(description="exact (flat), approximate (IVF), or none (rules mode).")
    domain_distribution: dict[str, int] = Field(
        description="Incidents per domain; no domain counts as the empty string."
    )
    history_size: int = Field(ge=0, description="Incidents in the history.")
    embedder: str | None = Field(description="The embedder (null in rules mode).")
    mode: str = Field(description="Similarity mode: rules, semantic or hybrid.")


# -- the handlers -----------------------------------------------------------------------------

SEARCH_KEY: web.AppKey[IncidentSearch] = web.AppKey("search", IncidentSearch)
CLOCK_KEY: web.AppKey[Callable[[], datetime]] = web.AppKey("clock")


def _invalid_body(field: str, detail: str) -> ProblemError:
    return ProblemError(400, "invalid-body", "Invalid request body", detail, field)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def _read_json(request: web.Request) -> Any:
    too_large = ProblemError(
        413,
        "body-too-large",
        "Request body too large",
        f"the body is over {MAX_BODY_BYTES} bytes (64 KiB)",
        "body",
    )
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise too_large
    data = bytearray()
    async for chunk in request.content.iter_chunked(16 * 1024):
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise too_large
    if not data.strip():
        raise _invalid_body("body", "the body is empty; send a JSON object")
    try:
        # NaN and Infinity are not JSON, whatever Python's json module accepts by default.
        return json.loads(data, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _invalid_body("body", f"the body is not valid JSON: {exc}") from None


def _validation_problem(exc: ValidationError, prefix: str = "") -> ProblemError:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or "body")
    return _invalid_body(field, describe_validation(exc, prefix))


def parse_search(document: Any) -> tuple[SearchRequest, ProposedAction]:
    """The validated request and what the history is asked; ProblemError names the field."""
    if not isinstance(document, dict):
        raise _invalid_body("body", f"expected a JSON object, got {type(document).__name__}")
    try:
        search = SearchRequest.model_validate(document)
    except ValidationError as exc:
        raise _validation_problem(exc) from None
    text = search.text()
    if search.action is not None or search.target is not None:
        if search.action is None or search.target is None:
            missing = "action" if search.action is None else "target"
            raise _invalid_body(missing, f"{missing} is required with action or target")
        spec: dict[str, Any] = {
            "action": search.action,
            "target": search.target.model_dump(exclude_none=True),
            "description": text,
            "labels": search.labels,
            "domain": search.domain_filter,
        }
        try:
            parsed = RemediationRequestSpec.model_validate(spec)
        except ValidationError as exc:
            raise _validation_problem(exc) from None
        return search, normalize_request(parsed)
    if not text.strip():
        raise _invalid_body(
            _WORDS,
            "the query is empty: give query_text, title or description, or action and target",
        )
    if search.labels:
        raise _invalid_body("labels", "labels need action and target")
    return search, _text_action(text, search.domain_filter)


def _text_action(text: str, domain: str | None) -> ProposedAction:
    # A text query is a request with no action and no target: only its words count
    # (the same as `precedent search`).
    words = " ".join(text.lower().split())
    return ProposedAction(action="", resource_type="", resource_name="", text=words, domain=domain)


def _index_total(service: IncidentSearch, history: History) -> int:
    neighbours = service.neighbours
    if isinstance(neighbours, VectorNeighbours):
        return len(neighbours.index)
    return len(history)


def run_search(
    service: IncidentSearch, search: SearchRequest, action: ProposedAction, now: datetime
) -> SearchResponse:
    """Rank as the operator does, keep the domain's, and describe it in seed 002's shape."""
    weights = search.ranking(service.config.ranking)
    domain = search.domain_filter
    # With a domain, rank three times as many and keep that domain's (seed 002's over-fetch);
    # the vector index over-fetches the same way for the semantic neighbours.
    fetch = search.top_k * 3 if domain is not None else search.top_k
    history, result = service.score(action, top_k=fetch, now=now, ranking=weights)
    results: list[SearchResult] = []
    for similar in result.similar:
        incident = history.get(similar.id)
        if incident is None or (domain is not None and incident.domain != domain):
            continue
        parts = rank_score(
            incident,
            similar.similarity,
            resource_name=action.resource_name,
            now=now,
            weights=weights,
        )
        results.append(
            SearchResult(
                incident_id=incident.id,
                title=incident.title,
                description=incident.description,
                similarity_score=similar.relevance,
                vector_similarity=similar.similarity,
                semantic_similarity=similar.parts.semantic,
                rule_similarity=similar.parts.rule,
                metadata_score=round(parts.metadata, 4),
                boost=round(parts.boost, 4),
                priority=incident.effective_priority.value,
                labels=list(incident.tags),
                resolution_time_hours=incident.resolution_hours,
                domain=incident.domain,
                resolution=incident.resolution or None,
                outcome=incident.outcome.value,
            )
        )
        if len(results) == search.top_k:
            break
    scores = [r.similarity_score for r in results]
    neighbours = service.neighbours
    return SearchResponse(
        similar_incidents=results,
        search_metadata=SearchMetadata(
            query_domain=domain,
            total_found=len(results),
            avg_similarity=round(sum(scores) / len(scores), 4) if scores else 0.0,
            top_similarity=max(scores, default=0.0),
            index_total=_index_total(service, history),
        ),
        config_used={
            "top_k": search.top_k,
            "domain_filter": domain,
            "vector_weight": weights.vector_weight,
            "metadata_weight": weights.metadata_weight,
            "priority_weights": {s.value: w for s, w in weights.priority_weights.items()},
            "time_normalization_hours": weights.time_normalization_hours,
            "mode": service.config.mode,
            "embedder": neighbours.name if neighbours is not None else None,
        },
    )


def index_stats(service: IncidentSearch) -> IndexStatsResponse:
    """The index's stats after bringing it in line with the history."""
    neighbours = service.neighbours
    if isinstance(neighbours, VectorNeighbours):
        # Under the history's lock, as a search syncs and reads the index: the index and the
        # BM25 arrays are not to change while another thread reads them.
        with service.history.lock:
            history = service.history.snapshot
            neighbours.sync(history)
            stats = neighbours.stats()
        return IndexStatsResponse(
            total_vectors=stats.total_vectors,
            dimension=stats.dimension,
            index_kind=stats.kind,
            domain_distribution=stats.domain_distribution,
            history_size=len(history),
            embedder=neighbours.name,
            mode=service.config.mode,
        )
    history = service.history.snapshot
    domains = Counter(i.domain or "" for i in history.incidents)
    return IndexStatsResponse(
        total_vectors=0,
        dimension=0,
        index_kind="none",
        domain_distribution=dict(sorted(domains.items())),
        history_size=len(history),
        embedder=neighbours.name if neighbours is not None else None,
        mode=service.config.mode,
    )


async def search_handler(request: web.Request) -> web.Response:
    """``POST /api/v1/incidents/search``."""
    search, action = parse_search(await _read_json(request))
    service = request.app[SEARCH_KEY]
    now = request.app[CLOCK_KEY]()
    # Off the event loop: the vector search is CPU work (FAISS releases the GIL); the history
    # lock inside ``score`` keeps concurrent searches and updates consistent.
    loop = asyncio.get_running_loop()
    answer = await loop.run_in_executor(None, partial(run_search, service, search, action, now))
    return web.json_response(answer.model_dump(mode="json"))


async def stats_handler(request: web.Request) -> web.Response:
    """``GET /api/v1/incidents/stats``."""
    service = request.app[SEARCH_KEY]
    loop = asyncio.get_running_loop()
    answer = await loop.run_in_executor(None, index_stats, service)
    return web.json_response(answer.model_dump(mode="json"))


def _utc_now() -> datetime:
    return datetime.now(UTC)


def add_search_routes(
    app: web.Application,
    service: IncidentSearch,
    *,
    clock: Callable[[], datetime] = _utc_now,
) -> None:
    """Serve the search and stats routes from ``service``; ``clock`` anchors recency boosts."""
    app[SEARCH_KEY] = service
    app[CLOCK_KEY] = clock
    app.router.add_post(SEARCH_PATH, search_handler)
    app.router.add_get(STATS_PATH, stats_handler)
