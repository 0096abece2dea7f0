"""The Context API server's contract, exercised over loopback with a real httpx client."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from precedent.adapters.catalog_http import PLAYBOOKS_PATH
from precedent.core.playbooks import PlaybookQuery
from tests.integration.catalog.faults import Server

pytestmark = pytest.mark.integration

OOM = [
    ("description", "High memory usage causing pod restarts"),
    ("labels", "kubernaut.ai/incident-type:pod-oom-killer"),
    ("labels", "kubernaut.ai/environment:production"),
    ("labels", "kubernaut.ai/priority:P0"),
]


async def get(server: Server, params: Any, path: str = PLAYBOOKS_PATH) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url) as client:
        return await client.get(path, params=params)


async def test_answer_is_exactly_the_seeds_minimal_schema(server: Server) -> None:
    response = await get(server, [*OOM, ("min_confidence", "0")])
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"playbooks", "total_results"}
    assert body["playbooks"]
    for item in body["playbooks"]:
        assert set(item) == {"playbook_id", "version", "description", "confidence"}
        assert 0 <= item["confidence"] <= 1
    confidences = [p["confidence"] for p in body["playbooks"]]
    assert confidences == sorted(confidences, reverse=True)
    assert body["playbooks"][0]["playbook_id"] == "pod-oom-recovery"
    assert body["playbooks"][0]["version"] == "v1.2"


async def test_components_are_given_only_when_asked_for(server: Server) -> None:
    params = [*OOM, ("min_confidence", "0.3"), ("max_results", "5")]
    body = (await get(server, [*params, ("include_components", "true")])).json()
    query = PlaybookQuery.create(
        OOM[0][1],
        [tuple(v.split(":")) for k, v in OOM[1:]],  # type: ignore[misc]
        min_confidence=0.3,
        max_results=5,
    )
    local = server.catalog.search_sync(query).candidates
    assert len(body["playbooks"]) == len(local)
    for item, candidate in zip(body["playbooks"], local, strict=True):
        assert set(item) == {"playbook_id", "version", "description", "confidence", "components"}
        parts = candidate.parts
        assert parts is not None
        assert item["components"] == {
            "semantic": round(parts.semantic, 4),
            "label_match": round(parts.label_match, 4),
            "historical": round(parts.historical, 4),
        }
    plain = (await get(server, [*params, ("include_components", "false")])).json()
    assert plain == (await get(server, params)).json()
    assert all("components" not in item for item in plain["playbooks"])


async def test_answer_matches_the_in_process_catalog(server: Server) -> None:
    response = await get(server, [*OOM, ("min_confidence", "0.3"), ("max_results", "5")])
    remote = [(p["playbook_id"], p["confidence"]) for p in response.json()["playbooks"]]
    query = PlaybookQuery.create(
        OOM[0][1],
        [tuple(v.split(":")) for k, v in OOM[1:]],  # type: ignore[misc]
        min_confidence=0.3,
        max_results=5,
    )
    local = [(c.id, round(c.confidence, 4)) for c in server.catalog.search_sync(query).candidates]
    assert remote == local


async def test_defaults_are_min_confidence_0_7_and_ten_results(server: Server) -> None:
    body = (await get(server, [("description", "pod")])).json()
    assert all(p["confidence"] >= 0.7 for p in body["playbooks"])
    many = (await get(server, [("description", "pod"), ("min_confidence", "0")])).json()
    assert len(many["playbooks"]) == min(10, len(server.catalog))


async def test_total_results_counts_beyond_max_results(server: Server) -> None:
    params = [("description", "pod"), ("min_confidence", "0"), ("max_results", "2")]
    body = (await get(server, params)).json()
    assert len(body["playbooks"]) == 2
    assert body["total_results"] == len(server.catalog)


async def test_new_playbook_is_listed_seed_use_case_2(server: Server) -> None:
    params = [
        ("description", "rare database failure"),
        ("labels", "kubernaut.ai/incident-type:database-failure"),
        # Its profile (description, incident types, steps) fits the text fully: 0.9 with the
        # history part of a new playbook (½); a bar above that shows it listed below it.
        ("min_confidence", "0.95"),
    ]
    body = (await get(server, params)).json()
    assert [p["playbook_id"] for p in body["playbooks"]] == ["database-recovery"]
    assert body["playbooks"][0]["confidence"] < 0.95


async def test_nothing_qualifies_is_an_empty_list(server: Server) -> None:
    params = [("description", "quarterly budget review"), ("min_confidence", "0.95")]
    body = (await get(server, params)).json()
    assert body == {"playbooks": [], "total_results": 0}


BAD = [
    ([("min_confidence", "0.5")], "description"),
    ([("description", "   ")], "description"),
    ([("description", "x"), ("min_confidence", "1.5")], "min_confidence"),
    ([("description", "x"), ("min_confidence", "-0.1")], "min_confidence"),
    ([("description", "x"), ("min_confidence", "abc")], "min_confidence"),
    ([("description", "x"), ("min_confidence", "nan")], "min_confidence"),
    ([("description", "x"), ("max_results", "0")], "max_results"),
    ([("description", "x"), ("max_results", "101")], "max_results"),
    ([("description", "x"), ("max_results", "2.5")], "max_results"),
    ([("description", "x"), ("labels", "no-colon")], "labels"),
    ([("description", "x"), ("labels", ":value")], "labels"),
    ([("description", "x"), ("labels", "key:")], "labels"),
    ([("description", "x"), ("labels", "k:two words")], "labels"),
    ([("description", "x"), ("labels", "env:a"), ("labels", "env:b")], "labels"),
    ([("description", "x"), ("max_results", "1"), ("max_results", "2")], "max_results"),
    ([("description", "x"), ("include_components", "yes")], "include_components"),
    ([("description", "x"), ("include_components", "")], "include_components"),
]


@pytest.mark.parametrize(("params", "parameter"), BAD)
async def test_bad_parameters_get_400_problem_json_naming_the_parameter(
    server: Server, params: list[tuple[str, str]], parameter: str
) -> None:
    response = await get(server, params)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == 400
    assert problem["type"] == "https://precedent.dev/problems/invalid-parameter"
    assert problem["title"] == "Invalid query parameter"
    assert problem["instance"] == PLAYBOOKS_PATH
    assert problem["invalid-params"][0]["name"] == parameter
    assert parameter in problem["detail"]


async def test_description_over_8_kib_is_413(server: Server) -> None:
    response = await get(server, [("description", "a" * 8193)])
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["invalid-params"][0]["name"] == "description"
    assert "8193 bytes" in problem["detail"]
    # Multi-byte characters count as bytes: 2,731 × "é" (2 bytes) is 5,462 bytes, accepted.
    assert (await get(server, [("description", "é" * 2731)])).status_code == 200
    assert (await get(server, [("description", "a" * 8192)])).status_code == 200


async def test_unknown_path_and_method_are_problem_json(server: Server) -> None:
    missing = await get(server, [], path="/api/v1/context/nothing")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("application/problem+json")
    assert missing.json()["status"] == 404
    async with httpx.AsyncClient(base_url=server.url) as client:
        post = await client.post(PLAYBOOKS_PATH)
    assert post.status_code == 405
    assert post.json()["status"] == 405


async def test_healthz(server: Server) -> None:
    response = await get(server, [], path="/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["playbooks"] == len(server.catalog)
    assert body["embedder"].startswith("lexical-")


async def test_metrics_exposes_request_latency(server: Server) -> None:
    await get(server, [("description", "pod")])
    await get(server, [("description", "x"), ("max_results", "0")])
    response = await get(server, [], path="/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    count = "precedent_context_api_request_duration_seconds_count"
    assert f'{count}{{endpoint="/api/v1/context/playbooks",status="200"}} 1.0' in text
    assert 'endpoint="/api/v1/context/playbooks",status="400"} 1.0' in text
