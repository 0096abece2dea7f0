"""The Context API server's input limits, against a real server: too many parameters or
labels are 400s naming the parameter, and random query strings never make it fail (500)."""

from __future__ import annotations

import random
from urllib.parse import quote

import httpx
import pytest

from precedent.adapters.catalog_http import PLAYBOOKS_PATH
from precedent.adapters.context_api import MAX_LABELS, MAX_QUERY_PARAMETERS
from tests.integration.catalog.faults import Server

pytestmark = pytest.mark.integration


async def get(server: Server, query: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        return await client.get(f"{PLAYBOOKS_PATH}?{query}")


async def test_too_many_labels_are_refused_naming_labels(server: Server) -> None:
    labels = "&".join(f"labels=k{n}:v" for n in range(MAX_LABELS + 1))
    response = await get(server, f"description=oom&{labels}")
    assert response.status_code == 400
    problem = response.json()
    assert problem["invalid-params"][0]["name"] == "labels"
    assert f"the limit is {MAX_LABELS}" in problem["detail"]
    allowed = "&".join(f"labels=k{n}:v" for n in range(MAX_LABELS))
    assert (await get(server, f"description=oom&{allowed}")).status_code == 200


async def test_too_many_parameters_are_refused(server: Server) -> None:
    noise = "&".join(f"x{n}=1" for n in range(1_000))
    response = await get(server, f"description=oom&{noise}")
    assert response.status_code == 400
    assert f"the limit is {MAX_QUERY_PARAMETERS}" in response.json()["detail"]


async def test_random_query_strings_never_fail_the_server(server: Server) -> None:
    rng = random.Random(20251122)
    names = ["description", "labels", "min_confidence", "max_results", "include_components"]
    statuses = set()
    for _ in range(300):
        params = []
        for _ in range(rng.randint(0, 8)):
            name = rng.choice([*names, "x"])
            raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 24)))
            params.append(f"{name}={quote(raw)}")
        response = await get(server, "&".join(params))
        statuses.add(response.status_code)
        assert response.status_code in (200, 400, 413), response.text
        assert response.headers["content-type"].startswith(
            ("application/json", "application/problem+json")
        )
    assert 400 in statuses
