"""A read of a live target answers the requests about the same target for a while
(``PRECEDENT_TARGET_REUSE_SECONDS``); a fresh read, another target, an expired or failed read
read again. The API here is a recording double of ``KubeApi``'s two reads; the operator's
reads against the real API server are in tests/e2e/test_change_apply.py."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from precedent.adapters.kube_api import KubeApi
from precedent.adapters.live_target import ApiTargets
from precedent.errors import DependencyError


class _Api:
    """``get_object`` and ``list_path`` of a namespace holding Deployments whose replicas the
    test sets; each call recorded, each read waiting on ``gate`` when one is set."""

    def __init__(self) -> None:
        self.replicas: dict[str, int] = {"checkout": 10, "search": 3}
        self.calls: list[str] = []
        self.gate: asyncio.Event | None = None
        self.failing = False

    async def get_object(self, path: str, *, cached: bool = False) -> dict[str, Any] | None:
        self.calls.append(f"get {path}")
        if self.gate is not None:
            await self.gate.wait()
        if self.failing:
            raise DependencyError("the API server is down")
        name = path.rsplit("/", 1)[1]
        if name not in self.replicas:
            return None
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
            "spec": {"replicas": self.replicas[name]},
        }

    async def list_path(self, path: str, *, limit: int = 500) -> list[dict[str, Any]]:
        self.calls.append(f"list {path}")
        return []


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _targets(api: _Api, clock: _Clock, seconds: float = 1.0) -> ApiTargets:
    return ApiTargets(cast(KubeApi, api), reuse_seconds=seconds, clock=clock)


async def _replicas(targets: ApiTargets, name: str, *, fresh: bool = False) -> int | None:
    found = await targets.read("Deployment", name, "shop", "apps/v1", fresh=fresh)
    assert found is not None
    return found.replicas


def test_a_read_answers_the_same_target_until_it_is_too_old_or_a_fresh_one_is_asked() -> None:
    api, clock = _Api(), _Clock()
    targets = _targets(api, clock)

    async def run() -> None:
        assert await _replicas(targets, "checkout") == 10
        reads = len(api.calls)
        assert reads == 3  # the Deployment, its HPAs, its PDBs
        api.replicas["checkout"] = 4
        clock.now += 0.9
        assert await _replicas(targets, "checkout") == 10  # the read of 0.9 s ago
        assert await _replicas(targets, "search") == 3  # another target: read
        assert len(api.calls) == 2 * reads
        assert await _replicas(targets, "checkout", fresh=True) == 4  # read now
        api.replicas["checkout"] = 2
        clock.now += 1.0
        assert await _replicas(targets, "checkout") == 2  # a second old: read again
        assert len(api.calls) == 4 * reads

    asyncio.run(run())


def test_requests_asking_while_a_read_is_under_way_wait_for_it() -> None:
    api, clock = _Api(), _Clock()
    targets = _targets(api, clock)

    async def run() -> None:
        api.gate = asyncio.Event()
        waiting = [asyncio.ensure_future(_replicas(targets, "checkout")) for _ in range(20)]
        await asyncio.sleep(0)
        waiting[0].cancel()  # the request that started the read goes away
        await asyncio.sleep(0)
        api.gate.set()
        answers = await asyncio.gather(*waiting[1:])
        assert answers == [10] * 19
        assert len(api.calls) == 3  # one read: the Deployment, its HPAs, its PDBs

    asyncio.run(run())


def test_an_unknown_target_is_reused_a_failed_read_is_not_and_zero_reads_every_time() -> None:
    api, clock = _Api(), _Clock()
    targets = _targets(api, clock)

    async def run() -> None:
        gone = await targets.read("Deployment", "gone", "shop", None)
        assert gone is not None
        assert not gone.exists
        assert (await targets.read("Deployment", "gone", "shop", None)) == gone
        assert len(api.calls) == 1  # absent: no HPAs or PDBs listed, and read once
        api.failing = True
        assert await targets.read("Deployment", "search", "shop", None) is None  # cannot tell
        api.failing = False
        # "Cannot tell" is an answer like the others for the interval: the server is not asked
        # again by every request of a storm while it is down.
        assert await targets.read("Deployment", "search", "shop", None) is None
        clock.now += 1.0
        assert await _replicas(targets, "search") == 3

    asyncio.run(run())

    every = _targets(api, clock, seconds=0)
    api.calls.clear()

    async def twice() -> None:
        await _replicas(every, "checkout")
        await _replicas(every, "checkout")

    asyncio.run(twice())
    assert len(api.calls) == 6


def test_an_unexpected_error_reaches_every_waiting_request_and_is_not_reused() -> None:
    api, clock = _Api(), _Clock()
    targets = _targets(api, clock)

    async def broken(path: str, *, limit: int = 500) -> list[dict[str, Any]]:
        raise RuntimeError("unexpected")

    async def run() -> None:
        api.list_path = broken  # type: ignore[method-assign]
        both = await asyncio.gather(
            _replicas(targets, "checkout"), _replicas(targets, "checkout"), return_exceptions=True
        )
        assert [type(e) for e in both] == [RuntimeError, RuntimeError]
        del api.list_path  # the class's again
        assert await _replicas(targets, "checkout") == 10  # read again, not the error

    asyncio.run(run())


@pytest.mark.parametrize("count", [1030])
def test_the_reads_kept_are_bounded(count: int) -> None:
    api, clock = _Api(), _Clock()
    targets = _targets(api, clock, seconds=60)
    api.replicas.update({f"d{i}": i for i in range(count)})

    async def run() -> None:
        for i in range(count):
            await _replicas(targets, f"d{i}")
        assert len(targets._reads) == 1024
        calls = len(api.calls)
        await _replicas(targets, f"d{count - 1}")  # among the most recent: reused
        assert len(api.calls) == calls
        await _replicas(targets, "d0")  # the oldest went: read again
        assert len(api.calls) == calls + 3

    asyncio.run(run())
