"""What a RemediationRequest's status says after one reconciliation, and the Event it posts.

Three outcomes, one constructor each: the request was **assessed** (Ready), its spec is
**invalid** (Stalled: nothing will change until the spec does), or a dependency is
**waiting** (Reconciling: it will be retried). Conditions and ``observedGeneration`` are built
here, so the handlers only write what they are given.

An assessed request also carries the ``Approved`` condition executors wait on
(``kubectl wait --for=condition=Approved rr/NAME``): True when the request may run (NotRequired,
Approved by a human, or AuditOnly), Unknown while a human decision is Pending, False when it may
not run (Denied by policy, Rejected, or its approval Expired: it waits for a new one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from pydantic import ValidationError

from precedent.core.conditions import ConditionUpdate, merge_conditions
from precedent.core.printable import printable
from precedent.models import (
    ApprovalState,
    Assessment,
    Condition,
    Decision,
    RemediationRequestStatus,
)
from precedent.services.integrity import StatusSigner

__all__ = ["EventNote", "IncidentStatus", "StatusUpdate", "approval_condition", "summary"]

UpdateKind = Literal["assessed", "invalid", "waiting", "retrying", "failed"]
PreviousConditions = Sequence[Mapping[str, Any]] | None


@dataclass(frozen=True, slots=True)
class EventNote:
    """A Kubernetes Event to post on the request."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str

    def __post_init__(self) -> None:
        # Event messages quote what users wrote (names, reasons): shown by kubectl describe
        # and get events, so control characters are escaped (core.printable).
        object.__setattr__(self, "message", printable(self.message))


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    """The new status of one request, how it came about, and its Event (if any)."""

    outcome: UpdateKind
    status: RemediationRequestStatus
    message: str
    event: EventNote | None
    mark: str | None = None
    """The operator's signature over the answer (assessed only): see ``services.integrity``."""
    notes: tuple[EventNote, ...] = ()
    """More Events to post (a requester's claim the answer did not use)."""
    signed_body: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """The status as signed (``signed`` made it): ``patch`` starts from it instead of
    serialising the status a second time."""

    @classmethod
    def assessed(
        cls,
        assessment: Assessment,
        *,
        generation: int,
        previous: PreviousConditions,
        now: datetime,
        expired: str | None = None,
    ) -> StatusUpdate:
        """Ready: the assessment is in the status; the decision is posted as an Event.

        ``expired`` names an approval that came too late, while the request is still Pending.
        """
        text = summary(assessment)
        conditions = _conditions(
            previous,
            [
                *_phase("ready", "Assessed", text),
                approval_condition(assessment, expired=expired),
                *_warning_condition(assessment),
            ],
            generation,
            now,
        )
        decision = assessment.risk.decision
        audit = assessment.policy is not None and assessment.policy.would_be is not None
        event = EventNote(
            "Warning" if decision is Decision.DENIED or audit else "Normal",
            "AuditOnly" if audit else decision.value,
            text,
        )
        status = RemediationRequestStatus(
            observed_generation=generation, conditions=conditions, assessment=assessment
        )
        claim = assessment.context.claim if assessment.context is not None else None
        notes: tuple[EventNote, ...] = (
            (EventNote("Warning", "UnverifiedClaim", claim),) if claim else ()
        )
        notes += tuple(EventNote("Warning", w.reason, w.message) for w in assessment.warnings)
        return cls("assessed", status, text, event, notes=notes)

    @classmethod
    def invalid(
        cls, problem: str, *, generation: int, previous: PreviousConditions, now: datetime
    ) -> StatusUpdate:
        """Stalled: the spec is bad; the message names the field. Retrying cannot help."""
        message = f"invalid spec: {problem}"
        conditions = _conditions(
            previous,
            [
                *_phase("stalled", "InvalidSpec", message),
                # Whatever Approved said before (someone else may have written it) is void.
                ConditionUpdate("Approved", "Unknown", "NotAssessed", message),
            ],
            generation,
            now,
        )
        status = RemediationRequestStatus(observed_generation=generation, conditions=conditions)
        return cls("invalid", status, message, EventNote("Warning", "InvalidSpec", message))

    @classmethod
    def waiting(
        cls, problem: str, *, generation: int, previous: PreviousConditions, now: datetime
    ) -> StatusUpdate:
        """Reconciling: a dependency is unavailable; the request will be assessed later."""
        message = f"waiting for a dependency: {problem}"
        conditions = _conditions(
            previous,
            [
                *_phase("reconciling", "DependencyUnavailable", message),
                ConditionUpdate("Approved", "Unknown", "NotAssessed", message),
            ],
            generation,
            now,
        )
        # observedGeneration stays where it was: this generation has not been answered yet.
        status = RemediationRequestStatus(
            observed_generation=max(generation - 1, 0), conditions=conditions
        )
        return cls("waiting", status, message, None)

    @classmethod
    def retrying(
        cls,
        error: str,
        *,
        attempt: int,
        attempts: int,
        generation: int,
        previous: PreviousConditions,
        now: datetime,
    ) -> StatusUpdate:
        """Reconciling: an unexpected error; the request is tried again (attempt of attempts)."""
        message = f"assessment failed ({error}); attempt {attempt} of {attempts}, retrying"
        conditions = _conditions(
            previous,
            [
                *_phase("reconciling", "AssessmentError", message),
            ],
            generation,
            now,
        )
        status = RemediationRequestStatus(
            observed_generation=max(generation - 1, 0), conditions=conditions
        )
        return cls("retrying", status, message, None)

    @classmethod
    def failed(
        cls,
        error: str,
        *,
        attempts: int,
        generation: int,
        previous: PreviousConditions,
        now: datetime,
    ) -> StatusUpdate:
        """Stalled: the same unexpected error after every attempt; the error is named."""
        message = f"assessment failed {attempts} times, giving up: {error}"
        conditions = _conditions(
            previous,
            [
                *_phase("stalled", "AssessmentError", message),
            ],
            generation,
            now,
        )
        status = RemediationRequestStatus(observed_generation=generation, conditions=conditions)
        return cls("failed", status, message, EventNote("Warning", "AssessmentError", message))

    def signed(self, signer: StatusSigner, uid: str) -> StatusUpdate:
        """The same update carrying the operator's mark (assessed updates only)."""
        if self.outcome != "assessed":
            return self
        body = self.status.to_patch()
        return replace(self, mark=signer.sign(uid, body), signed_body=body)

    def patch(self) -> dict[str, Any]:
        """The fields to merge into ``status``."""
        signed = self.signed_body
        body = dict(signed) if signed is not None else self.status.to_patch()
        if self.outcome in ("waiting", "retrying"):
            del body["observedGeneration"]
        if self.mark is not None:
            body["mark"] = self.mark
        return body


def _phase(
    state: Literal["ready", "reconciling", "stalled"], reason: str, message: str
) -> list[ConditionUpdate]:
    """Ready, Reconciling and Stalled for one phase: the one that holds carries the message."""
    return [
        ConditionUpdate("Ready", "True" if state == "ready" else "False", reason, message),
        ConditionUpdate(
            "Reconciling",
            "True" if state == "reconciling" else "False",
            reason,
            message if state == "reconciling" else "",
        ),
        ConditionUpdate(
            "Stalled",
            "True" if state == "stalled" else "False",
            reason,
            message if state == "stalled" else "",
        ),
    ]


def _conditions(
    previous: PreviousConditions,
    updates: Sequence[ConditionUpdate],
    generation: int,
    now: datetime,
) -> list[Condition]:
    merged = merge_conditions(previous, updates, generation=generation, now=now)
    kept = []
    for item in merged:
        try:
            kept.append(Condition.model_validate(item))
        except ValidationError:
            continue  # a malformed condition someone else wrote is dropped, not trusted
    return kept


def approval_condition(assessment: Assessment, *, expired: str | None = None) -> ConditionUpdate:
    """The ``Approved`` condition for an assessed request (see the module docstring)."""
    decision = assessment.risk.decision
    policy = assessment.policy
    approval = policy.approval if policy else None
    state = approval.state if approval else None
    if state is ApprovalState.APPROVED and approval is not None:
        return ConditionUpdate(
            "Approved", "True", "Approved", f"approved by {approval.by}: {approval.reason}"
        )
    if state is ApprovalState.REJECTED and approval is not None:
        return ConditionUpdate(
            "Approved", "False", "Rejected", f"rejected by {approval.by}: {approval.reason}"
        )
    if state is ApprovalState.AUDIT_ONLY and policy is not None:
        return ConditionUpdate(
            "Approved",
            "True",
            "AuditOnly",
            f"audit-only mode: nothing waits (enforce mode would decide {policy.would_be})",
        )
    if state is ApprovalState.PENDING:
        if expired:
            return ConditionUpdate(
                "Approved", "False", "Expired", f"{expired}; waiting for a new approval"
            )
        return ConditionUpdate(
            "Approved",
            "Unknown",
            "Pending",
            "waiting for a RemediationApproval (kubectl precedent approve|reject rr/NAME)",
        )
    if decision is Decision.DENIED:
        return ConditionUpdate("Approved", "False", "Denied", "denied by policy (high risk)")
    return ConditionUpdate("Approved", "True", "NotRequired", "runs without a human approval")


def summary(assessment: Assessment) -> str:
    """One line: band, score, decision, top incident, playbook (the Ready message and Event)."""
    risk = assessment.risk
    text = f"risk {risk.band.value} ({risk.score:g}), {risk.decision.value}"
    policy = assessment.policy
    if policy is not None and policy.would_be is not None:
        text += f" (audit-only; enforce mode would decide {policy.would_be.value})"
    if policy is not None and policy.approval is not None and policy.approval.by:
        text += f" by {policy.approval.by}"
    if risk.most_relevant_incident:
        text += f"; most relevant incident {risk.most_relevant_incident}"
    if assessment.playbook:
        text += (
            f"; playbook {assessment.playbook.id} {assessment.playbook.version}"
            f" (confidence {assessment.playbook.confidence:.2f})"
        )
    elif assessment.recommendation:
        text += f"; {assessment.recommendation.action}: {assessment.recommendation.reason}"
    return text


@dataclass(frozen=True, slots=True)
class IncidentStatus:
    """An Incident object's status: whether its incident is in the history, and why not."""

    fields: dict[str, Any]
    """What to merge into the object's status."""
    changed: bool
    """Whether that differs from what the object says now."""
    event: EventNote | None
    """A Warning when the incident is left out (invalid spec, duplicate id)."""

    @classmethod
    def of(
        cls,
        problem: tuple[str, str] | None,
        *,
        generation: int,
        previous: PreviousConditions,
        now: datetime,
    ) -> IncidentStatus:
        """``problem`` is ``(reason, message)`` when the incident is left out, else None."""
        if problem is None:
            update = ConditionUpdate("Ready", "True", "InHistory", "scored against requests")
        else:
            update = ConditionUpdate("Ready", "False", problem[0], problem[1])
        old = {c.get("type"): c for c in previous or [] if isinstance(c, Mapping)}.get("Ready")
        changed = (
            old is None
            or old.get("status") != update.status
            or old.get("reason") != update.reason
            or old.get("message") != update.message
            or old.get("observedGeneration") != generation
        )
        conditions = merge_conditions(previous, [update], generation=generation, now=now)
        event = EventNote("Warning", problem[0], problem[1]) if problem and changed else None
        return cls({"observedGeneration": generation, "conditions": conditions}, changed, event)


def _warning_condition(assessment: Assessment) -> list[ConditionUpdate]:
    """``InputWarnings``: True while the spec has a probable mistake (an unknown action, a
    misspelt label key), with the first reason and every message; absent when there is none."""
    if not assessment.warnings:
        return []
    message = "; ".join(w.message for w in assessment.warnings)
    return [ConditionUpdate("InputWarnings", "True", assessment.warnings[0].reason, message)]
