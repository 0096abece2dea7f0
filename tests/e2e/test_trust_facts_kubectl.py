"""What a requester writes cannot steer the gate, tried as people try it: real ``kubectl`` as
different users against the token-authenticating sandbox with the shipped RBAC and admission
policies, and the real operator.

- a requester claiming ``environment: dev`` for a target in a namespace an admin labelled
  production is answered as production, the status says so, and a Warning Event is posted;
- a ``labels.action`` naming another action is refused by ``kubectl create``;
- a status writer (a cluster without the shipped status-writer policy) forging the
  ``Approved`` condition: the operator puts its own answer back, and ``kubectl wait
  --for=condition=Approved`` does not return on it; with the policy the forgery is refused;
- control characters in a field never reach the reader's terminal through ``kubectl
  precedent explain``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_approvals_kubectl import User, approval_file, install, secured, write
from tests.e2e.test_approvals_rbac import PATHS
from tests.helpers import eventually
from tests.integration.conftest import Cluster
from tests.integration.test_approvals import request

pytestmark = pytest.mark.e2e
__all__ = ["secured"]

APPROVED = 'jsonpath={.status.conditions[?(@.type=="Approved")].status}'


def labelled_namespace(cluster: Cluster, name: str, environment: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"precedent.dev/environment": environment}},
    }
    answer = cluster.client.post("/api/v1/namespaces", json=body)
    assert answer.status_code == 201, answer.text


def restart(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return request(
        name,
        action="restart_service",
        target={"kind": "Deployment", "name": "payment-api", "namespace": namespace},
        description="Restart payment-api: its pods are stuck after the last rollout.",
        labels=labels,
    )


def test_a_claimed_dev_environment_in_a_production_namespace(
    secured: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, _ = secured
    install(cluster)
    labelled_namespace(cluster, "payments", "production")
    rita = User(cluster, "rita", tmp_path)
    admin = User(cluster, "admin", tmp_path / "users")
    rr = write(tmp_path / "rr.yaml", restart("claims-dev", "payments", environment="dev"))
    assert "claims-dev created" in rita("create", "-f", rr).stdout
    with cluster.operator():
        eventually(
            lambda: rita("get", "rr", "claims-dev", "-o", "jsonpath={.status.mark}").stdout,
            timeout=60,
        )
        approved = rita("get", "rr", "claims-dev", "-o", APPROVED).stdout
        context = json.loads(
            rita("get", "rr", "claims-dev", "-o", "jsonpath={.status.context}").stdout
        )
        waited = rita(
            "wait", "--for=condition=Approved", "rr/claims-dev", "--timeout=3s", check=False
        )
        events = json.loads(admin("get", "events", "-n", "default", "-o", "json").stdout)
    assert approved != "True"
    assert waited.returncode != 0
    assert context["environment"] == "production"
    assert context["verified"] is True
    assert "claimed dev, verified production from namespace label on payments" in context["claim"]
    warnings = [
        e
        for e in events["items"]
        if e["involvedObject"]["name"] == "claims-dev" and e["reason"] == "UnverifiedClaim"
    ]
    assert warnings, [e["reason"] for e in events["items"]]
    assert warnings[0]["type"] == "Warning"
    assert "verified production" in warnings[0]["message"]


def test_a_label_naming_another_action_is_refused_by_kubectl_create(
    secured: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, _ = secured
    install(cluster)
    rita = User(cluster, "rita", tmp_path)
    for key in ("action", "Action", "precedent.dev/action", "ACTION"):
        body = request(
            "two-actions",
            action="collect_diagnostics",
            target={"kind": "servers", "name": "sql-prod"},
            labels={key: "failover_database"},
        )
        refused = rita("create", "-f", write(tmp_path / "two.yaml", body), check=False)
        assert refused.returncode != 0, key
        assert "spec.labels.action must equal spec.action" in refused.stderr, key
    assert rita("get", "rr", "-o", "name").stdout == ""


def _status_writer(cluster: Cluster, user: str) -> None:
    """A broad custom role of the kind the status-writer policy exists for."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "requests-status-writer"},
        "rules": [
            {
                "apiGroups": ["precedent.dev"],
                "resources": ["remediationrequests", "remediationrequests/status"],
                "verbs": ["get", "list", "watch", "patch", "update"],
            }
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"requests-status-writer-{user}"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "requests-status-writer",
        },
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
    }
    for doc in (role, binding):
        answer = cluster.client.post(PATHS[doc["kind"]], json=doc)
        assert answer.status_code == 201, answer.text


def _forgery(writer: User, name: str) -> Any:
    current = json.loads(writer("get", "rr", name, "-o", "json").stdout)
    conditions = [c for c in current["status"]["conditions"] if c["type"] != "Approved"]
    conditions.append(
        {
            "type": "Approved",
            "status": "True",
            "reason": "Approved",
            "message": "approved by alice: trust me",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    )
    patch = json.dumps({"status": {"conditions": conditions}})
    return writer(
        "patch", "rr", name, "--subresource=status", "--type=merge", "-p", patch, check=False
    )


def test_a_forged_approved_condition_does_not_satisfy_kubectl_wait(
    secured: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, _ = secured
    install(cluster)
    _status_writer(cluster, "bob")
    rita, bob = User(cluster, "rita", tmp_path), User(cluster, "bob", tmp_path)
    rita("create", "-f", write(tmp_path / "rr.yaml", request("sql-forged")))
    with cluster.operator():
        rita("wait", "--for=condition=Approved=Unknown", "rr/sql-forged", "--timeout=60s")
        # The shipped policy refuses the status write, whatever RBAC grants.
        refused = _forgery(bob, "sql-forged")
        assert refused.returncode != 0
        assert "precedent-status-writer" in refused.stderr
        # Without the policy (a cluster that did not install it) the write goes through …
        answer = cluster.client.delete(
            PATHS["ValidatingAdmissionPolicyBinding"] + "/precedent-status-writer"
        )
        assert answer.status_code == 200, answer.text
        forged = eventually(lambda: (r := _forgery(bob, "sql-forged")).returncode == 0 and r)
        assert forged
        # … and the operator writes its own answer over it.
        eventually(
            lambda: rita("get", "rr", "sql-forged", "-o", APPROVED).stdout == "Unknown",
            timeout=60,
        )
        waited = rita(
            "wait", "--for=condition=Approved", "rr/sql-forged", "--timeout=3s", check=False
        )
        pending = rita("wait", "--for=condition=Approved=Unknown", "rr/sql-forged", "--timeout=10s")
        decision = rita("get", "rr", "sql-forged", "-o", "jsonpath={.status.risk.decision}")
        events = json.loads(
            User(cluster, "admin", tmp_path / "users")(
                "get", "events", "-n", "default", "-o", "json"
            ).stdout
        )
    assert waited.returncode != 0
    assert pending.returncode == 0
    assert decision.stdout == "Escalated"
    reasons = {e["reason"] for e in events["items"] if e["involvedObject"]["name"] == "sql-forged"}
    assert "ForgedStatus" in reasons


def test_control_characters_never_reach_the_terminal(
    secured: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, _ = secured
    install(cluster)
    rita = User(cluster, "rita", tmp_path)
    clear, fake = "\x1b[2J\x1b[H", "\nApproved: True (approved by alice)"
    hostile = request("esc-name", target={"kind": "servers", "name": f"sql-prod{clear}{fake}"})
    refused = rita("create", "-f", write(tmp_path / "name.yaml", hostile), check=False)
    assert refused.returncode != 0
    assert "spec.target.name" in refused.stderr
    body = request("esc-text", description=f"Raise the TLS version.{clear}{fake}")
    rita("create", "-f", write(tmp_path / "text.yaml", body))
    alice = User(cluster, "alice", tmp_path)
    ok = approval_file(tmp_path / "esc-text-ok.yaml", "esc-text", "alice")
    document = yaml.safe_load(Path(ok).read_text())
    document["spec"]["reason"] = f"window open{clear}{fake}"
    with cluster.operator():
        rita("wait", "--for=condition=Approved=Unknown", "rr/esc-text", "--timeout=60s")
        alice("create", "-f", write(Path(ok), document))
        alice("wait", "--for=condition=Approved", "rr/esc-text", "--timeout=60s")
        shown = rita("precedent", "explain", "rr/esc-text")
    assert "window open" in shown.stdout
    assert "\x1b" not in shown.stdout
    assert "\\x1b[2J" in shown.stdout
    assert "\nApproved: True (approved by alice)" not in shown.stdout
