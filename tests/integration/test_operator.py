"""The real operator against the sandbox: answers, bad input, live history, restarts."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from precedent.adapters.loader import iter_documents
from tests.integration.conftest import DATA, Cluster, condition, eventually, is_true

pytestmark = pytest.mark.integration

SEED = {
    "restart-payment-api": ("high", "Denied", "INC-2025-0847"),
    "modify-nsg-east": ("high", "Denied", "INC-2025-0923"),
    "scale-down-aks-prod": ("high", "Denied", "INC-2025-1089"),
    "update-config-sql-prod": ("medium", "Escalated", "INC-2025-0634"),
    "scale-up-web-tier-01": ("low", "Approved", "INC-2026-0012"),
}
PLAYBOOKS = {
    "restart-payment-api": "service-degradation-rolling-restart",
    "modify-nsg-east": "nsg-rule-change-with-probe-check",
    "scale-down-aks-prod": "node-pool-scale-down-guarded",
    "update-config-sql-prod": "azure-sql-server-parameter-change",
    "scale-up-web-tier-01": "vm-resize-drained",
}


def seed_requests() -> list[dict[str, Any]]:
    return [doc.body for doc in iter_documents([DATA / "requests" / "seed-000.yaml"])]


def request(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"action": "drain_node", "target": {"kind": "Node", "name": "node-7"}},
    }
    body["spec"].update(spec)
    return body


def test_requests_become_ready_with_the_seed_bands_and_an_event(cluster: Cluster) -> None:
    with cluster.operator():
        for body in seed_requests():
            assert cluster.create(body).status_code == 201
        for name, (band, decision, incident) in SEED.items():
            obj = cluster.wait_ready(name)
            status = obj["status"]
            assert status["observedGeneration"] == obj["metadata"]["generation"]
            assert (status["risk"]["band"], status["risk"]["decision"]) == (band, decision)
            assert status["risk"]["mostRelevantIncident"] == incident
            assert status["similarIncidents"][0]["id"] == incident
            assert status["inputHash"].startswith("sha256:")
            if name in PLAYBOOKS:
                assert status["playbook"]["id"] == PLAYBOOKS[name]
                assert status["playbook"]["selectionMethod"] == "data_driven"
                assert status["playbook"]["confidence"] >= 0.7
            else:
                assert status["recommendation"]["action"] == "manual_investigation"
            assert not is_true(obj, "Stalled")
            assert condition(obj, "Reconciling")["status"] == "False"  # type: ignore[index]
            events = eventually(lambda n=name: cluster.events_for(n))
            assert events[0]["reason"] == decision
            assert incident in events[0]["message"]


def test_bad_spec_stalls_with_the_field_named_and_others_are_still_served(cluster: Cluster) -> None:
    with cluster.operator():
        bad = request("bad-resource-id", target={"kind": "Node", "name": "x", "resourceId": "///"})
        assert cluster.create(bad).status_code == 201  # the schema allows it; the operator does not
        assert cluster.create(request("good-after-bad")).status_code == 201
        stalled = eventually(
            lambda: (o := cluster.get_request("bad-resource-id")) and is_true(o, "Stalled") and o
        )
        message = condition(stalled, "Stalled")["message"]  # type: ignore[index]
        assert "spec.target.resourceId" in message
        assert condition(stalled, "Ready")["status"] == "False"  # type: ignore[index]
        cluster.wait_ready("good-after-bad")
        warnings = eventually(lambda: cluster.events_for("bad-resource-id"))
        assert warnings[0]["type"] == "Warning"
        assert warnings[0]["reason"] == "InvalidSpec"
    with cluster.operator():  # a restart re-lists the Stalled request: no second Warning
        cluster.wait_ready("good-after-bad")
        time.sleep(2)
    assert len(cluster.events_for("bad-resource-id")) == 1


def test_spec_is_immutable(cluster: Cluster) -> None:
    assert cluster.create(request("immutable")).status_code == 201
    response = cluster.client.patch(
        "/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests/immutable",
        json={"spec": {"action": "scale_down"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 422
    assert "spec.action is immutable" in response.json()["message"]


def test_invalid_request_is_rejected_by_the_api_with_the_field_named(cluster: Cluster) -> None:
    body = request("no-target")
    del body["spec"]["target"]
    response = cluster.create(body)
    assert response.status_code == 422
    assert "spec.target" in response.json()["message"]


def test_incidents_added_and_removed_while_running_change_later_answers(cluster: Cluster) -> None:
    incident = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "Incident",
        "metadata": {"name": "inc-2026-9001"},
        "spec": {
            "id": "INC-2026-9001",
            "title": "Defragmenting volume vol-9 corrupted the filesystem",
            "action": "defrag_volume",
            "resource": {"type": "VolumeAttachment", "name": "vol-9"},
            "severity": "critical",
            "tags": ["storage"],
        },
    }
    spec = {"action": "defrag_volume", "target": {"kind": "VolumeAttachment", "name": "vol-9"}}
    with cluster.operator():
        assert cluster.create(request("before", **spec)).status_code == 201
        before = cluster.wait_ready("before")["status"]["risk"]
        assert before.get("mostRelevantIncident") != "INC-2026-9001"
        assert cluster.create(incident).status_code == 201

        # The incident's watch event and the next request race: ask again with fresh requests.
        attempt = iter(range(1000))

        def top_of_a_new_request() -> tuple[str | None, float]:
            name = f"probe-{next(attempt)}"
            assert cluster.create(request(name, **spec)).status_code == 201
            risk = cluster.wait_ready(name)["status"]["risk"]
            return risk.get("mostRelevantIncident"), float(risk["score"])

        def found_the_new_incident() -> bool:
            top, score = top_of_a_new_request()
            return top == "INC-2026-9001" and score >= 90  # action + type + name = 0.9 × 100

        eventually(found_the_new_incident, timeout=30)
        incident_path = "/apis/precedent.dev/v1alpha1/incidents/inc-2026-9001"
        cluster.client.delete(incident_path).raise_for_status()
        eventually(lambda: top_of_a_new_request()[0] != "INC-2026-9001", timeout=30)


def test_restart_mid_batch_every_request_ends_ready_exactly_once(cluster: Cluster) -> None:
    template = seed_requests()[0]
    names = [f"batch-{i}" for i in range(60)]
    for name in names:
        body = copy.deepcopy(template)
        body["metadata"]["name"] = name
        assert cluster.create(body).status_code == 201

    def ready_names() -> set[str]:
        items = cluster.client.get(
            "/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests"
        ).json()["items"]
        return {o["metadata"]["name"] for o in items if is_true(o, "Ready")}

    with cluster.operator():
        eventually(lambda: len(ready_names()) >= 5)
    first_pass = {n: condition(cluster.get_request(n), "Ready") for n in ready_names()}

    with cluster.operator():
        eventually(lambda: ready_names() >= set(names), timeout=120)
        second_pass = set(names) - first_pass.keys()
        # Events are posted in the background; give the last ones time to land.
        eventually(lambda: all(cluster.events_for(n) for n in second_pass), timeout=30)

    for name, ready in first_pass.items():
        assert condition(cluster.get_request(name), "Ready") == ready, name  # not re-answered
    for name in names:
        decisions = [e for e in cluster.events_for(name) if e["reason"] == "Denied"]
        # Exactly one decision Event each: posted before the status, under a name only that
        # answer produces, so a restart neither loses nor repeats it.
        assert len(decisions) == 1, name


def test_playbooks_added_and_removed_while_running_change_later_answers(cluster: Cluster) -> None:
    [sql] = [b for b in seed_requests() if b["metadata"]["name"] == "update-config-sql-prod"]
    playbooks = "/apis/precedent.dev/v1alpha1/playbooks"
    original = cluster.client.get(f"{playbooks}/azure-sql-server-parameter-change").json()
    attempt = iter(range(1000))

    def chosen_for_a_new_request() -> str | None:
        body = copy.deepcopy(sql)
        body["metadata"] = {"name": f"sql-{next(attempt)}", "namespace": "default"}
        assert cluster.create(body).status_code == 201
        status = cluster.wait_ready(body["metadata"]["name"])["status"]
        return (status.get("playbook") or {}).get("id")

    with cluster.operator():
        assert chosen_for_a_new_request() == "azure-sql-server-parameter-change"
        cluster.client.delete(f"{playbooks}/azure-sql-server-parameter-change").raise_for_status()
        eventually(lambda: chosen_for_a_new_request() != "azure-sql-server-parameter-change")
        renamed = {
            "apiVersion": "precedent.dev/v1alpha1",
            "kind": "Playbook",
            "metadata": {"name": "sql-parameter-change-v2"},
            "spec": original["spec"],
        }
        assert cluster.create(renamed).status_code == 201
        eventually(lambda: chosen_for_a_new_request() == "sql-parameter-change-v2")


def test_playbook_status_shows_counts_and_the_smoothed_success_rate(cluster: Cluster) -> None:
    path = "/apis/precedent.dev/v1alpha1/playbooks"
    with cluster.operator():
        oom = eventually(
            lambda: (
                (o := cluster.client.get(f"{path}/pod-oom-recovery").json())
                .get("status", {})
                .get("successRate")
                and o
            )
        )
        assert oom["status"]["executions"] == 40
        assert oom["status"]["successes"] == 38
        assert oom["status"]["successRate"] == round(39 / 42, 4)
        new = eventually(
            lambda: (
                (o := cluster.client.get(f"{path}/database-recovery").json())
                .get("status", {})
                .get("successRate")
                and o
            )
        )
        assert new["status"]["successRate"] == 0.5  # a new playbook: (0 + 1) / (0 + 2)
