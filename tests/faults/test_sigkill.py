"""SIGKILL of the real operator process at random moments of a fast batch: nothing is lost.

Three rounds; in each, 1,000 RemediationRequests are created as fast as the API server takes
them while the operator (``kopf run -m precedent.handlers``, its own process) answers them; it
is killed with SIGKILL once a random number of them is Ready (seeded: the seed is printed, and
``PRECEDENT_FAULT_SEED`` replays a run), then started again. Afterwards every request is Ready,
none Stalled; a request answered before a kill was not answered again (same Ready condition,
same mark); every request has exactly one decision Event.
"""

from __future__ import annotations

import copy
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from precedent.adapters.loader import iter_documents
from precedent.demo import apply
from precedent_sandbox import SandboxThread
from tests.helpers import eventually
from tests.integration.conftest import DATA, REPO, condition, is_true

pytestmark = [pytest.mark.faults, pytest.mark.integration]

ROUNDS = 3
BATCH = int(os.environ.get("PRECEDENT_FAULT_BATCH", "1000"))
DECISIONS = {"Approved", "Escalated", "Denied"}
REQUESTS = "/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests"
EVENTS = "/api/v1/namespaces/default/events"


def template() -> dict[str, Any]:
    docs = iter_documents([DATA / "requests" / "seed-000.yaml"])
    return next(d.body for d in docs if d.name == "restart-payment-api")


@contextmanager
def operator_process(
    kubeconfig: Path, log: Path, **settings: str
) -> Iterator[subprocess.Popen[bytes]]:
    """``kopf run -m precedent.handlers`` in its own process, logging to ``log``."""
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
            [*command, "--all-namespaces", "--standalone"],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def requests_by_name(client: httpx.Client) -> dict[str, dict[str, Any]]:
    items = client.get(REQUESTS).json()["items"]
    return {o["metadata"]["name"]: o for o in items}


def create_batch(url: str, names: list[str]) -> None:
    """Create the requests over 16 parallel connections, as fast as the server takes them."""
    body = template()

    def create(chunk: list[str]) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            for name in chunk:
                one = copy.deepcopy(body)
                one["metadata"]["name"] = name
                response = client.post(REQUESTS, json=one)
                assert response.status_code == 201, response.text

    chunks = [names[i::16] for i in range(16)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, chunks))


def answer(obj: dict[str, Any]) -> tuple[Any, ...]:
    """What must not change once a request is answered: its Ready condition and mark."""
    ready = condition(obj, "Ready") or {}
    status = obj.get("status") or {}
    return (ready.get("lastTransitionTime"), ready.get("message"), status.get("mark"))


def test_sigkill_at_random_moments_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    seed = int(os.environ.get("PRECEDENT_FAULT_SEED") or random.SystemRandom().randrange(2**32))
    rng = random.Random(seed)
    print(f"\nfault suite: SIGKILL seed {seed} (PRECEDENT_FAULT_SEED={seed} replays it)")
    started = time.monotonic()
    log = tmp_path / "operator.log"
    kills: list[int] = []
    with SandboxThread(REPO / "crds") as sandbox:
        kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
        with httpx.Client(base_url=sandbox.url, timeout=60) as client:
            apply(client, [DATA / "incidents", DATA / "playbooks"])
            answered_before_kill: dict[str, tuple[Any, ...]] = {}
            all_names: list[str] = []
            process_cm = operator_process(kubeconfig, log)
            process = process_cm.__enter__()
            try:
                for round_ in range(ROUNDS):
                    names = [f"r{round_}-{i:04d}" for i in range(BATCH)]
                    all_names += names
                    kill_at = rng.randint(1, BATCH - 1)
                    creating = threading.Thread(target=create_batch, args=(sandbox.url, names))
                    creating.start()

                    def ready_in_round(names: list[str] = names) -> dict[str, dict[str, Any]]:
                        objs = requests_by_name(client)
                        return {
                            n: objs[n] for n in names if n in objs and is_true(objs[n], "Ready")
                        }

                    # The operator logs each answer: counting log lines is cheaper than listing
                    # the batch, and keeps the kill close to the chosen moment.
                    offset = log.stat().st_size if log.exists() else 0

                    def answered(k: int = kill_at, offset: int = offset) -> bool:
                        with log.open("rb") as text:
                            text.seek(offset)
                            return text.read().count(b" assessed: ") >= k

                    eventually(answered, timeout=300)
                    time.sleep(rng.uniform(0, 0.2))
                    process.send_signal(signal.SIGKILL)
                    process.wait()
                    done = ready_in_round()
                    kills.append(len(done))
                    answered_before_kill.update({n: answer(o) for n, o in done.items()})
                    creating.join()
                    process_cm.__exit__(None, None, None)
                    process_cm = operator_process(kubeconfig, log)
                    process = process_cm.__enter__()
                    # Listing the batch competes with the operator for the API server: once a
                    # second is enough.
                    deadline = time.monotonic() + 900
                    while len(ready_in_round()) < BATCH:
                        assert time.monotonic() < deadline, "not every request became Ready"
                        time.sleep(1)

                def all_events_posted() -> dict[str, list[dict[str, Any]]]:
                    by_name: dict[str, list[dict[str, Any]]] = {n: [] for n in all_names}
                    for event in client.get(EVENTS).json()["items"]:
                        name = event.get("involvedObject", {}).get("name")
                        if name in by_name and event.get("reason") in DECISIONS:
                            by_name[name].append(event)
                    return by_name if all(by_name.values()) else {}

                events = eventually(all_events_posted, timeout=120)
            finally:
                process_cm.__exit__(None, None, None)
            final = requests_by_name(client)
    elapsed = time.monotonic() - started

    assert sorted(final) == sorted(all_names)
    assert all(is_true(final[n], "Ready") for n in all_names)
    assert not any(is_true(final[n], "Stalled") for n in all_names)
    changed = [n for n, seen in answered_before_kill.items() if answer(final[n]) != seen]
    assert not changed, f"answered again after a restart: {changed[:10]}"
    repeated = {n: len(e) for n, e in events.items() if len(e) != 1}
    assert not repeated, f"decision Events not exactly one: {dict(list(repeated.items())[:10])}"
    print(
        f"fault suite: {ROUNDS} SIGKILLs after {kills} of {BATCH} requests were Ready; "
        f"{len(all_names)} requests Ready exactly once, {len(events)} decision Events exactly "
        f"once each; {elapsed:.1f} s"
    )
