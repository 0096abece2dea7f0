"""The incident history the assessments read: bundled incidents plus the cluster's objects.

Incident objects arrive one at a time (kopf's index handlers, watch events); the snapshot the
scorer reads is rebuilt lazily, once per batch of changes, on the next assessment, so applying
a thousand incidents costs one rebuild, not a thousand. Cluster objects win over bundled
incidents with the same id.

Incident ids are unique across objects. When two objects carry the same id, the rule that
decides does not depend on the order they arrived in: the object created first wins (ties: the
smaller object name); the other is reported (:meth:`HistoryStore.shadowed_by`) and left out.
An object whose spec becomes invalid is dropped, not kept in its last valid form.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from precedent.core.snapshot import History
from precedent.errors import InputError, describe_validation
from precedent.models import Incident

__all__ = ["HistoryStore"]


@dataclass(frozen=True, slots=True)
class _Entry:
    incident: Incident
    created: str  # RFC 3339 creation time, "" when unknown (sorts first)
    name: str

    @property
    def precedence(self) -> tuple[str, str]:
        return (self.created, self.name)


class HistoryStore:
    """Bundled incidents and Incident objects, with a snapshot rebuilt after changes."""

    def __init__(self, bundled: Sequence[Incident] = ()) -> None:
        self._bundled = {i.id: i for i in bundled}
        self._objects: dict[str, _Entry] = {}  # object name → its incident
        self._snapshot: History | None = None
        # The snapshot a change made stale, until the next one is built from it (it lends what
        # it worked out for the incident objects both hold: see History).
        self._stale: History | None = None
        self._cluster_ids: frozenset[str] = frozenset()  # ids that came from objects
        self._sources: list[str] = []  # "bundled", "cluster": computed with the snapshot
        # The scoring thread reads the snapshot while kopf's handlers change the objects.
        self.lock = threading.RLock()

    def upsert(self, name: str, spec: Mapping[str, Any], *, created: str = "") -> Incident:
        """Add or replace the incident from object ``name``; InputError names a bad field.

        An invalid spec removes the object's earlier version from the history before raising.
        """
        try:
            if not isinstance(spec, Mapping):  # any JSON value may arrive here
                raise InputError(f"spec: expected a mapping, got {type(spec).__name__}")
            incident = Incident.model_validate(dict(spec))
        except InputError as exc:
            self.remove(name)
            raise InputError(f"Incident {name}: {exc}") from None
        except ValidationError as exc:
            self.remove(name)
            raise InputError(f"Incident {name}: {describe_validation(exc, 'spec')}") from None
        entry = _Entry(incident, created, name)
        with self.lock:
            if self._objects.get(name) != entry:
                self._objects[name] = entry
                self._invalidate()
        return incident

    def _invalidate(self) -> None:
        if self._snapshot is not None:
            self._stale = self._snapshot
        self._snapshot = None

    def shadowed_by(self, name: str) -> str | None:
        """The object whose incident wins over object ``name``'s (same id), or None."""
        with self.lock:
            mine = self._objects.get(name)
            if mine is None:
                return None
            rivals = [
                e
                for e in self._objects.values()
                if e.incident.id == mine.incident.id and e.name != name
            ]
            first = min(rivals, key=lambda e: e.precedence, default=None)
            return first.name if first and first.precedence < mine.precedence else None

    def remove(self, name: str) -> None:
        """Forget the incident from object ``name``."""
        with self.lock:
            if self._objects.pop(name, None) is not None:
                self._invalidate()

    @property
    def snapshot(self) -> History:
        """The current snapshot, rebuilt only after a change (call with ``lock`` held)."""
        with self.lock:
            if self._snapshot is None:
                merged = dict(self._bundled)
                winners: dict[str, _Entry] = {}
                for entry in self._objects.values():
                    held = winners.get(entry.incident.id)
                    if held is None or entry.precedence < held.precedence:
                        winners[entry.incident.id] = entry
                for entry in winners.values():
                    merged[entry.incident.id] = entry.incident
                self._cluster_ids = frozenset(winners)
                bundled_only = not self._bundled.keys() <= self._cluster_ids
                self._sources = [
                    *(["bundled"] if bundled_only else []),
                    *(["cluster"] if self._cluster_ids else []),
                ]
                self._snapshot = History(
                    sorted(merged.values(), key=lambda i: i.id), previous=self._stale
                )
                self._stale = None
            return self._snapshot

    def origin(self, incident_id: str) -> Literal["cluster", "bundled"] | None:
        """Whether an incident of the snapshot came from an object or the bundled history."""
        with self.lock:
            _ = self.snapshot
            if incident_id in self._cluster_ids:
                return "cluster"
            return "bundled" if incident_id in self._bundled else None

    def sources(self) -> list[str]:
        """The sources the snapshot holds incidents from: ``bundled``, ``cluster``."""
        with self.lock:
            _ = self.snapshot  # computed with the snapshot, once per change
            return list(self._sources)

    def __len__(self) -> int:
        return len(self.snapshot)
