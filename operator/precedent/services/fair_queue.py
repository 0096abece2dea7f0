"""One scoring thread, fed fairly: a queue per lane (a namespace), served in turn.

Scoring is CPU work on one thread (the event loop keeps serving kopf meanwhile). With a single
first-in-first-out queue, a thousand requests created at once in one namespace put every later
request of every other namespace behind all of them. Here each lane has its own queue and the
thread takes one job from each waiting lane in turn (round robin), so a request in a quiet
namespace waits for at most one job per busy lane, however long their backlogs are.

A job whose kind has run in under ``inline_below`` seconds (a moving average) runs on the event
loop itself when nothing waits for the thread: handing a 1 ms job to a thread costs more than
the job (the two take turns for the interpreter lock, about 1 ms of CPU per job at 10k
incidents), while a long one (a large history) still leaves the loop free.

``FairSlots`` does the same for the event loop's side: a bounded number of requests being
answered at once (scored, their Event posted), the rest admitted one lane at a time in turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["INLINE_BELOW_SECONDS", "FairQueue", "FairSlots"]

INLINE_BELOW_SECONDS = 0.003
"""Jobs shorter than this on average run on the event loop (see the module docstring)."""
_SMOOTHING = 0.1  # weight of the newest duration in the moving average

T = TypeVar("T")

_Job = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


class FairQueue:
    """Runs callables on one worker thread, one lane's job at a time in turn."""

    def __init__(self, thread_name: str = "precedent-assess", *, inline_below: float = 0.0) -> None:
        """``inline_below``: run a job on the caller's event loop when jobs take less than
        this many seconds on average and none waits for the thread (0: always the thread)."""
        self._lanes: OrderedDict[str, deque[_Job]] = OrderedDict()
        self._lock = threading.Lock()
        self._draining = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)
        self._inline_below = inline_below
        # Until a job was timed it counts as long: the first ones run on the thread.
        self._typical = inline_below
        self.inline_runs = 0
        """Jobs run on the event loop (the rest ran on the thread)."""

    def _timed(self, job: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return job()
        finally:
            took = time.perf_counter() - started
            self._typical += _SMOOTHING * (took - self._typical)

    def waiting(self) -> dict[str, int]:
        """Jobs waiting per lane (not counting the one running)."""
        with self._lock:
            return {lane: len(jobs) for lane, jobs in self._lanes.items()}

    async def run(self, lane: str, job: Callable[[], T]) -> T:
        """Run ``job`` on the worker thread when ``lane``'s turn comes; its result or error."""
        if self._typical < self._inline_below and not self._draining:
            self.inline_runs += 1
            return self._timed(job)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._lanes.setdefault(lane, deque()).append((job, future, loop))
            start = not self._draining
            self._draining = True
        if start:
            self._executor.submit(self._drain)
        return await future

    def _next(self) -> _Job | None:
        with self._lock:
            while self._lanes:
                lane, jobs = self._lanes.popitem(last=False)
                job = jobs.popleft()
                if jobs:  # the lane goes to the back of the turn
                    self._lanes[lane] = jobs
                if not job[1].cancelled():  # its caller gave up: nothing to run
                    return job
            self._draining = False
            return None

    def _drain(self) -> None:
        while (job := self._next()) is not None:
            call, future, loop = job
            result: Any = None
            error: Exception | None = None
            try:
                result = self._timed(call)
            except Exception as exc:
                error = exc
            # A closed event loop (RuntimeError) has nobody waiting any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, result, error)

    def shutdown(self) -> None:
        """Stop the worker thread once the running job is done (waiting jobs are dropped)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


def _settle(future: asyncio.Future[Any], result: Any, error: Exception | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class FairSlots:
    """At most ``size`` holders at once (in one event loop); when all are taken, waiters are
    let in one lane at a time in turn, so a lane's backlog never stands in front of another
    lane's first request (``asyncio.Semaphore`` lets them in first come, first served)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self._free = size
        self._lanes: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @contextlib.asynccontextmanager
    async def hold(self, lane: str) -> AsyncIterator[None]:
        """Hold a slot for the body of the ``async with``."""
        await self._acquire(lane)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, lane: str) -> None:
        if self._free > 0 and not self._lanes:
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lanes.setdefault(lane, deque()).append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # handed a slot just as the waiter gave up: pass it on
            else:
                waiters = self._lanes.get(lane)
                if waiters is not None and future in waiters:
                    waiters.remove(future)
                    if not waiters:
                        del self._lanes[lane]
            raise

    def _release(self) -> None:
        while self._lanes:
            lane, waiters = self._lanes.popitem(last=False)
            future = waiters.popleft()
            if waiters:  # the lane goes to the back of the turn
                self._lanes[lane] = waiters
            if not future.done():
                future.set_result(None)  # the slot passes straight to this waiter
                return
        self._free += 1
