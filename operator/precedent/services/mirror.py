"""Keep what the operator holds from cluster objects equal to what the API server holds.

The history and the catalog follow Incident and Playbook objects through kopf's watch. A watch
alone cannot guarantee that they equal the API's contents:

* kopf 1.x re-lists after a broken stream or a 410 Gone, and hands every listed object to the
  index handlers, but it never drops what the new list no longer holds (its indexes forget an
  object only on a DELETED event), and handlers are not told when a listing ends;
* a watch resumed from a resourceVersion after the API server came back with other contents
  (a restored or replaced store) replays what the new server has after that version and
  delivers no deletions at all.

So a full list is compared with what the watch applied, now and then (:class:`ObjectMirror`).
Listing and watching race: an object changed or deleted by the watch while the list was being
answered is newer than the list and is left alone; only objects the watch last touched before
the list started are taken from the list (changed or absent ones).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from precedent.errors import InputError

__all__ = ["ObjectMirror", "ResyncPlan"]

T = TypeVar("T")
K = TypeVar("K", str, tuple[str, str, str])
"""An object's key: its name, or (kind, namespace, name) when one mirror holds several kinds."""


@dataclass(frozen=True, slots=True)
class ResyncPlan(Generic[K]):
    """What a full list changed in memory."""

    applied: tuple[K, ...]
    """Objects (keys) taken from the list: unknown here, or another version."""
    removed: tuple[K, ...]
    """Objects held here that the list no longer has."""

    def __bool__(self) -> bool:
        return bool(self.applied or self.removed)


class ObjectMirror(Generic[K]):
    """Which version of each object is applied in memory, and when (a sequence number).

    Every change to memory goes through here under one lock, so the watch (kopf runs
    synchronous handlers in threads) and a resync never interleave half-way. ``lock`` lets the
    owner of the memory share it (its queries then never see a change half-made); it is not
    reentrant, so the ``change`` callbacks must not take it again.
    """

    def __init__(self, kind: str, *, lock: threading.Lock | None = None) -> None:
        self.kind = kind
        self._lock = lock or threading.Lock()
        self._seq = 0
        self._held: dict[K, tuple[str, int]] = {}  # key → (resourceVersion, seq)
        self._gone: dict[K, int] = {}  # key → seq of its deletion (newer than some list)

    def _tick(self) -> int:
        self._seq += 1
        return self._seq

    def apply(self, name: K, resource_version: str, change: Callable[[], T]) -> T:
        """Apply version ``resource_version`` of object ``name`` with ``change``.

        The object counts as applied even when ``change`` raises (an invalid spec is dropped
        from memory by ``change`` itself): the list would only bring the same version again.
        """
        with self._lock:
            try:
                return change()
            finally:
                self._held[name] = (resource_version, self._tick())
                self._gone.pop(name, None)

    def remove(self, name: K, change: Callable[[], object]) -> None:
        """Object ``name`` was deleted: ``change`` drops it from memory."""
        with self._lock:
            try:
                change()
            finally:
                self._held.pop(name, None)
                self._gone[name] = self._tick()

    def mark(self) -> int:
        """Taken just before a list is requested: what happens after it is newer than the list."""
        with self._lock:
            return self._seq

    def names(self) -> frozenset[K]:
        """The objects held."""
        with self._lock:
            return frozenset(self._held)

    def resync(
        self,
        listed: Mapping[K, Mapping[str, Any]],
        mark: int,
        *,
        upsert: Callable[[Mapping[str, Any]], object],
        delete: Callable[[K], object],
        scope: Callable[[K], bool] | None = None,
    ) -> ResyncPlan[K]:
        """Make memory equal a full list (key → object) requested after :meth:`mark`.

        ``upsert`` takes an object from the list (InputError: invalid, dropped by it);
        ``delete`` drops a key. ``scope`` says which held keys the list covers (default: all):
        a list of one kind says nothing about the others a mirror holds.
        """
        covers = scope or (lambda _: True)
        applied: list[K] = []
        removed: list[K] = []
        with self._lock:
            for name, obj in listed.items():
                version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
                held = self._held.get(name)
                if held is not None and (held[1] > mark or held[0] == version):
                    continue  # the same version, or the watch brought a newer one meanwhile
                gone = self._gone.get(name)
                if held is None and gone is not None and gone > mark:
                    continue  # deleted after the list was answered
                # InputError: dropped from memory by ``upsert``; its status handler reports it.
                with contextlib.suppress(InputError):
                    upsert(obj)
                self._held[name] = (version, self._tick())
                applied.append(name)
            for name, (_, seq) in list(self._held.items()):
                if name not in listed and seq <= mark and covers(name):
                    delete(name)
                    del self._held[name]
                    removed.append(name)
            # Deletions the list already reflects need no tombstone any more.
            self._gone = {
                name: seq for name, seq in self._gone.items() if seq > mark or not covers(name)
            }
        return ResyncPlan(tuple(sorted(applied)), tuple(sorted(removed)))
