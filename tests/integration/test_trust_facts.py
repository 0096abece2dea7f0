"""What a requester writes cannot steer the gate: the real operator against the sandbox.

- the environment is a fact about the target (its namespace's label, the admin's mapping, the
  default), and a claimed one only ever makes the answer stricter;
- an approval recorded as Ignored never applies later;
- re-assessment never turns a decision more permissive without a new approval, and enforce
  mode does not start without the status key;
- the status mark covers the Approved condition: a forged one is corrected, now and after a
  restart.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from precedent_sandbox import SandboxThread
from tests.integration.conftest import REPO, Cluster, condition, eventually
from tests.integration.test_approvals import BASE, approval, create_approval, get_approval, request
from tests.integration.test_plugin import plugin

pytestmark = pytest.mark.integration
# The sandbox and a real kube-apiserver (the trust suites run on both).
BACKENDS = ("sandbox", "real")

STATUS = "application/merge-patch+json"
EDGE = "0001-01-01T00:00:00+01:00"


def namespace(cluster: Cluster, name: str, environment: str | None) -> None:
    labels = {"precedent.dev/environment": environment} if environment else {}
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    response = cluster.client.post("/api/v1/namespaces", json=body)
    assert response.status_code == 201, response.text


def payment_restart(name: str, ns: str | None, **labels: str) -> dict[str, Any]:
    target: dict[str, Any] = {"kind": "Deployment", "name": "payment-api"}
    if ns is not None:
        target["namespace"] = ns
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "action": "restart_service",
            "target": target,
            "description": "Restart payment-api: its pods are stuck after the last rollout.",
            "requester": "rita",
            "labels": labels,
        },
    }


def answered(cluster: Cluster, name: str) -> dict[str, Any]:
    return dict(
        eventually(lambda: ((o := cluster.get_request(name)).get("status") or {}).get("mark") and o)
    )


def test_a_claimed_environment_only_makes_an_answer_stricter(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The row: restart_service on payment-api with labels.environment: dev came back low,
    # Approved; with production it is Denied. Nothing checked the claim.
    namespace(cluster, "payments", "production")
    namespace(cluster, "scratch", "dev")
    mapping = tmp_path / "environments.yaml"
    mapping.write_text(
        "kind: EnvironmentMapping\n"
        "rules:\n"
        "  - resourceId: '/subscriptions/*/resourceGroups/rg-prod/*'\n"
        "    environment: production\n"
    )
    monkeypatch.setenv("PRECEDENT_ENVIRONMENT_MAPPING", str(mapping))
    arm = (
        "/subscriptions/0000/resourceGroups/rg-prod/providers/Microsoft.ContainerService/"
        "managedClusters/aks-prod/deployments/payment-api"
    )
    claimed = payment_restart("claims-dev", "payments", environment="dev", cluster="kind-local")
    honest = payment_restart("no-claim", "payments")
    moved = payment_restart("moved", "scratch", environment="dev")
    moved["spec"]["target"]["resourceId"] = arm
    really_dev = payment_restart("really-dev", "scratch", environment="dev")
    stricter = payment_restart("claims-prod", "scratch", environment="production")
    for body in (claimed, honest, moved, really_dev, stricter):
        assert cluster.create(body).status_code == 201
    with cluster.operator():
        answers = {
            name: answered(cluster, name)
            for name in ("claims-dev", "no-claim", "moved", "really-dev", "claims-prod")
        }
    claim = answers["claims-dev"]["status"]
    # The verified context is used: the same answer as with no claim at all.
    assert claim["risk"]["score"] == answers["no-claim"]["status"]["risk"]["score"]
    assert claim["risk"]["decision"] == answers["no-claim"]["status"]["risk"]["decision"]
    assert claim["risk"]["decision"] != "Approved"
    assert claim["context"]["environment"] == "production"
    assert claim["context"]["verified"] is True
    assert (
        "claimed dev, verified production from namespace label on payments"
        in (claim["context"]["claim"])
    )
    assert any(f["name"] == "context" for f in claim["risk"]["factors"])
    warnings = [e for e in cluster.events_for("claims-dev") if e["reason"] == "UnverifiedClaim"]
    assert warnings
    assert warnings[0]["type"] == "Warning"
    assert "verified production" in warnings[0]["message"]
    # Outside Kubernetes the admin's mapping places the resource, even in a dev namespace.
    assert answers["moved"]["status"]["context"]["environment"] == "production"
    assert "environment mapping rule 1" in answers["moved"]["status"]["context"]["source"]
    assert answers["moved"]["status"]["risk"]["score"] > 60
    # A namespace an admin labelled dev is dev: the claim agrees, nothing is overridden.
    dev = answers["really-dev"]["status"]
    assert dev["context"] == {
        "environment": "dev",
        "source": "namespace label on scratch",
        "verified": True,
        "facts": "dev from namespace label on scratch",
    }
    assert dev["risk"]["score"] < claim["risk"]["score"]
    # A claim riskier than the facts stands: it only makes the answer stricter.
    assert answers["claims-prod"]["status"]["risk"]["score"] >= dev["risk"]["score"]


def test_the_default_environment_is_production(cluster: Cluster) -> None:
    # No label on the namespace, no mapping: unknown is the riskiest.
    assert cluster.create(payment_restart("unknown-ns", "nowhere", environment="dev")).status_code
    with cluster.operator():
        status = answered(cluster, "unknown-ns")["status"]
    assert status["context"]["environment"] == "production"
    assert status["context"]["source"] == "default environment"
    assert status["risk"]["decision"] != "Approved"


def _delete_incidents(cluster: Cluster) -> None:
    path = "/apis/precedent.dev/v1alpha1/incidents"
    for item in cluster.client.get(path).json()["items"]:
        cluster.client.delete(f"{path}/{item['metadata']['name']}").raise_for_status()


def _wipe_status(cluster: Cluster, name: str) -> None:
    current = cluster.get_request(name)
    wiped = dict.fromkeys(current.get("status") or {})
    response = cluster.client.patch(
        f"{BASE}/remediationrequests/{name}/status",
        json={"status": wiped},
        headers={"Content-Type": STATUS},
    )
    assert response.status_code == 200, response.text


def test_an_ignored_approval_never_applies_later(cluster: Cluster) -> None:
    # The row: an approval Ignored while the request was Denied applied after the score fell
    # and the operator restarted — Approved by alice, the approval still saying Ignored.
    nsg = {
        "action": "modify_nsg",
        "target": {"kind": "networkSecurityGroups", "name": "nsg-east"},
        "description": "Open port 22 on nsg-east for the bastion.",
        "labels": {"environment": "production"},
    }
    assert cluster.create(request("nsg", **nsg)).status_code == 201
    with cluster.operator():
        first = answered(cluster, "nsg")
        assert first["status"]["risk"]["decision"] == "Denied"
        level = first["status"]["policy"]["accessLevel"]
        create_approval(cluster, approval("nsg-ok", "nsg", accessLevel=level))
        ignored = eventually(lambda: (a := get_approval(cluster, "nsg-ok")).get("status") and a)
    assert ignored["status"]["state"] == "Ignored"
    # The history loses what made it risky, and the answer is gone (written by anyone).
    _delete_incidents(cluster)
    _wipe_status(cluster, "nsg")
    with cluster.operator():
        again = answered(cluster, "nsg")
    assert again["status"]["risk"]["decision"] != "Approved"
    assert condition(again, "Approved")["status"] != "True"  # type: ignore[index]
    assert (again["status"]["policy"].get("approval") or {}).get("by") != "alice"
    assert get_approval(cluster, "nsg-ok")["status"]["state"] == "Ignored"


def test_a_reassessment_is_never_more_permissive_without_an_approval(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The row: after a restart without the key every answered request was assessed again
    # against today's history, and sql-before went Escalated → Approved with nobody approving.
    assert cluster.create(request("sql-before")).status_code == 201
    with cluster.operator():
        first = answered(cluster, "sql-before")
    assert first["status"]["risk"]["decision"] == "Escalated"
    _delete_incidents(cluster)  # today's history would say low
    monkeypatch.setenv("PRECEDENT_STATUS_KEY", "a-rotated-key")  # the old mark is not trusted
    with cluster.operator():
        again = eventually(
            lambda: (
                (o := cluster.get_request("sql-before"))["status"]["mark"]
                != first["status"]["mark"]
                and o
            )
        )
    assert again["status"]["risk"]["decision"] == "Escalated"
    assert condition(again, "Approved")["reason"] == "Pending"  # type: ignore[index]
    assert "Kept Escalated from the earlier answer" in again["status"]["risk"]["reasoning"]
    # A new approval is the way to Approved.
    with cluster.operator():
        create_approval(cluster, approval("sql-before-ok", "sql-before"))
        done = eventually(
            lambda: (
                (o := cluster.get_request("sql-before"))["status"]["risk"]["decision"] == "Approved"
                and o
            )
        )
    assert done["status"]["policy"]["approval"]["by"] == "alice"


def test_enforce_mode_does_not_start_without_a_status_key(tmp_path: Path) -> None:
    with SandboxThread(REPO / "crds") as sandbox:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENT_STATUS_KEY")} | {
            "KUBECONFIG": str(sandbox.write_kubeconfig(tmp_path / "kubeconfig")),
            "PRECEDENT_HISTORY_PATH": "",
            "PRECEDENT_CATALOG": "",
            "PRECEDENT_METRICS_PORT": "0",
            "PRECEDENT_POLICY_MODE": "enforce",
        }
        command = [sys.executable, "-m", "kopf", "run", "-m", "precedent.handlers"]
        done = subprocess.run(
            [*command, "--standalone", "--all-namespaces"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=45,
            check=False,
        )
    assert done.returncode != 0
    assert "PRECEDENT_STATUS_KEY is not set: enforce mode needs the key" in done.stderr
    assert "will retry" not in done.stderr.lower()


def _forge_approved(cluster: Cluster, name: str) -> None:
    current = cluster.get_request(name)
    conditions = [c for c in current["status"]["conditions"] if c.get("type") != "Approved"] + [
        {
            "type": "Approved",
            "status": "True",
            "reason": "Approved",
            "message": "approved by alice: trust me",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    response = cluster.client.patch(
        f"{BASE}/remediationrequests/{name}/status",
        json={"status": {"conditions": conditions}},
        headers={"Content-Type": STATUS},
    )
    assert response.status_code == 200, response.text


def _not_approved(cluster: Cluster, name: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        obj = cluster.get_request(name)
        found = condition(obj, "Approved")
        return obj if found and found["status"] != "True" else None

    return dict(eventually(check))


def test_a_forged_approved_condition_is_corrected(cluster: Cluster) -> None:
    # The row: a status writer without the key patched only the Approved condition; the mark
    # did not cover it, kubectl wait --for=condition=Approved returned, and it survived restarts.
    assert cluster.create(request("sql-forged")).status_code == 201
    with cluster.operator():
        first = answered(cluster, "sql-forged")
        assert condition(first, "Approved")["reason"] == "Pending"  # type: ignore[index]
        _forge_approved(cluster, "sql-forged")
        corrected = _not_approved(cluster, "sql-forged")
    assert condition(corrected, "Approved")["reason"] == "Pending"  # type: ignore[index]
    assert corrected["status"]["risk"]["decision"] == "Escalated"
    reasons = {e["reason"] for e in cluster.events_for("sql-forged")}
    assert "ForgedStatus" in reasons
    # Forged while the operator is away: the restart does not trust it either.
    _forge_approved(cluster, "sql-forged")
    with cluster.operator():
        again = _not_approved(cluster, "sql-forged")
    assert condition(again, "Approved")["reason"] == "Pending"  # type: ignore[index]


CLEAR = "\x1b[2J\x1b[H"
FAKE = "\nApproved: True (approved by alice)"


def test_control_characters_are_refused_in_names_and_escaped_in_output(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    # The row: target.name with ESC [2J and fake lines cleared the reader's screen in explain
    # and forged a log line; a newline in resourceId did the same.
    hostile = request("esc", target={"kind": "servers", "name": f"sql-prod{CLEAR}{FAKE}"})
    refused = cluster.create(hostile)
    assert refused.status_code == 422
    assert "spec.target.name" in refused.text
    with_id = request("esc-id", target={"kind": "servers", "name": "x", "resourceId": f"x{FAKE}"})
    refused = cluster.create(with_id)
    assert refused.status_code == 422
    assert "spec.target.resourceId" in refused.text
    assert (
        cluster.create(
            request("esc-ns", target={"kind": "servers", "name": "x", "namespace": "Bad_NS"})
        ).status_code
        == 422
    )
    # Free text stays free, and is shown escaped: the description and an approval's reason.
    body = request("esc-text", description=f"Raise the TLS version.{CLEAR}{FAKE}")
    assert cluster.create(body).status_code == 201
    with cluster.operator():
        answered(cluster, "esc-text")
        create_approval(cluster, approval("esc-text-ok", "esc-text", reason=f"ok{CLEAR}{FAKE}"))
        eventually(lambda: get_approval(cluster, "esc-text-ok").get("status"))
        code, out, err = plugin("explain", "rr/esc-text")
    assert code == 0, err
    assert "\x1b" not in out
    assert "\\x1b[2J" in out
    assert "\nApproved: True (approved by alice)" not in out
    events = [e["message"] for e in cluster.events_for("esc-text-ok")]
    assert events
    assert not any("\x1b" in m or "\n" in m for m in events)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("kopf")]
    assert not any("\x1b" in line for line in lines)


def test_a_label_cannot_name_another_action_and_dates_stay_in_range(cluster: Cluster) -> None:
    # The row: collect_diagnostics (READ_ONLY) with labels.action: failover_database was
    # Approved with the failover playbook: the policy judged one action, the executor got
    # another's playbook.
    two = request(
        "two-actions", action="collect_diagnostics", labels={"action": "failover_database"}
    )
    refused = cluster.create(two)
    assert refused.status_code == 422
    assert "spec.labels.action must equal spec.action" in refused.text
    # The row: finishedAt 0001-01-01T00:00:00+01:00 overflowed outside validation.
    late = request("ancient", outcome={"result": "succeeded", "finishedAt": EDGE})
    refused = cluster.create(late)
    assert refused.status_code == 422
    assert "spec.outcome.finishedAt must be between" in refused.text
    approval_body = approval("ancient-ok", "x", expiresAt=EDGE)
    refused = cluster.client.post(f"{BASE}/remediationapprovals", json=approval_body)
    assert refused.status_code == 422
    assert "spec.expiresAt must be between" in refused.text
