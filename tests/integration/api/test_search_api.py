"""The incident search API against a real server: the operator's ranking, seed 002's shape,
per-request weights that change nothing shared, problem+json errors, and every response
validated against the served OpenAPI 3.1 document."""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import jsonschema
import pytest

from precedent.adapters.evaluation import text_query
from precedent.core.normalize import normalize_request
from precedent.core.ranking import RankingWeights
from precedent.models import RemediationRequestSpec, Severity
from tests.integration.api.conftest import NOW, Api

pytestmark = pytest.mark.integration

QUERY = "database connection pool exhausted, postgres refusing connections"


@pytest.fixture(scope="module")
def document(api: Api) -> dict[str, Any]:
    """The OpenAPI document the server serves."""
    response = api.client.get("/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def conforms(document: dict[str, Any], path: str, method: str, response: httpx.Response) -> Any:
    """Validate ``response`` against the document's schema for it; return the body."""
    status = str(response.status_code)
    declared = document["paths"][path][method]["responses"]
    assert status in declared, f"{method.upper()} {path}: {status} is not documented"
    media = response.headers["content-type"].split(";")[0].strip()
    content = declared[status]["content"]
    assert media in content, f"{method.upper()} {path} {status}: {media} is not documented"
    body = response.json()
    schema = {**content[media]["schema"], "components": document["components"]}
    jsonschema.Draft202012Validator(schema).validate(body)
    return body


def search(api: Api, document: dict[str, Any], body: Any) -> Any:
    """POST a search and validate the answer against the document."""
    return conforms(document, "/api/v1/incidents/search", "post", api.search(body))


def ids(answer: Any) -> list[str]:
    """The ranked incident ids of a search answer."""
    return [r["incident_id"] for r in answer["similar_incidents"]]


def test_text_search_ranks_as_the_operator(api: Api, document: dict[str, Any]) -> None:
    answer = search(api, document, {"query_text": QUERY, "top_k": 5})
    expected = api.service.rank(text_query(QUERY), 5, now=NOW)
    assert ids(answer) == [s.id for s in expected]
    assert [r["similarity_score"] for r in answer["similar_incidents"]] == [
        s.relevance for s in expected
    ]
    assert [r["vector_similarity"] for r in answer["similar_incidents"]] == [
        s.similarity for s in expected
    ]
    top = answer["similar_incidents"][0]
    incident = api.service.history.snapshot.get(top["incident_id"])
    assert incident is not None
    assert top["labels"] == incident.tags
    assert top["resolution_time_hours"] == incident.resolution_hours
    assert top["domain"] == incident.domain
    meta = answer["search_metadata"]
    scores = [r["similarity_score"] for r in answer["similar_incidents"]]
    assert meta["total_found"] == 5
    assert meta["top_similarity"] == max(scores)
    assert meta["avg_similarity"] == pytest.approx(sum(scores) / 5, abs=1e-4)
    assert meta["index_total"] == api.service.history_size()
    assert answer["config_used"]["top_k"] == 5
    assert answer["config_used"]["vector_weight"] == 0.7


def test_title_and_description_are_the_query(api: Api, document: dict[str, Any]) -> None:
    title, description = "Postgres max_connections", "pool exhausted after a config change"
    answer = search(api, document, {"title": title, "description": description, "top_k": 3})
    expected = api.service.rank(text_query(f"{title}\n{description}"), 3, now=NOW)
    assert ids(answer) == [s.id for s in expected]


def test_request_fields_rank_as_a_remediation_request(api: Api, document: dict[str, Any]) -> None:
    body = {
        "action": "scale_down",
        "target": {"kind": "Deployment", "name": "checkout"},
        "description": "reduce replicas after the morning peak",
        "labels": {"environment": "production"},
        "top_k": 5,
    }
    answer = search(api, document, body)
    spec = RemediationRequestSpec.model_validate(
        {k: body[k] for k in ("action", "target", "description", "labels")}
    )
    expected = api.service.rank(normalize_request(spec), 5, now=NOW)
    assert ids(answer) == [s.id for s in expected]
    assert answer["similar_incidents"][0]["rule_similarity"] > 0


def test_domain_filter_over_fetches_and_keeps_the_domain(
    api: Api, document: dict[str, Any]
) -> None:
    answer = search(api, document, {"query_text": QUERY, "top_k": 4, "domain_filter": "compute"})
    assert answer["similar_incidents"], "the domain has matches"
    assert {r["domain"] for r in answer["similar_incidents"]} == {"compute"}
    ranked = api.service.rank(text_query(QUERY, domain="compute"), 12, now=NOW)
    snapshot = api.service.history.snapshot
    kept = [s.id for s in ranked if (i := snapshot.get(s.id)) and i.domain == "compute"]
    assert ids(answer) == kept[:4]
    assert answer["search_metadata"]["query_domain"] == "compute"


def test_per_request_weights_rank_and_change_nothing_shared(
    api: Api, document: dict[str, Any]
) -> None:
    before = search(api, document, {"query_text": QUERY, "top_k": 10})
    heavy = {"query_text": QUERY, "top_k": 10, "vector_weight": 0.1, "metadata_weight": 0.9}
    weighted = search(api, document, heavy)
    expected = api.service.rank(
        text_query(QUERY),
        10,
        now=NOW,
        ranking=RankingWeights(vector_weight=0.1, metadata_weight=0.9),
    )
    assert ids(weighted) == [s.id for s in expected]
    assert ids(weighted) != ids(before), "the weights must matter for this query"
    assert weighted["config_used"]["metadata_weight"] == 0.9
    # The shared service keeps its configuration, and the default answer is unchanged.
    assert api.service.config.ranking == RankingWeights()
    assert search(api, document, {"query_text": QUERY, "top_k": 10}) == before


def test_concurrent_requests_with_different_weights_do_not_mix(api: Api) -> None:
    bodies = [
        {"query_text": QUERY, "top_k": 10, "vector_weight": w, "metadata_weight": 1 - w}
        for w in (0.1, 0.9) * 8
    ]
    sequential = [api.search(b).json() for b in bodies[:2]]
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda b: api.search(b).json(), bodies))
    for i, answer in enumerate(answers):
        assert answer == sequential[i % 2]


def test_priority_weights_and_time_normalisation(api: Api, document: dict[str, Any]) -> None:
    body = {
        "query_text": QUERY,
        "top_k": 5,
        "priority_weights": {"critical": 0.0, "high": 0.1},
        "time_normalization_hours": 10,
    }
    answer = search(api, document, body)
    used = answer["config_used"]
    assert used["priority_weights"] == {"critical": 0.0, "high": 0.1, "medium": 0.5, "low": 0.3}
    assert used["time_normalization_hours"] == 10
    weights = {Severity.CRITICAL: 0.0, Severity.HIGH: 0.1, Severity.MEDIUM: 0.5, Severity.LOW: 0.3}
    for row in answer["similar_incidents"]:
        hours = row["resolution_time_hours"]
        time = 0.0 if hours is None else max(0.0, 1 - hours / 10)
        priority = weights[Severity(row["priority"])]
        assert row["metadata_score"] == pytest.approx(0.6 * priority + 0.4 * time, abs=1e-4)


def test_stats_report_the_index(api: Api, document: dict[str, Any]) -> None:
    stats = conforms(
        document, "/api/v1/incidents/stats", "get", api.client.get("/api/v1/incidents/stats")
    )
    snapshot = api.service.history.snapshot
    assert stats["total_vectors"] == len(snapshot) == stats["history_size"]
    assert stats["dimension"] == 512
    assert stats["index_kind"] == "exact"
    assert stats["embedder"] == "lexical-512"
    assert stats["domain_distribution"] == dict(Counter(i.domain or "" for i in snapshot))


def test_health_and_the_context_api_share_the_port(api: Api, document: dict[str, Any]) -> None:
    health = conforms(document, "/healthz", "get", api.client.get("/healthz"))
    assert health["incidents"] == api.service.history_size()
    assert health["mode"] == "hybrid"
    response = api.client.get(
        "/api/v1/context/playbooks",
        params={"description": "pod restarts after OOM", "min_confidence": "0"},
    )
    answer = conforms(document, "/api/v1/context/playbooks", "get", response)
    assert answer["total_results"] >= len(answer["playbooks"]) > 0


def test_the_document_is_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.1.0"
    assert {
        "/api/v1/context/playbooks",
        "/api/v1/incidents/search",
        "/api/v1/incidents/stats",
        "/healthz",
        "/openapi.json",
    } <= set(document["paths"])
    for name, schema in document["components"]["schemas"].items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:  # pragma: no cover - the message says which
            pytest.fail(f"components.schemas.{name}: {exc.message}")


BIG = "x" * (70 * 1024)


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        pytest.param({"query_text": "   "}, 400, "query_text", id="blank-query"),
        pytest.param({}, 400, "query_text", id="no-query"),
        pytest.param({"query_text": "pool", "top_k": 0}, 400, "top_k", id="top-k-0"),
        pytest.param({"query_text": "pool", "top_k": 101}, 400, "top_k", id="top-k-101"),
        pytest.param({"query_text": "pool", "top_k": "five"}, 400, "top_k", id="top-k-text"),
        pytest.param(b"{not json", 400, "body", id="bad-json"),
        pytest.param(b'{"query_text": "pool", "top_k": NaN}', 400, "body", id="nan"),
        pytest.param(b"[1, 2]", 400, "body", id="not-an-object"),
        pytest.param(b"", 400, "body", id="empty-body"),
        pytest.param(
            {"query_text": "pool", "vector_weight": 1.5}, 400, "vector_weight", id="weight"
        ),
        pytest.param({"action": "restart_service"}, 400, "target", id="action-no-target"),
        pytest.param(
            {"action": "restart_service", "target": {"kind": "Deployment"}},
            400,
            "target.name",
            id="target-no-name",
        ),
        pytest.param({"query_text": "pool", "colour": "red"}, 400, "colour", id="unknown-field"),
        pytest.param({"query_text": BIG}, 413, "body", id="body-too-large"),
    ],
)
def test_errors_are_problems_naming_the_field(
    api: Api, document: dict[str, Any], body: Any, status: int, field: str
) -> None:
    if isinstance(body, bytes):
        response = api.client.post(
            "/api/v1/incidents/search",
            content=body,
            headers={"content-type": "application/json"},
        )
    else:
        response = api.search(body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = conforms(document, "/api/v1/incidents/search", "post", response)
    assert problem["status"] == status
    assert problem["instance"] == "/api/v1/incidents/search"
    assert problem["invalid-params"][0]["name"] == field
    assert field.split(".")[0] in problem["detail"] or field == "body"


def test_unknown_route_and_method_are_problems(api: Api, document: dict[str, Any]) -> None:
    wrong = api.client.get("/api/v1/incidents/search")
    assert wrong.status_code == 405
    assert wrong.headers["content-type"].startswith("application/problem+json")
    conforms(document, "/api/v1/incidents/search", "post", wrong)
    missing = api.client.get("/api/v1/incidents/nothing")
    assert missing.status_code == 404
    assert json.loads(missing.text)["status"] == 404
