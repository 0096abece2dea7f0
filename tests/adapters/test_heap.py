"""The heap helpers: the history made again after its parse is equal to the one parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedent.adapters.heap import (
    COLLECTOR_THRESHOLDS,
    compacted,
    freeze_startup_heap,
    limit_arenas,
    release_free_memory,
)
from precedent.adapters.loader import load_incidents
from precedent.wiring import load_history_files

DATA = Path(__file__).resolve().parents[2] / "data" / "incidents"


def test_a_compacted_history_equals_the_parsed_one() -> None:
    calls = []

    def make() -> list[object]:
        calls.append(1)
        return list(load_incidents([DATA]))

    parsed = load_incidents([DATA])
    again = compacted(make)
    assert calls == [1]
    assert again == parsed
    assert len(again) > 100  # the bundled history, not a stub
    assert all(a is not b for a, b in zip(again, parsed, strict=True))


def test_the_loaded_history_is_the_files_history() -> None:
    assert load_history_files([DATA]) == load_incidents([DATA])


def test_the_heap_calls_say_whether_they_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    # glibc here: both calls exist; an explicit MALLOC_ARENA_MAX wins over the default.
    assert release_free_memory() is True
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_arenas() is False
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert limit_arenas() is True


def test_the_startup_heap_is_frozen_out_of_the_collector() -> None:
    import gc

    thresholds = gc.get_threshold()
    gc.unfreeze()
    try:
        kept = [[i] for i in range(1000)]  # tracked containers alive at "start-up"
        moved = freeze_startup_heap()
        assert moved >= len(kept)
        assert gc.get_freeze_count() == moved
        # A collection no longer walks them: they are in none of its generations.
        walked = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
        assert not walked & {id(k) for k in kept}
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
