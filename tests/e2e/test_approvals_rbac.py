"""Three users against an API server that authenticates and authorizes: the requester cannot
approve, the approver can, a stranger can do nothing, and only the operator writes status.

``secured`` runs each test twice: on the sandbox (a static token file, RBAC) and on a real
kube-apiserver started with the same token file and RBAC (tests/backends.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from precedent.demo import apply
from precedent_sandbox import SandboxThread
from precedent_sandbox.control_plane import User
from tests.backends import (
    External,
    admission_in_force,
    install_crds,
    real_server,
    use_kubectl_of,
)
from tests.integration.conftest import Cluster
from tests.integration.test_approvals import approved_condition, request

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
OPERATOR = "system:serviceaccount:precedent-system:precedent"
GITOPS = "system:serviceaccount:argocd:argocd-application-controller"
USERS = {
    "admin-token": ("admin", "system:masters"),
    "operator-token": (OPERATOR, "system:serviceaccounts"),
    "rita-token": ("rita", "sre"),
    "alice-token": ("alice", "sre"),
    "bob-token": ("bob", ""),
    "erin-token": ("erin", "automation"),
    "gitops-token": (GITOPS, "system:serviceaccounts"),
}


def binding(role: str, user: str) -> dict[str, Any]:
    """A ClusterRoleBinding of ``role`` to the user named ``user``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{role}-{user.rsplit(':', 1)[-1]}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
    }


def _bindings() -> list[dict[str, Any]]:
    return [
        binding("precedent", OPERATOR),
        binding("precedent-requester", "rita"),
        binding("precedent-approver", "alice"),
    ]


@pytest.fixture(params=["sandbox", "real"])
def secured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[tuple[Cluster, Path]]:
    """An API server that authenticates :data:`USERS` and enforces RBAC, with the CRDs and
    the bundled incidents and playbooks; the operator's kubeconfig in ``KUBECONFIG``. Yields
    the cluster (its client is the admin) and the admin's kubeconfig."""
    monkeypatch.setenv("PRECEDENT_HISTORY_PATH", "")
    monkeypatch.setenv("PRECEDENT_CATALOG", "")
    monkeypatch.setenv("PRECEDENT_STATUS_KEY", "e2e-key")
    monkeypatch.setenv("PRECEDENT_METRICS_PORT", "0")
    if request.param == "real":
        yield from _real(tmp_path, monkeypatch, request)
        return
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(
        "".join(f'{t},{u},{u},"{g}"\n' for t, (u, g) in USERS.items()), encoding="utf-8"
    )
    sandbox = SandboxThread(REPO / "crds", token_auth_file=tokens).start()
    try:
        server = sandbox.url
        with httpx.Client(base_url=server, verify=False, timeout=10) as anonymous:
            answer = anonymous.get(
                "/apis/precedent.dev/v1alpha1/remediationrequests",
                headers={"Authorization": "Bearer not-a-user"},
            )
        assert answer.status_code == 401, answer.text
        admin = sandbox.write_kubeconfig(tmp_path / "admin", user="admin")
        operator = sandbox.write_kubeconfig(tmp_path / "operator", user=OPERATOR)
        with httpx.Client(
            base_url=server,
            verify=False,
            timeout=30,
            headers={"Authorization": "Bearer admin-token"},
        ) as client:
            apply(client, [REPO / "data" / "incidents", REPO / "data" / "playbooks"])
            monkeypatch.setenv("KUBECONFIG", str(operator))
            yield Cluster(sandbox, client, operator), admin
    finally:
        sandbox.stop()


def _real(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[tuple[Cluster, Path]]:
    """A real API server (tests/backends.py) with the same users."""
    users = {
        token: User(name, tuple(g for g in groups.split(",") if g))
        for token, (name, groups) in USERS.items()
    }
    with real_server(users, tmp_path / "control-plane", request) as (server, client):
        use_kubectl_of(server, monkeypatch)
        admin = server.write_kubeconfig(tmp_path / "admin", user="admin")
        operator = server.write_kubeconfig(tmp_path / "operator", user=OPERATOR)
        install_crds(client, REPO / "crds")
        apply(client, [REPO / "data" / "incidents", REPO / "data" / "playbooks"])
        monkeypatch.setenv("KUBECONFIG", str(operator))
        yield Cluster(server, client, operator, backend="real"), admin


def _as(cluster: Cluster, token: str) -> httpx.Client:
    """An HTTP client as the user of ``token`` (impersonated on a given cluster)."""
    if isinstance(cluster.sandbox, External):
        return cluster.sandbox.client(token)
    return httpx.Client(
        base_url=str(cluster.client.base_url),
        verify=False,
        timeout=30,
        headers={"Authorization": f"Bearer {token}"},
    )


def _documents(*paths: Path) -> list[dict[str, Any]]:
    return [d for p in paths for d in yaml.safe_load_all(p.read_text()) if d]


PATHS = {
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "ValidatingAdmissionPolicy": (
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
    ),
    "ValidatingAdmissionPolicyBinding": (
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
    ),
    "MutatingAdmissionPolicy": "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": (
        "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings"
    ),
}


def test_three_users(secured: tuple[Cluster, Path]) -> None:
    cluster, _ = secured
    manifests = REPO / "manifests"
    documents = _documents(
        manifests / "rbac.yaml",
        manifests / "rbac" / "roles.yaml",
        *sorted((manifests / "admission").glob("*.yaml")),
    )
    for doc in [*documents, *_bindings()]:
        if doc["kind"] in PATHS:
            answer = cluster.client.post(PATHS[doc["kind"]], json=doc)
            assert answer.status_code in (201, 409), answer.text
    admission_in_force(cluster.client)
    base = "/apis/precedent.dev/v1alpha1/namespaces/default"
    with _as(cluster, "rita-token") as rita, _as(cluster, "alice-token") as alice:
        # The API server records the requester, whatever the body says.
        forged = rita.post(f"{base}/remediationrequests", json=request("x", requester="alice"))
        assert forged.status_code == 201, forged.text
        assert forged.json()["spec"]["requester"] == "rita"
        mine = rita.post(f"{base}/remediationrequests", json=request("tls", requester="rita"))
        assert mine.status_code == 201, mine.text
        with cluster.operator():
            approved_condition(cluster, "tls", "Pending")
            body = {
                "apiVersion": "precedent.dev/v1alpha1",
                "kind": "RemediationApproval",
                "metadata": {"name": "ok", "namespace": "default"},
                "spec": {
                    "requestRef": {"name": "tls"},
                    "decision": "approve",
                    "reason": "window open",
                    "approver": "rita",
                    "accessLevel": "WRITE",
                },
            }
            # The requester has no create on approvals; an approver cannot pose as another.
            assert rita.post(f"{base}/remediationapprovals", json=body).status_code == 403
            posing = alice.post(f"{base}/remediationapprovals", json=body)
            assert posing.status_code in (403, 422)
            assert "precedent-approver-is-the-user" in posing.json()["message"]
            body["spec"]["approver"] = "alice"
            assert alice.post(f"{base}/remediationapprovals", json=body).status_code == 201
            answer = approved_condition(cluster, "tls", "Approved")
        assert answer["status"]["policy"]["approval"]["by"] == "alice"
        status = rita.patch(
            f"{base}/remediationrequests/tls/status",
            json={"status": {"risk": {"decision": "Approved"}}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert status.status_code == 403
    with _as(cluster, "bob-token") as bob:
        assert bob.get(f"{base}/remediationrequests").status_code == 403
