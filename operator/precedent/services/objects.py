"""The cluster's objects as the operator knows them: the history, the catalog, the ledger.

Incident objects fill the history (:class:`~precedent.services.history.HistoryStore`, and the
fleet memory when it is on), Playbook objects fill the in-process catalog, and — in the
operator — each playbook is scored with its live counts from the ledger of reported outcomes
(:class:`~precedent.services.outcomes.OutcomeService`). The kopf handlers and the periodic
resync call :class:`ClusterObjects` and nothing else to keep all three equal to the API; the
assessor (:class:`~precedent.services.assessment.Assessor`) reads the same history and
catalog.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.errors import InputError, describe_validation
from precedent.models import Incident, Playbook
from precedent.services.history import HistoryStore
from precedent.services.memory import FleetMemory
from precedent.services.outcomes import OutcomeService
from precedent.services.status import IncidentStatus

__all__ = ["ClusterObjects"]


class ClusterObjects:
    """The history, the in-process catalog and (in the operator) the outcome ledger, kept
    equal to the cluster's Incident and Playbook objects."""

    def __init__(
        self,
        history: HistoryStore,
        catalog: LocalPlaybookCatalog,
        *,
        memory: FleetMemory | None = None,
        outcomes: OutcomeService | None = None,
    ) -> None:
        self.history = history
        self.catalog = catalog
        # The fleet memory (seed 001) an incident is shared through; None when disabled.
        self.memory = memory
        # The operator's outcome ledger: a playbook is scored with its live counts.
        self.outcomes = outcomes

    # -- Incidents -----------------------------------------------------------------------------

    def upsert_incident(self, name: str, spec: Mapping[str, Any], *, created: str = "") -> Incident:
        """Add or replace the incident from object ``name``; InputError names a bad field
        (and the object's earlier version leaves the history)."""
        incident = self.history.upsert(name, spec, created=created)
        if self.memory is not None:
            self.memory.remember(incident)  # written in the background; never waited for
        return incident

    def incident_status(
        self,
        name: str,
        spec: Mapping[str, Any],
        *,
        generation: int,
        previous: Sequence[Mapping[str, Any]] | None,
        now: datetime,
    ) -> IncidentStatus:
        """What object ``name``'s status should say: in the history, invalid, or a duplicate."""
        problem: tuple[str, str] | None = None
        try:
            incident = Incident.model_validate(dict(spec))
        except ValidationError as exc:
            problem = ("InvalidSpec", f"invalid spec: {describe_validation(exc, 'spec')}")
        else:
            winner = self.history.shadowed_by(name)
            if winner is not None:
                problem = (
                    "DuplicateId",
                    f"incident id {incident.id} is already used by Incident {winner} "
                    "(created first); this object is left out of the history",
                )
        return IncidentStatus.of(problem, generation=generation, previous=previous, now=now)

    def remove_incident(self, name: str) -> None:
        """Forget the incident from object ``name``."""
        self.history.remove(name)

    def history_size(self) -> int:
        """Incidents in the current snapshot (rebuilt first if objects changed)."""
        return len(self.history)

    # -- Playbooks -----------------------------------------------------------------------------

    def upsert_playbook(self, name: str, spec: Mapping[str, Any]) -> Playbook:
        """Add or replace a playbook (id = object name), scored with its live counts; an
        invalid one leaves the catalog (not kept in its last valid form) with an InputError
        naming the field."""
        try:
            playbook = self._playbook(name, spec)
        except InputError:
            self.remove_playbook(name)
            raise
        self.catalog.upsert(playbook)
        if self.outcomes is not None:
            # The catalog scores with the live counts: the prior plus the reported outcomes.
            self.outcomes.playbook_changed(playbook)
        return playbook

    @staticmethod
    def _playbook(name: str, spec: Mapping[str, Any]) -> Playbook:
        if not isinstance(spec, Mapping):
            raise InputError(
                f"Playbook {name}: spec: expected a mapping, got {type(spec).__name__}"
            )
        try:
            return Playbook.model_validate({**dict(spec), "id": name})
        except ValidationError as exc:
            raise InputError(f"Playbook {name}: {describe_validation(exc, 'spec')}") from None

    def remove_playbook(self, name: str) -> None:
        """Forget a playbook."""
        self.catalog.remove(name)
        if self.outcomes is not None:
            self.outcomes.playbook_removed(name)

    def playbook_count(self) -> int:
        """Playbooks in the in-process catalog."""
        return len(self.catalog)
