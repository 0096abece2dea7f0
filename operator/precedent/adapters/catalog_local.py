"""The in-process playbook catalog: a :class:`~precedent.core.playbooks.CatalogIndex` behind
the catalog port, loaded from YAML files today and fed Playbook objects from the cluster later
(``upsert`` / ``remove`` change one playbook without a rebuild).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from precedent.adapters.loader import load_playbooks
from precedent.core.playbooks import (
    DEFAULT_SELECTION_MODEL,
    INCIDENT_TYPE,
    CatalogAnswer,
    CatalogIndex,
    ConfidenceWeights,
    PlaybookQuery,
    SelectionModel,
    SuccessPrior,
)
from precedent.core.ports import Embedder
from precedent.models import Playbook, PlaybookHistory

__all__ = ["LocalPlaybookCatalog"]


class LocalPlaybookCatalog:
    """Playbooks held in this process; searches run on the caller's thread in microseconds."""

    kind = "in_process"

    def __init__(
        self,
        playbooks: Iterable[Playbook] = (),
        *,
        embedder: Embedder | None = None,
        weights: ConfidenceWeights | None = None,
        prior: SuccessPrior | None = None,
        name: str = "in-process",
        model: SelectionModel | None = None,
    ) -> None:
        playbooks = list(playbooks)
        self._index = CatalogIndex(
            playbooks,
            embedder=embedder,
            weights=weights,
            prior=prior,
            name=name,
            model=model or DEFAULT_SELECTION_MODEL,
        )
        self._lock = threading.Lock()
        # Incident types the playbooks declare: the values a metric label may take.
        self._types: dict[str, frozenset[str]] = {p.id: _incident_types(p) for p in playbooks}
        # How many playbooks declare each incident type, and every label key: both read for
        # every request, kept up to date here instead of worked out over the catalog each time.
        self._declared: Counter[str] = Counter(t for types in self._types.values() for t in types)
        self._keys: frozenset[str] = frozenset(key for p in playbooks for key in p.labels)

    @classmethod
    def from_paths(
        cls,
        paths: Sequence[str | Path],
        *,
        embedder: Embedder | None = None,
        weights: ConfidenceWeights | None = None,
        prior: SuccessPrior | None = None,
    ) -> LocalPlaybookCatalog:
        """Load every Playbook document under ``paths`` (other kinds are skipped)."""
        playbooks = load_playbooks(paths)
        name = "in-process catalog " + ", ".join(str(p) for p in paths)
        return cls(playbooks, embedder=embedder, weights=weights, prior=prior, name=name)

    @property
    def name(self) -> str:
        """``in-process catalog <paths>``."""
        return self._index.name

    @property
    def weights(self) -> ConfidenceWeights:
        """The confidence weights this catalog scores with."""
        return self._index.weights

    @property
    def embedder_name(self) -> str:
        """Name of the embedder behind the semantic part."""
        return self._index.embedder.name

    def __len__(self) -> int:
        return len(self._index)

    def upsert(self, playbook: Playbook) -> None:
        """Add or replace one playbook (a cluster Playbook object was created or changed)."""
        with self._lock:
            self._index.upsert(playbook)
            self._forget_types(playbook.id)
            types = self._types[playbook.id] = _incident_types(playbook)
            self._declared.update(types)
            self._keys = self._keys.union(playbook.labels)

    def set_history(self, playbook_id: str, history: PlaybookHistory) -> bool:
        """Replace one playbook's execution counts, without embedding it again; False if it
        is not there."""
        with self._lock:
            return self._index.set_history(playbook_id, history)

    def remove(self, playbook_id: str) -> bool:
        """Drop one playbook (its object was deleted); False if it was not there."""
        with self._lock:
            self._forget_types(playbook_id)
            return self._index.remove(playbook_id)

    def _forget_types(self, playbook_id: str) -> None:
        """Drop a playbook's incident types from the counts (under the lock)."""
        self._declared.subtract(self._types.pop(playbook_id, frozenset()))
        self._declared += Counter()  # drops the types no playbook declares any more

    def declares_incident_type(self, incident_type: str) -> bool:
        """Whether some playbook's ``incident-type`` label accepts this value."""
        with self._lock:
            return self._declared[incident_type.strip().lower()] > 0

    def label_keys(self) -> frozenset[str]:
        """Every label key some playbook is written for (what a request's labels may name)."""
        return self._keys  # replaced, never changed in place: no lock needed to read it

    def get(self, playbook_id: str) -> Playbook | None:
        """The playbook with this id, or None (outcome counts refresh it)."""
        with self._lock:
            return self._index.get(playbook_id)

    def search_sync(self, query: PlaybookQuery) -> CatalogAnswer:
        """Score and select synchronously (what :meth:`search` does)."""
        with self._lock:
            return self._index.search(query)

    async def search(self, query: PlaybookQuery, *, budget: float | None = None) -> CatalogAnswer:
        """The catalog port: qualifying playbooks with every part of their confidence (at once:
        no budget applies)."""
        return self.search_sync(query)

    async def aclose(self) -> None:
        """Nothing to release."""


def _incident_types(playbook: Playbook) -> frozenset[str]:
    return frozenset(v.strip().lower() for v in playbook.labels.get(INCIDENT_TYPE, ()))
