"""Watches: from a resourceVersion, 410 Expired, bookmarks, selectors, timeouts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from precedent_sandbox import Sandbox
from tests.sandbox.conftest import CRDS, GROUP, MERGE, PLAYBOOKS, RRS, playbook_body, request_body


async def events(
    api: httpx.AsyncClient, path: str, count: int, **params: str
) -> list[dict[str, Any]]:
    """Read ``count`` events from a watch on ``path`` (fails after a few seconds)."""
    found: list[dict[str, Any]] = []
    async with (
        asyncio.timeout(10),
        api.stream("GET", path, params={"watch": "true", **params}) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line:
                found.append(json.loads(line))
            if len(found) == count:
                break
    return found


async def stream(api: httpx.AsyncClient, path: str, **params: str) -> AsyncIterator[dict[str, Any]]:
    """Every event of a watch, until the server ends it."""
    async with api.stream("GET", path, params={"watch": "1", **params}) as response:
        assert response.headers.get("Transfer-Encoding") == "chunked"
        async for line in response.aiter_lines():
            if line:
                yield json.loads(line)


async def test_watch_from_a_resource_version_replays_what_followed(api: httpx.AsyncClient) -> None:
    before = (await api.post(PLAYBOOKS, json=playbook_body("before"))).json()
    since = before["metadata"]["resourceVersion"]
    await api.post(PLAYBOOKS, json=playbook_body("w"))
    await api.patch(f"{PLAYBOOKS}/w", json={"spec": {"version": "v2"}}, headers=MERGE)
    await api.delete(f"{PLAYBOOKS}/w")
    found = await events(api, PLAYBOOKS, 3, resourceVersion=since)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in found] == [
        ("ADDED", "w"),
        ("MODIFIED", "w"),
        ("DELETED", "w"),
    ]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in found]
    assert versions == sorted(versions)
    assert versions[0] > int(since)


async def test_live_events_reach_an_open_watch(api: httpx.AsyncClient) -> None:
    listed = (await api.get(RRS)).json()

    async def produce() -> None:
        await asyncio.sleep(0.1)
        await api.post(RRS, json=request_body("live"))

    producer = asyncio.create_task(produce())
    found = await events(api, RRS, 1, resourceVersion=listed["metadata"]["resourceVersion"])
    await producer
    assert found[0]["type"] == "ADDED"
    assert found[0]["object"]["metadata"]["name"] == "live"


async def test_watch_without_a_version_starts_with_current_objects(api: httpx.AsyncClient) -> None:
    await api.post(PLAYBOOKS, json=playbook_body("one"))
    await api.post(PLAYBOOKS, json=playbook_body("two"))
    found = await events(api, PLAYBOOKS, 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in found] == [
        ("ADDED", "one"),
        ("ADDED", "two"),
    ]


async def test_too_old_resource_version_is_410_expired() -> None:
    async with (
        Sandbox(CRDS, history_size=3) as sandbox,
        httpx.AsyncClient(base_url=sandbox.url) as api,
    ):
        first = (await api.post(PLAYBOOKS, json=playbook_body("p0"))).json()
        for index in range(1, 6):
            await api.post(PLAYBOOKS, json=playbook_body(f"p{index}"))
        found = await events(
            api, PLAYBOOKS, 1, resourceVersion=first["metadata"]["resourceVersion"]
        )
        assert found[0]["type"] == "ERROR"
        status = found[0]["object"]
        assert status["code"] == 410
        assert status["reason"] == "Expired"
        recent = await events(
            api, PLAYBOOKS, 1, resourceVersion=str(int(first["metadata"]["resourceVersion"]) + 3)
        )
        assert recent[0]["type"] == "ADDED"


async def test_bookmarks_and_timeout() -> None:
    async with (
        Sandbox(CRDS, bookmark_interval=0.05) as sandbox,
        httpx.AsyncClient(base_url=sandbox.url, timeout=10) as api,
    ):
        rv = (await api.get(PLAYBOOKS)).json()["metadata"]["resourceVersion"]
        seen = [
            e
            async for e in stream(
                api, PLAYBOOKS, resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="1"
            )
        ]
        assert seen  # the stream ended by itself after timeoutSeconds
        assert {e["type"] for e in seen} == {"BOOKMARK"}
        assert seen[0]["object"]["kind"] == "Playbook"
        assert int(seen[0]["object"]["metadata"]["resourceVersion"]) >= int(rv)


async def test_initial_events_end_with_a_bookmark(api: httpx.AsyncClient) -> None:
    await api.post(PLAYBOOKS, json=playbook_body("init"))
    found = await events(
        api,
        PLAYBOOKS,
        2,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        allowWatchBookmarks="true",
    )
    assert found[0]["type"] == "ADDED"
    assert found[1]["type"] == "BOOKMARK"
    assert found[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_label_selector_watch_sees_objects_leave(api: httpx.AsyncClient) -> None:
    body = playbook_body("sel")
    body["metadata"]["labels"] = {"tier": "gold"}
    created = (await api.post(PLAYBOOKS, json=body)).json()
    since = str(int(created["metadata"]["resourceVersion"]) - 1)
    await api.post(PLAYBOOKS, json=playbook_body("other"))
    await api.patch(
        f"{PLAYBOOKS}/sel", json={"metadata": {"labels": {"tier": "tin"}}}, headers=MERGE
    )
    found = await events(api, PLAYBOOKS, 2, resourceVersion=since, labelSelector="tier=gold")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in found] == [
        ("ADDED", "sel"),
        ("DELETED", "sel"),
    ]


async def test_namespaced_watch_sees_only_its_namespace(api: httpx.AsyncClient) -> None:
    await api.post("/api/v1/namespaces", json={"metadata": {"name": "other"}})
    rv = (await api.get(f"{GROUP}/remediationrequests")).json()["metadata"]["resourceVersion"]
    await api.post(f"{GROUP}/namespaces/other/remediationrequests", json=request_body("elsewhere"))
    await api.post(RRS, json=request_body("here"))
    found = await events(api, RRS, 1, resourceVersion=rv)
    assert found[0]["object"]["metadata"]["name"] == "here"
    everywhere = await events(api, f"{GROUP}/remediationrequests", 2, resourceVersion=rv)
    assert [e["object"]["metadata"]["name"] for e in everywhere] == ["elsewhere", "here"]
