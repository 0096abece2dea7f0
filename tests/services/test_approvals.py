"""The approval rules (services/approvals.py): who may approve what, when, and what it changes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from precedent.core.policy import PolicyEngine
from precedent.models import (
    ApprovalState,
    Assessment,
    Band,
    Decision,
    EngineInfo,
    RiskAssessment,
)
from precedent.services.approvals import (
    ApprovalPolicy,
    ApprovalRecord,
    ApprovalService,
    RequestRecord,
    apply_approvals,
    judge,
    lapsed,
)
from precedent.services.integrity import StatusSigner
from precedent.services.status import StatusUpdate, approval_condition

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CREATED = NOW - timedelta(hours=1)


def assessment(
    action: str = "update_config", band: Band = Band.MEDIUM, **policy: Any
) -> Assessment:
    verdict = PolicyEngine(**policy).decide(action, band)
    return Assessment(
        risk=RiskAssessment(score=40, band=band, decision=verdict.decision, reasoning="r."),
        policy=verdict.policy,
        engine=EngineInfo(version="t", history_size=1, similarity_mode="rules"),
        input_hash="sha256:x",
    )


def request(answer: Assessment | None = None, requester: str | None = "rita") -> RequestRecord:
    return RequestRecord("tls", "uid-1", CREATED, requester, answer or assessment())


def approval(name: str = "ok", created: datetime | None = None, **spec: Any) -> ApprovalRecord:
    body = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "creationTimestamp": (created or NOW).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "generation": 1,
        },
        "spec": {
            "requestRef": {"name": "tls"},
            "decision": "approve",
            "reason": "window open",
            "approver": "alice",
            "accessLevel": "WRITE",
            **spec,
        },
    }
    return ApprovalRecord.from_body(body)


ENFORCE = ApprovalPolicy()


def verdict_of(record: ApprovalRecord, req: RequestRecord | None = None, **kw: Any) -> str:
    policy = kw.pop("policy", ENFORCE)
    found = judge(record, req if req is not None else request(), policy=policy, now=NOW)
    return f"{found.state}/{found.reason}"


def test_a_valid_approval_is_accepted_and_approves() -> None:
    record = approval()
    assert verdict_of(record) == "Accepted/Approved"
    answer, verdicts = apply_approvals(assessment(), request(), [record], policy=ENFORCE, now=NOW)
    assert answer.risk.decision is Decision.APPROVED
    assert answer.policy is not None
    assert answer.policy.approval is not None
    assert answer.policy.approval.state is ApprovalState.APPROVED
    assert answer.policy.approval.by == "alice"
    assert answer.policy.approval.at == "2026-03-01T12:00:00Z"
    assert "Approved by alice" in answer.risk.reasoning
    assert approval_condition(answer).status == "True"
    assert verdicts[0][1].state == "Accepted"


def test_a_rejection_denies() -> None:
    answer, _ = apply_approvals(
        assessment(), request(), [approval(decision="reject")], policy=ENFORCE, now=NOW
    )
    assert answer.risk.decision is Decision.DENIED
    condition = approval_condition(answer)
    assert (condition.status, condition.reason) == ("False", "Rejected")


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"approver": "rita"}, "SelfApproval"),
        ({"expiresAt": "2026-03-01T11:59:59Z"}, "Expired"),
        ({"accessLevel": "ADMIN"}, "AccessLevelMismatch"),
        ({"accessLevel": None}, "AccessLevelMismatch"),
        ({"requestRef": {"name": "tls", "uid": "uid-0"}}, "OtherRequest"),
        ({"reason": "  "}, "InvalidSpec"),
    ],
)
def test_invalid_approvals_are_ignored(spec: dict[str, Any], reason: str) -> None:
    assert verdict_of(approval(**spec)) == f"Ignored/{reason}"


def test_an_approval_older_than_the_request_was_for_another_request() -> None:
    assert verdict_of(approval(created=CREATED - timedelta(seconds=1))) == "Ignored/OtherRequest"


def test_a_request_without_requester_cannot_rule_out_self_approval() -> None:
    assert verdict_of(approval(), request(requester=None)) == "Ignored/NoRequester"


def test_a_missing_request_and_an_unanswered_one() -> None:
    missing = judge(approval(), None, policy=ENFORCE, now=NOW)
    assert (missing.state, missing.reason) == ("Ignored", "RequestNotFound")
    unanswered = RequestRecord("tls", "uid-1", CREATED, "rita", None)
    assert judge(approval(), unanswered, policy=ENFORCE, now=NOW).state == "Waiting"


def test_the_first_valid_approval_decides() -> None:
    first = approval("first", created=NOW - timedelta(minutes=2), decision="reject")
    second = approval("second", created=NOW - timedelta(minutes=1))
    answer, verdicts = apply_approvals(
        assessment(), request(), [second, first], policy=ENFORCE, now=NOW
    )
    assert answer.risk.decision is Decision.DENIED
    assert [(a.name, v.reason) for a, v in verdicts] == [
        ("first", "Rejected"),
        ("second", "AlreadyDecided"),
    ]


def test_nothing_waits_for_an_approval_when_none_is_required() -> None:
    low = request(assessment(band=Band.LOW))
    assert verdict_of(approval(), low) == "Ignored/NotRequired"
    audit = request(assessment(enforce=False))
    assert verdict_of(approval(), audit, policy=ApprovalPolicy(enforce=False)) == (
        "Ignored/NotRequired"
    )


def test_a_denied_request_needs_the_break_glass_group() -> None:
    denied = request(assessment(band=Band.HIGH))
    claims = approval(approverGroups=["sre-oncall"])
    assert verdict_of(claims, denied) == "Ignored/Denied"  # off by default
    glass = ApprovalPolicy(break_glass_group="sre-oncall")
    assert verdict_of(approval(), denied, policy=glass) == "Ignored/Denied"  # not a member
    assert verdict_of(claims, denied, policy=glass) == "Accepted/BreakGlass"
    answer, _ = apply_approvals(denied.assessment, denied, [claims], policy=glass, now=NOW)  # type: ignore[arg-type]
    assert answer.risk.decision is Decision.APPROVED


def test_admin_requests_need_admin_approvals() -> None:
    admin = request(assessment(action="drain_node", band=Band.LOW))
    assert verdict_of(approval(), admin) == "Ignored/AccessLevelMismatch"
    assert verdict_of(approval(accessLevel="ADMIN"), admin) == "Accepted/Approved"


class Requests:
    """An in-memory RequestStore (the port the operator fills with its API client)."""

    def __init__(self, body: dict[str, Any] | None) -> None:
        self.body = body
        self.patches: list[dict[str, Any]] = []

    async def get_request(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.body

    async def patch_request_status(
        self, namespace: str, name: str, status: Any, resource_version: str
    ) -> None:
        self.patches.append({"status": dict(status), "resourceVersion": resource_version})


def signed_request(signer: StatusSigner, answer: Assessment) -> dict[str, Any]:
    update = StatusUpdate.assessed(answer, generation=1, previous=None, now=CREATED)
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {
            "name": "tls",
            "namespace": "default",
            "uid": "uid-1",
            "generation": 1,
            "resourceVersion": "7",
            "creationTimestamp": CREATED.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "spec": {"requester": "rita"},
        "status": update.signed(signer, "uid-1").patch(),
    }


def approval_body(**spec: Any) -> dict[str, Any]:
    record = approval(**spec)
    assert record.spec is not None
    return {
        "metadata": {
            "name": record.name,
            "namespace": "default",
            "generation": 1,
            "creationTimestamp": NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "spec": record.spec.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def test_the_service_writes_a_signed_approved_status() -> None:
    signer = StatusSigner(b"k")
    requests = Requests(signed_request(signer, assessment()))
    service = ApprovalService(ENFORCE, signer, requests)
    handled = asyncio.run(service.handle(approval_body(), now=NOW))
    assert handled.status is not None
    assert handled.status["state"] == "Accepted"
    (patch,) = requests.patches
    assert patch["resourceVersion"] == "7"  # a concurrent write makes this one fail and retry
    body = {"metadata": {"uid": "uid-1"}, "status": patch["status"]}
    assert signer.answered(body)  # the mark covers the new decision and approval
    assert patch["status"]["risk"]["decision"] == "Approved"
    forged = {**patch["status"], "policy": {**patch["status"]["policy"]}}
    forged["policy"]["approval"] = {**forged["policy"]["approval"], "by": "mallory"}
    assert not signer.answered({"metadata": {"uid": "uid-1"}, "status": forged})
    assert handled.request_event is not None
    assert handled.request_event.reason == "Approved"


def test_the_service_ignores_a_status_it_did_not_sign() -> None:
    requests = Requests(signed_request(StatusSigner(b"someone-else"), assessment()))
    service = ApprovalService(ENFORCE, StatusSigner(b"k"), requests)
    handled = asyncio.run(service.handle(approval_body(), now=NOW))
    assert handled.verdict.state == "Waiting"
    assert requests.patches == []


def test_an_expired_approval_marks_the_pending_request_expired() -> None:
    signer = StatusSigner(b"k")
    requests = Requests(signed_request(signer, assessment()))
    service = ApprovalService(ENFORCE, signer, requests)
    handled = asyncio.run(service.handle(approval_body(expiresAt="2026-03-01T11:00:00Z"), now=NOW))
    assert handled.status is not None
    assert handled.status["reason"] == "Expired"
    (patch,) = requests.patches
    approved = {c["type"]: c for c in patch["status"]["conditions"]}["Approved"]
    assert (approved["status"], approved["reason"]) == ("False", "Expired")
    assert patch["status"]["risk"]["decision"] == "Escalated"


def _approved_request(signer: StatusSigner, answer: Assessment, **spec: Any) -> dict[str, Any]:
    """A signed request that the approval ``approval_body(**spec)`` has approved."""
    decided, _ = apply_approvals(
        answer, request(answer), [approval(**spec)], policy=ENFORCE, now=NOW
    )
    return signed_request(signer, decided)


def test_an_accepted_approval_that_expires_sends_the_request_back_to_waiting() -> None:
    signer = StatusSigner(b"k")
    expires = {"expiresAt": "2026-03-01T12:30:00Z"}
    requests = Requests(_approved_request(signer, assessment(), **expires))
    service = ApprovalService(ENFORCE, signer, requests)
    body = approval_body(**expires)
    # Before expiresAt nothing changes.
    assert asyncio.run(service.expire(body, now=NOW + timedelta(minutes=29))) is None
    assert requests.patches == []
    handled = asyncio.run(service.expire(body, now=NOW + timedelta(minutes=30)))
    assert handled is not None
    assert handled.status is not None
    assert (handled.status["state"], handled.status["reason"]) == ("Ignored", "Expired")
    (patch,) = requests.patches
    assert requests.body is not None
    # What the API server stores: the merge patch over the approved status.
    status = merge_patch(requests.body["status"], patch["status"])
    assert signer.answered({"metadata": {"uid": "uid-1"}, "status": status})
    assert status["risk"]["decision"] == "Escalated"
    assert status["risk"]["reasoning"] == "r."  # the approval's sentence is gone
    assert status["policy"]["approval"] == {"state": "Pending"}
    approved = {c["type"]: c for c in status["conditions"]}["Approved"]
    assert (approved["status"], approved["reason"]) == ("False", "Expired")
    assert "expired at 2026-03-01T12:30:00Z" in approved["message"]
    assert handled.request_event is not None
    assert (handled.request_event.type, handled.request_event.reason) == ("Warning", "Expired")


def test_an_expired_approval_that_no_longer_decides_changes_nothing() -> None:
    signer = StatusSigner(b"k")
    expires = {"expiresAt": "2026-03-01T12:30:00Z"}
    # The request was approved by another approval ("other"), not by this one.
    answer, _ = apply_approvals(
        assessment(), request(), [approval("other")], policy=ENFORCE, now=NOW
    )
    requests = Requests(signed_request(signer, answer))
    service = ApprovalService(ENFORCE, signer, requests)
    later = NOW + timedelta(hours=1)
    assert asyncio.run(service.expire(approval_body(**expires), now=later)) is None
    assert asyncio.run(service.expire(approval_body(), now=later)) is None  # no expiresAt
    assert requests.patches == []


def test_a_lapsed_break_glass_approval_leaves_the_request_denied() -> None:
    policy = ApprovalPolicy(break_glass_group="oncall")
    denied = assessment(band=Band.HIGH)
    record = approval(approverGroups=["oncall"], expiresAt="2026-03-01T12:30:00Z")
    decided, _ = apply_approvals(denied, request(denied), [record], policy=policy, now=NOW)
    assert decided.risk.decision is Decision.APPROVED
    back = lapsed(decided, record)
    assert back.risk.decision is Decision.DENIED
    assert back.policy is not None
    assert back.policy.approval is None
    assert approval_condition(back).reason == "Denied"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies application/merge-patch+json."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
