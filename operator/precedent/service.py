"""The operator's service layer: in-memory history and catalog that follow cluster objects.

Handlers feed it Incident and Playbook objects as they change and ask it to assess requests.
The history snapshot is rebuilt lazily — once per batch of changes, on the next assessment —
so applying a thousand incidents costs one rebuild, not a thousand; the vector index and the
playbook catalog are updated one object at a time.

Playbooks come from Playbook objects (and ``$PRECEDENT_CATALOG`` when it is a path). When
``$PRECEDENT_CATALOG`` is a Context API URL, that remote catalog is asked first and the
in-cluster catalog is its fallback.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from typing import Any

from pydantic import ValidationError

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.loader import load_incidents, load_playbooks
from precedent.adapters.retrieval import build_embedder, build_neighbours, ranking_weights
from precedent.adapters.selector import PlaybookSelector, build_catalog, scoring
from precedent.core.assess import Assessor
from precedent.core.history import History
from precedent.core.playbooks import historical_success
from precedent.core.policy import PolicyEngine
from precedent.core.ports import PlaybookDecision
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

    def __init__(
        self,
        settings: Settings,
        *,
        base_incidents: Sequence[Incident] = (),
        base_playbooks: Sequence[Playbook] = (),
    ) -> None:
        self.settings = settings
        self._base = {i.id: i for i in base_incidents}
        self._objects: dict[str, Incident] = {}  # object name → incident
        weights, prior = scoring(settings)
        self._prior = prior
        # One embedder for incidents and playbooks, as configured (PRECEDENT_EMBEDDER…).
        embedder = build_embedder(settings)
        self.catalog = LocalPlaybookCatalog(
            base_playbooks,
            embedder=embedder,
            weights=weights,
            prior=prior,
            name="in-cluster catalog",
        )
        remote = settings.catalog if settings.catalog and "://" in settings.catalog else None
        self.selector = PlaybookSelector(
            build_catalog(remote, settings) if remote else self.catalog,
            fallback=self.catalog if remote else None,
            cache_ttl_seconds=settings.catalog_cache_ttl_seconds,
            min_confidence=settings.min_confidence,
            max_results=settings.max_playbooks,
            weights=weights,
        )
        self._assessor: Assessor | None = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="precedent-assess")
        self._policy = PolicyEngine(enforce=settings.policy_mode == "enforce")
        # One vector index for the service's lifetime: a new snapshot embeds only what changed.
        self._neighbours = (
            None if settings.similarity_mode == "rules" else build_neighbours(settings)
        )
        self._ranking = ranking_weights(settings)

    @classmethod
    def from_settings(cls, settings: Settings) -> PrecedentService:
        """A service seeded with the bundled history at ``settings.history_path`` if it exists."""
        base: list[Incident] = []
        path = settings.history_path
        if path and path.exists():
            base = load_incidents([path])
            logger.info("loaded %d bundled incidents from %s", len(base), path)
        playbooks: list[Playbook] = []
        if settings.catalog and "://" not in settings.catalog:
            playbooks = load_playbooks([settings.catalog])
            logger.info("loaded %d playbooks from %s", len(playbooks), settings.catalog)
        return cls(settings, base_incidents=base, base_playbooks=playbooks)

    # -- incidents ----------------------------------------------------------------------------

    def upsert_incident(self, name: str, spec: Mapping[str, Any]) -> Incident:
        """Add or replace the incident from object ``name``; InputError names a bad field."""
        try:
            incident = Incident.model_validate(dict(spec))
        except ValidationError as exc:
            raise InputError(f"Incident {name}: {describe_validation(exc, 'spec')}") from None
        with self._lock:  # the scoring thread may be rebuilding the snapshot from _objects
            if self._objects.get(name) != incident:
                self._objects[name] = incident
                self._assessor = None
        return incident

    def remove_incident(self, name: str) -> None:
        """Forget the incident from object ``name``."""
        with self._lock:
            if self._objects.pop(name, None) is not None:
                self._assessor = None

    # -- playbooks ----------------------------------------------------------------------------

    def upsert_playbook(self, name: str, spec: Mapping[str, Any]) -> Playbook:
        """Add or replace a playbook (id = object name)."""
        try:
            playbook = Playbook.model_validate({**dict(spec), "id": name})
        except ValidationError as exc:
            raise InputError(f"Playbook {name}: {describe_validation(exc, 'spec')}") from None
        self.catalog.upsert(playbook)
        return playbook

    def success_rate(self, successes: int, executions: int) -> float:
        """The smoothed success rate with the configured prior (seed 004's historical part)."""
        return float(historical_success(successes, executions, self._prior))

    def remove_playbook(self, name: str) -> None:
        """Forget a playbook."""
        self.catalog.remove(name)

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
                mode=self.settings.similarity_mode,
                semantic=self._neighbours,
                threshold=self.settings.similarity_threshold,
                top_k=self.settings.top_similar,
                semantic_k=self.settings.semantic_k,
                ranking=self._ranking,
                policy=self._policy,
            )
            logger.info("history snapshot rebuilt: %d incidents", len(history))
        return self._assessor

    def history_size(self) -> int:
        """Incidents in the current snapshot (rebuilt first if objects changed)."""
        with self._lock:
            return len(self.assessor.history)

    def assess(self, spec: Mapping[str, Any], *, now: datetime | None = None) -> Assessment:
        """Validate and assess one request spec, without a playbook (history only)."""
        return self.assessor.assess(parse_request_spec(spec), now=now)

    async def assess_async(
        self, spec: Mapping[str, Any], *, now: datetime | None = None
    ) -> Assessment:
        """Validate, select a playbook (never raises: degrades to fallback), and assess."""
        parsed = parse_request_spec(spec)
        outcome = await self.selector.select(parsed)
        # Scoring runs on a worker thread, one at a time (the snapshot and the vector index are
        # not thread-safe): the event loop keeps serving kopf's API traffic meanwhile, and the
        # vector search releases the GIL.
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, partial(self._assess_locked, parsed, outcome.decision, now)
        )

    def _assess_locked(
        self, spec: RemediationRequestSpec, playbook: PlaybookDecision, now: datetime | None
    ) -> Assessment:
        with self._lock:
            return self.assessor.assess(spec, playbook=playbook, now=now)

    async def aclose(self) -> None:
        """Release the remote catalog's connections and the scoring thread."""
        await self.selector.aclose()
        self._executor.shutdown(wait=False)
