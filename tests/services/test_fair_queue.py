"""The scoring thread's fair queue: lanes take turns, errors and results reach their caller."""

from __future__ import annotations

import asyncio
import threading

import pytest

from precedent.services.fair_queue import FairQueue


def test_a_lane_with_one_job_waits_for_one_job_of_a_flooded_lane() -> None:
    order: list[str] = []
    gate = threading.Event()

    def job(name: str) -> str:
        if name == "a-0":
            gate.wait(10)  # hold the thread while the flood and the late request queue up
        order.append(name)
        return name

    async def run() -> list[str]:
        queue = FairQueue("test-fair")
        try:
            first = asyncio.ensure_future(queue.run("a", lambda: job("a-0")))
            await asyncio.sleep(0)
            flood = [
                asyncio.ensure_future(queue.run("a", lambda i=i: job(f"a-{i}")))  # type: ignore[misc]
                for i in range(1, 200)
            ]
            late = asyncio.ensure_future(queue.run("b", lambda: job("b-0")))
            await asyncio.sleep(0)
            gate.set()
            return [await first, *[await f for f in flood], await late]
        finally:
            queue.shutdown()

    results = asyncio.run(run())
    assert sorted(results) == sorted(order)  # every job ran once, each caller got its answer
    assert order[0] == "a-0"
    # b's only job runs after at most one more of a's 199 waiting jobs, not after all of them.
    assert order.index("b-0") <= 2
    assert [n for n in order if n.startswith("a-")] == [f"a-{i}" for i in range(200)]


def test_an_error_reaches_its_caller_and_the_queue_keeps_serving() -> None:
    def fail() -> None:
        raise ValueError("no such thing")

    async def run() -> int:
        queue = FairQueue("test-fair")
        try:
            with pytest.raises(ValueError, match="no such thing"):
                await queue.run("a", fail)
            return await queue.run("a", lambda: 7)
        finally:
            queue.shutdown()

    assert asyncio.run(run()) == 7


def test_a_cancelled_caller_s_job_is_not_run() -> None:
    ran: list[str] = []
    gate = threading.Event()

    async def run() -> None:
        queue = FairQueue("test-fair")
        try:
            first = asyncio.ensure_future(queue.run("a", lambda: gate.wait(10)))
            await asyncio.sleep(0)
            gone = asyncio.ensure_future(queue.run("a", lambda: ran.append("gone")))
            await asyncio.sleep(0)
            gone.cancel()
            await asyncio.sleep(0)
            gate.set()
            await first
            await queue.run("a", lambda: ran.append("kept"))
        finally:
            queue.shutdown()

    asyncio.run(run())
    assert ran == ["kept"]
