"""The guard's admission latency on the real API server, and what it adds to changes it does
not cover.

A real kube-apiserver (the pinned build, ``make control-plane``) with Precedent installed from
the manifests, and the operator running outside it with the webhook pointed at loopback and a
synthetic history of BENCH_GUARD_HISTORY incidents (default 10,000). Open-loop load at each rate
in BENCH_GUARD_RATES (default 10,50) for BENCH_GUARD_SECONDS (default 10), each call a PATCH of
a Deployment's ``scale`` subresource through the API server, the latency the caller sees:

- ``scale-down, guarded``: a PATCH of the ``scale`` subresource to fewer replicas in an enforce
  namespace with no approved request: refused by the guard, which reads the change, looks for
  a covering request and scores the would-be request against the history for its message;
- ``scale-down, unguarded``: the same in a namespace without the label (admitted);
- ``annotation, guarded``: a PATCH of a Deployment's annotations in the enforce namespace: the
  webhook's rule matches the update but its match conditions do not, so the operator is never
  called (what the guard costs a change it does not cover);
- ``annotation, unguarded``: the same without the label.

Medians of the per-round p50 and p99 over BENCH_GUARD_ROUNDS (default 3); the ratios of the
guarded cases to the unguarded one are printed, not asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tests.bench.bench_operator import free_port, percentile, write_history

REPO = Path(__file__).resolve().parents[2]


def _env_list(name: str, default: str) -> list[int]:
    return [int(x) for x in os.environ.get(name, default).split(",") if x.strip()]


def _deployment(namespace: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "checkout", "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "checkout"}},
            "template": {
                "metadata": {"labels": {"app": "checkout"}},
                "spec": {"containers": [{"name": "app", "image": "registry.example.com/c:1"}]},
            },
        },
    }


async def _load(
    client: httpx.AsyncClient, namespace: str, what: str, rate: int, seconds: float
) -> tuple[list[float], int]:
    """Open loop: one PATCH every 1/rate s; each call's latency, and the calls refused."""
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/checkout"
    latencies: list[float] = []
    refused = 0

    def body(i: int) -> tuple[str, dict[str, Any]]:
        if what == "scale-down":  # always below the 100,000 the Deployment keeps
            return f"{path}/scale", {"spec": {"replicas": 50_000 - i}}
        return path, {"metadata": {"annotations": {"bench.precedent.dev/call": str(i)}}}

    async def one(i: int) -> None:
        nonlocal refused
        started = time.perf_counter()
        url, patch = body(i)
        response = await client.patch(
            url,
            content=json.dumps(patch),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        latencies.append(time.perf_counter() - started)
        refused += response.status_code >= 400

    tasks = []
    start = time.perf_counter()
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    return latencies, refused


def main() -> None:
    from precedent_sandbox.control_plane import ControlPlane, Etcd
    from tests.backends import control_plane_bin

    found = control_plane_bin()
    if found is None:
        print("skipped: the control plane is not built (make control-plane)")
        return
    rates = _env_list("BENCH_GUARD_RATES", "10,50")
    seconds = float(os.environ.get("BENCH_GUARD_SECONDS", "10"))
    rounds = int(os.environ.get("BENCH_GUARD_ROUNDS", "3"))
    size = int(os.environ.get("BENCH_GUARD_HISTORY", "10000"))
    cases = {
        "scale-down, guarded": ("shop", "scale-down"),
        "scale-down, unguarded": ("plain", "scale-down"),
        "annotation, guarded": ("shop", "annotation"),
        "annotation, unguarded": ("plain", "annotation"),
    }
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    refusals: dict[tuple[str, int], int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-guard-") as tmp:
        work = Path(tmp)
        history = write_history(size, work)
        etcd = Etcd(found, work / "etcd").start()
        try:
            for _ in range(rounds):
                server = ControlPlane(
                    found, {}, workdir=work / f"cp-{time.monotonic_ns()}", etcd=etcd
                ).start()
                try:
                    _round(server, history, rates, seconds, cases, results, refusals, work)
                finally:
                    server.stop()
        finally:
            etcd.stop()
    print(f"history {size} incidents, {rounds} rounds, {seconds:g} s per rate")
    print(f"{'case':22} {'rate/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'refused':>8}")
    for (case, rate), values in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        p50 = statistics.median(v[0] for v in values) * 1000
        p99 = statistics.median(v[1] for v in values) * 1000
        print(f"{case:22} {rate:>7} {p50:>8.1f} {p99:>8.1f} {refusals[(case, rate)]:>8}")
    for rate in rates:
        for what in ("scale-down", "annotation"):
            for q, label in ((0, "p50"), (1, "p99")):
                base = statistics.median(v[q] for v in results[(f"{what}, unguarded", rate)])
                mine = statistics.median(v[q] for v in results[(f"{what}, guarded", rate)])
                print(f"{label} {what} guarded ÷ unguarded at {rate}/s: {mine / base:.2f}")


def _round(
    server: Any,
    history: Path,
    rates: list[int],
    seconds: float,
    cases: dict[str, tuple[str, Any]],
    results: dict[tuple[str, int], list[tuple[float, float]]],
    refusals: dict[tuple[str, int], int],
    work: Path,
) -> None:
    kubeconfig = server.write_kubeconfig(work / f"admin-{time.monotonic_ns()}")

    def kubectl(*args: str, data: str | None = None) -> None:
        subprocess.run(
            [str(server.kubectl), "--kubeconfig", str(kubeconfig), *args],
            input=data,
            text=True,
            capture_output=True,
            check=True,
            cwd=REPO,
        )

    kubectl("apply", "-f", "crds/")
    kubectl("wait", "--for=condition=Established", "-f", "crds/", "--timeout=60s")
    kubectl("apply", "-k", "manifests/")
    for namespace, guard in (("shop", "enforce"), ("plain", None)):
        kubectl("create", "namespace", namespace)
        labels = ["precedent.dev/environment=production"]
        labels += [f"precedent.dev/guard={guard}"] if guard else []
        kubectl("label", "namespace", namespace, *labels)
        kubectl("apply", "-f", "-", data=json.dumps(_deployment(namespace, 100_000)))
    port = free_port()
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PRECEDENT_HISTORY_PATH": str(history),
        "PRECEDENT_CATALOG": "",
        "PRECEDENT_METRICS_PORT": "0",
        "PRECEDENT_STATUS_KEY": "bench",
        "PRECEDENT_INDEX_DIR": str(work / "index"),
        "PRECEDENT_GUARD_PORT": str(port),
        "PRECEDENT_GUARD_URL": f"https://127.0.0.1:{port}",
    }
    log = (work / "operator.log").open("ab")
    operator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kopf",
            "run",
            "-m",
            "precedent.handlers",
            "--standalone",
            "--namespace=*",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    try:
        token = server.admin_token
        with httpx.Client(
            base_url=server.url,
            verify=False,
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        ) as sync:
            deadline = time.monotonic() + 180
            while True:  # the guard answers: a refused scale-down
                response = sync.patch(
                    "/apis/apps/v1/namespaces/shop/deployments/checkout/scale",
                    content=json.dumps({"spec": {"replicas": 1}}),
                    headers={"Content-Type": "application/merge-patch+json"},
                )
                if response.status_code == 403 and "precedent guard" in response.text:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"the guard did not answer: {response.status_code}")
                time.sleep(0.5)

        async def measure() -> None:
            async with httpx.AsyncClient(
                base_url=server.url,
                verify=False,
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
                limits=httpx.Limits(max_connections=64),
            ) as client:
                for rate in rates:
                    for case, (namespace, what) in cases.items():
                        latencies, refused = await _load(client, namespace, what, rate, seconds)
                        results.setdefault((case, rate), []).append(
                            (percentile(latencies, 0.5), percentile(latencies, 0.99))
                        )
                        refusals[(case, rate)] = refusals.get((case, rate), 0) + refused

        asyncio.run(measure())
    finally:
        operator.terminate()
        try:
            operator.wait(30)
        except subprocess.TimeoutExpired:
            operator.kill()
        log.close()
