"""Seed 001's query, hit parsing, re-ranking and topology hints (core/memory_query.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from precedent.core.memory_query import (
    MemoryHit,
    MemoryQuery,
    VectorField,
    incident_document,
    incident_from_source,
    parse_hits,
    rerank,
    search_body,
    topology_hints,
    vector_field_of,
)
from precedent.models import Incident, IncidentOutcome

# Seed 001's "Request Format", verbatim.
SEED_REQUEST = {
    "size": 20,
    "query": {
        "bool": {
            "must": [
                {
                    "multi_match": {
                        "query": "Lambda timeout error",
                        "fields": [
                            "error_message^3",
                            "root_cause_summary^2",
                            "resource_name^2",
                            "advice_summary",
                        ],
                        "type": "best_fields",
                    }
                }
            ],
            "filter": [
                {"term": {"resource_type": "lambda"}},
                {"range": {"quality_score": {"gte": 0.7}}},
            ],
        }
    },
    "sort": [{"_score": {"order": "desc"}}, {"created_at": {"order": "desc"}}],
}

# Seed 001's "Response Format", verbatim.
SEED_RESPONSE: dict[str, Any] = {
    "hits": {
        "hits": [
            {
                "_score": 0.95,
                "_source": {
                    "investigation_id": "inv-123",
                    "resource_type": "lambda",
                    "resource_name": "payment-processor",
                    "error_type": "timeout",
                    "root_cause_summary": "Lambda timeout due to cold start",
                    "advice_summary": "Increase memory allocation",
                    "outcome": "resolved",
                    "quality_score": 0.85,
                    "created_at": "2025-01-15T10:30:00Z",
                },
            }
        ]
    }
}


def test_the_body_is_seed_001s_request() -> None:
    assert search_body(MemoryQuery("Lambda timeout error", "lambda", size=20)) == SEED_REQUEST


def test_a_knn_clause_is_added_only_for_a_vector_field_of_the_same_dimension() -> None:
    field = VectorField("embedding", 3)
    hybrid = search_body(
        MemoryQuery("Lambda timeout error", "lambda", vector=[0.1, 0.2, 0.3], vector_field=field)
    )
    assert hybrid["query"]["bool"]["should"] == [
        {"knn": {"embedding": {"vector": [0.1, 0.2, 0.3], "k": 5}}}
    ]
    assert hybrid["query"]["bool"]["must"] == SEED_REQUEST["query"]["bool"]["must"]  # type: ignore[index]
    other = search_body(MemoryQuery("x", "lambda", vector=[0.1, 0.2], vector_field=field))
    assert "should" not in other["query"]["bool"]
    assert (
        "should"
        not in search_body(MemoryQuery("x", "lambda", vector=[0.1, 0.2, 0.3]))["query"]["bool"]
    )


def test_the_vector_field_is_read_from_the_mapping() -> None:
    mapping = {
        "idx": {
            "mappings": {
                "properties": {
                    "title": {"type": "text"},
                    "embedding": {"type": "knn_vector", "dimension": 512},
                }
            }
        }
    }
    assert vector_field_of(mapping) == VectorField("embedding", 512)
    assert (
        vector_field_of({"idx": {"mappings": {"properties": {"title": {"type": "text"}}}}}) is None
    )


def test_the_seed_response_parses_into_an_incident() -> None:
    parsed = parse_hits(SEED_RESPONSE)
    assert parsed.skipped == []
    [hit] = parsed.hits
    assert hit.score == 0.95
    incident = hit.incident
    assert incident.id == "inv-123"
    assert incident.resource is not None
    assert (incident.resource.type, incident.resource.name) == ("lambda", "payment-processor")
    assert incident.root_cause == "Lambda timeout due to cold start"
    assert incident.recommended_procedure == "Increase memory allocation"
    assert incident.outcome is IncidentOutcome.RESOLVED
    assert incident.quality_score == 0.85
    assert incident.occurred_at == datetime(2025, 1, 15, 10, 30, tzinfo=UTC)
    assert "timeout" in incident.tags


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"investigation_id": None}, "investigation_id: required field is missing"),
        ({"created_at": "yesterday"}, "created_at: not an RFC 3339 time"),
        ({"outcome": "fixed"}, "outcome: 'fixed' is not resolved"),
        ({"quality_score": 1.5}, "quality_score: 1.5 is outside 0–1"),
    ],
)
def test_a_malformed_hit_is_skipped_with_a_line_naming_the_field(
    change: dict[str, Any], named: str
) -> None:
    source = {**SEED_RESPONSE["hits"]["hits"][0]["_source"], **change}
    parsed = parse_hits({"hits": {"hits": [{"_score": 1.0, "_source": source}]}})
    assert parsed.hits == []
    [line] = parsed.skipped
    assert line.startswith(f"hit 1: {named}")


def _hit(id_: str, name: str, outcome: str, score: float = 1.0, quality: float = 1.0) -> MemoryHit:
    source = {
        **SEED_RESPONSE["hits"]["hits"][0]["_source"],
        "investigation_id": id_,
        "resource_name": name,
        "outcome": outcome,
        "quality_score": quality,
    }
    return MemoryHit(incident_from_source(source), score, None)


def test_rerank_applies_seed_001s_boosts() -> None:
    # Equal text scores: exact name ×1.5 beats resolved ×1.3, which beats partial ×1.1.
    hits = [
        _hit("a-partial", "other", "partial"),
        _hit("b-resolved", "other", "resolved"),
        _hit("c-exact", "payment-processor", "unresolved"),
    ]
    ranked = rerank(hits, resource_name="payment-processor", now=None, limit=5)
    assert [h.incident.id for h in ranked] == ["c-exact", "b-resolved", "a-partial"]
    # A text score 1.6 × higher outweighs the exact-name boost (1.5) …
    ranked = rerank(
        [_hit("x", "payment-processor", "unknown", 1.0), _hit("y", "other", "unknown", 1.6)],
        resource_name="payment-processor",
        now=None,
        limit=1,
    )
    assert [h.incident.id for h in ranked] == ["y"]
    # … and quality scales by 0.5 + 0.5 × quality.
    ranked = rerank(
        [_hit("lo", "n", "unknown", 1.0, 0.7), _hit("hi", "n", "unknown", 0.9, 1.0)],
        resource_name=None,
        now=None,
        limit=2,
    )
    assert [h.incident.id for h in ranked] == ["hi", "lo"]  # 0.9 × 1.0 > 1.0 × 0.85


def test_recency_boost_is_measured_from_now() -> None:
    old, new = _hit("old", "n", "unknown", 1.0), _hit("new", "n", "unknown", 0.85)
    now = datetime(2025, 1, 17, tzinfo=UTC)  # both created 2025-01-15: < 7 days → ×1.2 each
    assert [h.incident.id for h in rerank([new, old], resource_name=None, now=now, limit=2)] == [
        "old",
        "new",
    ]


def test_a_written_document_reads_back_as_the_same_incident() -> None:
    incident = Incident.model_validate(
        {
            "id": "INC-7",
            "title": "Defrag corrupted the journal",
            "description": "vol-9 remounted read-only",
            "action": "defrag_volume",
            "resource": {"type": "VolumeAttachment", "name": "vol-9"},
            "severity": "critical",
            "tags": ["storage"],
            "outcome": "unresolved",
            "rootCause": "journal corruption",
            "recommendedProcedure": "snapshot first",
            "occurredAt": "2025-03-01T08:00:00Z",
            "qualityScore": 0.9,
        }
    )
    document = incident_document(incident, cluster="east")
    assert document["investigation_id"] == "INC-7"
    assert document["resource_type"] == "volumeattachment"
    assert document["cluster"] == "east"
    back = incident_from_source(document)
    assert back.id == incident.id
    assert back.title == incident.title
    assert back.action == incident.action
    assert back.severity == incident.severity
    assert back.outcome == incident.outcome
    assert back.occurred_at == incident.occurred_at
    assert back.recommended_procedure == incident.recommended_procedure


def test_topology_hints_keep_confident_recent_edges_between_known_nodes() -> None:
    now = datetime(2025, 1, 15, 12, tzinfo=UTC)
    fresh = (now - timedelta(hours=2)).isoformat()
    stale = (now - timedelta(hours=49)).isoformat()
    topology = {
        "nodes": [
            {"id": "n1", "type": "lambda", "name": "payment-processor"},
            {"id": "n2", "type": "dynamodb", "name": "user-sessions"},
            {"id": "n3", "type": "apigateway", "name": "api-gateway-123"},
            {"id": "n4", "type": "unknown", "name": "mystery"},
        ],
        "edges": [
            {
                "source": "n1",
                "target": "n2",
                "relation": "CALLS",
                "confidence": 0.85,
                "observed_at": fresh,
            },
            {
                "source": "n3",
                "target": "n1",
                "relation": "TRIGGERS",
                "confidence": 0.92,
                "observed_at": fresh,
            },
            {
                "source": "n1",
                "target": "n3",
                "relation": "CALLS",
                "confidence": 0.59,
                "observed_at": fresh,
            },
            {
                "source": "n2",
                "target": "n3",
                "relation": "CALLS",
                "confidence": 0.99,
                "observed_at": stale,
            },
            {
                "source": "n1",
                "target": "n4",
                "relation": "CALLS",
                "confidence": 0.99,
                "observed_at": fresh,
            },
        ],
    }
    hit = MemoryHit(_hit("a", "n", "resolved").incident, 1.0, None, topology)
    hints = topology_hints([hit], now=now)
    assert hints is not None
    assert sorted(n.name for n in hints.nodes) == [
        "api-gateway-123",
        "payment-processor",
        "user-sessions",
    ]
    assert [(e.source, e.relation, e.target, e.confidence) for e in hints.edges] == [
        ("api-gateway-123", "TRIGGERS", "payment-processor", 0.92),
        ("payment-processor", "CALLS", "user-sessions", 0.85),
    ]
    assert topology_hints([_hit("b", "n", "resolved")], now=now) is None
