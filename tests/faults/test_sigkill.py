"""SIGKILL of the real operator process at random moments of a fast batch: nothing is lost.

Three rounds against one API server (``precedent-sandbox``, its own process); in each, a fresh
batch of ``PRECEDENT_FAULT_REQUESTS`` RemediationRequests (default 1,000, the issue's figure;
smaller for a quick run) is created as fast as the API server takes them while the operator
(``kopf run -m precedent.handlers``, its own process) answers them. It is killed with SIGKILL
once a random number (1 to half the batch) of the batch is Ready, while the rest is being
answered (seeded: the seed is printed, ``PRECEDENT_FAULT_SEED`` replays a run), then started
again. Earlier batches stay, so each restart also resumes every request answered before.
Afterwards every request is Ready, none Stalled; a request answered before a kill was not
answered again (same Ready condition, same mark); every request has exactly one decision Event.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from precedent.demo import apply
from tests.faults.rig import (
    ReadyWatch,
    SandboxProcess,
    create_batch,
    decision_events,
    operator_process,
    requests_by_name,
    sandbox_process,
    wait_for,
)
from tests.integration.conftest import DATA, condition, is_true

pytestmark = [pytest.mark.faults, pytest.mark.integration]

ROUNDS = 3
BATCH = int(os.environ.get("PRECEDENT_FAULT_REQUESTS") or "1000")
# Generous for a loaded 2-core machine (5 to 25 answers a second there, one restart 10 to 40 s),
# yet finite: a stall fails the test, naming what is missing, instead of hanging it.
ROUND_DEADLINE = 90 + BATCH // 2


def answer(obj: dict[str, Any]) -> tuple[Any, ...]:
    """What must not change once a request is answered: its Ready condition and mark."""
    ready = condition(obj, "Ready") or {}
    status = obj.get("status") or {}
    return (ready.get("lastTransitionTime"), ready.get("message"), status.get("mark"))


def ready(client: httpx.Client, names: list[str]) -> dict[str, dict[str, Any]]:
    """Those of ``names`` that are Ready now."""
    objs = requests_by_name(client)
    return {n: objs[n] for n in names if n in objs and is_true(objs[n], "Ready")}


def kill_during_batch(
    sandbox: SandboxProcess, log: Path, names: list[str], kill_at: int, jitter: float
) -> int:
    """Start the operator, create ``names`` and SIGKILL the operator once ``kill_at`` of them
    are Ready (plus ``jitter`` seconds); returns how many were created by then."""
    batch = set(names)
    with (
        operator_process(sandbox.kubeconfig, log) as process,
        ReadyWatch(sandbox.url) as watch,
        httpx.Client(base_url=sandbox.url, timeout=60) as client,
    ):
        creating = threading.Thread(target=create_batch, args=(sandbox.url, names))
        creating.start()
        try:
            # A watch of Ready requests, cheaper than listing the batch, keeps the kill close
            # to the chosen moment: once that many answers are written.
            wait_for(
                lambda: watch.count(batch) >= kill_at,
                ROUND_DEADLINE,
                lambda: f"{watch.count(batch)} of the {kill_at} Ready wanted before the kill",
                every=0.02,
            )
            time.sleep(jitter)
            process.send_signal(signal.SIGKILL)
            process.wait()
            created = len(batch & set(requests_by_name(client)))
        finally:
            creating.join(timeout=ROUND_DEADLINE)
        assert not creating.is_alive(), "creating the batch did not finish"
    return created


def restart_until_all_ready(
    sandbox: SandboxProcess, log: Path, names: list[str]
) -> tuple[float, dict[str, list[dict[str, Any]]]]:
    """Start the operator again; wait until every one of ``names`` is Ready and has a decision
    Event. Returns the seconds until all were Ready, and the Events."""
    restarted = time.monotonic()
    with (
        operator_process(sandbox.kubeconfig, log),
        httpx.Client(base_url=sandbox.url, timeout=60) as client,
    ):
        # Listing everything competes with the operator for the API server: once a second.
        wait_for(
            lambda: len(ready(client, names)) == len(names),
            ROUND_DEADLINE,
            lambda: f"not Ready: {sorted(set(names) - set(ready(client, names)))[:10]}",
            every=1,
        )
        took = time.monotonic() - restarted

        def without_event() -> list[str]:
            return [n for n, e in decision_events(client, names).items() if not e]

        wait_for(
            lambda: not without_event(),
            60,
            lambda: f"no decision Event: {without_event()[:10]}",
            every=1,
        )
        # A late duplicate (a re-post after the restart) would come within moments.
        time.sleep(2)
        return took, decision_events(client, names)


def test_sigkill_at_random_moments_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    seed = int(os.environ.get("PRECEDENT_FAULT_SEED") or random.SystemRandom().randrange(2**32))
    rng = random.Random(seed)
    print(f"\nfault suite: SIGKILL seed {seed} (PRECEDENT_FAULT_SEED={seed} replays it)")
    started = time.monotonic()
    log = tmp_path / "operator.log"
    kills: list[tuple[int, int]] = []
    restarts: list[float] = []
    answered_before_kill: dict[str, tuple[Any, ...]] = {}
    all_names: list[str] = []
    with (
        sandbox_process(tmp_path) as sandbox,
        httpx.Client(base_url=sandbox.url, timeout=60) as client,
    ):
        apply(client, [DATA / "incidents", DATA / "playbooks"])
        for round_ in range(ROUNDS):
            names = [f"r{round_}-{i:04d}" for i in range(BATCH)]
            all_names += names
            # Killed while the batch is being answered: at most half of it Ready.
            kill_at = rng.randint(1, BATCH // 2)
            created = kill_during_batch(sandbox, log, names, kill_at, rng.uniform(0, 0.2))
            done = ready(client, all_names)
            kills.append((len(done.keys() & set(names)), created))
            answered_before_kill.update({n: answer(o) for n, o in done.items()})
            took, events = restart_until_all_ready(sandbox, log, all_names)
            restarts.append(took)
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
        f"fault suite: {ROUNDS} SIGKILLs, (Ready, created) of each {BATCH}-request batch at the "
        f"kill: {kills}; all Ready {[round(r, 1) for r in restarts]} s after each restart; "
        f"{len(all_names)} requests Ready exactly once, "
        f"{sum(len(e) for e in events.values())} decision Events, one each; {elapsed:.1f} s"
    )
