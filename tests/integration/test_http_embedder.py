"""The HTTP embedder against a real OpenAI-compatible server on loopback (aiohttp)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from precedent.adapters.http_embedder import HttpEmbedder
from precedent.core.embedding import LexicalEmbedder
from precedent.errors import DependencyError

pytestmark = pytest.mark.integration


@dataclass
class Server:
    """An embeddings endpoint backed by the lexical embedder, with scripted failures."""

    url: str = ""
    fail_next: list[int] = field(default_factory=list)
    delay: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[str | None] = field(default_factory=list)
    malformed: bool = False


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()
    embedder = LexicalEmbedder(64)

    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        state.requests.append(body)
        state.headers.append(request.headers.get("Authorization"))
        if state.delay:
            await asyncio.sleep(state.delay)
        if state.fail_next:
            return web.Response(status=state.fail_next.pop(0), text="busy")
        if state.malformed:
            return web.json_response({"data": [{"index": 0}]})
        vectors = embedder.embed(body["input"]) * 3.0  # not normalised: the client does it
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)
        ]
        data.reverse()  # the client must restore input order from "index"
        return web.json_response({"object": "list", "data": data, "model": body["model"]})

    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/v1/embeddings", embeddings)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    state.url = f"http://127.0.0.1:{port}/v1"
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()


def test_embeds_in_input_order_normalised_with_auth(server: Server) -> None:
    client = HttpEmbedder(server.url, "text-embed", api_key="s3cret", batch_size=2)
    texts = ["restart payment api", "certificate expired", "scale down"]
    vectors = client.embed(texts)
    client.close()
    expected = LexicalEmbedder(64).embed(texts)
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    assert client.name == "http-text-embed"
    assert client.dimension == 64
    assert [len(r["input"]) for r in server.requests] == [2, 1]
    assert server.requests[0]["model"] == "text-embed"
    assert server.headers == ["Bearer s3cret", "Bearer s3cret"]


def test_retries_on_503_and_429(server: Server) -> None:
    server.fail_next = [503, 429]
    client = HttpEmbedder(server.url, "m", retries=3, backoff=0.01)
    assert client.embed(["x y"]).shape == (1, 64)
    assert len(server.requests) == 3
    client.close()


def test_gives_up_after_the_retries(server: Server) -> None:
    server.fail_next = [503] * 5
    client = HttpEmbedder(server.url, "m", retries=2, backoff=0.01)
    with pytest.raises(DependencyError, match=r"HTTP 503 \(after 3 attempts\)"):
        client.embed(["x"])
    client.close()


def test_client_errors_are_not_retried(server: Server) -> None:
    server.fail_next = [401]
    client = HttpEmbedder(server.url, "m", retries=3, backoff=0.01)
    with pytest.raises(DependencyError, match="HTTP 401"):
        client.embed(["x"])
    assert len(server.requests) == 1
    client.close()


def test_timeout(server: Server) -> None:
    server.delay = 0.5
    client = HttpEmbedder(server.url, "m", timeout=0.05, retries=1, backoff=0.01)
    with pytest.raises(DependencyError, match="timed out"):
        client.embed(["x"])
    client.close()


def test_malformed_response(server: Server) -> None:
    server.malformed = True
    client = HttpEmbedder(server.url, "m", retries=0)
    with pytest.raises(DependencyError, match="malformed embeddings response"):
        client.embed(["x"])
    client.close()


def test_connection_refused_and_missing_settings() -> None:
    client = HttpEmbedder("http://127.0.0.1:9", "m", retries=1, backoff=0.01)
    with pytest.raises(DependencyError, match="cannot connect"):
        client.embed(["x"])
    client.close()
    with pytest.raises(DependencyError, match="PRECEDENT_EMBEDDING_URL"):
        HttpEmbedder("", "m")
