"""The scoring thread's fair queue: lanes take turns, errors and results reach their caller."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

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


# -- jobs on the event loop (``on_loop``) ------------------------------------------------------


def test_jobs_run_on_the_loop_in_turn_when_their_owner_allows_it() -> None:
    order: list[tuple[str, str]] = []
    held: list[str] = []

    def on_loop() -> Callable[[], None]:
        held.append("take")
        return lambda: held.append("release")

    def job(name: str) -> str:
        order.append((name, threading.current_thread().name))
        return name

    async def run() -> list[str]:
        queue = FairQueue("test-fair", on_loop=on_loop)
        try:
            flood = [
                asyncio.ensure_future(queue.run("a", lambda i=i: job(f"a-{i}")))  # type: ignore[misc]
                for i in range(50)
            ]
            await asyncio.sleep(0)  # the first job runs in this turn of the loop
            late = asyncio.ensure_future(queue.run("b", lambda: job("b-0")))
            return [*[await f for f in flood], await late]
        finally:
            queue.shutdown()

    results = asyncio.run(run())
    names = [name for name, _ in order]
    assert sorted(results) == sorted(names)
    assert {thread for _, thread in order} == {threading.main_thread().name}
    # Queued one turn after the flood's first job, b's job waits for at most two of a's.
    assert names.index("b-0") <= 2
    assert held == ["take", "release"] * len(order)  # released after every job


def test_a_job_that_cannot_run_on_the_loop_runs_on_the_thread_and_the_next_ones_come_back() -> None:
    ran: list[tuple[str, str]] = []
    allowed = iter([True, False, True, True])

    def on_loop() -> Callable[[], None] | None:
        return (lambda: None) if next(allowed) else None

    def job(name: str) -> str:
        ran.append((name, threading.current_thread().name))
        return name

    async def run() -> list[str]:
        queue = FairQueue("test-fair", on_loop=on_loop)
        try:
            futures = [
                asyncio.ensure_future(queue.run("a", lambda i=i: job(f"a-{i}")))  # type: ignore[misc]
                for i in range(4)
            ]
            return [await f for f in futures]
        finally:
            queue.shutdown()

    assert asyncio.run(run()) == ["a-0", "a-1", "a-2", "a-3"]
    main = threading.main_thread().name
    assert [name for name, _ in ran] == ["a-0", "a-1", "a-2", "a-3"]
    threads = [thread for _, thread in ran]
    assert threads[1].startswith("test-fair")  # the one job the owner kept off the loop
    assert [threads[0], threads[2], threads[3]] == [main, main, main]


def test_an_error_on_the_loop_reaches_its_caller_and_releases() -> None:
    released: list[bool] = []

    def fail() -> None:
        raise ValueError("no such thing")

    async def run() -> int:
        queue = FairQueue("test-fair", on_loop=lambda: lambda: released.append(True))
        try:
            with pytest.raises(ValueError, match="no such thing"):
                await queue.run("a", fail)
            return await queue.run("a", lambda: 7)
        finally:
            queue.shutdown()

    assert asyncio.run(run()) == 7
    assert released == [True, True]
