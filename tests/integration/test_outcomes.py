"""Reported outcomes with the real operator against the sandbox: playbook counts recounted once
(across a restart and replayed events), an Incident for a failure that later requests find, and
an outcome that can be set only once."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from precedent.adapters.loader import iter_documents
from precedent.core.outcomes import INCIDENT_REFERENCE_ANNOTATION, incident_name
from tests.integration.conftest import DATA, Cluster, eventually
from tests.integration.test_approvals import (
    approval,
    approved_condition,
    condition,
    create_approval,
)

pytestmark = pytest.mark.integration
# The sandbox and a real kube-apiserver (the trust suites run on both).
BACKENDS = ("sandbox", "real")

API = "/apis/precedent.dev/v1alpha1"
PLAYBOOK = "service-degradation-rolling-restart"
PRIOR = (58, 51)  # its spec.history in data/playbooks/workloads.yaml
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(autouse=True)
def audit_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Audit-only mode: every answered request may run (seed 000's restart is Denied in
    enforce mode, and only an approved action reports an outcome the operator counts)."""
    monkeypatch.setenv("PRECEDENT_POLICY_MODE", "audit")


def restart_request(name: str) -> dict[str, Any]:
    """Seed 000's restart-payment-api request, under another name."""
    [body] = [
        doc.body
        for doc in iter_documents([DATA / "requests" / "seed-000.yaml"])
        if doc.name == "restart-payment-api"
    ]
    body = copy.deepcopy(body)
    body["metadata"] = {"name": name, "namespace": "default"}
    body["spec"]["requester"] = "rita"  # what admission records on a cluster; alice approves
    return body


def defrag_request(name: str) -> dict[str, Any]:
    """A change nothing in the bundled history resembles."""
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "action": "defrag_volume",
            "target": {"kind": "VolumeAttachment", "name": "vol-9"},
            "description": "Defragment vol-9 to recover write throughput",
            "signal": {"name": "VolumeWriteLatencyHigh", "severity": "critical"},
            "labels": {"environment": "production"},
            "requester": "rita",
        },
    }


def approve(cluster: Cluster, name: str) -> None:
    """Approve the (answered) request unless policy already did: outcomes count only for an
    approved action."""
    answer = cluster.wait_ready(name)
    if condition(answer, "Approved")["status"] == "True":
        return
    assert answer["status"]["risk"]["decision"] == "Escalated", "only an escalation is approved"
    level = answer["status"]["policy"]["accessLevel"]
    create_approval(cluster, approval(f"{name}-ok", name, accessLevel=level))
    approved_condition(cluster, name, "Approved")


def report(cluster: Cluster, name: str, outcome: dict[str, Any]) -> Any:
    """``kubectl patch rr NAME --type merge -p '{"spec":{"outcome":…}}'`` after the action ran
    (the request approved first)."""
    approve(cluster, name)
    return cluster.client.patch(
        f"{API}/namespaces/default/remediationrequests/{name}",
        json={"spec": {"outcome": outcome}},
        headers=MERGE,
    )


def handled(cluster: Cluster, name: str) -> dict[str, Any]:
    """Wait until the operator recorded the request's outcome as handled; return the request."""
    return dict(
        eventually(
            lambda: (
                (o := cluster.get_request(name))
                .get("status", {})
                .get("outcome", {})
                .get("handledAt")
                and o
            )
        )
    )


def playbook_counts(cluster: Cluster) -> tuple[int, int, float]:
    """The playbook's status: executions, successes, smoothed success rate."""
    status = cluster.client.get(f"{API}/playbooks/{PLAYBOOK}").json().get("status", {})
    return status.get("executions"), status.get("successes"), status.get("successRate")


def outcome_events(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    """The Events the operator posted about the request's outcome."""
    return [e for e in cluster.events_for(name) if e["reason"].startswith("Outcome")]


def test_outcomes_are_counted_once_across_replays_and_a_restart(cluster: Cluster) -> None:
    n0, s0 = PRIOR
    with cluster.operator():
        assert cluster.create(restart_request("restart-1")).status_code == 201
        assert cluster.create(restart_request("restart-2")).status_code == 201
        before = cluster.wait_ready("restart-1")
        cluster.wait_ready("restart-2")
        assert before["status"]["playbook"]["id"] == PLAYBOOK
        eventually(lambda: playbook_counts(cluster)[0] == n0)

        response = report(
            cluster,
            "restart-1",
            {
                "result": "failed",
                "playbook": {"id": PLAYBOOK, "version": "v2.1"},
                "finishedAt": "2026-03-02T10:15:00Z",
                "message": "Pods restarted but the queue consumer deadlocked again",
            },
        )
        assert response.status_code == 200, response.text
        assert response.json()["metadata"]["generation"] == 2
        after = handled(cluster, "restart-1")
        assert after["status"]["outcome"]["result"] == "failed"
        assert after["status"]["outcome"]["playbook"] == PLAYBOOK
        # The answer stands for the new generation: same risk, same hash, generation followed.
        assert after["status"]["risk"] == before["status"]["risk"]
        assert after["status"]["inputHash"] == before["status"]["inputHash"]
        assert after["status"]["observedGeneration"] == 2
        eventually(lambda: playbook_counts(cluster) == (n0 + 1, s0, round((s0 + 1) / (n0 + 3), 4)))

        ok = report(cluster, "restart-2", {"result": "succeeded", "playbook": {"id": PLAYBOOK}})
        assert ok.status_code == 200, ok.text
        handled(cluster, "restart-2")
        counted = (n0 + 2, s0 + 1, round((s0 + 2) / (n0 + 4), 4))
        eventually(lambda: playbook_counts(cluster) == counted)

        # The in-process catalog scores the next request with the live counts (seed 004).
        assert cluster.create(restart_request("restart-3")).status_code == 201
        chosen = cluster.wait_ready("restart-3")["status"]["playbook"]
        assert chosen["id"] == PLAYBOOK
        assert chosen["components"]["historical"] == pytest.approx(counted[2], abs=1e-4)

        # A replayed event (any change to the object) counts nothing again.
        cluster.client.patch(
            f"{API}/namespaces/default/remediationrequests/restart-1",
            json={"metadata": {"labels": {"touched": "yes"}}},
            headers=MERGE,
        ).raise_for_status()
        assert cluster.create(restart_request("restart-4")).status_code == 201
        cluster.wait_ready("restart-4")
        assert playbook_counts(cluster) == counted
        eventually(lambda: outcome_events(cluster, "restart-1"))
        handled_at = after["status"]["outcome"]["handledAt"]

    with cluster.operator():
        # Everything is rebuilt from the objects; a request created now is answered only after
        # the whole listing was indexed and the resumed handlers had their turn.
        assert cluster.create(restart_request("restart-5")).status_code == 201
        cluster.wait_ready("restart-5")
        assert playbook_counts(cluster) == counted
        again = cluster.get_request("restart-1")
        assert again["status"]["outcome"]["handledAt"] == handled_at  # not handled twice
        assert again["status"]["risk"] == before["status"]["risk"]

    assert playbook_counts(cluster) == counted
    [event] = outcome_events(cluster, "restart-1")
    assert (event["type"], event["reason"]) == ("Warning", "OutcomeFailed")
    assert f"{s0}/{n0 + 1} successful" in event["message"]
    assert [e["type"] for e in outcome_events(cluster, "restart-2")] == ["Normal"]


def test_a_failed_outcome_becomes_an_incident_that_later_requests_find(cluster: Cluster) -> None:
    with cluster.operator():
        assert cluster.create(defrag_request("defrag-1")).status_code == 201
        first = cluster.wait_ready("defrag-1")
        uid = first["metadata"]["uid"]
        name = incident_name("default", "defrag-1", uid)
        assert all(i["id"] != name for i in first["status"].get("similarIncidents", []))

        message = "Defragmentation corrupted the ext4 journal; volume remounted read-only"
        response = report(cluster, "defrag-1", {"result": "failed", "message": message})
        assert response.status_code == 200, response.text
        assert handled(cluster, "defrag-1")["status"]["outcome"]["incident"] == name

        incident = cluster.client.get(f"{API}/incidents/{name}").json()
        assert incident["metadata"]["annotations"][INCIDENT_REFERENCE_ANNOTATION] == (
            "default/defrag-1"
        )
        spec = incident["spec"]
        assert spec["id"] == name
        assert spec["outcome"] == "unresolved"
        assert spec["severity"] == "critical"  # from signal.severity
        assert spec["action"] == "defrag_volume"
        assert spec["resource"] == {"type": "volumeattachment", "name": "vol-9"}
        assert message in spec["title"]
        assert "environment production" in spec["description"]
        assert "environment-production" in spec["tags"]

        # The Incident watch adds it to the history; a later similar request is scored with it.
        attempt = iter(range(1000))

        def later_request() -> dict[str, Any]:
            later = defrag_request(f"defrag-later-{next(attempt)}")
            assert cluster.create(later).status_code == 201
            return dict(cluster.wait_ready(later["metadata"]["name"])["status"])

        status = eventually(
            lambda: (s := later_request())["risk"].get("mostRelevantIncident") == name and s,
            timeout=30,
        )
        assert status["similarIncidents"][0]["id"] == name
        assert status["similarIncidents"][0]["outcome"] == "unresolved"
        assert status["risk"]["score"] > first["status"]["risk"]["score"]
        assert name in status["risk"]["reasoning"]

        # The outcome is set once: a second report is refused by the API, naming the field.
        second = report(cluster, "defrag-1", {"result": "succeeded"})
        assert second.status_code == 422
        assert "spec.outcome" in second.json()["message"]
        removed = cluster.client.patch(
            f"{API}/namespaces/default/remediationrequests/defrag-1",
            json={"spec": {"outcome": None}},
            headers=MERGE,
        )
        assert removed.status_code == 422
        assert "spec.outcome" in removed.json()["message"]
        [event] = eventually(lambda: outcome_events(cluster, "defrag-1"))
        assert event["type"] == "Warning"
        assert name in event["message"]
