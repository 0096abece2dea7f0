"""The fault suite's rig: the sandbox API server and the operator, each in its own process.

Apart from the test process, neither shares a GIL with the test's own polling: a slow test
thread cannot starve the API server, and a SIGKILL hits the operator alone. Every wait has a
deadline and fails saying what is missing.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from precedent.adapters.loader import iter_documents
from tests.integration.conftest import DATA, REPO, is_true

REQUESTS = "/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests"
EVENTS = "/api/v1/namespaces/default/events"
DECISIONS = frozenset({"Approved", "Escalated", "Denied"})
BIN = Path(sys.executable).parent


def template() -> dict[str, Any]:
    """The bundled ``restart-payment-api`` request, to copy under new names."""
    docs = iter_documents([DATA / "requests" / "seed-000.yaml"])
    return next(d.body for d in docs if d.name == "restart-payment-api")


def wait_for(
    check: Callable[[], Any], timeout: float, missing: Callable[[], str], every: float = 0.5
) -> Any:
    """Poll ``check`` until it returns something truthy; past ``timeout`` s, fail with
    ``missing()`` (what is still missing), never hang."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:.0f} s: {missing()}")
        time.sleep(every)


def _stop(process: subprocess.Popen[bytes], sig: int = signal.SIGINT) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class SandboxProcess:
    """A ``precedent-sandbox`` process: its URL and the kubeconfig it wrote."""

    url: str
    kubeconfig: Path
    process: subprocess.Popen[bytes]


@contextmanager
def sandbox_process(workdir: Path, log: Path | None = None) -> Iterator[SandboxProcess]:
    """``precedent-sandbox`` with the repository's CRDs, in its own process."""
    ready = workdir / "sandbox.ready"
    kubeconfig = workdir / "kubeconfig"
    command = [
        str(BIN / "precedent-sandbox"),
        "--crds",
        str(REPO / "crds"),
        "--kubeconfig",
        str(kubeconfig),
        "--ready-file",
        str(ready),
    ]
    with (log or workdir / "sandbox.log").open("ab") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for(
            lambda: ready.exists() or process.poll() is not None,
            timeout=60,
            missing=lambda: "the sandbox did not write its ready file",
            every=0.05,
        )
        assert process.poll() is None, f"the sandbox exited with {process.returncode}"
        url = json.loads(ready.read_text())["url"]
        yield SandboxProcess(url=url, kubeconfig=kubeconfig, process=process)
    finally:
        _stop(process)


SOLO = ("--all-namespaces", "--standalone")


@contextmanager
def operator_process(
    kubeconfig: Path, log: Path, *, peering: str | None = None, **settings: str
) -> Iterator[subprocess.Popen[bytes]]:
    """``kopf run -m precedent.handlers`` in its own process, logging to ``log``: standalone,
    or a peer of the ``peering`` object (one active operator at a time)."""
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PRECEDENT_HISTORY_PATH": "",
        "PRECEDENT_CATALOG": "",
        "PRECEDENT_STATUS_KEY": "fault-suite-key",
        "PRECEDENT_METRICS_PORT": "0",
        **settings,
    }
    command = [sys.executable, "-m", "kopf", "run", "-m", "precedent.handlers"]
    with log.open("ab") as sink:
        process = subprocess.Popen(
            # Peers run with the Deployment's flags (a stream per namespace, cluster peering).
            [*command, *(("--namespace=*", f"--peering={peering}") if peering else SOLO)],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        _stop(process)


def create_batch(url: str, names: list[str], connections: int = 8) -> None:
    """Create requests named ``names`` over parallel connections, as fast as the server takes
    them."""
    body = template()

    def create(chunk: list[str]) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            for name in chunk:
                one = copy.deepcopy(body)
                one["metadata"]["name"] = name
                response = client.post(REQUESTS, json=one)
                assert response.status_code == 201, response.text

    chunks = [names[i::connections] for i in range(connections)]
    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(create, chunks))


def requests_by_name(client: httpx.Client) -> dict[str, dict[str, Any]]:
    """Every RemediationRequest in ``default``, by name."""
    items = client.get(REQUESTS).json()["items"]
    return {o["metadata"]["name"]: o for o in items}


def ready_names(client: httpx.Client, names: list[str]) -> set[str]:
    """Which of ``names`` are Ready now."""
    objs = requests_by_name(client)
    return {n for n in names if n in objs and is_true(objs[n], "Ready")}


def decision_events(client: httpx.Client, names: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The decision Events (Approved/Escalated/Denied) of each of ``names``."""
    by_name: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for event in client.get(EVENTS).json()["items"]:
        name = event.get("involvedObject", {}).get("name")
        if name in by_name and event.get("reason") in DECISIONS:
            by_name[name].append(event)
    return by_name


def count_in_log(log: Path, needle: bytes, offset: int = 0) -> int:
    """How many times ``needle`` occurs in ``log`` past ``offset``."""
    if not log.exists():
        return 0
    with log.open("rb") as text:
        text.seek(offset)
        return text.read().count(needle)


class ReadyWatch:
    """The names of the requests that are Ready, kept current by a watch of its own (a thread),
    so that a test can act the moment a number of them is answered without listing them all."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ready: set[str] = set()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ready-watch", daemon=True)

    def __enter__(self) -> ReadyWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def count(self, names: set[str]) -> int:
        """How many of ``names`` are Ready."""
        if self.error is not None:
            raise AssertionError(f"the Ready watch failed: {self.error!r}")
        return len(self.ready & names)

    def _see(self, obj: dict[str, Any]) -> None:
        if is_true(obj, "Ready"):
            self.ready.add(obj["metadata"]["name"])

    def _run(self) -> None:
        try:
            with httpx.Client(base_url=self.url, timeout=30) as client:
                listed = client.get(REQUESTS).json()
                for obj in listed["items"]:
                    self._see(obj)
                since = listed["metadata"]["resourceVersion"]
                while not self._stop.is_set():
                    # Short watches, so that stopping never waits long.
                    params = {"watch": "true", "resourceVersion": since, "timeoutSeconds": "1"}
                    with client.stream("GET", REQUESTS, params=params) as response:
                        for line in response.iter_lines():
                            if not line:
                                continue
                            event = json.loads(line)
                            obj = event["object"]
                            if event["type"] == "ERROR":
                                raise AssertionError(f"watch error: {obj}")
                            since = obj["metadata"]["resourceVersion"]
                            if event["type"] != "BOOKMARK":
                                self._see(obj)
        except BaseException as exc:  # reported by count(), in the test's thread
            self.error = exc
