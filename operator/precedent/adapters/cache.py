"""A small TTL cache that remembers the last good answer after it expires.

``fresh(key)`` returns an entry younger than the TTL; ``last_good(key)`` returns the entry
whatever its age — what a caller serves while the source is down. Entries are evicted least
recently stored first once ``max_entries`` is reached. The clock is injected.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["CacheHit", "TTLCache"]

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class CacheHit(Generic[V]):
    """A cached value and its age in seconds."""

    value: V
    """The cached value."""
    age: float
    """Seconds since it was stored."""


class TTLCache(Generic[V]):
    """Key → value with a time-to-live; expired values stay available as "last good"."""

    def __init__(
        self, *, ttl_seconds: float, clock: Callable[[], float], max_entries: int = 1024
    ) -> None:
        if ttl_seconds < 0:
            raise ValueError("ttl_seconds must be ≥ 0")
        if max_entries < 1:
            raise ValueError("max_entries must be ≥ 1")
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, key: str, value: V) -> None:
        """Store ``value`` as of now."""
        self._entries.pop(key, None)
        self._entries[key] = (self._clock(), value)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def last_good(self, key: str) -> CacheHit[V] | None:
        """The stored value whatever its age, or None."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        stored, value = entry
        return CacheHit(value, max(0.0, self._clock() - stored))

    def fresh(self, key: str) -> CacheHit[V] | None:
        """The stored value if younger than the TTL, else None."""
        hit = self.last_good(key)
        if hit is None or hit.age >= self.ttl_seconds:
            return None
        return hit

    def clear(self) -> None:
        """Forget everything."""
        self._entries.clear()
