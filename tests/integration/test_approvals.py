"""Approvals with the real operator against the sandbox: escalated → approved / rejected,
ignored approvals say why, audit-only makes nothing wait, and a resourceId that names another
resource is a bad spec."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.integration.conftest import Cluster, condition, eventually

pytestmark = pytest.mark.integration
# The sandbox and a real kube-apiserver (the trust suites run on both).
BACKENDS = ("sandbox", "real")

BASE = "/apis/precedent.dev/v1alpha1/namespaces/default"

# Seed 000's update_config on sql-prod: medium band, Escalated (a WRITE action).
SQL_PROD: dict[str, Any] = {
    "action": "update_config",
    "target": {"kind": "servers", "name": "sql-prod"},
    "description": "Raise the minimal TLS version of sql-prod from 1.1 to 1.2.",
    "labels": {"incident-type": "config-change", "environment": "production"},
}


def request(name: str, requester: str = "rita", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**SQL_PROD, "requester": requester, **spec},
    }


def approval(name: str, target: str, **spec: Any) -> dict[str, Any]:
    body = {
        "requestRef": {"name": target},
        "decision": "approve",
        "reason": "change window open; runbook checked",
        "approver": "alice",
        "accessLevel": "WRITE",
    }
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationApproval",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**body, **spec},
    }


def create_approval(cluster: Cluster, body: dict[str, Any]) -> None:
    response = cluster.client.post(f"{BASE}/remediationapprovals", json=body)
    assert response.status_code == 201, response.text


def get_approval(cluster: Cluster, name: str) -> dict[str, Any]:
    response = cluster.client.get(f"{BASE}/remediationapprovals/{name}")
    response.raise_for_status()
    return dict(response.json())


def judged(cluster: Cluster, name: str) -> dict[str, Any]:
    """Wait until the operator wrote the approval's state, and return the approval."""
    return dict(
        eventually(lambda: (o := get_approval(cluster, name)).get("status", {}).get("state") and o)
    )


def approved_condition(cluster: Cluster, name: str, reason: str) -> dict[str, Any]:
    """Wait until the request's Approved condition has ``reason``; return the request."""
    return dict(
        eventually(
            lambda: (
                (o := cluster.get_request(name))
                and (c := condition(o, "Approved"))
                and c["reason"] == reason
                and o
            )
        )
    )


def test_an_escalated_request_waits_and_an_approval_releases_it(cluster: Cluster) -> None:
    assert cluster.create(request("tls")).status_code == 201
    with cluster.operator():
        pending = approved_condition(cluster, "tls", "Pending")
        assert pending["status"]["risk"]["decision"] == "Escalated"
        assert condition(pending, "Approved")["status"] == "Unknown"  # type: ignore[index]
        assert pending["status"]["policy"]["approval"] == {"state": "Pending"}

        create_approval(cluster, approval("tls-ok", "tls"))
        answer = approved_condition(cluster, "tls", "Approved")
        accepted = judged(cluster, "tls-ok")
    assert condition(answer, "Approved")["status"] == "True"  # type: ignore[index]
    assert answer["status"]["risk"]["decision"] == "Approved"
    record = answer["status"]["policy"]["approval"]
    assert record["state"] == "Approved"
    assert record["by"] == "alice"
    assert record["reason"] == "change window open; runbook checked"
    assert record["approval"] == "tls-ok"
    assert accepted["status"]["state"] == "Accepted"
    assert accepted["status"]["reason"] == "Approved"
    reasons = {e["reason"] for e in cluster.events_for("tls")}
    assert {"Escalated", "Approved"} <= reasons
    assert "Approved" in {e["reason"] for e in cluster.events_for("tls-ok")}


def test_a_reassessed_request_keeps_its_approval(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cluster.create(request("tls-again")).status_code == 201
    with cluster.operator():
        approved_condition(cluster, "tls-again", "Pending")
        create_approval(cluster, approval("tls-again-ok", "tls-again"))
        first = approved_condition(cluster, "tls-again", "Approved")
    # Another key: the operator no longer trusts its old mark and assesses again; the approval,
    # re-listed through the index, is applied again to the fresh answer.
    monkeypatch.setenv("PRECEDENT_STATUS_KEY", "another-key")
    with cluster.operator():
        again = eventually(
            lambda: (
                (o := cluster.get_request("tls-again"))["status"]["mark"] != first["status"]["mark"]
                and o
            )
        )
    assert again["status"]["risk"]["decision"] == "Approved"
    assert again["status"]["policy"]["approval"] == first["status"]["policy"]["approval"]
    assert condition(again, "Approved")["reason"] == "Approved"  # type: ignore[index]


def test_a_rejection_denies_the_request(cluster: Cluster) -> None:
    assert cluster.create(request("tls-no")).status_code == 201
    create_approval(cluster, approval("tls-no-no", "tls-no", decision="reject", approver="bob"))
    with cluster.operator():
        answer = approved_condition(cluster, "tls-no", "Rejected")
    assert condition(answer, "Approved")["status"] == "False"  # type: ignore[index]
    assert answer["status"]["risk"]["decision"] == "Denied"
    assert answer["status"]["policy"]["approval"]["by"] == "bob"


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"expiresAt": "2020-01-01T00:00:00Z"}, "Expired"),
        ({"approver": "rita"}, "SelfApproval"),
        ({"accessLevel": "READ_ONLY"}, "AccessLevelMismatch"),
        ({"requestRef": {"name": "tls-x", "uid": "not-this-one"}}, "OtherRequest"),
    ],
)
def test_invalid_approvals_are_ignored_with_the_reason(
    cluster: Cluster, spec: dict[str, Any], reason: str
) -> None:
    assert cluster.create(request("tls-x")).status_code == 201
    with cluster.operator():
        approved_condition(cluster, "tls-x", "Pending")
        create_approval(cluster, approval("bad", "tls-x", **spec))
        ignored = judged(cluster, "bad")
        warned = eventually(
            lambda: [e for e in cluster.events_for("bad") if e["type"] == "Warning"]
        )
    assert ignored["status"]["state"] == "Ignored"
    assert ignored["status"]["reason"] == reason
    assert warned[0]["reason"] == reason
    answer = cluster.get_request("tls-x")
    assert answer["status"]["risk"]["decision"] == "Escalated"
    # An approval that came too late leaves the request not approved (False, Expired); the
    # others leave it Pending (Unknown).
    expected = "False" if reason == "Expired" else "Unknown"
    assert condition(answer, "Approved")["status"] == expected  # type: ignore[index]


def test_audit_only_mode_makes_nothing_wait(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECEDENT_POLICY_MODE", "audit")
    assert cluster.create(request("tls-audit")).status_code == 201
    with cluster.operator():
        answer = approved_condition(cluster, "tls-audit", "AuditOnly")
    assert condition(answer, "Approved")["status"] == "True"  # type: ignore[index]
    assert answer["status"]["risk"]["decision"] == "Approved"
    assert answer["status"]["policy"]["wouldBe"] == "Escalated"
    assert answer["status"]["policy"]["approval"] == {"state": "AuditOnly"}


def test_a_resource_id_naming_another_resource_is_a_bad_spec(cluster: Cluster) -> None:
    # Regression: resourceId foo/bar silently replaced sql-prod, and the request scored 20
    # Approved against a resource nobody named.
    target = {**SQL_PROD["target"], "resourceId": "foo/bar"}
    assert cluster.create(request("mismatch", target=target)).status_code == 201
    with cluster.operator():
        answer = eventually(
            lambda: (
                (o := cluster.get_request("mismatch"))
                and (c := condition(o, "Stalled"))
                and c["status"] == "True"
                and o
            )
        )
    stalled = condition(answer, "Stalled")
    assert stalled is not None
    assert "spec.target.resourceId: names foo/bar" in stalled["message"]
    assert "spec.target.name is sql-prod" in stalled["message"]
    assert "risk" not in answer["status"]


def test_an_approval_that_expires_sends_the_request_back_to_waiting(cluster: Cluster) -> None:
    assert cluster.create(request("tls-lapse")).status_code == 201
    with cluster.operator():
        approved_condition(cluster, "tls-lapse", "Pending")
        # A few seconds: long enough to be accepted first, short enough for a test.
        expires = datetime.now(UTC) + timedelta(seconds=6)
        stamp = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
        create_approval(cluster, approval("tls-lapse-ok", "tls-lapse", expiresAt=stamp))
        approved = approved_condition(cluster, "tls-lapse", "Approved")
        assert approved["status"]["risk"]["decision"] == "Approved"
        lapsed = approved_condition(cluster, "tls-lapse", "Expired")
        expired = judged_as(cluster, "tls-lapse-ok", "Expired")
        # Approvals are immutable: a new one is how the request goes ahead again.
        create_approval(cluster, approval("tls-lapse-again", "tls-lapse"))
        again = approved_condition(cluster, "tls-lapse", "Approved")
    cond = condition(lapsed, "Approved")
    assert cond is not None
    assert cond["status"] == "False"
    assert f"approval tls-lapse-ok expired at {stamp}" in cond["message"]
    assert lapsed["status"]["risk"]["decision"] == "Escalated"
    assert lapsed["status"]["policy"]["approval"] == {"state": "Pending"}
    assert expired["status"]["state"] == "Ignored"
    warnings = [e for e in cluster.events_for("tls-lapse") if e["reason"] == "Expired"]
    assert warnings
    assert warnings[0]["type"] == "Warning"
    assert again["status"]["policy"]["approval"]["approval"] == "tls-lapse-again"


def judged_as(cluster: Cluster, name: str, reason: str) -> dict[str, Any]:
    """Wait until the approval's status has ``reason``; return the approval."""
    return dict(
        eventually(
            lambda: (
                (o := get_approval(cluster, name)).get("status", {}).get("reason") == reason and o
            )
        )
    )
