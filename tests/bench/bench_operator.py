"""Operator throughput: N requests created against the sandbox, time until all are Ready.

Precedent and a no-op kopf operator run in the same benchmark against the same sandbox build,
so the ratio (Precedent ÷ no-op) is measured on the same machine at the same moment. Both run
as real processes (``kopf run -m …``), like in a cluster; RSS is read from /proc.

Environment: BENCH_OPERATOR_N (default 2000), BENCH_OPERATOR_HISTORY (default 10000 incidents),
BENCH_OPERATOR_ROUNDS (default 1).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from precedent.adapters.loader import load_incidents

REPO = Path(__file__).resolve().parents[2]
GROUP_PATH = "/apis/precedent.dev/v1alpha1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def synthetic_history(size: int, path: Path) -> None:
    """``size`` incidents: the bundled ones, then variants with other names and ids."""
    base = load_incidents([REPO / "data" / "incidents"])
    docs = []
    for i in range(size):
        src = base[i % len(base)]
        spec = src.model_dump(mode="json", by_alias=True, exclude_none=True)
        if i >= len(base):
            spec["id"] = f"{src.id}-v{i}"
            if "resource" in spec:
                spec["resource"]["name"] = f"{spec['resource']['name']}-{i % 97}"
        docs.append(
            {
                "apiVersion": "precedent.dev/v1alpha1",
                "kind": "Incident",
                "metadata": {"name": spec["id"].lower()},
                "spec": spec,
            }
        )
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def request_body(i: int) -> dict[str, Any]:
    actions = [
        ("restart_service", "Deployment", "checkout"),
        ("scale_down", "Deployment", "order-processing"),
        ("rollback", "Deployment", "search-api"),
        ("drain_node", "Node", "aks-node-7"),
        ("update_configmap", "ConfigMap", "checkout-flags"),
    ]
    action, kind, name = actions[i % len(actions)]
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": f"bench-{i}", "namespace": "default"},
        "spec": {
            "action": action,
            "target": {"kind": kind, "name": name, "namespace": "shop"},
            "description": f"{action.replace('_', ' ')} {name} after alert {i}",
            "labels": {"environment": "production", "incident-type": "service-degradation"},
        },
    }


async def wait_ready(client: httpx.AsyncClient, names: set[str], timeout: float) -> float:
    """Watch requests until every name in ``names`` has Ready=True; return the time it took."""
    started = time.perf_counter()
    pending = set(names)
    listing = (await client.get(f"{GROUP_PATH}/remediationrequests")).json()
    for item in listing["items"]:
        if _ready(item):
            pending.discard(item["metadata"]["name"])
    rv = listing["metadata"]["resourceVersion"]
    deadline = started + timeout
    while pending and time.perf_counter() < deadline:
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
        async with client.stream(
            "GET", f"{GROUP_PATH}/remediationrequests", params=params, timeout=None
        ) as stream:
            async for line in stream.aiter_lines():
                if not line:
                    continue
                event = json.loads(line)
                obj = event["object"]
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if event["type"] in ("ADDED", "MODIFIED") and _ready(obj):
                    pending.discard(obj["metadata"]["name"])
                if not pending or time.perf_counter() > deadline:
                    break
    if pending:
        raise RuntimeError(f"{len(pending)} requests not Ready after {timeout:.0f} s")
    return time.perf_counter() - started


def _ready(obj: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


async def drive(url: str, n: int, prefix: str) -> float:
    """Create ``n`` requests (32 in flight) and return seconds from first create to all Ready."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        # Warm-up: one request through the whole path, so start-up is not measured.
        warm = request_body(0)
        warm["metadata"]["name"] = f"{prefix.replace('_', '-')}-warmup"
        (
            await client.post(f"{GROUP_PATH}/namespaces/default/remediationrequests", json=warm)
        ).raise_for_status()
        await wait_ready(client, {warm["metadata"]["name"]}, timeout=120)

        names = {f"bench-{i}" for i in range(n)}
        semaphore = asyncio.Semaphore(32)

        async def create(i: int) -> None:
            async with semaphore:
                r = await client.post(
                    f"{GROUP_PATH}/namespaces/default/remediationrequests", json=request_body(i)
                )
                r.raise_for_status()

        started = time.perf_counter()
        waiter = asyncio.create_task(wait_ready(client, names, timeout=600))
        await asyncio.gather(*(create(i) for i in range(n)))
        await waiter
        return time.perf_counter() - started


def run_once(module: str, n: int, history: Path, workdir: Path) -> tuple[float, float]:
    port = free_port()
    kubeconfig = workdir / f"kubeconfig-{module}"
    sandbox = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "precedent.cli",
            "sandbox",
            "--port",
            str(port),
            "--kubeconfig",
            str(kubeconfig),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    operator = None
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_http(url + "/version")
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "PRECEDENT_HISTORY_PATH": str(history),
            "PRECEDENT_METRICS_PORT": "0",
            # Enforce mode does not start without the key of the status mark.
            "PRECEDENT_STATUS_KEY": os.environ.get("PRECEDENT_STATUS_KEY") or "bench-key",
        }
        operator = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kopf",
                "run",
                "-m",
                module,
                "--all-namespaces",
                "--standalone",
                "--quiet",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        seconds = asyncio.run(drive(url, n, module.rsplit(".", 1)[-1]))
        return n / seconds, rss_mib(operator.pid)
    finally:
        for proc in (operator, sandbox):
            if proc is not None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _wait_http(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def main() -> None:
    n = int(os.environ.get("BENCH_OPERATOR_N", "2000"))
    size = int(os.environ.get("BENCH_OPERATOR_HISTORY", "10000"))
    rounds = int(os.environ.get("BENCH_OPERATOR_ROUNDS", "1"))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        history = workdir / "history.yaml"
        synthetic_history(size, history)
        results: dict[str, list[tuple[float, float]]] = {"noop": [], "precedent": []}
        for _ in range(rounds):
            results["noop"].append(run_once("tests.bench.noop_operator", n, history, workdir))
            results["precedent"].append(run_once("precedent.handlers", n, history, workdir))
    noop = statistics.median(r for r, _ in results["noop"])
    prec = statistics.median(r for r, _ in results["precedent"])
    print(f"requests: {n}, history: {size} incidents, rounds: {rounds}")
    print(f"{'operator':<12}{'requests/s':>12}{'RSS MiB':>10}")
    for label, key, rate in (("no-op kopf", "noop", noop), ("precedent", "precedent", prec)):
        rss = statistics.median(m for _, m in results[key])
        print(f"{label:<12}{rate:>12.1f}{rss:>10.0f}")
    print(f"ratio precedent / no-op: {prec / noop:.2f}")


if __name__ == "__main__":
    main()
