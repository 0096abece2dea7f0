"""What one reconciliation tells a platform team: metrics and one structured log line.

The kopf handler calls :meth:`DecisionRecorder.reconciled` after every reconciliation of a
RemediationRequest with the update the service produced and how long it took. The recorder
counts the decision by band, observes the latency, keeps the Stalled gauge in step (a request
stays Stalled until it is answered or deleted: its spec is immutable) and refreshes the history
gauges, then logs one line on the ``precedent.decisions`` logger, whose fields become JSON keys
under ``PRECEDENT_LOG_FORMAT=json`` (see ``precedent.logging_json``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from precedent.metrics import INDEX_KINDS, METRICS, Metrics
from precedent.services.status import StatusUpdate

__all__ = ["DECISION_LOGGER", "DecisionRecorder", "RequestName"]

DECISION_LOGGER = "precedent.decisions"
"""The logger of the one-line-per-decision record."""

logger = logging.getLogger(DECISION_LOGGER)


@dataclass(frozen=True, slots=True)
class RequestName:
    """Which request a reconciliation was for."""

    uid: str
    """The object's uid (stable across renames and restarts)."""
    namespace: str
    """Its namespace."""
    name: str
    """Its name."""


class DecisionRecorder:
    """Records reconciliations of one assessor on one metrics registry."""

    def __init__(
        self,
        *,
        history_size: Callable[[], int],
        index_kind: Callable[[], str],
        metrics: Metrics = METRICS,
    ) -> None:
        self.metrics = metrics
        # ``exact`` or ``approximate`` (the vector index in use), ``none`` without one.
        self.index_kind = index_kind
        # uid → Stalled reason: the gauge counts requests, not reconciliations (kopf may
        # reconcile the same Stalled request again after a restart).
        self._stalled: dict[str, str] = {}
        # uids of Escalated requests waiting for a human (counted once per request).
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        # Read at scrape time: Incident objects change the history between requests.
        metrics.history_incidents.set_function(lambda: float(history_size()))
        self.refresh()

    def refresh(self) -> None:
        """Set the index kind gauge (every kind exported, the one in use at 1)."""
        kind = self.index_kind()
        for known in INDEX_KINDS:
            self.metrics.vector_index.labels(known).set(1 if known == kind else 0)

    def reconciled(
        self, request: RequestName, action: str, update: StatusUpdate, seconds: float
    ) -> None:
        """Record one reconciliation of ``request`` (proposing ``action``) taking ``seconds``."""
        self.metrics.assessment_duration.labels(update.outcome).observe(seconds)
        fields: dict[str, Any] = {
            "uid": request.uid,
            "namespace": request.namespace,
            "name": request.name,
            "action": action,
            "outcome": update.outcome,
            "duration_seconds": round(seconds, 6),
        }
        assessment = update.status.assessment
        if assessment is not None:
            band, decision = assessment.risk.band.value, assessment.risk.decision.value
            self.metrics.decisions.labels(band, decision).inc()
            top = assessment.risk.most_relevant_incident
            if top:
                self.metrics.top_incident.labels(top).inc()
            fields.update(
                band=band,
                decision=decision,
                score=assessment.risk.score,
                incident=top,
                playbook=assessment.playbook.id if assessment.playbook else None,
                selection_method=(
                    assessment.playbook.selection_method if assessment.playbook else None
                ),
            )
        stalled = next(
            (
                c.reason
                for c in update.status.conditions
                if c.type == "Stalled" and c.status == "True"
            ),
            None,
        )
        self._set_stalled(request.uid, stalled)
        approval = (
            assessment.policy.approval
            if assessment is not None and assessment.policy is not None
            else None
        )
        self._set_pending(request.uid, approval is not None and approval.state == "Pending")
        if stalled is not None:
            fields["reason"] = stalled
        self.refresh()
        logger.info(
            "%s/%s %s: %s (%.3fs)",
            request.namespace,
            request.name,
            update.outcome,
            update.message,
            seconds,
            extra={"precedent": fields},
        )

    def deleted(self, uid: str) -> None:
        """A request is gone: it no longer counts as Stalled or waiting."""
        self._set_stalled(uid, None)
        self._set_pending(uid, False)

    def approval_decided(self, uid: str, waited_seconds: float | None) -> None:
        """A human approved or rejected request ``uid`` after ``waited_seconds``."""
        self._set_pending(uid, False)
        if waited_seconds is not None and waited_seconds >= 0:
            self.metrics.approval_wait.observe(waited_seconds)

    def _set_pending(self, uid: str, pending: bool) -> None:
        with self._lock:
            if pending:
                self._pending.add(uid)
            else:
                self._pending.discard(uid)
            self.metrics.approvals_pending.set(len(self._pending))

    def _set_stalled(self, uid: str, reason: str | None) -> None:
        with self._lock:
            before = self._stalled.pop(uid, None)
            if reason is not None:
                self._stalled[uid] = reason
            for changed in {before, reason} - {None}:
                count = sum(1 for r in self._stalled.values() if r == changed)
                self.metrics.stalled_requests.labels(changed).set(count)
