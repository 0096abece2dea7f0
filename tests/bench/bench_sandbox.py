"""Sandbox API server throughput: creates/s over HTTP with a watch open, and watch-event lag.

The server runs as its own process (``python -m precedent_sandbox``), as it does next to an
operator; the client creates N RemediationRequests with a few requests in flight and reads a
cluster-wide watch. Lag is the time from sending a create to reading its ADDED event.
Printed, never asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[2]
N = int(os.environ.get("BENCH_SANDBOX_N", "2000"))
CONCURRENCY = 16
GROUP_URL = "/apis/precedent.dev/v1alpha1"


def _request(index: int) -> dict[str, object]:
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": f"bench-{index:05d}", "labels": {"bench": "sandbox"}},
        "spec": {
            "action": "restart_service",
            "target": {"kind": "Deployment", "name": f"svc-{index % 50}", "namespace": "prod"},
            "description": "Restart the service to clear stuck worker threads.",
            "labels": {"environment": "production", "incident-type": "latency"},
        },
    }


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def _run(base: str) -> None:
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    done = asyncio.Event()
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(base_url=base, timeout=timeout) as session:
        async with session.get(f"{GROUP_URL}/remediationrequests") as listed:
            rv = (await listed.json())["metadata"]["resourceVersion"]

        async def watch() -> None:
            url = f"{GROUP_URL}/remediationrequests?watch=true&resourceVersion={rv}"
            async with session.get(url) as stream:
                async for line in stream.content:
                    event = json.loads(line)
                    if event["type"] == "ADDED":
                        seen[event["object"]["metadata"]["name"]] = time.perf_counter()
                        if len(seen) == N:
                            done.set()
                            return

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.2)  # let the watch connect before the first create
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(N):
            queue.put_nowait(index)

        async def worker() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                body = _request(index)
                name = str(body["metadata"]["name"])  # type: ignore[index]
                sent[name] = time.perf_counter()
                url = f"{GROUP_URL}/namespaces/default/remediationrequests"
                async with session.post(url, json=body) as response:
                    if response.status != 201:
                        raise RuntimeError(
                            f"create failed: {response.status} {await response.text()}"
                        )
                    await response.read()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        created = time.perf_counter() - started
        await asyncio.wait_for(done.wait(), 60)
        watcher.cancel()
    lags = [(seen[name] - sent[name]) * 1000 for name in sent]
    print(f"objects: {N}, requests in flight: {CONCURRENCY}, one cluster-wide watch open")
    print(f"creates/s: {N / created:,.0f}  ({created:.2f} s for {N})")
    print(
        f"watch lag ms: p50 {statistics.median(lags):.2f}, p99 {_percentile(lags, 0.99):.2f}, "
        f"max {max(lags):.2f}"
    )


def main() -> None:
    """Start the sandbox in a subprocess, run the benchmark against it, stop it."""
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "precedent_sandbox",
                "--crds",
                str(REPO / "crds"),
                "--kubeconfig",
                str(kubeconfig),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            found = re.search(r"listening on (http://\S+?);", line)
            if not found:
                raise RuntimeError(f"sandbox did not start: {line!r}")
            asyncio.run(_run(found.group(1)))
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
