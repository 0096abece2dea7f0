"""Facts the API server records, not the requester: real ``kubectl`` as several users against a
sandbox that authenticates them from a token file and enforces RBAC and the shipped admission
manifests (validating and mutating policies), with the real operator running.

- the requester is recorded by the API server, so every bundled example applies unchanged, as a
  person and as a GitOps controller's ServiceAccount (which cannot approve its own request);
- outcomes come from executors, on approved requests only; a requester's fake outcome is
  refused naming the rule, and the operator ignores one on a never-approved request;
- an approval binds to one request (its uid): a request deleted and created again under the
  same name needs a new approval.

rita is a precedent-requester (and approver), alice a precedent-approver, erin a
precedent-executor, and the Argo CD application controller's ServiceAccount a requester.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_approvals_kubectl import BIN, User, approval_file, install, write
from tests.e2e.test_approvals_rbac import GITOPS, REPO, _as, secured
from tests.integration.conftest import Cluster, eventually, is_true
from tests.integration.test_approvals import approval, request

pytestmark = pytest.mark.e2e
__all__ = ["secured"]

CLUSTER_ROLE_BINDINGS = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
EXAMPLES = sorted((REPO / "data" / "requests").glob("*.yaml"))


def bind(cluster: Cluster, role: str, kind: str, name: str, namespace: str = "") -> None:
    subject: dict[str, Any] = {"kind": kind, "name": name}
    if kind == "ServiceAccount":
        subject["namespace"] = namespace
    else:
        subject["apiGroup"] = "rbac.authorization.k8s.io"
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{role}-{name}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }
    answer = cluster.client.post(CLUSTER_ROLE_BINDINGS, json=body)
    assert answer.status_code in (201, 409), answer.text


class Controller(User):
    """kubectl as the GitOps controller's ServiceAccount (its name has colons, which a
    KUBECONFIG path may not: the files live under ``gitops/``)."""

    def __init__(self, cluster: Cluster, home: Path) -> None:
        self.name = GITOPS
        self.kubeconfig = cluster.sandbox.write_kubeconfig(  # type: ignore[call-arg]
            home / "gitops" / "config", user=GITOPS
        )
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        self.cache = home / "gitops" / "cache"


APPROVED = 'jsonpath={.status.conditions[?(@.type=="Approved")].status}'


def handled(user: User, name: str) -> dict[str, Any]:
    """Wait until the operator recorded the request's outcome as handled; return the request."""
    return dict(
        eventually(
            lambda: (
                (o := yaml.safe_load(user("get", "rr", name, "-o", "json").stdout))
                .get("status", {})
                .get("outcome", {})
                .get("handledAt")
                and o
            )
        )
    )


def example_names() -> list[str]:
    return [
        d["metadata"]["name"]
        for p in EXAMPLES
        for d in yaml.safe_load_all(p.read_text())
        if d and d.get("kind") == "RemediationRequest"
    ]


def requesters(user: User) -> dict[str, str]:
    listed = user("get", "rr", "-o", "json").stdout
    return {i["metadata"]["name"]: i["spec"]["requester"] for i in yaml.safe_load(listed)["items"]}


def test_the_api_server_records_the_requester_for_people_and_gitops(
    secured: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, _ = secured
    install(cluster)
    bind(
        cluster, "precedent-requester", "ServiceAccount", "argocd-application-controller", "argocd"
    )
    # Give the controller the approver role too: admission, not RBAC, must stop it.
    bind(cluster, "precedent-approver", "ServiceAccount", "argocd-application-controller", "argocd")
    rita, admin = (
        User(cluster, "rita", tmp_path / "home"),
        User(cluster, "admin", tmp_path / "home"),
    )
    gitops = Controller(cluster, tmp_path / "home")
    names = example_names()
    assert len(names) >= 18

    # Every bundled example, applied by a person: the requester is rita, whatever the file says
    # (seed 000 names platform-bot; the others name nobody).
    files = [arg for p in EXAMPLES for arg in ("-f", str(p))]
    applied = rita("apply", *files, check=False)
    assert applied.returncode == 0, applied.stderr
    assert requesters(rita) == dict.fromkeys(names, "rita")
    # A forged requester in the body is not refused: the server writes the truth over it.
    forged = request("forged", requester="alice")
    rita("create", "-f", write(tmp_path / "forged.yaml", forged))
    assert rita("get", "rr", "forged", "-o", "jsonpath={.spec.requester}").stdout == "rita"
    admin("delete", "rr", "--all")

    # The same files synced by a GitOps controller: its ServiceAccount is the requester, and a
    # second sync (kubectl apply again, as the controller does) changes nothing and fails not.
    for _ in range(2):
        synced = gitops("apply", *files, check=False)
        assert synced.returncode == 0, synced.stderr
    assert requesters(admin) == dict.fromkeys(names, GITOPS)
    # Server-side apply by a manager that never listed spec.requester keeps the recorded one.
    ssa = gitops("apply", "--server-side", "--force-conflicts", *files, check=False)
    assert ssa.returncode == 0, ssa.stderr
    assert requesters(admin) == dict.fromkeys(names, GITOPS)

    # A re-sync of a repository that dropped an optional field of an applied request: a request
    # is immutable, so the change is refused naming the field (client-side apply sends the
    # removal; on a real server, so does server-side apply, which the sandbox merges instead:
    # docs/sandbox.md), and the recorded request stands.
    dropped = [
        d | {"spec": {k: v for k, v in d["spec"].items() if k != "description"}}
        for d in yaml.safe_load_all(EXAMPLES[0].read_text())
        if d and d.get("kind") == "RemediationRequest"
    ][:1]
    changed = write(tmp_path / "dropped.yaml", dropped[0])
    name = dropped[0]["metadata"]["name"]
    before = admin("get", "rr", name, "-o", "jsonpath={.spec.description}").stdout
    assert before
    resync = gitops("apply", "-f", changed, check=False)
    assert resync.returncode != 0
    assert "spec.description cannot be added, changed or removed" in resync.stderr
    server_side = gitops("apply", "--server-side", "--force-conflicts", "-f", changed, check=False)
    if cluster.backend == "real":
        assert server_side.returncode != 0
        assert "spec.description cannot be added, changed or removed" in server_side.stderr
    assert admin("get", "rr", name, "-o", "jsonpath={.spec.description}").stdout == before

    # The controller can never approve what it requested.
    target = names[0]
    own = gitops("create", "-f", approval_file(tmp_path / "own.yaml", target, GITOPS), check=False)
    assert own.returncode != 0
    assert "precedent-no-self-approval" in own.stderr


def test_outcomes_come_from_executors_on_approved_requests(
    secured: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, _ = secured
    install(cluster)
    bind(cluster, "precedent-executor", "User", "erin")
    rita, alice, erin = (User(cluster, n, tmp_path / "home") for n in ("rita", "alice", "erin"))
    admin = User(cluster, "admin", tmp_path / "home")
    failed = '{"spec":{"outcome":{"result":"failed","message":"the change broke replication"}}}'
    succeeded = '{"spec":{"outcome":{"result":"succeeded"}}}'

    # A new request cannot carry an outcome.
    born = request("born", outcome={"result": "succeeded"})
    refused = rita("create", "-f", write(tmp_path / "born.yaml", born), check=False)
    assert refused.returncode != 0
    assert "precedent-outcome-from-executor" in refused.stderr

    rita("create", "-f", write(tmp_path / "rr.yaml", request("tls")))
    with cluster.operator():
        rita("wait", "--for=condition=Approved=Unknown", "rr/tls", "--timeout=60s")

        # The requester reports a fake success on their own escalated request: refused.
        fake = rita("patch", "rr", "tls", "--type=merge", "-p", succeeded, check=False)
        assert fake.returncode != 0
        assert "precedent-outcome-from-executor" in fake.stderr
        assert "only an executor reports spec.outcome" in fake.stderr
        # An executor, before anyone approved it: refused too.
        early = erin("patch", "rr", "tls", "--type=merge", "-p", failed, check=False)
        assert early.returncode != 0
        assert "is not approved" in early.stderr

        alice("create", "-f", approval_file(tmp_path / "ok.yaml", "tls", "alice"))
        rita("wait", "--for=condition=Approved", "rr/tls", "--timeout=60s")
        erin("patch", "rr", "tls", "--type=merge", "-p", failed)
        accepted = handled(rita, "tls")
        assert accepted["status"]["outcome"].get("ignored") is None
        assert accepted["status"]["outcome"]["incident"]  # a failure becomes an Incident
        # Once: a second report is refused.
        again = erin("patch", "rr", "tls", "--type=merge", "-p", succeeded, check=False)
        assert again.returncode != 0

        # A cluster without the outcome policy: the operator itself ignores an outcome on a
        # request it never approved (no Incident, no change to later scores).
        admin(
            "delete",
            "validatingadmissionpolicybinding",
            "precedent-outcome-from-executor",
        )
        incidents = admin("get", "incidents", "-o", "name").stdout.split()
        for name, result in (("tls2", failed), ("tls3", succeeded)):
            rita("create", "-f", write(tmp_path / f"{name}.yaml", request(name)))
            rita("wait", "--for=condition=Ready", f"rr/{name}", "--timeout=60s")
            assert rita("get", "rr", name, "-o", APPROVED).stdout != "True"
            # A real API server drops a deleted binding from its informer a moment later:
            # until then the policy still refuses.
            eventually(
                lambda name=name, result=result: (
                    rita("patch", "rr", name, "--type=merge", "-p", result, check=False).returncode
                    == 0
                ),
                timeout=30,
            )
            ignored = handled(rita, name)
            assert ignored["status"]["outcome"]["ignored"] == "NotApproved"
            assert "incident" not in ignored["status"]["outcome"]
            events = admin(
                "get", "events", f"--field-selector=involvedObject.name={name}", "-o", "json"
            ).stdout
            assert "OutcomeIgnored" in [e["reason"] for e in yaml.safe_load(events)["items"]]
        # No Incident from the fake failure, and the fake success lowers no later score.
        assert admin("get", "incidents", "-o", "name").stdout.split() == incidents
        before = rita("get", "rr", "tls3", "-o", "jsonpath={.status.risk.score}").stdout
        rita("create", "-f", write(tmp_path / "tls4.yaml", request("tls4")))
        rita("wait", "--for=condition=Ready", "rr/tls4", "--timeout=60s")
        later = rita("get", "rr", "tls4", "-o", "jsonpath={.status.risk.score}").stdout
        assert float(later) >= float(before)


def test_an_approval_binds_to_one_request(secured: tuple[Cluster, Path], tmp_path: Path) -> None:
    cluster, _ = secured
    install(cluster)
    deleter = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "request-deleter"},
        "rules": [
            {
                "apiGroups": ["precedent.dev"],
                "resources": ["remediationrequests"],
                "verbs": ["delete", "update"],
            }
        ],
    }
    answer = cluster.client.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", json=deleter)
    assert answer.status_code == 201, answer.text
    bind(cluster, "request-deleter", "User", "rita")
    rita, alice = (
        User(cluster, "rita", tmp_path / "home"),
        User(cluster, "alice", tmp_path / "home"),
    )
    rr = write(tmp_path / "rr.yaml", request("tls"))
    rita("create", "-f", rr)
    first_uid = rita("get", "rr", "tls", "-o", "jsonpath={.metadata.uid}").stdout
    with cluster.operator():
        rita("wait", "--for=condition=Approved=Unknown", "rr/tls", "--timeout=60s")
        # Made with kubectl create, without requestRef.uid: the server records it.
        alice("create", "-f", approval_file(tmp_path / "ok.yaml", "tls", "alice"))
        stored = alice("get", "rapp", "ok", "-o", "jsonpath={.spec.requestRef.uid}").stdout
        assert stored == first_uid
        rita("wait", "--for=condition=Approved", "rr/tls", "--timeout=60s")
        # Deleted and created again under the same name (one kubectl call, within moments).
        rita("replace", "--force", "-f", rr)
        second_uid = rita("get", "rr", "tls", "-o", "jsonpath={.metadata.uid}").stdout
        assert second_uid != first_uid
        rita("wait", "--for=condition=Approved=Unknown", "rr/tls", "--timeout=60s")
        answer = yaml.safe_load(rita("get", "rr", "tls", "-o", "json").stdout)
        assert answer["status"]["policy"]["approval"]["state"] == "Pending"
        # An approval naming the old uid is refused outright, naming the rule.
        stale = yaml.safe_load(
            Path(approval_file(tmp_path / "st.yaml", "tls", "alice")).read_text()
        )
        stale["spec"]["requestRef"]["uid"] = first_uid
        refused = alice("create", "-f", write(tmp_path / "st.yaml", stale), check=False)
        assert refused.returncode != 0
        assert "it was deleted and created again" in refused.stderr
        # A new approval releases the new request.
        alice("precedent", "approve", "rr/tls", "--reason", "checked the new one")
        rita("wait", "--for=condition=Approved", "rr/tls", "--timeout=60s")


@pytest.mark.parametrize("secured", ["real"], indirect=True)
def test_a_self_approval_racing_its_request_never_approves_it(
    secured: tuple[Cluster, Path],
) -> None:
    """precedent-no-self-approval takes the namespace's RemediationRequests as parameters, and a
    real API server reads parameters from an informer: an approval posted the instant after its
    request can meet a parameter list that lacks the request (parameterNotFoundAction: Allow),
    and admission lets it through. The operator compares requester and approver itself, so such
    an approval is recorded as ignored (SelfApproval) and never approves."""
    cluster, _ = secured
    install(cluster)
    base = "/apis/precedent.dev/v1alpha1/namespaces/default"
    names = [f"race-{i}" for i in range(12)]
    admitted = 0
    with _as(cluster, "rita-token") as rita:
        for name in names:
            assert rita.post(f"{base}/remediationrequests", json=request(name)).status_code == 201
            answer = rita.post(
                f"{base}/remediationapprovals",
                json=approval(f"{name}-mine", name, approver="rita"),
            )
            assert answer.status_code in (201, 403, 422), answer.text
            admitted += answer.status_code == 201
    with cluster.operator():
        for name in names:
            ready = cluster.wait_ready(name)
            assert not is_true(ready, "Approved"), (name, ready["status"])
            assert (ready["status"].get("policy") or {}).get("approval", {}).get("by") != "rita"
    # How many slipped past admission varies with timing; each one was caught by the operator.
    print(f"{admitted} of {len(names)} self-approvals admitted by the API server")
