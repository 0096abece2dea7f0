"""The fleet memory's query, its answer and what is written to it (seed 001), as pure data.

Seed 001's query, built by :func:`search_body`::

    {"size": max_results,
     "query": {"bool": {
        "must":   [{"multi_match": {"query": TEXT, "type": "best_fields",
                    "fields": ["error_message^3", "root_cause_summary^2",
                               "resource_name^2", "advice_summary"]}}],
        "filter": [{"term": {"resource_type": TYPE}},
                   {"range": {"quality_score": {"gte": min_quality}}}]}},
     "sort": [{"_score": {"order": "desc"}}, {"created_at": {"order": "desc"}}]}

When the index has a ``knn_vector`` field, a ``knn`` clause over the request's embedding is
added under ``bool.should`` (hybrid: the text match stays required, nearness adds to the score).

Hits carry seed 001's required fields (``investigation_id``, ``resource_type``,
``resource_name``, ``error_type``, ``root_cause_summary``, ``advice_summary``, ``outcome``,
``quality_score``, ``created_at``); documents Precedent writes add the incident's own fields
(title, action, severity, tags, the cluster that wrote it). :func:`rerank` orders hits by their
normalised ``_score`` times seed 001's boosts (core/ranking.py, the one place they live).

Topology hints (seed 001): nodes and edges stored with investigations, kept when an edge's
confidence is at least the minimum (0.6) and it was observed within the maximum age (48 h);
nodes of type ``unknown`` are left out. They are hints for people, never scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from precedent.core.normalize import canonical_resource_type
from precedent.core.ranking import RankingWeights, rank_score
from precedent.models import (
    Incident,
    IncidentOutcome,
    IncidentResource,
    Severity,
    TopologyEdge,
    TopologyHints,
    TopologyNode,
    parse_timestamp,
)

__all__ = [
    "MULTI_MATCH_FIELDS",
    "REQUIRED_FIELDS",
    "MemoryHit",
    "MemoryQuery",
    "ParsedHits",
    "TopologyLimits",
    "VectorField",
    "incident_document",
    "incident_from_source",
    "parse_hits",
    "rerank",
    "search_body",
    "topology_hints",
    "vector_field_of",
]

MULTI_MATCH_FIELDS = (
    "error_message^3",
    "root_cause_summary^2",
    "resource_name^2",
    "advice_summary",
)
"""Seed 001's multi_match fields and boosts."""

REQUIRED_FIELDS = (
    "investigation_id",
    "resource_type",
    "resource_name",
    "error_type",
    "root_cause_summary",
    "advice_summary",
    "outcome",
    "quality_score",
    "created_at",
)
"""Seed 001's required fields of a stored investigation."""


@dataclass(frozen=True, slots=True)
class VectorField:
    """The index's ``knn_vector`` field, detected from its mapping."""

    name: str
    """Field name, e.g. ``embedding``."""
    dimension: int
    """Vector length the mapping declares."""


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """What one request asks the memory."""

    text: str
    """The request's text (action words, resource, description, signal)."""
    resource_type: str
    """Canonical resource type, filtered on exactly."""
    size: int = 5
    """Hits to return (seed 001: max results 5)."""
    min_quality: float = 0.7
    """Lowest ``quality_score`` a hit may have (seed 001: 0.7)."""
    vector: Sequence[float] | None = None
    """The request's embedding, for the knn clause when the index has a vector field."""
    vector_field: VectorField | None = None
    """The index's vector field; no knn clause without it."""


def search_body(query: MemoryQuery) -> dict[str, Any]:
    """The ``_search`` body for ``query``: seed 001's request, plus knn when the index has one."""
    boolean: dict[str, Any] = {
        "must": [
            {
                "multi_match": {
                    "query": query.text,
                    "fields": list(MULTI_MATCH_FIELDS),
                    "type": "best_fields",
                }
            }
        ],
        "filter": [
            {"term": {"resource_type": query.resource_type}},
            {"range": {"quality_score": {"gte": query.min_quality}}},
        ],
    }
    field_ = query.vector_field
    if field_ is not None and query.vector is not None and len(query.vector) == field_.dimension:
        boolean["should"] = [
            {
                "knn": {
                    field_.name: {
                        "vector": [round(float(v), 6) for v in query.vector],
                        "k": query.size,
                    }
                }
            }
        ]
    return {
        "size": query.size,
        "query": {"bool": boolean},
        "sort": [{"_score": {"order": "desc"}}, {"created_at": {"order": "desc"}}],
    }


def vector_field_of(mapping: Mapping[str, Any]) -> VectorField | None:
    """The first ``knn_vector`` field of a ``GET index/_mapping`` answer (any index in it)."""
    for body in mapping.values():
        properties = ((body or {}).get("mappings") or {}).get("properties") or {}
        for name, spec in sorted(properties.items()):
            if isinstance(spec, Mapping) and spec.get("type") == "knn_vector":
                return VectorField(str(name), int(spec.get("dimension", 0)))
    return None


# -- the answer ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One stored investigation the memory returned."""

    incident: Incident
    """The investigation as an incident."""
    score: float
    """OpenSearch's ``_score`` (unbounded; normalised by :func:`rerank`)."""
    cluster: str | None
    """The cluster that wrote it, if recorded."""
    topology: Mapping[str, Any] = field(default_factory=dict)
    """Its stored ``topology`` (``nodes``, ``edges``), raw."""


@dataclass(frozen=True, slots=True)
class ParsedHits:
    """Hits that parsed, and one line per hit that did not."""

    hits: list[MemoryHit]
    """Parsed hits in the order the memory returned them."""
    skipped: list[str]
    """Why each malformed hit was left out (``hit 2: created_at: …``)."""


_OUTCOMES = {o.value for o in IncidentOutcome}
_SEVERITIES = {s.value for s in Severity}


def _text(source: Mapping[str, Any], key: str) -> str:
    value = source.get(key)
    if value is None:
        raise ValueError(f"{key}: required field is missing")
    return str(value).strip()


def incident_from_source(source: Mapping[str, Any]) -> Incident:
    """An incident from a hit's ``_source``; ValueError names the first bad field."""
    for key in REQUIRED_FIELDS:
        if source.get(key) is None:
            raise ValueError(f"{key}: required field is missing")
    outcome = _text(source, "outcome").lower()
    if outcome not in _OUTCOMES:
        raise ValueError(f"outcome: {outcome!r} is not resolved, partial, unresolved or unknown")
    try:
        quality = float(source["quality_score"])
    except (TypeError, ValueError):
        raise ValueError(f"quality_score: not a number: {source['quality_score']!r}") from None
    if not 0.0 <= quality <= 1.0:
        raise ValueError(f"quality_score: {quality} is outside 0–1")
    error_type = _text(source, "error_type")
    root_cause = _text(source, "root_cause_summary")
    name = _text(source, "resource_name")
    severity = str(source.get("severity") or "medium").lower()
    tags = [str(t) for t in source.get("tags") or []]
    if error_type and error_type not in tags:
        tags.append(error_type)
    data: dict[str, Any] = {
        "id": _text(source, "investigation_id"),
        "title": str(source.get("title") or f"{error_type} on {name}: {root_cause}")[:512],
        "description": str(source.get("error_message") or ""),
        "action": str(source.get("action") or ""),
        "resource": IncidentResource(type=_text(source, "resource_type"), name=name),
        "severity": severity if severity in _SEVERITIES else "medium",
        "tags": tags[:64],
        "outcome": outcome,
        "root_cause": root_cause,
        "recommended_procedure": _text(source, "advice_summary"),
        "occurred_at": parse_timestamp(source["created_at"], "created_at"),
        "quality_score": quality,
    }
    for key in ("environment", "namespace", "domain", "cluster", "resolution"):
        if source.get(key):
            data[key] = str(source[key])
    if source.get("resolution_hours") is not None:
        data["resolution_hours"] = float(source["resolution_hours"])
    try:
        return Incident.model_validate(data)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise ValueError(str(exc).splitlines()[0]) from None


def parse_hits(response: Mapping[str, Any]) -> ParsedHits:
    """The hits of a ``_search`` answer (``hits.hits[]`` with ``_score`` and ``_source``)."""
    raw = (response.get("hits") or {}).get("hits") or []
    hits: list[MemoryHit] = []
    skipped: list[str] = []
    for position, hit in enumerate(raw, start=1):
        source = hit.get("_source") if isinstance(hit, Mapping) else None
        if not isinstance(source, Mapping):
            skipped.append(f"hit {position}: no _source")
            continue
        try:
            incident = incident_from_source(source)
        except ValueError as exc:
            skipped.append(f"hit {position}: {exc}")
            continue
        score = hit.get("_score")
        topology = source.get("topology")
        hits.append(
            MemoryHit(
                incident=incident,
                score=float(score) if isinstance(score, int | float) else 0.0,
                cluster=str(source["cluster"]) if source.get("cluster") else None,
                topology=topology if isinstance(topology, Mapping) else {},
            )
        )
    return ParsedHits(hits, skipped)


def rerank(
    hits: Sequence[MemoryHit],
    *,
    resource_name: str | None,
    now: datetime | None,
    limit: int,
    weights: RankingWeights | None = None,
) -> list[MemoryHit]:
    """The ``limit`` best hits by normalised ``_score`` × seed 001's boosts (ties: id)."""
    top = max((h.score for h in hits), default=0.0)
    scored = []
    for hit in hits:
        relevance = hit.score / top if top > 0 else 1.0
        boost = rank_score(
            hit.incident, 0.0, resource_name=resource_name, now=now, weights=weights
        ).boost
        scored.append((-relevance * boost, hit.incident.id, hit))
    scored.sort(key=lambda s: (s[0], s[1]))
    return [hit for _, _, hit in scored[:limit]]


# -- what a cluster writes ---------------------------------------------------------------------


def incident_document(
    incident: Incident, *, cluster: str | None, vector: Sequence[float] | None = None
) -> dict[str, Any]:
    """The document stored for ``incident`` (id = incident id): seed 001's fields and ours."""
    resource_type = canonical_resource_type(incident.resource.type) if incident.resource else ""
    error_type = next((t for t in incident.tags), incident.action or "incident")
    occurred = incident.occurred_at or datetime(1970, 1, 1, tzinfo=UTC)
    document: dict[str, Any] = {
        "investigation_id": incident.id,
        "resource_type": resource_type or "unknown",
        "resource_name": incident.resource.name if incident.resource else "",
        "error_type": error_type,
        "error_message": "\n".join(p for p in (incident.title, incident.description) if p),
        "root_cause_summary": incident.root_cause or incident.title,
        "advice_summary": incident.recommended_procedure or incident.resolution or "",
        "outcome": incident.outcome.value,
        "quality_score": incident.quality_score,
        "created_at": occurred.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "title": incident.title,
        "action": incident.action,
        "severity": incident.severity.value,
        "tags": list(incident.tags),
    }
    optional = {
        "cluster": cluster or incident.cluster,
        "environment": incident.environment,
        "namespace": incident.namespace,
        "domain": incident.domain,
        "resolution": incident.resolution or None,
        "resolution_hours": incident.resolution_hours,
    }
    document.update({k: v for k, v in optional.items() if v is not None})
    if vector is not None:
        document["embedding"] = [round(float(v), 6) for v in vector]
    return document


# -- topology hints ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopologyLimits:
    """Which stored edges become hints (seed 001's defaults) and how many are shown."""

    min_confidence: float = 0.6
    """Lowest edge confidence kept."""
    max_age: timedelta = timedelta(hours=48)
    """Oldest edge kept, measured from the request's time."""
    max_nodes: int = 10
    """Nodes listed at most."""
    max_edges: int = 10
    """Edges listed at most."""


def _node_key(node: Mapping[str, Any]) -> str:
    return str(node.get("id") or node.get("name") or "")


def topology_hints(
    hits: Sequence[MemoryHit], *, now: datetime, limits: TopologyLimits | None = None
) -> TopologyHints | None:
    """Known resources and their relationships from the hits' stored topology, or None."""
    limits = limits or TopologyLimits()
    nodes: dict[str, TopologyNode] = {}
    for hit in hits:
        for raw in hit.topology.get("nodes") or []:
            if not isinstance(raw, Mapping):
                continue
            kind = str(raw.get("type") or "unknown").strip().lower()
            key = _node_key(raw)
            if kind == "unknown" or not key:
                continue
            nodes.setdefault(key, TopologyNode(type=kind, name=str(raw.get("name") or key)))
    edges: dict[tuple[str, str, str], TopologyEdge] = {}
    for hit in hits:
        for raw in hit.topology.get("edges") or []:
            if not isinstance(raw, Mapping):
                continue
            source, target = str(raw.get("source") or ""), str(raw.get("target") or "")
            if source not in nodes or target not in nodes:
                continue  # an edge to an unknown (or excluded) node says nothing usable
            try:
                confidence = float(raw.get("confidence", 0.0))
                seen = parse_timestamp(
                    raw.get("observed_at") or raw.get("timestamp"), "observed_at"
                )
            except (TypeError, ValueError):
                continue
            age = now - seen
            if confidence < limits.min_confidence or age > limits.max_age or age < -limits.max_age:
                continue
            relation = str(raw.get("relation") or raw.get("type") or "RELATED").upper()
            edge_key = (source, relation, target)
            held = edges.get(edge_key)
            if held is None or confidence > held.confidence:
                edges[edge_key] = TopologyEdge(
                    source=nodes[source].name,
                    relation=relation,
                    target=nodes[target].name,
                    confidence=round(confidence, 4),
                    observed_at=seen,
                )
    if not nodes and not edges:
        return None
    kept_edges = sorted(edges.values(), key=lambda e: (-e.confidence, e.source, e.target))
    kept_nodes = sorted(nodes.values(), key=lambda n: (n.type, n.name))
    return TopologyHints(
        nodes=kept_nodes[: limits.max_nodes],
        edges=kept_edges[: limits.max_edges],
        total_nodes=len(nodes),
        total_edges=len(edges),
    )
