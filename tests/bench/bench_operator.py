"""The operator against a real API server and the sandbox: throughput, latency under a steady
load, and fairness.

Precedent and two no-op kopf operators run in the same benchmark against the same API server
build, so the ratios are measured on the same machine at the same moment:

- the *bare* no-op (``noop_operator.py``) writes a Ready condition only;
- the *fair* no-op (``fair_noop_operator.py``) writes a status of the size of Precedent's and
  posts one Event per request through its own client, as Precedent does: what any operator that
  must answer costs. The performance target is stated against it.

The operators run as real processes (``kopf run -m …``) with the admin's kubeconfig, as in a
cluster; RSS and CPU time are read from /proc. The API servers (BENCH_OPERATOR_SERVERS, default
``real,sandbox``): ``real`` is kube-apiserver with its own etcd, the pinned build of ``make
control-plane`` (left out, saying so, where it is not built), the CRDs applied with kubectl;
``sandbox`` is the project's sandbox. Each round starts a fresh API server and operator and
measures, after one warm-up request:

- throughput: N requests created (32 in flight), the time until all are Ready; the operator's
  CPU time per request (a figure that a machine busy with other work disturbs less), and the
  API server's (kube-apiserver and etcd together) and this load client's: the three share the
  machine's cores, so when all are busy the rate is set by what a request costs all three; the
  mean size of the statuses written, and the watch events per request (its creation and each
  write to it);
- latency: an open-loop load at each rate in BENCH_OPERATOR_RATES for BENCH_OPERATOR_SECONDS,
  create→Ready per request (p50, p99);
- fairness: BENCH_OPERATOR_FLOOD requests created at once in one namespace, then one in
  another: how long that one took to be Ready and how many of the flood were Ready before it.

Medians over the rounds; p99s within a round. Environment: BENCH_OPERATOR_N (default 3000),
BENCH_OPERATOR_HISTORY (default 10000 incidents), BENCH_OPERATOR_ROUNDS (default 3),
BENCH_OPERATOR_RATES (default 20,50,100), BENCH_OPERATOR_SECONDS (default 10),
BENCH_OPERATOR_FLOOD (default 1000; 0 skips it), BENCH_OPERATOR_SERVERS (above),
BENCH_OPERATOR_ENV (``image``, the default: the operators run from the packages the image
installs, the compiled core among them unless BENCH_OPERATOR_NATIVE=0, see
``runtime_python``; ``dev`` runs them from the development environment, as the benchmark itself
runs), BENCH_OPERATOR_SCOPE (kopf's namespace flags; default
``--namespace=*``, a watch stream per namespace, as the shipped Deployment runs;
``--all-namespaces`` is one cluster-wide stream), BENCH_OPERATOR_ONLY (a comma-separated subset
of ``noop``, ``fair``, ``precedent``, ``replay``), BENCH_OPERATOR_REPLAY=1 (adds Precedent with
its assessment replayed, ``tests/bench/replay_operator.py``: what the rest of its handling
costs), BENCH_OPERATOR_PROFILE=DIR (py-spy samples each operator during the throughput run:
collapsed stacks in DIR).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import yaml

from precedent.adapters.loader import load_incidents

REPO = Path(__file__).resolve().parents[2]
GROUP_PATH = "/apis/precedent.dev/v1alpha1"
# The namespaces kopf serves, as manifests/deployment.yaml runs the operator (a watch stream per
# namespace); BENCH_OPERATOR_SCOPE=--all-namespaces measures one cluster-wide stream.
SCOPE = "--namespace=*"
# Larger histories are written as JSON Lines (see write_history).
YAML_HISTORY_MAX = 20_000
# The operators' environment with the image's packages (see runtime_python).
RUNTIME = REPO / ".cache" / "runtime"
UV = REPO / ".cache" / "uv-tool" / "bin" / "uv"
# The compiled core's wheel, built by `make native`.
NATIVE_WHEELS = REPO / ".cache" / "native" / "wheels"


def runtime_python(kind: str | None = None) -> tuple[str, str]:
    """The interpreter the operators run on, and what it is.

    ``image`` (the default, BENCH_OPERATOR_ENV): a virtual environment with what the Dockerfile
    installs — the locked runtime dependencies without the dev group or extras, the product
    as a built wheel, bytecode compiled (``UV_COMPILE_BYTECODE`` in the image) — synced from
    uv.lock before each benchmark. The development environment adds packages the operator
    imports when they are installed (kopf imports the Kubernetes client of the ``kubectl``
    extra; httpx imports rich and pygments): about 30 MiB of RSS the image does not have.
    ``dev``: the development environment (``sys.executable``).
    """
    kind = kind or os.environ.get("BENCH_OPERATOR_ENV", "image")
    if kind == "dev":
        return sys.executable, "dev (the development environment)"
    if kind != "image":
        raise SystemExit(f"BENCH_OPERATOR_ENV: expected image or dev, got {kind!r}")
    if not UV.exists():
        raise SystemExit(f"{UV} is missing: run `make install-dev` first")
    environment = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(RUNTIME)}
    environment.pop("VIRTUAL_ENV", None)

    def uv(args: list[str], failure: str) -> None:
        done = subprocess.run(
            [str(UV), *args], cwd=REPO, env=environment, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"{failure}:\n{done.stderr}")

    uv(
        [
            "sync",
            "--locked",
            "--no-dev",
            "--no-editable",
            "--compile-bytecode",
            # The product is built again from operator/ every time (uv would reuse a wheel it
            # built before, keyed by pyproject.toml alone).
            "--reinstall-package",
            "precedent",
            "--python",
            sys.executable,
            "--quiet",
        ],
        "the image's environment could not be synced",
    )
    python = str(RUNTIME / "bin" / "python")
    # The compiled core, as the image installs it (the sync above removed it: uv.lock does not
    # list it). BENCH_OPERATOR_NATIVE=0 measures the operator without it (the same work done
    # in Python).
    if os.environ.get("BENCH_OPERATOR_NATIVE", "1") == "0":
        return python, "image (the image's packages, bytecode compiled; no compiled core)"
    wheels = sorted(NATIVE_WHEELS.glob("precedent_native-*.whl"))
    if not wheels:
        raise SystemExit(f"no wheel of the compiled core in {NATIVE_WHEELS}: run `make native`")
    uv(
        ["pip", "install", "--quiet", "--python", python, "--no-deps", str(wheels[-1])],
        "the compiled core could not be installed",
    )
    return python, "image (the image's packages, bytecode compiled, the compiled core)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _variant_specs(size: int) -> Iterator[dict[str, Any]]:
    """``size`` incident specs: the bundled ones, then variants with other names and ids."""
    base = load_incidents([REPO / "data" / "incidents"])
    for i in range(size):
        src = base[i % len(base)]
        spec = src.model_dump(mode="json", by_alias=True, exclude_none=True)
        if i >= len(base):
            spec["id"] = f"{src.id}-v{i}"
            if "resource" in spec:
                spec["resource"]["name"] = f"{spec['resource']['name']}-{i % 97}"
        yield spec


def synthetic_history(size: int, path: Path) -> None:
    """``size`` incidents as Incident documents in one YAML file."""
    docs = [
        {
            "apiVersion": "precedent.dev/v1alpha1",
            "kind": "Incident",
            "metadata": {"name": spec["id"].lower()},
            "spec": spec,
        }
        for spec in _variant_specs(size)
    ]
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def jsonl_history(size: int, path: Path) -> None:
    """The same incidents as JSON Lines (the format for a history too large for one YAML file
    under the 64 MiB input limit)."""
    with path.open("w", encoding="utf-8") as out:
        for spec in _variant_specs(size):
            out.write(json.dumps(spec) + "\n")


def write_history(size: int, workdir: Path) -> Path:
    """The benchmark's history: one YAML file up to YAML_HISTORY_MAX incidents, JSON Lines
    beyond (100k incidents of YAML are about 180 MB)."""
    if size <= YAML_HISTORY_MAX:
        path = workdir / "history.yaml"
        synthetic_history(size, path)
    else:
        path = workdir / "history.jsonl"
        jsonl_history(size, path)
    return path


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def request_body(i: int, *, namespace: str = "default", name: str = "") -> dict[str, Any]:
    actions = [
        ("restart_service", "Deployment", "checkout"),
        ("scale_down", "Deployment", "order-processing"),
        ("rollback", "Deployment", "search-api"),
        ("drain_node", "Node", "aks-node-7"),
        ("update_configmap", "ConfigMap", "checkout-flags"),
    ]
    action, kind, target = actions[i % len(actions)]
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name or f"bench-{i}", "namespace": namespace},
        "spec": {
            "action": action,
            "target": {"kind": kind, "name": target, "namespace": "shop"},
            "description": f"{action.replace('_', ' ')} {target} after alert {i}",
            "labels": {"environment": "production", "incident-type": "service-degradation"},
        },
    }


def _ready(obj: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


class ReadyWatch:
    """Watches every RemediationRequest; records when each (namespace, name) was first Ready."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.ready_at: dict[tuple[str, str], float] = {}
        self.order: list[tuple[str, str]] = []
        self._changed = asyncio.Event()
        self.failed: BaseException | None = None
        self.events = 0
        """Watch events received (each request's creation and every write to it)."""

    async def run(self) -> None:
        """Follow the requests until cancelled; a failure is kept for :meth:`wait` to raise."""
        try:
            await self._follow()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failed = exc
            self._changed.set()
            raise

    async def _follow(self) -> None:
        answer = await self.client.get(f"{GROUP_PATH}/remediationrequests")
        answer.raise_for_status()
        listing = answer.json()
        for item in listing["items"]:
            self._seen(item)
        rv = listing["metadata"]["resourceVersion"]
        while True:
            params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "60"}
            async with self.client.stream(
                "GET", f"{GROUP_PATH}/remediationrequests", params=params, timeout=None
            ) as stream:
                async for line in stream.aiter_lines():
                    if not line:
                        continue
                    event = json.loads(line)
                    self.events += 1
                    obj = event["object"]
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._seen(obj)

    def _seen(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace")), str(meta.get("name")))
        if key not in self.ready_at and _ready(obj):
            self.ready_at[key] = time.perf_counter()
            self.order.append(key)
            self._changed.set()

    async def wait(self, keys: set[tuple[str, str]], timeout: float) -> None:
        deadline = time.perf_counter() + timeout
        while not keys <= self.ready_at.keys():
            if self.failed is not None:
                raise RuntimeError(f"the watch of requests failed: {self.failed!r}")
            self._changed.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                missing = len(keys - self.ready_at.keys())
                raise RuntimeError(f"{missing} requests not Ready after {timeout:.0f} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=min(left, 1.0))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


async def drive(server: ApiServer, pid: int, n: int, prefix: str) -> dict[str, Any]:
    """One operator's round: warm-up, throughput, open-loop latency, fairness (and, during
    the throughput run, the CPU the API server's processes and this client spent)."""
    result: dict[str, Any] = {}
    path = f"{GROUP_PATH}/namespaces/{{}}/remediationrequests"
    async with httpx.AsyncClient(
        base_url=server.url,
        timeout=30,
        verify=server.verify,
        headers=server.headers,
        limits=httpx.Limits(max_connections=64),
    ) as client:
        watch = ReadyWatch(client)
        watcher = asyncio.create_task(watch.run())
        created: dict[tuple[str, str], float] = {}

        async def create(body: dict[str, Any]) -> None:
            meta = body["metadata"]
            created[(meta["namespace"], meta["name"])] = time.perf_counter()
            r = await client.post(path.format(meta["namespace"]), json=body)
            r.raise_for_status()

        try:
            for namespace in ("latency", "flood", "quiet"):
                body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                (await client.post("/api/v1/namespaces", json=body)).raise_for_status()
            # Warm-up: one request through the whole path, so start-up is not measured.
            await create(request_body(0, name=f"{prefix}-warmup"))
            await watch.wait({("default", f"{prefix}-warmup")}, timeout=300)

            semaphore = asyncio.Semaphore(32)

            async def limited(body: dict[str, Any]) -> None:
                async with semaphore:
                    await create(body)

            bodies = [request_body(i) for i in range(n)]
            profiler = _profiler(pid, prefix)
            cpu = cpu_seconds(pid)
            server_cpu = sum(cpu_seconds(p) for p in server.pids)
            client_cpu = time.process_time()
            events = watch.events
            started = time.perf_counter()
            await asyncio.gather(*(limited(b) for b in bodies))
            await watch.wait({("default", b["metadata"]["name"]) for b in bodies}, timeout=900)
            result["rate"] = n / (time.perf_counter() - started)
            if profiler is not None:
                stop(profiler, timeout=60)
            result["cpu_ms"] = 1000 * (cpu_seconds(pid) - cpu) / n
            # The machine's other CPU per request: the API server (the sandbox, or
            # kube-apiserver and etcd) and this load client share the cores with the operator
            # (see "machine" in main).
            result["server_ms"] = 1000 * (sum(cpu_seconds(p) for p in server.pids) - server_cpu) / n
            result["client_ms"] = 1000 * (time.process_time() - client_cpu) / n
            result["writes"] = (watch.events - events) / n
            result["rss"] = rss_mib(pid)
            result["status_bytes"] = await _status_bytes(client, bodies[:50])

            seconds = float(os.environ.get("BENCH_OPERATOR_SECONDS", "10"))
            for rate in _rates():
                keys = []
                tasks = []
                t0 = time.perf_counter()
                for i in range(int(rate * seconds)):
                    await asyncio.sleep(max(0.0, t0 + i / rate - time.perf_counter()))
                    body = request_body(i, namespace="latency", name=f"r{rate}-{i}")
                    keys.append(("latency", body["metadata"]["name"]))
                    tasks.append(asyncio.create_task(create(body)))
                await asyncio.gather(*tasks)
                await watch.wait(set(keys), timeout=900)
                waits = [1000 * (watch.ready_at[k] - created[k]) for k in keys]
                result[f"latency{rate}"] = (statistics.median(waits), percentile(waits, 0.99))

            flood = int(os.environ.get("BENCH_OPERATOR_FLOOD", "1000"))
            if flood:
                many = [request_body(i, namespace="flood", name=f"f-{i}") for i in range(flood)]
                await asyncio.gather(*(limited(b) for b in many))
                late = request_body(0, namespace="quiet", name="late")
                await create(late)
                key = ("quiet", "late")
                await watch.wait({key}, timeout=900)
                result["fair_s"] = watch.ready_at[key] - created[key]
                before = watch.order.index(key)
                flooded = {("flood", b["metadata"]["name"]) for b in many}
                result["fair_before"] = sum(1 for k in watch.order[:before] if k in flooded)
                await watch.wait(flooded, timeout=900)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await watcher
    return result


def _profiler(pid: int, prefix: str) -> subprocess.Popen[bytes] | None:
    """BENCH_OPERATOR_PROFILE=DIR: py-spy samples the operator (every thread, idle ones left
    out) during the throughput run, into DIR/<operator>-<pid>.txt as collapsed stacks."""
    where = os.environ.get("BENCH_OPERATOR_PROFILE")
    if not where:
        return None
    spy = Path(sys.executable).with_name("py-spy")
    out = Path(where) / f"{prefix}-{pid}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [
            str(spy),
            "record",
            "--pid",
            str(pid),
            "--threads",
            "--format",
            "raw",
            "--rate",
            "200",
            "--output",
            str(out),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _status_bytes(client: httpx.AsyncClient, bodies: list[dict[str, Any]]) -> float:
    """The mean size of the statuses the operator wrote (JSON, kopf's own fields excluded)."""
    sizes = []
    for body in bodies:
        meta = body["metadata"]
        got = await client.get(
            f"{GROUP_PATH}/namespaces/{meta['namespace']}/remediationrequests/{meta['name']}"
        )
        status = dict(got.json().get("status") or {})
        status.pop("kopf", None)
        sizes.append(len(json.dumps(status, separators=(",", ":"))))
    return statistics.mean(sizes) if sizes else 0.0


def _rates() -> list[int]:
    raw = os.environ.get("BENCH_OPERATOR_RATES", "20,50,100")
    return [int(r) for r in raw.split(",") if r.strip()]


def start_sandbox(kubeconfig: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The sandbox API server as a process, its kubeconfig written; (process, URL) once up."""
    port = free_port()
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
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(url + "/version")
    except BaseException:
        stop(sandbox, timeout=20)
        raise
    return sandbox, url


@dataclass
class ApiServer:
    """An API server the operators run against: the sandbox or a real kube-apiserver."""

    kind: str
    """``real`` (kube-apiserver and etcd, the pinned build) or ``sandbox``."""
    url: str
    kubeconfig: Path
    pids: list[int]
    """The processes whose CPU is the API server's (kube-apiserver and etcd, or the sandbox)."""
    verify: ssl.SSLContext | bool = True
    headers: dict[str, str] = field(default_factory=dict)


SERVERS = ("real", "sandbox")


def servers_wanted() -> list[str]:
    """BENCH_OPERATOR_SERVERS (default ``real,sandbox``): the API servers to measure on; the
    real one is left out, saying so, where the control plane is not built."""
    from tests.backends import control_plane_bin

    wanted = [
        s.strip() for s in os.environ.get("BENCH_OPERATOR_SERVERS", ",".join(SERVERS)).split(",")
    ]
    unknown = [s for s in wanted if s not in SERVERS]
    if unknown or not wanted:
        raise SystemExit(f"BENCH_OPERATOR_SERVERS: expected real and/or sandbox, got {unknown}")
    if "real" in wanted and control_plane_bin() is None:
        print("the real API server is not built (make control-plane): measured on the sandbox only")
        wanted.remove("real")
    return wanted


@contextlib.contextmanager
def api_server(kind: str, workdir: Path) -> Iterator[ApiServer]:
    """A fresh API server of ``kind`` with the CRDs installed, its admin kubeconfig written;
    stopped, with its data, on exit."""
    kubeconfig = workdir / f"kubeconfig-{time.monotonic_ns()}"
    if kind == "sandbox":
        sandbox, url = start_sandbox(kubeconfig)
        try:
            yield ApiServer("sandbox", url, kubeconfig, [sandbox.pid])
        finally:
            stop(sandbox, timeout=20)
        return
    from precedent_sandbox.control_plane import ControlPlane, Etcd
    from tests.backends import control_plane_bin

    found = control_plane_bin()
    if found is None:
        raise SystemExit("the control plane is not built: make control-plane")
    place = workdir / f"cp-{time.monotonic_ns()}"
    etcd = Etcd(found, place / "etcd").start()
    try:
        plane = ControlPlane(found, {}, workdir=place, etcd=etcd).start()
        try:
            plane.write_kubeconfig(kubeconfig)
            for args in (
                ("apply", "-f", "crds/"),
                ("wait", "--for=condition=Established", "-f", "crds/", "--timeout=60s"),
            ):
                subprocess.run(
                    [str(plane.kubectl), "--kubeconfig", str(kubeconfig), *args],
                    cwd=REPO,
                    check=True,
                    capture_output=True,
                )
            assert plane.apiserver is not None
            assert etcd.process is not None
            # Established is not yet servable: the new resources' storage answers 429 while
            # its cache initializes.
            deadline = time.monotonic() + 60
            headers = {"Authorization": f"Bearer {plane.admin_token}"}
            with httpx.Client(base_url=plane.url, verify=plane.ssl_context(), headers=headers) as c:
                for plural in ("remediationrequests", "incidents", "playbooks"):
                    while c.get(f"{GROUP_PATH}/{plural}").status_code != 200:
                        if time.monotonic() > deadline:
                            raise SystemExit(f"{plural} not served within 60 s")
                        time.sleep(0.2)
            yield ApiServer(
                "real",
                plane.url,
                kubeconfig,
                [plane.apiserver.pid, etcd.process.pid],
                verify=plane.ssl_context(),
                headers={"Authorization": f"Bearer {plane.admin_token}"},
            )
        finally:
            plane.stop()
    finally:
        etcd.stop()
        shutil.rmtree(place, ignore_errors=True)


def start_operator(
    module: str,
    kubeconfig: Path,
    history: Path,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stderr: int | IO[bytes] = subprocess.DEVNULL,
    python: str | None = None,
) -> subprocess.Popen[bytes]:
    """``kopf run -m module`` as a process against the sandbox of ``kubeconfig``, on
    ``python`` (by default the benchmark's own interpreter)."""
    environment = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PRECEDENT_HISTORY_PATH": str(history),
        "PRECEDENT_METRICS_PORT": "0",
        # Enforce mode does not start without the key of the status mark.
        "PRECEDENT_STATUS_KEY": os.environ.get("PRECEDENT_STATUS_KEY") or "bench-key",
        **(env or {}),
    }
    return subprocess.Popen(
        [
            python or sys.executable,
            "-m",
            "kopf",
            "run",
            "-m",
            module,
            *args,
            "--standalone",
            "--quiet",
        ],
        cwd=REPO,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )


def stop(*processes: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGINT each process (kopf and the sandbox stop cleanly on it), then kill the late."""
    for proc in processes:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()


def run_once(
    module: str,
    n: int,
    history: Path,
    workdir: Path,
    scope: str = SCOPE,
    python: str | None = None,
    server: str = "sandbox",
) -> dict[str, Any]:
    with api_server(server, workdir) as api:
        operator = None
        try:
            operator = start_operator(module, api.kubeconfig, history, scope.split(), python=python)
            prefix = module.rsplit(".", 1)[-1].replace("_", "-")
            return asyncio.run(drive(api, operator.pid, n, prefix))
        finally:
            stop(operator, timeout=20)


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


OPERATORS = {
    "noop": ("tests.bench.noop_operator", "bare no-op"),
    "fair": ("tests.bench.fair_noop_operator", "fair no-op"),
    "precedent": ("precedent.handlers", "precedent"),
    "replay": ("tests.bench.replay_operator", "replayed"),
}


def main() -> None:
    n = int(os.environ.get("BENCH_OPERATOR_N", "3000"))
    size = int(os.environ.get("BENCH_OPERATOR_HISTORY", "10000"))
    rounds = int(os.environ.get("BENCH_OPERATOR_ROUNDS", "3"))
    only = [k for k in os.environ.get("BENCH_OPERATOR_ONLY", "").split(",") if k]
    scope = os.environ.get("BENCH_OPERATOR_SCOPE", SCOPE)
    replay = os.environ.get("BENCH_OPERATOR_REPLAY") == "1"
    servers = servers_wanted()
    python, environment = runtime_python()
    wanted = [k for k in OPERATORS if k in only or (not only and (k != "replay" or replay))]
    results: dict[tuple[str, str], list[dict[str, Any]]] = {
        (server, k): [] for server in servers for k in wanted
    }
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        history = write_history(size, workdir)
        load = os.getloadavg()[0]
        # Rounds interleave the API servers and the operators: a slower moment of the machine
        # falls on all of them alike.
        for _ in range(rounds):
            for server, key in results:
                results[(server, key)].append(
                    run_once(OPERATORS[key][0], n, history, workdir, scope, python, server)
                )
        load = max(load, os.getloadavg()[0])
    print(
        f"requests: {n}, history: {size} incidents, rounds: {rounds}, scope: {scope}, "
        f"load ~{load:.1f}"
    )
    print(f"operators' environment: {environment}")
    for server in servers:
        report(server, {k: results[(server, k)] for k in wanted})


def report(server: str, results: Mapping[str, list[dict[str, Any]]]) -> None:
    """One API server's table: medians over the rounds, and the ratios to both no-ops."""

    def med(key: str, field: str, part: int | None = None) -> float:
        values = [r[field] if part is None else r[field][part] for r in results[key]]
        return float(statistics.median(values))

    title = "real kube-apiserver + etcd" if server == "real" else "sandbox API server"
    print(f"\n== {title}")
    print(
        f"{'operator':<12}{'requests/s':>12}{'CPU ms/req':>12}{'RSS MiB':>10}{'status B':>10}"
        f"{'events/req':>12}",
        end="",
    )
    for rate in _rates():
        print(f"{f'{rate}/s p50/p99 ms':>22}", end="")
    print(f"{'flood→other s':>15}{'flood before':>14}")
    for key, (_, label) in OPERATORS.items():
        if key not in results:
            continue
        print(
            f"{label:<12}{med(key, 'rate'):>12.1f}{med(key, 'cpu_ms'):>12.2f}"
            f"{med(key, 'rss'):>10.0f}{med(key, 'status_bytes'):>10.0f}"
            f"{med(key, 'writes'):>12.2f}",
            end="",
        )
        for rate in _rates():
            p50, p99 = med(key, f"latency{rate}", 0), med(key, f"latency{rate}", 1)
            print(f"{f'{p50:.0f}/{p99:.0f}':>22}", end="")
        if "fair_s" in results[key][0]:
            print(f"{med(key, 'fair_s'):>15.2f}{med(key, 'fair_before'):>14.0f}")
        else:
            print()
    # The bench shares the machine's cores between the operator, the API server and this load
    # client: when they are all busy, a request's cost to the whole machine sets the rate.
    print("CPU per request on this machine, ms: operator + API server + load client = all")
    for key, (_, label) in OPERATORS.items():
        if key not in results:
            continue
        parts = [med(key, "cpu_ms"), med(key, "server_ms"), med(key, "client_ms")]
        busy = sum(parts) * med(key, "rate") / 1000
        print(
            f"{label:<12}{parts[0]:>6.2f} + {parts[1]:.2f} + {parts[2]:.2f} = {sum(parts):.2f}"
            f"  ({busy:.2f} of {os.cpu_count()} cores busy)"
        )
    for key in ("precedent", "replay"):
        for base in ("fair", "noop"):
            if key not in results or base not in results:
                continue
            pairs = zip(results[key], results[base], strict=True)
            ratios = [p["rate"] / q["rate"] for p, q in pairs]
            listed = ", ".join(f"{r:.2f}" for r in ratios)
            print(
                f"ratio {OPERATORS[key][1]} / {OPERATORS[base][1]}: "
                f"{statistics.median(ratios):.2f} (rounds: {listed})"
            )


if __name__ == "__main__":
    main()
