"""Watches: the per-resource event history, the open watchers and replay from a version.

Every committed change becomes an :class:`Event` appended to its resource's :class:`Bucket`,
which keeps a bounded history (to resume watches from a ``resourceVersion``) and hands the
event to each open :class:`Watcher`. A watcher filters by namespace, labels and fields, turns
objects leaving or entering its selection into DELETED/ADDED, and queues what the HTTP stream
(:mod:`precedent_sandbox.watchstream`) writes next.
"""

from __future__ import annotations

import asyncio
from collections import deque

from precedent_sandbox import errors as api_errors
from precedent_sandbox.meta import FieldSelector, LabelSelector
from precedent_sandbox.objects import Obj, Stored
from precedent_sandbox.registry import ResourceType

__all__ = ["Bucket", "Event", "Watcher", "events_after", "replay"]


class Event:
    """One change in a resource's history."""

    __slots__ = ("_line", "namespace", "obj", "old", "raw", "rv", "type")

    def __init__(self, kind: str, stored: Stored, old: Obj | None) -> None:
        self.type = kind
        self.rv = stored.rv
        self.obj = stored.obj
        self.raw = stored.raw
        self.old = old
        self.namespace = stored.obj.get("metadata", {}).get("namespace", "")
        self._line: bytes | None = None

    def line(self, kind: str | None = None) -> bytes:
        """``{"type":…,"object":…}`` + newline; the common case is encoded once, shared."""
        if kind is None or kind == self.type:
            if self._line is None:
                self._line = b'{"type":"' + self.type.encode() + b'","object":' + self.raw + b"}\n"
            return self._line
        return b'{"type":"' + kind.encode() + b'","object":' + self.raw + b"}\n"


class Watcher:
    """An open watch: its filters and the events waiting to be written."""

    # A watcher that falls this far behind is closed; its client re-watches from its last RV.
    MAX_PENDING = 200_000

    def __init__(self, namespace: str | None, labels: LabelSelector, fields: FieldSelector) -> None:
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.pending: list[tuple[str, Event]] = []
        self.wake = asyncio.Event()
        self.closed = False
        self.filtered = not labels.empty or not fields.empty

    def selects(self, obj: Obj) -> bool:
        """Whether ``obj`` passes the namespace, label and field filters."""
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if not self.filtered:
            return True
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)

    def offer(self, event: Event) -> None:
        """Queue ``event`` if it concerns this watch (objects leaving a selector → DELETED)."""
        if self.closed:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        kind = event.type
        if self.filtered:
            now_in = self.selects(event.obj)
            if kind == "MODIFIED" and event.old is not None:
                was_in = self.selects(event.old)
                if now_in and not was_in:
                    kind = "ADDED"
                elif was_in and not now_in:
                    kind = "DELETED"
                elif not now_in:
                    return
            elif not now_in:
                return
        self.pending.append((kind, event))
        if len(self.pending) > self.MAX_PENDING:
            self.close()
        self.wake.set()

    def close(self) -> None:
        """End the watch; the handler writes what it has and returns."""
        self.closed = True
        self.wake.set()


class Bucket:
    """The objects, history and watchers of one resource type."""

    def __init__(self, rtype: ResourceType, history_size: int) -> None:
        self.rtype = rtype
        self.objects: dict[str, dict[str, Stored]] = {}
        self.history: deque[Event] = deque(maxlen=history_size)
        # Watches from an RV below this cannot be replayed: 410 Expired.
        self.floor = 0
        self.watchers: set[Watcher] = set()

    def record(self, event: Event) -> None:
        """Append to the history and notify the watchers."""
        if len(self.history) == self.history.maxlen:
            self.floor = self.history[0].rv
        self.history.append(event)
        for watcher in self.watchers:
            watcher.offer(event)


def events_after(history: deque[Event], version: int) -> list[Event]:
    """The events of ``history`` newer than ``version``, oldest first."""
    # History is ordered by RV; scanning back from the end stops at the first older event.
    newer: list[Event] = []
    for event in reversed(history):
        if event.rv <= version:
            break
        newer.append(event)
    newer.reverse()
    return newer


def replay(bucket: Bucket, watcher: Watcher, since: str) -> list[tuple[str, Event]]:
    """The events after ``resourceVersion=since`` that ``watcher`` selects, as it sees them.

    400 for a version that is not a number; 410 Expired when it is older than the history.
    """
    try:
        version = int(str(since))
    except ValueError:
        raise api_errors.bad_request(
            f'invalid resource version "{since}": strconv.ParseUint: parsing "{since}": '
            "invalid syntax"
        ) from None
    if version < bucket.floor:
        raise api_errors.expired(f"too old resource version: {version} ({bucket.floor})")
    initial: list[tuple[str, Event]] = []
    for event in events_after(bucket.history, version):
        before = len(watcher.pending)
        watcher.offer(event)
        initial.extend(watcher.pending[before:])
    watcher.pending.clear()
    watcher.wake.clear()
    return initial
