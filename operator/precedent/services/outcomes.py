"""The use case: a request reports how its action went (``spec.outcome``).

Everything is derived from the set of reported outcomes, keyed by request uid
(:class:`OutcomeLedger`), and recounted rather than incremented: the operator's index handler
feeds the ledger every request it sees (the initial listing after a restart rebuilds it whole),
so a replayed event or a restart can never count an outcome twice.

Handling one outcome (:meth:`OutcomeService.handle`), idempotent at every step:

1. the playbook that ran gets its status recounted — the prior of its ``spec.history`` plus
   every outcome that names it — written as absolute values, never ``+1``;
2. a failed or partial outcome becomes an Incident object with a name derived from the request
   (an existing one means it was already created);
3. an Event, the ``precedent_outcomes_total`` metric, and ``status.outcome`` on the request —
   the mark that the outcome was handled, checked before handling again.

Outcomes come from executors, after an approved action ran: an outcome is accepted only on a
request whose answer (signed by this operator) said Approved — by policy, by an accepted
approval, or audit-only — before the outcome arrived (an earlier generation). Any other is
recorded as ignored (``status.outcome.ignored``, a Warning Event ``OutcomeIgnored``): it
counts in no playbook, no base rate and no Incident, now or later. The ledger counts only
outcomes whose ``status.outcome`` says accepted. Admission refuses such writes in the first
place (``manifests/admission/outcome.yaml``); this is the check for clusters without it.

The in-process catalog scores with the live counts, so seed 004's historical part of the next
confidence follows the reported outcomes. It also reads the requests a playbook served: the
texts of the successful outcomes that name it (the most recent
:data:`~precedent.core.outcomes.MAX_SERVED_EXAMPLES`) are added to the playbook's own
``spec.examples``, which the semantic part reads with its description and steps. A playbook
is embedded again only when that list changes; a count that moves re-embeds nothing.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.core.outcomes import (
    INCIDENT_REFERENCE_ANNOTATION,
    INCIDENT_REQUEST_UID_LABEL,
    OutcomeRecord,
    PlaybookCounts,
    count_playbooks,
    incident_from_outcome,
    outcome_evidence,
    outcome_record,
    served_examples,
)
from precedent.core.playbooks import SuccessPrior, historical_success
from precedent.core.risk_model import OutcomeEvidence
from precedent.errors import InputError
from precedent.metrics import METRICS, Metrics
from precedent.models import API_VERSION, Playbook, PlaybookHistory, RequestOutcomeResult
from precedent.services.assessment import parse_request_spec
from precedent.services.memory import FleetMemory
from precedent.services.status import EventNote

__all__ = [
    "ClusterWriter",
    "HandledOutcome",
    "OutcomeLedger",
    "OutcomeService",
    "RequestRef",
    "approved_before",
]

# The most examples a Playbook holds (its spec.examples bound).
MAX_EXAMPLES = 32
# Why an outcome counts nowhere (status.outcome.ignored).
NOT_APPROVED = "NotApproved"
APPROVED_STATES = frozenset({"Approved", "AuditOnly"})

logger = logging.getLogger(__name__)


class ClusterWriter(Protocol):
    """The two writes outcome handling makes beyond the request's own status."""

    async def create_incident(self, body: Mapping[str, Any]) -> Literal["created", "exists"]:
        """Create an Incident object; ``exists`` if that name is taken."""
        ...

    async def patch_playbook_status(self, name: str, status: Mapping[str, Any]) -> bool:
        """Merge into a Playbook's status; False if the playbook does not exist."""
        ...


class OutcomeLedger:
    """Reported outcomes by request uid; playbook counts and evidence recounted from the set."""

    def __init__(self) -> None:
        self._records: dict[str, OutcomeRecord] = {}
        self._evidence: OutcomeEvidence | None = None
        self._counts: dict[str, PlaybookCounts] | None = None
        self._served: dict[str, tuple[str, ...]] = {}
        # kopf's event loop writes; the scoring thread may read the evidence.
        self._lock = threading.Lock()

    def upsert(self, record: OutcomeRecord) -> set[str]:
        """Record (or replace) one request's outcome; returns the playbooks whose counts moved."""
        with self._lock:
            old = self._records.get(record.uid)
            if old == record:
                return set()
            self._records[record.uid] = record
            self._evidence = self._counts = None
            self._served.clear()
        return {p for p in (record.playbook, old.playbook if old else None) if p}

    def forget(self, uid: str) -> set[str]:
        """Drop a request's outcome (the request was deleted); returns the playbooks affected."""
        with self._lock:
            old = self._records.pop(uid, None)
            if old is None:
                return set()
            self._evidence = self._counts = None
            self._served.clear()
        return {old.playbook} if old.playbook else set()

    def get(self, uid: str) -> OutcomeRecord | None:
        """The recorded outcome of request ``uid``, if any."""
        with self._lock:
            return self._records.get(uid)

    def playbook_counts(self, playbook: str) -> PlaybookCounts:
        """Executions and successes reported for ``playbook`` (without its prior)."""
        with self._lock:
            if self._counts is None:
                self._counts = count_playbooks(self._records.values())
            return self._counts.get(playbook, PlaybookCounts())

    def served(self, playbook: str) -> tuple[str, ...]:
        """The requests ``playbook`` served successfully, most recent first (bounded)."""
        with self._lock:
            found = self._served.get(playbook)
            if found is None:
                found = self._served[playbook] = served_examples(self._records.values(), playbook)
            return found

    def evidence(self) -> OutcomeEvidence:
        """The base-rate evidence per (action, resource kind): a frozen snapshot."""
        with self._lock:
            if self._evidence is None:
                self._evidence = outcome_evidence(self._records.values())
            return self._evidence

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


@dataclass(frozen=True, slots=True)
class RequestRef:
    """Which request an outcome belongs to."""

    namespace: str
    """The request's namespace."""
    name: str
    """The request's name."""
    uid: str
    """The request's uid."""


@dataclass(frozen=True, slots=True)
class HandledOutcome:
    """What handling one outcome did, and what to write and post about it."""

    result: RequestOutcomeResult
    """The reported result."""
    playbook: str | None
    """The playbook whose counts it went into."""
    counts: PlaybookCounts | None
    """That playbook's counts after it (prior included)."""
    incident: str | None
    """The Incident object it created (or found created)."""
    status: dict[str, Any]
    """Fields to merge into the request's status."""
    event: EventNote
    """The Event to post on the request."""


class OutcomeService:
    """Turns reported outcomes into playbook counts, base-rate evidence and Incidents."""

    def __init__(
        self,
        catalog: LocalPlaybookCatalog,
        *,
        prior: SuccessPrior,
        ledger: OutcomeLedger | None = None,
        cluster: ClusterWriter | None = None,
        metrics: Metrics = METRICS,
        memory: FleetMemory | None = None,
        trusted: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> None:
        self.catalog = catalog
        # Whether a request's status is this operator's answer (its signed mark); None trusts
        # every status (tests of the counting alone).
        self.trusted = trusted
        self.prior = prior
        self.ledger = ledger or OutcomeLedger()
        self.cluster = cluster
        self.metrics = metrics
        # The fleet memory (seed 001) the failure's Incident is shared through, if enabled.
        self.memory = memory
        self._priors: dict[str, PlaybookHistory] = {}  # playbook id → its spec.history
        self._examples: dict[str, tuple[str, ...]] = {}  # playbook id → its spec.examples
        self._playbook_locks: dict[str, asyncio.Lock] = {}

    # -- the ledger follows the requests; the catalog follows the ledger ---------------------

    def observe(
        self, uid: str, spec: Mapping[str, Any], status: Mapping[str, Any] | None
    ) -> OutcomeRecord | None:
        """Record the outcome in a request's spec if the operator accepted it (its
        ``status.outcome`` says handled, not ignored); None: none reported, not accepted (yet),
        or an invalid spec."""
        if not accepted(status or {}):
            self._refresh(self.ledger.forget(uid))
            return None
        return self._count(uid, spec)

    def _count(self, uid: str, spec: Mapping[str, Any]) -> OutcomeRecord | None:
        try:
            record = outcome_record(uid, parse_request_spec(spec))
        except (InputError, ValueError):
            return None  # the assessment reports a bad spec; it has no outcome to count
        if record is None:
            self._refresh(self.ledger.forget(uid))
            return None
        self._refresh(self.ledger.upsert(record))
        return record

    def forget(self, uid: str) -> set[str]:
        """A request was deleted: its outcome no longer counts. Returns the playbooks affected."""
        affected = self.ledger.forget(uid)
        self._refresh(affected)
        return affected

    def playbook_changed(self, playbook: Playbook) -> None:
        """A Playbook object was added or changed: keep its prior and its own examples, score
        it with live counts and the requests it served."""
        self._priors[playbook.id] = playbook.history
        self._examples[playbook.id] = tuple(playbook.examples)
        self.catalog.upsert(
            playbook.model_copy(
                update={"history": self._live(playbook.id), "examples": self.examples(playbook.id)}
            )
        )

    def playbook_removed(self, name: str) -> None:
        """A Playbook object was deleted."""
        self._priors.pop(name, None)
        self._examples.pop(name, None)

    def examples(self, playbook: str) -> list[str]:
        """What the catalog reads as the requests ``playbook`` served: its own ``spec.examples``,
        then the requests of its successful outcomes, each once, within the field's bound."""
        merged = dict.fromkeys((*self._examples.get(playbook, ()), *self.ledger.served(playbook)))
        return list(merged)[:MAX_EXAMPLES]

    def _live(self, playbook: str) -> PlaybookHistory:
        prior = self._priors.get(playbook, PlaybookHistory())
        return self.ledger.playbook_counts(playbook).plus(prior).as_history()

    def _refresh(self, playbooks: set[str]) -> None:
        for name in playbooks:
            current = self.catalog.get(name)
            if current is None or name not in self._priors:
                continue
            examples = self.examples(name)
            if examples != current.examples:  # what it is for changed: embedded again
                self.catalog.upsert(
                    current.model_copy(update={"history": self._live(name), "examples": examples})
                )
            else:  # only its counts moved: nothing to embed
                self.catalog.set_history(name, self._live(name))

    # -- what a Playbook's status says ---------------------------------------------------------

    def counts(self, playbook: str, prior: PlaybookHistory | None = None) -> PlaybookCounts:
        """The playbook's prior (``spec.history``) plus the outcomes that name it."""
        base = prior if prior is not None else self._priors.get(playbook, PlaybookHistory())
        return self.ledger.playbook_counts(playbook).plus(base)

    def playbook_status(
        self, playbook: str, prior: PlaybookHistory | None = None
    ) -> dict[str, Any]:
        """``executions``, ``successes`` and the smoothed ``successRate`` seed 004 scores with."""
        counts = self.counts(playbook, prior)
        rate = historical_success(float(counts.successes), float(counts.executions), self.prior)
        return {
            "executions": counts.executions,
            "successes": counts.successes,
            "successRate": round(rate, 4),
        }

    async def sync_playbook(self, playbook: str) -> PlaybookCounts | None:
        """Write the playbook's recounted status; None when it is unknown or gone.

        One write at a time per playbook, each computed when its turn comes, so the last write
        always carries the latest counts.
        """
        if self.cluster is None or playbook not in self._priors:
            return None
        lock = self._playbook_locks.setdefault(playbook, asyncio.Lock())
        async with lock:
            counts = self.counts(playbook)
            written = await self.cluster.patch_playbook_status(
                playbook, self.playbook_status(playbook)
            )
        return counts if written else None

    # -- one outcome ---------------------------------------------------------------------------

    @staticmethod
    def already_handled(status: Mapping[str, Any]) -> bool:
        """Whether the request's status records its outcome as handled."""
        return bool((status.get("outcome") or {}).get("handledAt"))

    async def handle(
        self,
        request: RequestRef,
        spec: Mapping[str, Any],
        *,
        generation: int,
        status: Mapping[str, Any],
        now: datetime,
    ) -> HandledOutcome:
        """Handle a request's reported outcome; InputError for a bad spec, DependencyError when
        the API server cannot be written to (retry later: every step is idempotent)."""
        parsed = parse_request_spec(spec)
        outcome = parsed.outcome
        if outcome is None:
            raise InputError("spec.outcome: required field is missing")
        body: dict[str, Any] = {"metadata": {"uid": request.uid}, "status": status}
        if not approved_before(body, generation, self.trusted):
            return self._ignored(outcome.result, status, generation, now)
        self._count(request.uid, spec)  # accepted: it counts from now on
        playbook = outcome.playbook.id if outcome.playbook else None
        counts = await self.sync_playbook(playbook) if playbook else None
        incident = None
        made = incident_from_outcome(
            parsed, namespace=request.namespace, name=request.name, uid=request.uid, now=now
        )
        if made is not None:
            if self.cluster is None:
                raise InputError("no API client to create the Incident with")
            incident, spec_of_incident = made
            body = {
                "apiVersion": API_VERSION,
                "kind": "Incident",
                "metadata": {
                    "name": incident,
                    "labels": {INCIDENT_REQUEST_UID_LABEL: request.uid},
                    "annotations": {
                        INCIDENT_REFERENCE_ANNOTATION: f"{request.namespace}/{request.name}"
                    },
                },
                "spec": spec_of_incident.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
            created = await self.cluster.create_incident(body)
            if self.memory is not None:
                # Shared with the fleet now (in the background), not when the watch delivers
                # the object; the document id is the incident id, so both writes agree.
                self.memory.remember(spec_of_incident)
            logger.info("incident %s for %s/%s: %s", incident, *_names(request), created)
        self.metrics.outcomes.labels(result=outcome.result.value).inc()
        record: dict[str, Any] = {"result": outcome.result.value, "handledAt": _rfc3339(now)}
        if playbook:
            record["playbook"] = playbook
        if incident:
            record["incident"] = incident
        patch: dict[str, Any] = {"outcome": record}
        patch.update(_answered_at(status, generation))
        return HandledOutcome(
            result=outcome.result,
            playbook=playbook,
            counts=counts,
            incident=incident,
            status=patch,
            event=_event(outcome.result, playbook, counts, incident),
        )

    def _ignored(
        self,
        result: RequestOutcomeResult,
        status: Mapping[str, Any],
        generation: int,
        now: datetime,
    ) -> HandledOutcome:
        """An outcome on a request that was never approved: recorded, counted nowhere."""
        record = {"result": result.value, "handledAt": _rfc3339(now), "ignored": NOT_APPROVED}
        patch: dict[str, Any] = {"outcome": record}
        patch.update(_answered_at(status, generation))
        message = (
            f"outcome {result.value} ignored: the request was not approved before it was "
            "reported (an outcome counts only for an approved action; it changes no playbook, "
            "base rate or incident)"
        )
        return HandledOutcome(
            result=result,
            playbook=None,
            counts=None,
            incident=None,
            status=patch,
            event=EventNote("Warning", "OutcomeIgnored", message),
        )

    def evidence(self) -> OutcomeEvidence:
        """The base-rate evidence snapshot for the risk model."""
        return self.ledger.evidence()


def accepted(status: Mapping[str, Any]) -> bool:
    """Whether the request's status records its outcome as handled and accepted."""
    record = status.get("outcome") or {}
    return (
        isinstance(record, Mapping) and bool(record.get("handledAt")) and not record.get("ignored")
    )


def approved_before(
    body: Mapping[str, Any],
    generation: int,
    trusted: Callable[[Mapping[str, Any]], bool] | None,
) -> bool:
    """Whether the operator's own answer (a valid mark) approved the request at a generation
    before ``generation``, the one that carries the outcome: by policy (decision Approved), by
    an accepted approval, or in audit-only mode."""
    status = body.get("status") or {}
    if trusted is not None and not trusted(body):
        return False
    observed = status.get("observedGeneration")
    if not isinstance(observed, int) or observed >= generation:
        return False  # answered with the outcome already in the spec: it did not wait
    decision = (status.get("risk") or {}).get("decision")
    approval = ((status.get("policy") or {}).get("approval") or {}).get("state")
    return decision == "Approved" or approval in APPROVED_STATES


def _names(request: RequestRef) -> tuple[str, str]:
    return request.namespace, request.name


def _rfc3339(moment: datetime) -> str:
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _answered_at(status: Mapping[str, Any], generation: int) -> dict[str, Any]:
    """An answered request's status, moved to the generation that added the outcome.

    The outcome is not an input of the assessment, so the answer still holds for the new
    generation: ``observedGeneration`` and the conditions' generations follow it (kstatus
    would otherwise call the request in progress). A request not answered yet is left alone.
    """
    conditions: Sequence[Mapping[str, Any]] = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    if not ready or status.get("observedGeneration") == generation:
        return {}
    moved = [
        {**c, "observedGeneration": generation} if "observedGeneration" in c else dict(c)
        for c in conditions
    ]
    return {"observedGeneration": generation, "conditions": moved}


def _event(
    result: RequestOutcomeResult,
    playbook: str | None,
    counts: PlaybookCounts | None,
    incident: str | None,
) -> EventNote:
    message = f"outcome {result.value} recorded"
    if playbook and counts is not None:
        message += f"; playbook {playbook} now {counts.successes}/{counts.executions} successful"
    elif playbook:
        message += f"; playbook {playbook} has no Playbook object (counted once it has)"
    if incident:
        message += f"; incident {incident} added to the history"
    kind: Literal["Normal", "Warning"] = (
        "Normal" if result is RequestOutcomeResult.SUCCEEDED else "Warning"
    )
    return EventNote(kind, f"Outcome{result.value.capitalize()}", message)
