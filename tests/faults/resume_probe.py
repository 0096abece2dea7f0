"""Measure an operator restart with many answered requests present.

``python -m tests.faults.resume_probe --answered 2000 --new 50``: the sandbox and the operator
each in their own process; ``--answered`` requests are answered, the operator is killed with
SIGKILL and started again, ``--new`` requests are created at once; prints the time from the
restart to the first and to the last new answer, and how many answered requests the restarted
operator wrote to (their resourceVersion changed) although nothing about them changed.
"""

from __future__ import annotations

import argparse
import signal
import tempfile
import time
from pathlib import Path

import httpx

from precedent.demo import apply
from tests.faults.rig import (
    create_batch,
    operator_process,
    ready_names,
    requests_by_name,
    sandbox_process,
    wait_for,
)
from tests.integration.conftest import DATA


def main() -> None:
    """Run the measurement and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answered", type=int, default=2000)
    parser.add_argument("--new", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--keep", type=Path, default=None, help="Keep the logs in this directory.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        log = work / "operator.log"
        with (
            sandbox_process(work) as sandbox,
            httpx.Client(base_url=sandbox.url, timeout=60) as client,
        ):
            apply(client, [DATA / "incidents", DATA / "playbooks"])
            old = [f"old-{i:05d}" for i in range(args.answered)]
            started = time.monotonic()
            with operator_process(sandbox.kubeconfig, log) as process:
                create_batch(sandbox.url, old)
                wait_for(
                    lambda: len(ready_names(client, old)) == len(old),
                    args.timeout,
                    lambda: f"{len(old) - len(ready_names(client, old))} not Ready",
                    every=2,
                )
                took = time.monotonic() - started
                print(f"{len(old)} answered in {took:.1f} s ({len(old) / took:.1f}/s)", flush=True)
                process.send_signal(signal.SIGKILL)
                process.wait()
            versions = {
                n: o["metadata"]["resourceVersion"] for n, o in requests_by_name(client).items()
            }
            restarted = time.monotonic()
            print(f"restarting at {time.strftime('%H:%M:%S')}", flush=True)
            with operator_process(sandbox.kubeconfig, log):
                new = [f"new-{i:05d}" for i in range(args.new)]
                create_batch(sandbox.url, new)
                first = wait_for(
                    lambda: ready_names(client, new),
                    args.timeout,
                    lambda: "no new request Ready",
                    every=0.2,
                )
                first_at = time.monotonic() - restarted
                wait_for(
                    lambda: len(ready_names(client, new)) == len(new),
                    args.timeout,
                    lambda: f"{len(new) - len(ready_names(client, new))} new not Ready",
                    every=0.2,
                )
                last_at = time.monotonic() - restarted
                time.sleep(5)  # writes to the old ones that come late still count
                after = requests_by_name(client)
            touched = sum(1 for n in old if after[n]["metadata"]["resourceVersion"] != versions[n])
            print(
                f"restart with {len(old)} answered: first of {len(new)} new Ready after "
                f"{first_at:.1f} s ({len(first)} at once), all after {last_at:.1f} s; "
                f"{touched} answered requests written to by the restarted operator"
            )


if __name__ == "__main__":
    main()
