"""Start-up: seconds until the operator is ready, and until a request created right then is
answered, at 10k and 100k incidents; RSS; and (PRECEDENT_BENCH_1M=1) the index build at 1M.

The real operator (``kopf run -m precedent.handlers``, ``--namespace=*`` as the Deployment runs
it) against the API servers of bench_operator (BENCH_OPERATOR_SERVERS: a real kube-apiserver
with etcd, and the sandbox), all as processes. The history is written as bench_operator writes
it: one YAML file up to 20,000 incidents (10k: about 18 MB), JSON Lines beyond (read line by
line: a 100k history is about 180 MB, over the 64 MiB limit of one YAML file). Each size is
started twice per round: *cold* (no saved index: every incident read, checked and embedded at
start-up) and *warm* (PRECEDENT_INDEX_DIR holds the index the cold start saved). "Ready" is the
first 200 from /healthz; "answer" is from then until the request created at that moment is
Ready; "start→answer" is from the process's start to that answer. "After change" is, for each
of three Incident objects created one after another (each once the operator has written its
status), the seconds until a request created right then is Ready: the history's snapshot is
rebuilt for it (median of the three; measured on the cold starts, RSS read before them; the
warm starts read the index as the cold start built it, before the changes).

Environment: BENCH_STARTUP_SIZES (default ``10000,100000``), BENCH_STARTUP_ROUNDS (default 3,
for every size: the medians are of that many starts), BENCH_OPERATOR_SERVERS and
BENCH_OPERATOR_ENV (as in bench_operator: the operator runs on the image's packages unless
``dev``), PRECEDENT_BENCH_1M=1 (adds the 1M index build, in a child process: seconds and peak
RSS).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from tests.bench.bench_operator import (
    GROUP_PATH,
    REPO,
    SCOPE,
    ApiServer,
    ReadyWatch,
    api_server,
    free_port,
    request_body,
    rss_mib,
    runtime_python,
    servers_wanted,
    start_operator,
    stop,
    write_history,
)

CHANGES = 3  # history changes after the first answer, each followed by one request


def _ready_at(url: str, process: subprocess.Popen[bytes], timeout: float, log: Path) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            last = (log.read_text(errors="replace").strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"the operator exited with {process.returncode}: {last}")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return time.perf_counter()
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"not ready after {timeout:.0f} s")


def _client(api: ApiServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=api.url, timeout=60, verify=api.verify, headers=api.headers)


async def _first_answer(api: ApiServer, name: str) -> float:
    async with _client(api) as client:
        body = request_body(1)
        body["metadata"]["name"] = name
        watch = ReadyWatch(client)
        watching = asyncio.create_task(watch.run())
        try:
            started = time.perf_counter()
            (
                await client.post(f"{GROUP_PATH}/namespaces/default/remediationrequests", json=body)
            ).raise_for_status()
            await watch.wait({("default", name)}, timeout=600)
            return time.perf_counter() - started
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching


async def _after_changes(api: ApiServer, name: str, changes: int) -> list[float]:
    """For each of ``changes`` history changes: an Incident object created, and once the
    operator has answered it (its status written), a request created: seconds until that
    request is Ready. The history's snapshot is rebuilt for it (the change's cost)."""
    waits: list[float] = []
    async with _client(api) as client:
        watch = ReadyWatch(client)
        watching = asyncio.create_task(watch.run())
        try:
            for k in range(changes):
                incident = f"{name}-incident-{k}"
                body = {
                    "apiVersion": "precedent.dev/v1alpha1",
                    "kind": "Incident",
                    "metadata": {"name": incident},  # Incidents are cluster-scoped
                    "spec": {
                        "id": f"INC-BENCH-{name}-{k}".upper(),
                        "title": f"payment-api restart {k} dropped in-flight connections",
                        "severity": "high",
                        "action": "restart_service",
                        "resource": {"type": "Deployment", "name": "payment-api"},
                    },
                }
                path = f"{GROUP_PATH}/incidents"
                (await client.post(path, json=body)).raise_for_status()
                deadline = time.monotonic() + 120
                while not ((await client.get(f"{path}/{incident}")).json().get("status") or {}):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"Incident {incident} not answered in 120 s")
                    await asyncio.sleep(0.02)
                request = request_body(k)
                request["metadata"]["name"] = f"{name}-after-{k}"
                started = time.perf_counter()
                (
                    await client.post(
                        f"{GROUP_PATH}/namespaces/default/remediationrequests", json=request
                    )
                ).raise_for_status()
                await watch.wait({("default", f"{name}-after-{k}")}, timeout=600)
                waits.append(time.perf_counter() - started)
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
    return waits


def start_once(
    history: Path,
    index_dir: Path,
    workdir: Path,
    name: str,
    python: str | None = None,
    *,
    keep_index: Path | None = None,
    server: str = "real",
) -> tuple[float, float, float, float]:
    """(start → ready s, ready → first answer s, RSS MiB after the answer, median seconds to
    answer a request right after a history change; NaN when not measured).

    With ``keep_index`` the saved index is copied there after the first answer and the
    history changes are measured (the operator saves the changed index over ``index_dir``:
    the warm starts read the copy, the index of the history file)."""
    health = free_port()
    with api_server(server, workdir) as api:
        operator = None
        try:
            log_path = workdir / f"{name}.log"
            with log_path.open("wb") as log:  # the child holds its own descriptor
                started = time.perf_counter()
                operator = start_operator(
                    "precedent.handlers",
                    api.kubeconfig,
                    history,
                    [SCOPE, f"--liveness=http://127.0.0.1:{health}/healthz"],
                    env={"PRECEDENT_INDEX_DIR": str(index_dir)},
                    stderr=log,
                    python=python,
                )
            ready = _ready_at(f"http://127.0.0.1:{health}/healthz", operator, 1800, log_path)
            answer = asyncio.run(_first_answer(api, name))
            rss = rss_mib(operator.pid)
            if keep_index is None:
                return ready - started, answer, rss, math.nan
            shutil.copytree(index_dir, keep_index)
            changed = asyncio.run(_after_changes(api, name, CHANGES))
            return ready - started, answer, rss, statistics.median(changed)
        finally:
            stop(operator, timeout=30)


def build_index(size: int, *, recall: bool = False) -> None:
    """In this (child) process: sync an index over ``size`` synthetic incidents; print JSON.

    With ``recall``, the vectors added are kept as well (so the time and the peak are not
    this build's) and recall@10 of the built index is measured against an exact search over
    them: 300 queries, each a history incident's own text."""
    import resource

    from precedent.adapters.vector_neighbours import VectorNeighbours
    from precedent.core.embedding import LexicalEmbedder
    from precedent.core.semantic import incident_text
    from precedent.core.snapshot import History
    from tests.bench.synthetic import incidents

    history = History(incidents(size, seed=11))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    embedder = LexicalEmbedder()
    neighbours = VectorNeighbours(embedder)
    kept: list[tuple[list[str], np.ndarray]] = []
    if recall:
        add = neighbours.index.add

        def keeping(ids: list[str], vectors: np.ndarray, **kwargs: object) -> None:
            kept.append((list(ids), np.array(vectors, dtype=np.float32)))
            add(ids, vectors, **kwargs)  # type: ignore[arg-type]

        neighbours.index.add = keeping  # type: ignore[method-assign,assignment]
    started = time.perf_counter()
    neighbours.sync(history)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    found: dict[str, Any] = {"seconds": seconds, "peak_mib": peak, "history_mib": before}
    if recall:
        ids = [i for chunk, _ in kept for i in chunk]
        vectors = np.concatenate([v for _, v in kept])
        picked = np.random.default_rng(7).choice(len(history), 300, replace=False)
        queries = embedder.embed_documents(
            [incident_text(history.incidents[int(p)]) for p in picked]
        )
        hits = []
        for query in queries:
            truth = {ids[int(j)] for j in np.argpartition(-(vectors @ query), 10)[:10]}
            got = {i for i, _ in neighbours.index.search(query, 10)}
            hits.append(len(truth & got) / 10)
        found["recall_at_10"] = float(np.mean(hits))
        found["kind"] = neighbours.index.kind
    print(json.dumps(found))


def _row(label: str, values: list[tuple[float, float, float, float]]) -> str:
    ready = statistics.median(v[0] for v in values)
    answer = statistics.median(v[1] for v in values)
    first = statistics.median(v[0] + v[1] for v in values)
    rss = statistics.median(v[2] for v in values)
    measured = [v[3] for v in values if not math.isnan(v[3])]
    changed = f"{statistics.median(measured):.2f}" if measured else "-"
    return (
        f"{label:<30}{ready:>11.1f}{answer:>12.2f}{first:>16.1f}{rss:>10.0f}{changed:>16}"
        f"   (n={len(values)})"
    )


def main() -> None:
    sizes = [int(s) for s in os.environ.get("BENCH_STARTUP_SIZES", "10000,100000").split(",")]
    rounds = int(os.environ.get("BENCH_STARTUP_ROUNDS", "3"))
    servers = servers_wanted()
    python, environment = runtime_python()
    print(f"operator's environment: {environment}")
    print(
        f"{'history, start, API server':<30}{'→ ready s':>11}{'→ answer s':>12}"
        f"{'start→answer s':>16}{'RSS MiB':>10}{'after change s':>16}"
    )
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            history = write_history(size, workdir)
            form = "YAML" if history.suffix == ".yaml" else "JSON Lines"
            for server in servers:
                cold: list[tuple[float, float, float, float]] = []
                warm: list[tuple[float, float, float, float]] = []
                for i in range(rounds):
                    index_dir = workdir / f"index-{server}-{i}"
                    kept = workdir / f"index-{server}-{i}-as-built"
                    cold.append(
                        start_once(
                            history,
                            index_dir,
                            workdir,
                            f"cold-{i}",
                            python,
                            keep_index=kept,
                            server=server,
                        )
                    )
                for i in range(rounds):
                    warm.append(
                        start_once(
                            history,
                            workdir / f"index-{server}-0-as-built",
                            workdir,
                            f"warm-{i}",
                            python,
                            server=server,
                        )
                    )
                print(_row(f"{size:,} {form} cold, {server}", cold), flush=True)
                print(_row(f"{size:,} {form} warm, {server}", warm), flush=True)
    if os.environ.get("PRECEDENT_BENCH_1M") == "1":
        size = 1_000_000
        found = _built_in_child(size)
        print(
            f"index build at {size:,} synthetic incidents: {found['seconds']:.0f} s, peak RSS "
            f"{found['peak_mib']:.0f} MiB ({found['history_mib']:.0f} MiB with the history alone)"
        )
        found = _built_in_child(size, "--recall")
        print(
            f"the same build again, its vectors kept: recall@10 {found['recall_at_10']:.3f} "
            f"({found['kind']} index; 300 queries, each a history incident's text, against an "
            "exact search over the vectors added)"
        )


def _built_in_child(size: int, *flags: str) -> dict[str, Any]:
    """``build_index`` in a process of its own (its peak RSS is the build's): what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench.bench_startup", "--build", str(size), *flags],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--build":
        build_index(int(sys.argv[2]), recall=sys.argv[3:] == ["--recall"])
    else:
        main()
