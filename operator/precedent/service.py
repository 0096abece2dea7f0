"""The operator's service layer: in-memory history and catalog that follow cluster objects.

Handlers feed it Incident and Playbook objects as they change and ask it to assess requests.
The history snapshot is rebuilt lazily — once per batch of changes, on the next assessment —
so applying a thousand incidents costs one rebuild, not a thousand.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from precedent.core.assess import Assessor
from precedent.core.history import History
from precedent.core.policy import PolicyEngine
from precedent.errors import InputError, describe_validation
from precedent.models import Assessment, Incident, Playbook, RemediationRequestSpec
from precedent.settings import Settings

__all__ = ["PrecedentService", "parse_request_spec"]

logger = logging.getLogger(__name__)


def parse_request_spec(spec: Mapping[str, Any]) -> RemediationRequestSpec:
    """Validate a RemediationRequest spec; errors name the field (``spec.target.name: …``)."""
    try:
        return RemediationRequestSpec.model_validate(dict(spec))
    except ValidationError as exc:
        raise InputError(describe_validation(exc, "spec")) from None


class PrecedentService:
    """History and catalog kept in memory; one method to assess a request."""

    def __init__(self, settings: Settings, *, base_incidents: Sequence[Incident] = ()) -> None:
        self.settings = settings
        self._base = {i.id: i for i in base_incidents}
        self._objects: dict[str, Incident] = {}  # object name → incident
        self.playbooks: dict[str, Playbook] = {}
        self._assessor: Assessor | None = None
        self._policy = PolicyEngine(enforce=settings.policy_mode == "enforce")

    @classmethod
    def from_settings(cls, settings: Settings) -> PrecedentService:
        """A service seeded with the bundled history at ``settings.history_path`` if it exists."""
        from precedent.adapters.loader import load_incidents

        base: list[Incident] = []
        path = settings.history_path
        if path and path.exists():
            base = load_incidents([path])
            logger.info("loaded %d bundled incidents from %s", len(base), path)
        return cls(settings, base_incidents=base)

    # -- incidents ----------------------------------------------------------------------------

    def upsert_incident(self, name: str, spec: Mapping[str, Any]) -> Incident:
        """Add or replace the incident from object ``name``; InputError names a bad field."""
        try:
            incident = Incident.model_validate(dict(spec))
        except ValidationError as exc:
            raise InputError(f"Incident {name}: {describe_validation(exc, 'spec')}") from None
        if self._objects.get(name) != incident:
            self._objects[name] = incident
            self._assessor = None
        return incident

    def remove_incident(self, name: str) -> None:
        """Forget the incident from object ``name``."""
        if self._objects.pop(name, None) is not None:
            self._assessor = None

    # -- playbooks ----------------------------------------------------------------------------

    def upsert_playbook(self, name: str, spec: Mapping[str, Any]) -> Playbook:
        """Add or replace a playbook (id = object name)."""
        try:
            playbook = Playbook.model_validate({**dict(spec), "id": name})
        except ValidationError as exc:
            raise InputError(f"Playbook {name}: {describe_validation(exc, 'spec')}") from None
        self.playbooks[name] = playbook
        return playbook

    def remove_playbook(self, name: str) -> None:
        """Forget a playbook."""
        self.playbooks.pop(name, None)

    # -- assessment ---------------------------------------------------------------------------

    @property
    def assessor(self) -> Assessor:
        """The assessor for the current snapshot, rebuilt only after a change."""
        if self._assessor is None:
            merged = dict(self._base)
            for incident in self._objects.values():  # cluster objects win over bundled files
                merged[incident.id] = incident
            history = History(sorted(merged.values(), key=lambda i: i.id))
            self._assessor = Assessor(
                history,
                threshold=self.settings.similarity_threshold,
                top_k=self.settings.top_similar,
                policy=self._policy,
            )
            logger.info("history snapshot rebuilt: %d incidents", len(history))
        return self._assessor

    def assess(self, spec: Mapping[str, Any]) -> Assessment:
        """Validate and assess one request spec."""
        return self.assessor.assess(parse_request_spec(spec))

    async def assess_async(self, spec: Mapping[str, Any]) -> Assessment:
        """Like ``assess``; the place where remote dependencies are awaited."""
        return self.assess(spec)
