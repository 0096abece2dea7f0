"""A small TTL cache that remembers the last good answer after it expires.

``fresh(key)`` returns an entry younger than the TTL; ``last_good(key)`` returns the entry
whatever its age — what a caller serves while the source is down. Entries are evicted least
recently stored first once ``max_entries`` is reached. The clock is injected.

:class:`CachingCatalog` is the playbook catalog port in front of another catalog (the remote
one, chosen in wiring): a fresh answer to the same normalised query is served without asking,
and when the catalog fails its last good answer to the query, however old.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from precedent.core.playbooks import CatalogAnswer, PlaybookCatalog, PlaybookQuery
from precedent.errors import CatalogUnavailable
from precedent.metrics import METRICS, Metrics

__all__ = ["CacheHit", "CachingCatalog", "TTLCache"]

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


class CachingCatalog:
    """A playbook catalog whose answers are kept ``ttl_seconds`` (the catalog port).

    A fresh answer comes back with ``cached_age`` set; when the catalog cannot answer, the
    last good answer to the same query comes back with ``stale_because`` set (the catalog's
    reason), else its ``CatalogUnavailable`` goes on to the caller. Lookups are counted in
    ``precedent_catalog_cache_total`` (hit, miss, stale).
    """

    def __init__(
        self,
        catalog: PlaybookCatalog,
        *,
        ttl_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        metrics: Metrics = METRICS,
        max_entries: int = 1024,
    ) -> None:
        self.catalog = catalog
        self.metrics = metrics
        self._cache: TTLCache[CatalogAnswer] = TTLCache(
            ttl_seconds=ttl_seconds, clock=clock, max_entries=max_entries
        )

    @property
    def kind(self) -> str:
        """The cached catalog's kind (its metrics label)."""
        return self.catalog.kind

    @property
    def name(self) -> str:
        """The cached catalog's name."""
        return self.catalog.name

    async def search(self, query: PlaybookQuery, *, budget: float | None = None) -> CatalogAnswer:
        """A fresh cached answer, else the catalog's (then cached), else the last good one."""
        key = query.cache_key()
        hit = self._cache.fresh(key)
        self.metrics.catalog_cache.labels("hit" if hit else "miss").inc()
        if hit is not None:
            return replace(hit.value, cached_age=hit.age)
        try:
            answer = await self.catalog.search(query, budget=budget)
        except CatalogUnavailable as exc:
            stale = self._cache.last_good(key)
            if stale is None:
                raise
            self.metrics.catalog_cache.labels("stale").inc()
            return replace(stale.value, cached_age=stale.age, stale_because=exc.reason)
        self._cache.put(key, answer)
        return answer

    async def aclose(self) -> None:
        """Release the cached catalog's connections."""
        await self.catalog.aclose()
