"""Playbook selection latency: in-process vs through the Context API over loopback HTTP.

A synthetic catalog of 1,000 playbooks; a few hundred distinct requests, each selected many
times. "Selection" is ``PlaybookSelector.select_query``: query → catalog → decision, with
logging and metrics, the path the CLI and the operator take. The HTTP path runs the real
aiohttp server (in a thread with its own event loop) and the real httpx client, with the cache
off so every selection is a round trip; a cached run is shown for comparison.

Targets (printed, not asserted): in-process p99 ≤ 5 ms; HTTP p99 ≤ 20 ms; seed 004 < 500 ms.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Awaitable, Callable

import numpy as np
from aiohttp import web
from prometheus_client import CollectorRegistry

from precedent.adapters.cache import CachingCatalog
from precedent.adapters.catalog_http import HttpPlaybookCatalog
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.context_api import MAX_REQUEST_LINE, create_app
from precedent.core.playbooks import PlaybookQuery
from precedent.metrics import Metrics
from precedent.models import Playbook, PlaybookHistory
from precedent.services import PlaybookSelector

N_PLAYBOOKS = 1000
N_QUERIES = 200
ROUNDS_LOCAL = 10
ROUNDS_HTTP = 5
WARMUP = 50

INCIDENTS = [
    ("pod-oom-killer", "memory limits OOMKilled container pod restarts"),
    ("crashloop-backoff", "container crash loop back-off failing liveness probe"),
    ("node-not-ready", "node not ready kubelet stopped posting status"),
    ("node-pressure", "node disk memory pressure evictions"),
    ("database-failure", "database primary unavailable connections refused"),
    ("certificate-expiry", "TLS certificate expiring ingress handshake errors"),
    ("bad-rollout", "deployment rollout error rate spike new revision"),
    ("dns-resolution", "DNS resolution failures coredns timeouts"),
    ("hpa-flapping", "autoscaler flapping replicas scale up down"),
    ("pvc-full", "persistent volume claim full disk usage"),
    ("image-pull-backoff", "image pull back-off registry credentials"),
    ("network-policy-block", "network policy blocking traffic between services"),
]
VERBS = ["restarts", "scales", "rolls back", "drains", "increases", "rotates", "cleans up"]
VERBS += ["cordons", "patches", "recreates", "validates", "reloads", "expands", "tunes"]
OBJECTS = ["the pod", "the deployment", "memory limits", "the node", "the certificate"]
OBJECTS += ["the database", "coredns", "the volume", "the autoscaler", "the ingress"]


def synthetic_catalog(n: int, rng: random.Random) -> list[Playbook]:
    """Playbooks with plausible descriptions, labels and history."""
    playbooks = []
    for i in range(n):
        incident, words = rng.choice(INCIDENTS)
        description = (
            f"{rng.choice(VERBS).capitalize()} {rng.choice(OBJECTS)} and "
            f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} for "
            + " ".join(rng.sample(words.split(), 3))
        )
        labels: dict[str, list[str]] = {"incident-type": [incident]}
        if rng.random() < 0.5:
            labels["environment"] = rng.choice([["production"], ["staging"], ["*"]])
        runs = rng.choice([0, rng.randint(1, 200)])
        playbooks.append(
            Playbook(
                id=f"{incident}-{i:04d}",
                version=f"v{rng.randint(1, 3)}.{rng.randint(0, 9)}",
                description=description,
                labels=labels,
                history=PlaybookHistory(executions=runs, successes=rng.randint(0, runs)),
            )
        )
    return playbooks


def synthetic_queries(n: int, rng: random.Random) -> list[PlaybookQuery]:
    """Requests: a description drawn from an incident's words, and its labels."""
    queries = []
    for _ in range(n):
        incident, words = rng.choice(INCIDENTS)
        text = f"{rng.choice(VERBS)} {rng.choice(OBJECTS)}. " + " ".join(
            rng.sample(words.split(), 4)
        )
        labels = {"incident-type": incident, "environment": rng.choice(["production", "staging"])}
        queries.append(PlaybookQuery.create(text, labels, min_confidence=0.5, max_results=10))
    return queries


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """(p50, p99, max) in milliseconds."""
    ms = np.array(samples) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99)), float(ms.max())


async def timed(
    select: Callable[[PlaybookQuery], Awaitable[object]], queries: list[PlaybookQuery], rounds: int
) -> list[float]:
    for query in queries[:WARMUP]:
        await select(query)
    samples = []
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            await select(query)
            samples.append(time.perf_counter() - started)
    return samples


class ServerThread:
    """The Context API on a loopback port, served from its own thread and event loop."""

    def __init__(self, catalog: LocalPlaybookCatalog) -> None:
        self.catalog = catalog
        self.url = ""
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        app = create_app(self.catalog, metrics_registry=Metrics(CollectorRegistry()))
        runner = web.AppRunner(app, max_line_size=MAX_REQUEST_LINE, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        self._ready.wait(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


def report(label: str, samples: list[float]) -> tuple[float, float]:
    p50, p99, worst = percentiles(samples)
    print(f"{label:<34} {len(samples):>6}   {p50:8.3f}   {p99:8.3f}   {worst:8.3f}")
    return p50, p99


def main() -> None:
    """Build the catalog, time selections in-process and over HTTP, print the comparison."""
    rng = random.Random(57)
    playbooks = synthetic_catalog(N_PLAYBOOKS, rng)
    queries = synthetic_queries(N_QUERIES, rng)

    started = time.perf_counter()
    catalog = LocalPlaybookCatalog(playbooks)
    build = time.perf_counter() - started
    upserts = []
    for playbook in playbooks[:100]:
        t0 = time.perf_counter()
        catalog.upsert(playbook.model_copy(update={"version": "v9.9"}))
        upserts.append(time.perf_counter() - t0)
    print(
        f"catalog: {len(catalog)} playbooks, embedded in {build * 1000:.0f} ms "
        f"({catalog.embedder_name}); one upsert p50 {percentiles(upserts)[0]:.3f} ms"
    )
    print(f"queries: {N_QUERIES} distinct, min_confidence 0.5, max_results 10\n")
    print(f"{'path':<34} {'n':>6}   {'p50 ms':>8}   {'p99 ms':>8}   {'max ms':>8}")

    async def run() -> dict[str, tuple[float, float]]:
        results = {}
        metrics = Metrics(CollectorRegistry())
        search = catalog.search_sync
        samples = await timed(lambda q: asyncio.sleep(0, search(q)), queries, ROUNDS_LOCAL)
        results["search"] = report("in-process catalog search only", samples)
        local = PlaybookSelector(catalog, metrics=metrics)
        samples = await timed(local.select_query, queries, ROUNDS_LOCAL)
        results["local"] = report("in-process selection", samples)
        with ServerThread(catalog) as server:
            http = HttpPlaybookCatalog(server.url, metrics=metrics)
            async with PlaybookSelector(http, metrics=metrics) as remote:
                samples = await timed(remote.select_query, queries, ROUNDS_HTTP)
                results["http"] = report("HTTP selection (no cache)", samples)
            http = HttpPlaybookCatalog(server.url, metrics=metrics)
            caching = CachingCatalog(http, metrics=metrics)
            async with PlaybookSelector(caching, metrics=metrics) as cached:
                samples = await timed(cached.select_query, queries, ROUNDS_HTTP)
                results["cached"] = report("HTTP selection (cache, 1 miss in 5)", samples)
        return results

    results = asyncio.run(run())
    local50, local99 = results["local"]
    http50, http99 = results["http"]
    print(
        f"\nHTTP / in-process: p50 ×{http50 / local50:.1f}, p99 ×{http99 / local99:.1f} "
        f"(loopback round trip + server-side scoring + JSON)"
    )
    print(
        f"targets: in-process p99 {local99:.2f} ms (≤ 5: {'met' if local99 <= 5 else 'MISSED'}), "
        f"HTTP p99 {http99:.2f} ms (≤ 20: {'met' if http99 <= 20 else 'MISSED'}), "
        f"seed 004 < 500 ms: {'met' if max(local99, http99) < 500 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
