"""Human approvals: RemediationApproval objects move an Escalated request to Approved or Denied.

An approval is a separate, immutable object so that Kubernetes decides who may make one: RBAC
(``create`` on ``remediationapprovals``; the custom verb ``approve`` on ``remediationrequests``
for ADMIN actions) and ValidatingAdmissionPolicies (the approver is the authenticated user, the
groups it claims are the user's). What admission cannot see — the request an approval points
at — is checked here, by :func:`judge`, in this order:

1. the request exists, is this incarnation of it (``requestRef.uid``, and the approval is not
   older than the request) and has been answered by this operator (a valid status mark);
2. the approval has not expired;
3. the approver is not the requester (both fields are the authenticated users, by admission);
4. the approval states the request's access level (so admission's ADMIN check applied);
5. the request is waiting for a human: Escalated in enforce mode and not decided by another
   approval. A Denied request can be approved only with ``PRECEDENT_BREAK_GLASS_GROUP`` set
   and that group among the approver's groups.

The first valid approval decides; later ones are Ignored (AlreadyDecided). Approvals are judged
in creation order, so the operator reaches the same answer after a restart, when it re-lists
them (a kopf index) and re-applies them to a request it assesses again.

An accepted approval with ``expiresAt`` stops applying at that moment (:meth:`ApprovalService.
expire`, run by a daemon that sleeps until then): the request goes back to the decision the
policy made without it (Escalated, waiting for a new approval; Denied for break-glass), its
``Approved`` condition turns False with reason Expired, and a Warning Event says so. Approvals
are immutable, so a lapsed one cannot be renewed: a new approval is needed. Executors should
re-check the condition right before acting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from precedent.core.conditions import rfc3339
from precedent.core.policy import decision_without_approval
from precedent.errors import InputError, describe_validation
from precedent.models import (
    API_VERSION,
    ApprovalDecision,
    ApprovalNote,
    ApprovalState,
    ApprovalStatus,
    Assessment,
    Decision,
    KeptNote,
    PolicyApproval,
    Reasoning,
    RemediationApprovalSpec,
    creation_time,
)
from precedent.services.integrity import StatusSigner
from precedent.services.status import EventNote, StatusUpdate

__all__ = [
    "ApprovalHandled",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalService",
    "ApprovalVerdict",
    "RequestRecord",
    "RequestStore",
    "apply_approvals",
    "approved",
    "assessment_of",
    "decided_by",
    "judge",
    "lapsed",
    "no_more_permissive",
    "parse_approval_spec",
    "request_record",
]


def parse_approval_spec(spec: Mapping[str, Any]) -> RemediationApprovalSpec:
    """Validate a RemediationApproval spec; errors name the field (``spec.reason: …``)."""
    try:
        return RemediationApprovalSpec.model_validate(dict(spec))
    except ValidationError as exc:
        raise InputError(describe_validation(exc, "spec")) from None


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """How approvals are judged (from Settings)."""

    enforce: bool = True
    """Enforce mode: Escalated requests wait for an approval. Audit-only: nothing waits."""
    break_glass_group: str | None = None
    """The group whose members may approve a Denied request; None: nobody can."""


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One RemediationApproval object, as the operator sees it."""

    name: str
    """metadata.name."""
    namespace: str
    """metadata.namespace (the request's)."""
    created: datetime | None
    """metadata.creationTimestamp."""
    generation: int
    """metadata.generation."""
    spec: RemediationApprovalSpec | None
    """The validated spec; None when it is invalid (``problem`` says why)."""
    problem: str | None = None
    """Why the spec is invalid."""
    state: str | None = None
    """status.state as the operator recorded it (Accepted / Ignored), if judged."""

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> ApprovalRecord:
        """From the object as the API returns it; an invalid spec is kept with its problem."""
        meta = body.get("metadata") or {}
        spec: RemediationApprovalSpec | None = None
        problem = None
        try:
            spec = parse_approval_spec(body.get("spec") or {})
        except InputError as exc:
            problem = str(exc)
        return cls(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
            created=creation_time(meta),
            generation=int(meta.get("generation") or 1),
            spec=spec,
            problem=problem,
            state=str((body.get("status") or {}).get("state") or "") or None,
        )


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """The request an approval points at: who asked, when, and the operator's answer."""

    name: str
    """metadata.name."""
    uid: str
    """metadata.uid."""
    created: datetime | None
    """metadata.creationTimestamp."""
    requester: str | None
    """spec.requester (the authenticated creator, by admission)."""
    assessment: Assessment | None
    """The operator's signed answer; None while the request has none."""


@dataclass(frozen=True, slots=True)
class ApprovalVerdict:
    """What the operator makes of one approval."""

    state: Literal["Accepted", "Ignored", "Waiting"]
    """Accepted, Ignored (with the reason), or Waiting: the request has no answer yet."""
    reason: str
    """One CamelCase word."""
    message: str
    """A sentence for people."""

    def status(self, generation: int) -> ApprovalStatus:
        """The approval's status (Accepted / Ignored only)."""
        if self.state == "Waiting":
            raise ValueError("a waiting approval has no status yet")
        return ApprovalStatus(
            state=self.state,
            reason=self.reason,
            message=self.message,
            observed_generation=generation,
        )

    def event(self, approval: str) -> EventNote:
        """The Event on the approval: Normal when accepted, Warning when ignored."""
        kind: Literal["Normal", "Warning"] = "Normal" if self.state == "Accepted" else "Warning"
        return EventNote(kind, self.reason, f"approval {approval}: {self.message}")


def _ignored(reason: str, message: str) -> ApprovalVerdict:
    return ApprovalVerdict("Ignored", reason, message)


def judge(
    approval: ApprovalRecord,
    request: RequestRecord | None,
    *,
    policy: ApprovalPolicy,
    now: datetime,
) -> ApprovalVerdict:
    """Whether ``approval`` applies to ``request`` now (see the module docstring)."""
    if approval.spec is None:
        return _ignored("InvalidSpec", f"invalid spec: {approval.problem}")
    spec = approval.spec
    target = spec.request_ref.name
    if request is None:
        return _ignored("RequestNotFound", f"RemediationRequest {target} does not exist")
    if spec.request_ref.uid and spec.request_ref.uid != request.uid:
        return _ignored(
            "OtherRequest",
            f"spec.requestRef.uid {spec.request_ref.uid} is not RemediationRequest {target} "
            f"(uid {request.uid}): it was made for another request of that name",
        )
    if approval.created and request.created and approval.created < request.created:
        return _ignored(
            "OtherRequest",
            f"made before RemediationRequest {target} was created: it was for an earlier "
            "request of that name",
        )
    if request.assessment is None or request.assessment.policy is None:
        return ApprovalVerdict("Waiting", "NotAssessed", f"{target} has not been assessed yet")
    if spec.expires_at is not None and spec.expires_at <= now:
        return _ignored("Expired", f"expired at {rfc3339(spec.expires_at)}")
    if request.requester is None:
        return _ignored(
            "NoRequester",
            f"RemediationRequest {target} does not record spec.requester, so self-approval "
            "cannot be ruled out",
        )
    if spec.approver == request.requester:
        return _ignored("SelfApproval", f"{spec.approver} requested {target} and cannot approve it")
    assessment = request.assessment
    level = assessment.policy.access_level if assessment.policy else None
    if spec.access_level != level:
        return _ignored(
            "AccessLevelMismatch",
            f"RemediationRequest {target} is a {level} action; the approval must say "
            f"spec.accessLevel: {level} (it says {spec.access_level or 'nothing'})",
        )
    return _against_state(approval, assessment, policy=policy)


def _against_state(
    approval: ApprovalRecord, assessment: Assessment, *, policy: ApprovalPolicy
) -> ApprovalVerdict:
    assert approval.spec is not None
    assert assessment.policy is not None
    spec = approval.spec
    current = assessment.policy.approval
    decision = assessment.risk.decision
    verb = "approved" if spec.decision is ApprovalDecision.APPROVE else "rejected"
    if current is not None and current.state in (ApprovalState.APPROVED, ApprovalState.REJECTED):
        if current.approval == approval.name:
            return ApprovalVerdict("Accepted", verb.capitalize(), f"{verb} by {spec.approver}")
        return _ignored(
            "AlreadyDecided",
            f"already {current.state.value.lower()} by {current.by} (approval "
            f"{current.approval}); the first valid approval decides",
        )
    if not policy.enforce or (current is not None and current.state is ApprovalState.AUDIT_ONLY):
        return _ignored("NotRequired", "audit-only mode: nothing waits for an approval")
    if decision is Decision.ESCALATED:
        return ApprovalVerdict("Accepted", verb.capitalize(), f"{verb} by {spec.approver}")
    if decision is Decision.APPROVED:
        return _ignored("NotRequired", "the request is Approved without an approval")
    # Denied by the policy (high band).
    if spec.decision is ApprovalDecision.REJECT:
        return _ignored("NotRequired", "the request is already Denied")
    group = policy.break_glass_group
    if group is None:
        return _ignored(
            "Denied",
            "the request is Denied by policy (high risk); no break-glass group is configured",
        )
    if group not in spec.approver_groups:
        return _ignored(
            "Denied",
            f"the request is Denied by policy (high risk); only members of the break-glass "
            f"group {group} may approve it (spec.approverGroups)",
        )
    return ApprovalVerdict(
        "Accepted", "BreakGlass", f"approved by {spec.approver} as break-glass group {group}"
    )


def approved(assessment: Assessment, approval: ApprovalRecord, *, now: datetime) -> Assessment:
    """The assessment after an accepted approval: decision, ``policy.approval`` and reasoning.

    ``policy.approval.at`` is when the approval was made (its creation time; ``now`` if
    unknown), so re-applying it after a restart writes the same status.
    """
    assert approval.spec is not None
    assert assessment.policy is not None
    spec = approval.spec
    approve = spec.decision is ApprovalDecision.APPROVE
    decision = Decision.APPROVED if approve else Decision.DENIED
    state = ApprovalState.APPROVED if approve else ApprovalState.REJECTED
    record = PolicyApproval(
        state=state,
        by=spec.approver,
        at=rfc3339(approval.created or now),
        reason=spec.reason,
        approval=approval.name,
    )
    note = ApprovalNote(approve, spec.approver, approval.name, spec.reason)
    risk = assessment.risk.model_copy(
        update={"decision": decision, "reasoning": assessment.risk.reasoning.plus(note)}
    )
    policy = assessment.policy.model_copy(update={"approval": record})
    return assessment.model_copy(update={"risk": risk, "policy": policy})


def lapsed(assessment: Assessment, approval: ApprovalRecord) -> Assessment:
    """The assessment once ``approval``, which decided it, has expired: the policy's own
    decision again (Escalated and Pending, or Denied by policy when it was a break-glass
    approval of a high-band request) and the reasoning without the approval's note."""
    assert approval.spec is not None
    assert assessment.policy is not None
    decision = decision_without_approval(assessment.risk.band)
    waiting = decision is Decision.ESCALATED
    risk = assessment.risk.model_copy(
        update={
            "decision": decision,
            "reasoning": assessment.risk.reasoning.without(ApprovalNote),
        }
    )
    policy = assessment.policy.model_copy(
        update={
            "approval": PolicyApproval(state=ApprovalState.PENDING) if waiting else None,
            "approval_required": waiting,
        }
    )
    return assessment.model_copy(update={"risk": risk, "policy": policy})


_STRICTNESS = {Decision.APPROVED: 0, Decision.ESCALATED: 1, Decision.DENIED: 2}


def no_more_permissive(assessment: Assessment, prior: Mapping[str, Any] | None) -> Assessment:
    """A re-assessment (after a restart, a new key, a corrected status) never turns the
    decision the request had more permissive without a new approval: when ``prior`` (the
    status it had) decided more strictly, that decision is kept, with a sentence saying so.

    An accepted approval (``policy.approval`` Approved) is the one way to a more permissive
    decision. A forged prior status can only make the answer stricter, never looser.
    """
    policy = assessment.policy
    if policy is None or (policy.approval and policy.approval.state is not ApprovalState.PENDING):
        return assessment  # decided by an approval (or audit-only): nothing to hold back
    risk = (prior or {}).get("risk")
    before = risk.get("decision") if isinstance(risk, Mapping) else None
    try:
        earlier = Decision(str(before)) if before else None
    except ValueError:
        return assessment
    now = assessment.risk.decision
    if earlier is None or _STRICTNESS[earlier] <= _STRICTNESS[now]:
        return assessment
    waiting = earlier is Decision.ESCALATED
    risk_now = assessment.risk.model_copy(
        update={
            "decision": earlier,
            "reasoning": assessment.risk.reasoning.plus(KeptNote(earlier, now)),
        }
    )
    kept = policy.model_copy(
        update={
            "approval": PolicyApproval(state=ApprovalState.PENDING) if waiting else None,
            "approval_required": waiting,
        }
    )
    return assessment.model_copy(update={"risk": risk_now, "policy": kept})


def apply_approvals(
    assessment: Assessment,
    request: RequestRecord,
    approvals: Iterable[ApprovalRecord],
    *,
    policy: ApprovalPolicy,
    now: datetime,
) -> tuple[Assessment, list[tuple[ApprovalRecord, ApprovalVerdict]]]:
    """A fresh assessment with the request's approvals applied in creation order."""
    # An approval recorded as Ignored stays ignored: a later answer (scores fell, the status
    # was rewritten, the operator restarted) never makes it apply.
    ordered = sorted(
        (a for a in approvals if a.state != "Ignored"), key=lambda a: (a.created or now, a.name)
    )
    verdicts: list[tuple[ApprovalRecord, ApprovalVerdict]] = []
    for approval in ordered:
        current = RequestRecord(
            request.name, request.uid, request.created, request.requester, assessment
        )
        verdict = judge(approval, current, policy=policy, now=now)
        if verdict.state == "Accepted" and decided_by(assessment) != approval.name:
            assessment = approved(assessment, approval, now=now)
        verdicts.append((approval, verdict))
    return assessment, verdicts


_STATUS_FIELDS = frozenset(Assessment.model_fields) | {
    field.alias for field in Assessment.model_fields.values() if field.alias
}


def assessment_of(status: Mapping[str, Any]) -> Assessment | None:
    """The assessment stored in a request's status (its top-level fields), if it parses."""
    fields = {k: v for k, v in status.items() if k in _STATUS_FIELDS}
    if "risk" not in fields:
        return None
    try:
        assessment = Assessment.model_validate(fields)
    except ValidationError:
        return None
    # The note of the approval that decided the request is its own part again, so that the
    # approval's expiry can leave it out (``lapsed``).
    approval = assessment.policy.approval if assessment.policy is not None else None
    reasoning = Reasoning.read(assessment.risk.reasoning.text, approval)
    risk = assessment.risk.model_copy(update={"reasoning": reasoning})
    return assessment.model_copy(update={"risk": risk})


def request_record(body: Mapping[str, Any], assessment: Assessment | None) -> RequestRecord:
    """A request object (as the API returns it) with the operator's answer, if trusted."""
    meta = body.get("metadata") or {}
    requester = (body.get("spec") or {}).get("requester")
    return RequestRecord(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        created=creation_time(meta),
        requester=str(requester).strip() if requester else None,
        assessment=assessment,
    )


def decided_by(assessment: Assessment) -> str | None:
    """The approval that decided the request, if one did."""
    policy = assessment.policy
    return policy.approval.approval if policy and policy.approval else None


# -- the use case: the operator applies approvals ------------------------------------------------


class RequestStore(Protocol):
    """The two calls approval handling makes on RemediationRequests."""

    async def get_request(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The request object, or None if it does not exist."""
        ...

    async def patch_request_status(
        self, namespace: str, name: str, status: Mapping[str, Any], resource_version: str
    ) -> None:
        """Merge into the request's status if it is still at ``resource_version``
        (DependencyError on a conflict: retry)."""
        ...


@dataclass(frozen=True, slots=True)
class ApprovalHandled:
    """What handling one approval produced: its status, Events, and the request's new state."""

    verdict: ApprovalVerdict
    """Accepted, Ignored, or Waiting (the request has no answer yet: retry later)."""
    status: dict[str, Any] | None
    """What to merge into the approval's status (None while waiting)."""
    event: EventNote | None
    """The Event on the approval."""
    request: dict[str, Any] | None = None
    """The request's reference (apiVersion, kind, metadata) when it got an Event."""
    request_event: EventNote | None = None
    """The Event on the request when its decision changed."""


class ApprovalService:
    """Judges RemediationApprovals and writes their effect into the request's signed status."""

    def __init__(
        self, policy: ApprovalPolicy, signer: StatusSigner, requests: RequestStore | None = None
    ) -> None:
        self.policy = policy
        self.signer = signer
        self.requests = requests

    @staticmethod
    def index_entry(body: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
        """The approvals index: (namespace, request name) → the approval's metadata and spec."""
        meta = body.get("metadata") or {}
        spec = body.get("spec") or {}
        ref = spec.get("requestRef") if isinstance(spec, Mapping) else None
        target = ref.get("name") if isinstance(ref, Mapping) else None
        if not target:
            return {}
        status = body.get("status") or {}
        kept = {
            "metadata": {
                k: meta.get(k) for k in ("name", "namespace", "creationTimestamp", "generation")
            },
            "spec": dict(spec),
            "status": {"state": status.get("state")} if isinstance(status, Mapping) else {},
        }
        return {(str(meta.get("namespace", "")), str(target)): kept}

    def applier(
        self, request: Mapping[str, Any], approvals: Iterable[Mapping[str, Any]], now: datetime
    ) -> Callable[[Assessment], tuple[Assessment, str | None]]:
        """What a fresh assessment of ``request`` becomes with its approvals re-applied, and
        the note on an approval that expired while it is still pending."""
        records = [ApprovalRecord.from_body(a) for a in approvals]

        def apply(assessment: Assessment) -> tuple[Assessment, str | None]:
            record = request_record(request, assessment)
            result, verdicts = apply_approvals(
                assessment, record, records, policy=self.policy, now=now
            )
            return result, _expired_note(result, verdicts)

        return apply

    async def handle(self, body: Mapping[str, Any], *, now: datetime) -> ApprovalHandled:
        """Judge one approval against its request; apply it when accepted (a signed status)."""
        if self.requests is None:
            raise RuntimeError("approval handling needs a RequestStore")
        record = ApprovalRecord.from_body(body)
        target = record.spec.request_ref.name if record.spec else None
        request_body = await self.requests.get_request(record.namespace, target) if target else None
        assessment = None
        if request_body is not None and self.signer.answered(request_body):
            assessment = assessment_of(request_body.get("status") or {})
        request = request_record(request_body, assessment) if request_body else None
        verdict = judge(record, request, policy=self.policy, now=now)
        if verdict.state == "Waiting":
            return ApprovalHandled(verdict, None, None)
        handled = ApprovalHandled(
            verdict, verdict.status(record.generation).model_dump(by_alias=True), None
        )
        handled = replace(handled, event=verdict.event(record.name))
        if request_body is None or assessment is None:
            return handled
        expired = None
        if verdict.state == "Accepted" and decided_by(assessment) != record.name:
            new = approved(assessment, record, now=now)
        elif verdict.reason == "Expired" and _pending(assessment):
            new, expired = assessment, f"approval {record.name} {verdict.message}"
        else:
            return handled
        meta = request_body.get("metadata") or {}
        status = request_body.get("status") or {}
        update = StatusUpdate.assessed(
            new,
            generation=int(meta.get("generation") or 1),
            previous=status.get("conditions"),
            now=now,
            expired=expired,
        ).signed(self.signer, str(meta.get("uid", "")))
        await self.requests.patch_request_status(
            record.namespace,
            str(meta.get("name")),
            update.patch(),
            str(meta.get("resourceVersion")),
        )
        reference = {
            "apiVersion": request_body.get("apiVersion", API_VERSION),
            "kind": request_body.get("kind", "RemediationRequest"),
            "metadata": {k: meta.get(k) for k in ("name", "namespace", "uid")},
        }
        note = update.event
        if expired is not None:
            note = EventNote("Warning", "Expired", expired)
        return replace(handled, request=reference, request_event=note)

    async def expire(self, body: Mapping[str, Any], *, now: datetime) -> ApprovalHandled | None:
        """An accepted approval whose ``expiresAt`` has passed: if it still decides its
        request, the request waits again (:func:`lapsed`; Approved False, reason Expired) and
        the approval is marked Ignored/Expired. None when there is nothing to do (not expired
        yet, or it no longer decides the request)."""
        if self.requests is None:
            raise RuntimeError("approval handling needs a RequestStore")
        record = ApprovalRecord.from_body(body)
        spec = record.spec
        if spec is None or spec.expires_at is None or spec.expires_at > now:
            return None
        target = spec.request_ref.name
        request_body = await self.requests.get_request(record.namespace, target)
        if request_body is None or not self.signer.answered(request_body):
            return None  # gone, or about to be assessed again (which ignores this approval)
        assessment = assessment_of(request_body.get("status") or {})
        if assessment is None or decided_by(assessment) != record.name:
            return None
        note = f"approval {record.name} expired at {rfc3339(spec.expires_at)}"
        meta = request_body.get("metadata") or {}
        status = request_body.get("status") or {}
        update = StatusUpdate.assessed(
            lapsed(assessment, record),
            generation=int(meta.get("generation") or 1),
            previous=status.get("conditions"),
            now=now,
            expired=note,
        ).signed(self.signer, str(meta.get("uid", "")))
        # A merge patch keeps what it does not mention: the approval's by/at/reason must be
        # removed explicitly, or the stored status would not be the one just signed.
        body = _removing(update.patch(), status, _STATUS_FIELDS)
        await self.requests.patch_request_status(
            record.namespace, target, body, str(meta.get("resourceVersion"))
        )
        verdict = _ignored(
            "Expired",
            f"expired at {rfc3339(spec.expires_at)}; RemediationRequest {target} waits for a "
            "new approval",
        )
        reference = {
            "apiVersion": request_body.get("apiVersion", API_VERSION),
            "kind": request_body.get("kind", "RemediationRequest"),
            "metadata": {k: meta.get(k) for k in ("name", "namespace", "uid")},
        }
        return ApprovalHandled(
            verdict,
            verdict.status(record.generation).model_dump(by_alias=True),
            verdict.event(record.name),
            reference,
            EventNote("Warning", "Expired", f"{note}; waiting for a new approval"),
        )


def _removing(
    new: Mapping[str, Any], old: Mapping[str, Any], keys: Iterable[str] | None = None
) -> dict[str, Any]:
    """``new`` as a merge patch over ``old``: fields of ``old`` it lacks (within ``keys`` at the
    top level; everything below) are set to null so that the patch removes them."""
    patch = dict(new)
    for key, value in old.items():
        if keys is not None and key not in keys:
            continue  # another writer's fields (kopf's progress records) are left alone
        if key not in patch:
            patch[key] = None
        elif isinstance(value, Mapping) and isinstance(patch[key], Mapping):
            patch[key] = _removing(patch[key], value)
    return patch


def _pending(assessment: Assessment) -> bool:
    policy = assessment.policy
    return bool(policy and policy.approval and policy.approval.state is ApprovalState.PENDING)


def _expired_note(
    assessment: Assessment, verdicts: Sequence[tuple[ApprovalRecord, ApprovalVerdict]]
) -> str | None:
    if not _pending(assessment) or not verdicts:
        return None
    last, verdict = verdicts[-1]
    return f"approval {last.name} {verdict.message}" if verdict.reason == "Expired" else None
