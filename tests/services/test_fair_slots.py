"""FairSlots: holders let in one lane at a time in turn, however the handlers were started."""

from __future__ import annotations

import asyncio

import pytest

from precedent.services.fair_queue import FairSlots


async def _run(slots: FairSlots, started: list[tuple[str, int]], work: float) -> list[str]:
    order: list[str] = []

    async def one(lane: str, i: int) -> None:
        async with slots.hold(lane):
            order.append(f"{lane}{i}")
            await asyncio.sleep(work)

    await asyncio.gather(*(one(lane, i) for lane, i in started))
    return order


@pytest.mark.parametrize("work", [0.0, 0.001])
def test_a_quiet_lane_is_let_in_before_a_flood_started_ahead_of_it(work: float) -> None:
    # Twenty handlers of one namespace start before one of another, all in one turn of the
    # loop (as kopf starts the handlers of a burst of events): the quiet one is second.
    started = [("a", i) for i in range(20)] + [("b", 0)]
    order = asyncio.run(_run(FairSlots(1), started, work))
    assert order[:3] == ["a0", "b0", "a1"]
    assert sorted(order) == sorted(f"{lane}{i}" for lane, i in started)


def test_at_most_size_hold_a_slot_at_once() -> None:
    slots = FairSlots(3)
    holding = 0
    most = 0

    async def one(lane: str) -> None:
        nonlocal holding, most
        async with slots.hold(lane):
            holding += 1
            most = max(most, holding)
            await asyncio.sleep(0.001)
            holding -= 1

    async def main() -> None:
        await asyncio.gather(*(one(str(i % 4)) for i in range(40)))

    asyncio.run(main())
    assert most == 3


def test_a_waiter_that_gives_up_passes_its_turn_on() -> None:
    async def main() -> list[str]:
        slots = FairSlots(1)
        order: list[str] = []

        async def one(lane: str) -> None:
            async with slots.hold(lane):
                order.append(lane)
                await asyncio.sleep(0.001)

        first = asyncio.create_task(one("a"))
        quitter = asyncio.create_task(one("b"))
        last = asyncio.create_task(one("c"))
        await asyncio.sleep(0)
        quitter.cancel()
        await asyncio.gather(first, last, quitter, return_exceptions=True)
        return order

    assert asyncio.run(main()) == ["a", "c"]
