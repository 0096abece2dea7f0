"""The remote catalog's TTL cache with a last-good memory."""

from __future__ import annotations

import pytest

from precedent.adapters.cache import TTLCache


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_fresh_until_the_ttl_then_only_last_good() -> None:
    clock = Clock()
    cache: TTLCache[str] = TTLCache(ttl_seconds=300, clock=clock)
    cache.put("q", "answer")
    clock.now = 299
    hit = cache.fresh("q")
    assert hit is not None
    assert (hit.value, hit.age) == ("answer", 299)
    clock.now = 300
    assert cache.fresh("q") is None
    stale = cache.last_good("q")
    assert stale is not None
    assert (stale.value, stale.age) == ("answer", 300)


def test_put_refreshes_the_age() -> None:
    clock = Clock()
    cache: TTLCache[int] = TTLCache(ttl_seconds=10, clock=clock)
    cache.put("q", 1)
    clock.now = 20
    cache.put("q", 2)
    hit = cache.fresh("q")
    assert hit is not None
    assert hit.value == 2


def test_oldest_entries_are_evicted_first() -> None:
    cache: TTLCache[int] = TTLCache(ttl_seconds=10, clock=Clock(), max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert cache.last_good("a") is None
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_unknown_key_misses() -> None:
    cache: TTLCache[int] = TTLCache(ttl_seconds=10, clock=Clock())
    assert cache.fresh("nope") is None
    assert cache.last_good("nope") is None


def test_validates() -> None:
    with pytest.raises(ValueError, match="ttl_seconds"):
        TTLCache(ttl_seconds=-1, clock=Clock())
