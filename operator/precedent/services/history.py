"""The incident history the assessments read: bundled incidents plus the cluster's objects.

Incident objects arrive one at a time (kopf's index handlers, watch events); the snapshot the
scorer reads is rebuilt lazily, once per batch of changes, on the next assessment, so applying
a thousand incidents costs one rebuild, not a thousand. Cluster objects win over bundled
incidents with the same id.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from precedent.core.history import History
from precedent.errors import InputError, describe_validation
from precedent.models import Incident

__all__ = ["HistoryStore"]


class HistoryStore:
    """Bundled incidents and Incident objects, with a snapshot rebuilt after changes."""

    def __init__(self, bundled: Sequence[Incident] = ()) -> None:
        self._bundled = {i.id: i for i in bundled}
        self._objects: dict[str, Incident] = {}  # object name → incident
        self._snapshot: History | None = None
        # The scoring thread reads the snapshot while kopf's handlers change the objects.
        self.lock = threading.RLock()

    def upsert(self, name: str, spec: Mapping[str, Any]) -> Incident:
        """Add or replace the incident from object ``name``; InputError names a bad field."""
        try:
            incident = Incident.model_validate(dict(spec))
        except ValidationError as exc:
            raise InputError(f"Incident {name}: {describe_validation(exc, 'spec')}") from None
        with self.lock:
            if self._objects.get(name) != incident:
                self._objects[name] = incident
                self._snapshot = None
        return incident

    def remove(self, name: str) -> None:
        """Forget the incident from object ``name``."""
        with self.lock:
            if self._objects.pop(name, None) is not None:
                self._snapshot = None

    @property
    def snapshot(self) -> History:
        """The current snapshot, rebuilt only after a change (call with ``lock`` held)."""
        with self.lock:
            if self._snapshot is None:
                merged = dict(self._bundled)
                for incident in self._objects.values():
                    merged[incident.id] = incident
                self._snapshot = History(sorted(merged.values(), key=lambda i: i.id))
            return self._snapshot

    def __len__(self) -> int:
        return len(self.snapshot)
