"""The approval workflow as people run it: real ``kubectl`` (and the ``kubectl precedent``
plugin, found on PATH) as three users against a sandbox that authenticates them from a static
token file and enforces RBAC and the shipped ValidatingAdmissionPolicies, with the real
operator running.

rita is a precedent-requester and also a precedent-approver (people in a team often are both:
that is when self-approval matters, and admission, not RBAC, is what stops it), alice a
precedent-approver, bob has no role at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.backends import admission_in_force
from tests.e2e.test_approvals_rbac import PATHS, REPO, _bindings, _documents, secured
from tests.integration.conftest import Cluster
from tests.integration.test_approvals import request

pytestmark = pytest.mark.e2e
__all__ = ["secured"]  # the fixture, shared with the httpx version of these checks

BIN = Path(sys.executable).parent  # kubectl-precedent, installed with the package


class User:
    """kubectl (and its precedent plugin) with one user's kubeconfig."""

    def __init__(self, cluster: Cluster, name: str, home: Path) -> None:
        self.name = name
        self.kubeconfig = cluster.sandbox.write_kubeconfig(home / name / "config", user=name)  # type: ignore[call-arg]
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        self.cache = home / name / "cache"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl ARGS`` as this user; raises with both streams when ``check`` and it fails."""
        # kubectl refuses flags before a plugin's name; the plugin reads $KUBECONFIG itself.
        flags = [] if args[:1] == ("precedent",) else ["--cache-dir", str(self.cache)]
        result = subprocess.run(
            ["kubectl", *flags, *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=self.env,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"{self.name}: kubectl {' '.join(args)} failed:\n{result.stderr}")
        return result


def install(cluster: Cluster) -> None:
    """The shipped RBAC and admission manifests, and one ClusterRoleBinding per role."""
    manifests = REPO / "manifests"
    documents = _documents(
        manifests / "rbac.yaml",
        manifests / "rbac" / "roles.yaml",
        *sorted((manifests / "admission").glob("*.yaml")),
    )
    rita_approves = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "precedent-approver-rita"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "precedent-approver",
        },
        "subjects": [{"kind": "User", "name": "rita", "apiGroup": "rbac.authorization.k8s.io"}],
    }
    for doc in [*documents, *_bindings(), rita_approves]:
        if doc["kind"] in PATHS:
            answer = cluster.client.post(PATHS[doc["kind"]], json=doc)
            assert answer.status_code in (201, 409), answer.text
    admission_in_force(cluster.client)


def write(path: Path, body: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(body))
    return str(path)


def approval_file(path: Path, target: str, approver: str, decision: str = "approve") -> str:
    return write(
        path,
        {
            "apiVersion": "precedent.dev/v1alpha1",
            "kind": "RemediationApproval",
            "metadata": {"name": path.stem, "namespace": "default"},
            "spec": {
                "requestRef": {"name": target},
                "decision": decision,
                "reason": "change window open; runbook checked",
                "approver": approver,
                "accessLevel": "WRITE",
            },
        },
    )


def test_requester_approver_and_stranger_with_kubectl(
    secured: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, _ = secured
    install(cluster)
    rita, alice, bob = (User(cluster, n, tmp_path) for n in ("rita", "alice", "bob"))
    rr = write(tmp_path / "rr.yaml", request("tls", requester="rita"))
    assert "remediationrequest.precedent.dev/tls created" in rita("create", "-f", rr).stdout

    stranger = bob("get", "rr", check=False)
    assert stranger.returncode != 0
    assert 'User "bob" cannot list resource "remediationrequests"' in stranger.stderr

    with cluster.operator():
        rita("wait", "--for=condition=Approved=Unknown", "rr/tls", "--timeout=60s")
        assert rita("get", "rr", "tls", "-o", "jsonpath={.status.risk.decision}").stdout == (
            "Escalated"
        )
        # The requester approving their own request: refused by admission, naming the rule.
        own = rita(
            "create", "-f", approval_file(tmp_path / "mine.yaml", "tls", "rita"), check=False
        )
        assert own.returncode != 0
        assert "precedent-no-self-approval" in own.stderr
        assert "you requested RemediationRequest tls" in own.stderr
        # Nor can the requester write the answer into status.
        status = rita(
            "patch",
            "rr",
            "tls",
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"risk":{"decision":"Approved"}}}',
            check=False,
        )
        assert status.returncode != 0
        assert "forbidden" in status.stderr.lower()

        ok = alice("create", "-f", approval_file(tmp_path / "tls-ok.yaml", "tls", "alice"))
        assert "remediationapproval.precedent.dev/tls-ok created" in ok.stdout
        waited = alice("wait", "--for=condition=Approved", "rr/tls", "--timeout=60s", check=False)
        assert waited.returncode == 0, waited.stderr
        by = rita("get", "rr", "tls", "-o", "jsonpath={.status.policy.approval.by}").stdout
        assert by == "alice"

        # The plugin, as kubectl finds it on PATH: approve another request.
        rita("create", "-f", write(tmp_path / "rr2.yaml", request("tls2", requester="rita")))
        rita("wait", "--for=condition=Approved=Unknown", "rr/tls2", "--timeout=60s")
        plugin = alice("precedent", "approve", "rr/tls2", "--reason", "window open")
        assert "approve rr/tls2 as alice" in plugin.stdout
        alice("wait", "--for=condition=Approved", "rr/tls2", "--timeout=60s")

        # A rejection: Denied, and the condition False.
        rita("create", "-f", write(tmp_path / "rr3.yaml", request("tls3", requester="rita")))
        rita("wait", "--for=condition=Approved=Unknown", "rr/tls3", "--timeout=60s")
        no = approval_file(tmp_path / "tls3-no.yaml", "tls3", "alice", decision="reject")
        alice("create", "-f", no)
        alice("wait", "--for=condition=Approved=False", "rr/tls3", "--timeout=60s")
        assert rita("get", "rr", "tls3", "-o", "jsonpath={.status.risk.decision}").stdout == (
            "Denied"
        )


def test_in_audit_only_mode_nothing_waits(
    secured: tuple[Cluster, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster, _ = secured
    install(cluster)
    monkeypatch.setenv("PRECEDENT_POLICY_MODE", "audit")
    rita = User(cluster, "rita", tmp_path)
    rita("create", "-f", write(tmp_path / "rr.yaml", request("tls", requester="rita")))
    with cluster.operator():
        rita("wait", "--for=condition=Approved", "rr/tls", "--timeout=60s")
    reason = rita(
        "get", "rr", "tls", "-o", 'jsonpath={.status.conditions[?(@.type=="Approved")].reason}'
    ).stdout
    assert reason == "AuditOnly"
    would_be = rita("get", "rr", "tls", "-o", "jsonpath={.status.policy.wouldBe}").stdout
    assert would_be == "Escalated"
    assert rita("get", "rapp", "-o", "name").stdout == ""  # no approval was needed
