"""Authentication (static token file) and RBAC authorization, checked against the examples and
messages of the Kubernetes documentation ("Authenticating", "Using RBAC Authorization")."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from precedent_sandbox import SandboxThread
from precedent_sandbox.auth import TokenFileError, parse_tokens
from precedent_sandbox.cli import sandbox_command
from tests.sandbox.conftest import CRDS, RRS, request_body

RBAC = "/apis/rbac.authorization.k8s.io/v1"
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SA_USER = "system:serviceaccount:precedent-system:precedent"
TOKENS = f"""admin-token,admin,1,"system:masters"
bob-token,bob,2
jane-token,jane,3,"manager,dev"
sa-token,{SA_USER},4
"""

Client = Callable[[str | None], httpx.Client]


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[SandboxThread]:
    """A sandbox with the repository's CRDs that authenticates from a token file (RBAC on)."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(TOKENS)
    with SandboxThread(CRDS, token_auth_file=tokens) as sandbox:
        yield sandbox


@pytest.fixture
def client(secured: SandboxThread) -> Iterator[Client]:
    """``client(token)``: an HTTPS client for the sandbox with that bearer token (or none)."""
    opened: list[httpx.Client] = []

    def make(token: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        made = httpx.Client(
            base_url=secured.url, headers=headers, verify=trust(secured), timeout=10
        )
        opened.append(made)
        return made

    yield make
    for made in opened:
        made.close()


def trust(sandbox: SandboxThread) -> ssl.SSLContext:
    """An SSL context trusting the sandbox's self-signed certificate."""
    return ssl.create_default_context(cafile=str(sandbox.sandbox.ca_file))


def create(admin: httpx.Client, path: str, body: dict[str, Any]) -> None:
    """Create as the admin; the test cannot continue otherwise."""
    response = admin.post(path, json=body)
    assert response.status_code == 201, response.text


def can_i(client: httpx.Client, **attributes: str) -> dict[str, Any]:
    """A SelfSubjectAccessReview's status."""
    spec = (
        {"nonResourceAttributes": attributes}
        if "path" in attributes
        else {"resourceAttributes": attributes}
    )
    response = client.post(
        SSAR,
        json={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": spec,
        },
    )
    assert response.status_code == 201, response.text
    return dict(response.json()["status"])


# -- token file ---------------------------------------------------------------------------------


def test_token_file_lines_parse_with_groups_and_the_authenticated_group() -> None:
    users = parse_tokens(TOKENS)
    assert users["jane-token"].name == "jane"
    assert users["jane-token"].uid == "3"
    assert users["jane-token"].groups == ("manager", "dev", "system:authenticated")
    assert users["bob-token"].groups == ("system:authenticated",)


def test_a_short_token_file_line_is_one_error_naming_the_line() -> None:
    with pytest.raises(TokenFileError, match=r"line 2: must have at least 3 columns"):
        parse_tokens("a,b,c\nonly,two\n", "tokens.csv")


def test_the_cli_refuses_a_bad_token_file_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "tokens.csv"
    bad.write_text("token-without-user\n")
    result = CliRunner().invoke(
        sandbox_command, ["--token-auth-file", str(bad), "--kubeconfig", str(tmp_path / "kc")]
    )
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: token file {bad}, line 1: must have at least 3 columns (token, user name, "
        "user uid), found 1"
    ]


# -- authentication -----------------------------------------------------------------------------


def test_an_unknown_token_is_401_unauthorized(client: Client) -> None:
    response = client("not-a-token").get("/api")
    assert response.status_code == 401
    body = response.json()
    assert (body["kind"], body["reason"], body["message"]) == (
        "Status",
        "Unauthorized",
        "Unauthorized",
    )


def test_no_token_is_anonymous_with_public_info_only(client: Client) -> None:
    anonymous = client(None)
    assert anonymous.get("/version").status_code == 200  # system:public-info-viewer
    refused = anonymous.get("/apis")
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        'forbidden: User "system:anonymous" cannot get path "/apis"'
    )
    listed = anonymous.get(RRS)
    assert listed.status_code == 403


def test_whoami_reports_the_user_and_groups(client: Client) -> None:
    response = client("jane-token").post(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    assert response.status_code == 201
    assert response.json()["status"]["userInfo"] == {
        "username": "jane",
        "uid": "3",
        "groups": ["manager", "dev", "system:authenticated"],
    }


def test_without_a_token_file_everything_stays_allowed() -> None:
    with SandboxThread(CRDS) as sandbox, httpx.Client(base_url=sandbox.url) as plain:
        assert sandbox.url.startswith("http://")
        assert plain.get(RRS, headers={"Authorization": "Bearer anything"}).status_code == 200
        assert plain.get(f"{RBAC}/clusterroles").json()["items"] == []
        reviewed = plain.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        assert reviewed.json()["status"]["userInfo"]["groups"] == [
            "system:masters",
            "system:authenticated",
        ]


# -- RBAC ---------------------------------------------------------------------------------------


def test_forbidden_carries_the_kubernetes_message(client: Client) -> None:
    bob = client("bob-token")
    created = bob.post(RRS, json=request_body("x"))
    assert created.status_code == 403
    assert created.json()["message"] == (
        'remediationrequests.precedent.dev is forbidden: User "bob" cannot create resource '
        '"remediationrequests" in API group "precedent.dev" in the namespace "default"'
    )
    got = bob.get(f"{RRS}/x")
    assert got.json()["message"] == (
        'remediationrequests.precedent.dev "x" is forbidden: User "bob" cannot get resource '
        '"remediationrequests" in API group "precedent.dev" in the namespace "default"'
    )
    assert got.json()["details"] == {
        "kind": "remediationrequests",
        "group": "precedent.dev",
        "name": "x",
    }
    crds = bob.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    assert crds.json()["message"].endswith(
        'cannot list resource "customresourcedefinitions" in API group "apiextensions.k8s.io" '
        "at the cluster scope"
    )


def test_the_documented_role_and_rolebinding_grant_reads_in_one_namespace(client: Client) -> None:
    # "Using RBAC Authorization": Role pod-reader and RoleBinding read-pods for user jane,
    # with configmaps in place of pods (the sandbox serves no pods).
    admin, jane = client("admin-token"), client("jane-token")
    create(
        admin,
        f"{RBAC}/namespaces/default/roles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"namespace": "default", "name": "pod-reader"},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "watch", "list"]}
            ],
        },
    )
    create(
        admin,
        f"{RBAC}/namespaces/default/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "read-pods", "namespace": "default"},
            "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {
                "kind": "Role",
                "name": "pod-reader",
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    )
    assert jane.get("/api/v1/namespaces/default/configmaps").status_code == 200
    assert jane.get("/api/v1/namespaces/kube-system/configmaps").status_code == 403
    assert (
        jane.post(
            "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}}
        ).status_code
        == 403
    )
    assert can_i(jane, verb="list", resource="configmaps", namespace="default") == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "read-pods/default" of Role "pod-reader" to '
        'User "jane"',
    }
    assert can_i(
        bob := client("bob-token"), verb="list", resource="configmaps", namespace="default"
    ) == {"allowed": False}
    assert bob.get("/api/v1/namespaces/default/configmaps").status_code == 403


def test_a_cluster_role_binding_to_a_group_grants_everywhere(client: Client) -> None:
    # The documented secret-reader ClusterRole bound to the "manager" group.
    admin, jane = client("admin-token"), client("jane-token")
    create(
        admin,
        f"{RBAC}/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "secret-reader"},
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch", "list"]}
            ],
        },
    )
    create(
        admin,
        f"{RBAC}/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "read-secrets-global"},
            "subjects": [
                {"kind": "Group", "name": "manager", "apiGroup": "rbac.authorization.k8s.io"}
            ],
            "roleRef": {
                "kind": "ClusterRole",
                "name": "secret-reader",
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    )
    assert jane.get("/api/v1/secrets").status_code == 200
    assert jane.get("/api/v1/namespaces/kube-system/secrets").status_code == 200
    assert client("bob-token").get("/api/v1/secrets").status_code == 403


def test_status_subresource_resource_names_custom_verbs_and_service_accounts(
    client: Client,
) -> None:
    admin, sa = client("admin-token"), client("sa-token")
    create(
        admin,
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": "approver"},
            "rules": [
                {
                    "apiGroups": ["precedent.dev"],
                    "resources": ["remediationrequests/status"],
                    "verbs": ["patch"],
                },
                {
                    "apiGroups": ["precedent.dev"],
                    "resources": ["remediationrequests"],
                    "resourceNames": ["only-this"],
                    "verbs": ["get", "approve"],
                },
            ],
        },
    )
    create(
        admin,
        f"{RBAC}/namespaces/default/rolebindings",
        {
            "metadata": {"name": "approver"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "precedent", "namespace": "precedent-system"}
            ],
            "roleRef": {
                "kind": "ClusterRole",
                "name": "approver",
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    )
    create(admin, RRS, request_body("only-this"))
    create(admin, RRS, request_body("other"))
    assert sa.get(f"{RRS}/only-this").status_code == 200
    assert sa.get(f"{RRS}/other").status_code == 403
    assert sa.get(RRS).status_code == 403  # resourceNames never grant list
    merge = {"Content-Type": "application/merge-patch+json"}
    status = {"status": {"observedGeneration": 1}}
    assert sa.patch(f"{RRS}/other/status", json=status, headers=merge).status_code == 200
    main = sa.patch(f"{RRS}/other", json={"metadata": {"labels": {"a": "b"}}}, headers=merge)
    assert main.status_code == 403
    assert (
        can_i(
            sa,
            verb="approve",
            group="precedent.dev",
            resource="remediationrequests",
            namespace="default",
            name="only-this",
        )["allowed"]
        is True
    )
    assert (
        can_i(
            sa,
            verb="approve",
            group="precedent.dev",
            resource="remediationrequests",
            namespace="default",
            name="other",
        )["allowed"]
        is False
    )
    # The binding is in "default": nothing in another namespace.
    assert (
        can_i(
            sa,
            verb="patch",
            group="precedent.dev",
            resource="remediationrequests",
            subresource="status",
            namespace="kube-system",
        )["allowed"]
        is False
    )


def test_aggregated_cluster_roles_collect_the_rules_of_labelled_roles(client: Client) -> None:
    # The documented "monitoring" aggregated ClusterRole.
    admin = client("admin-token")
    create(
        admin,
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": "monitoring"},
            "aggregationRule": {
                "clusterRoleSelectors": [
                    {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}
                ]
            },
            "rules": [],
        },
    )
    rule = {
        "apiGroups": [""],
        "resources": ["services", "endpointslices", "pods"],
        "verbs": ["get", "list", "watch"],
    }
    create(
        admin,
        f"{RBAC}/clusterroles",
        {
            "metadata": {
                "name": "monitoring-endpointslices",
                "labels": {"rbac.example.com/aggregate-to-monitoring": "true"},
            },
            "rules": [rule],
        },
    )
    assert admin.get(f"{RBAC}/clusterroles/monitoring").json()["rules"] == [rule]
    # The built-in "view" aggregates roles labelled aggregate-to-view.
    viewer_rule = {
        "apiGroups": ["precedent.dev"],
        "resources": ["remediationrequests"],
        "verbs": ["get", "list", "watch"],
    }
    create(
        admin,
        f"{RBAC}/clusterroles",
        {
            "metadata": {
                "name": "precedent-view",
                "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
            },
            "rules": [viewer_rule],
        },
    )
    create(
        admin,
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": "bob-views"},
            "subjects": [{"kind": "User", "name": "bob"}],
            "roleRef": {
                "kind": "ClusterRole",
                "name": "view",
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    )
    assert client("bob-token").get(RRS).status_code == 200
    assert admin.delete(f"{RBAC}/clusterroles/precedent-view").status_code == 200
    assert admin.get(f"{RBAC}/clusterroles/view").json()["rules"] == []
    assert client("bob-token").get(RRS).status_code == 403


def test_a_user_cannot_grant_permissions_it_does_not_hold(client: Client) -> None:
    admin, jane = client("admin-token"), client("jane-token")
    create(
        admin,
        f"{RBAC}/namespaces/default/roles",
        {
            "metadata": {"name": "role-writer"},
            "rules": [
                {
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["roles", "rolebindings"],
                    "verbs": ["create"],
                },
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
            ],
        },
    )
    create(
        admin,
        f"{RBAC}/namespaces/default/rolebindings",
        {
            "metadata": {"name": "jane-writes-roles"},
            "subjects": [{"kind": "User", "name": "jane"}],
            "roleRef": {
                "kind": "Role",
                "name": "role-writer",
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    )
    held = jane.post(
        f"{RBAC}/namespaces/default/roles",
        json={
            "metadata": {"name": "cm-getter"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
        },
    )
    assert held.status_code == 201, held.text
    escalating = jane.post(
        f"{RBAC}/namespaces/default/roles",
        json={
            "metadata": {"name": "secret-getter"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
        },
    )
    assert escalating.status_code == 403
    assert (
        "is attempting to grant RBAC permissions not currently held"
        in (escalating.json()["message"])
    )
    binding = jane.post(
        f"{RBAC}/namespaces/default/rolebindings",
        json={
            "metadata": {"name": "jane-admin"},
            "subjects": [{"kind": "User", "name": "jane"}],
            "roleRef": {
                "kind": "ClusterRole",
                "name": "cluster-admin",
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    )
    assert binding.status_code == 403


def test_rbac_objects_are_listed_watched_and_discovered(client: Client) -> None:
    admin = client("admin-token")
    names = {r["metadata"]["name"] for r in admin.get(f"{RBAC}/clusterroles").json()["items"]}
    assert {"cluster-admin", "system:discovery", "system:basic-user", "view"} <= names
    resources = {r["name"]: r for r in admin.get(RBAC).json()["resources"]}
    assert set(resources) == {"clusterrolebindings", "clusterroles", "rolebindings", "roles"}
    assert resources["roles"]["namespaced"] is True
    with admin.stream("GET", f"{RBAC}/clusterroles?watch=true&timeoutSeconds=1") as stream:
        first = next(stream.iter_lines())
    assert '"type":"ADDED"' in first


def test_an_admission_policy_checks_a_custom_verb_through_rbac(client: Client) -> None:
    admin, bob, jane = client("admin-token"), client("bob-token"), client("jane-token")
    admission = "/apis/admissionregistration.k8s.io/v1"
    create(
        admin,
        f"{admission}/validatingadmissionpolicies",
        {
            "metadata": {"name": "approvers-only"},
            "spec": {
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["precedent.dev"],
                            "apiVersions": ["*"],
                            "operations": ["CREATE"],
                            "resources": ["remediationrequests"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": "authorizer.requestResource.check('approve').allowed()",
                        "messageExpression": "request.userInfo.username + ' may not approve'",
                        "reason": "Forbidden",
                    }
                ],
            },
        },
    )
    create(
        admin,
        f"{admission}/validatingadmissionpolicybindings",
        {
            "metadata": {"name": "approvers-only"},
            "spec": {"policyName": "approvers-only", "validationActions": ["Deny"]},
        },
    )
    for user, verbs in (("bob", ["create"]), ("jane", ["create", "approve"])):
        create(
            admin,
            f"{RBAC}/namespaces/default/roles",
            {
                "metadata": {"name": user},
                "rules": [
                    {
                        "apiGroups": ["precedent.dev"],
                        "resources": ["remediationrequests"],
                        "verbs": verbs,
                    }
                ],
            },
        )
        create(
            admin,
            f"{RBAC}/namespaces/default/rolebindings",
            {
                "metadata": {"name": user},
                "subjects": [{"kind": "User", "name": user}],
                "roleRef": {"kind": "Role", "name": user, "apiGroup": "rbac.authorization.k8s.io"},
            },
        )
    refused = bob.post(RRS, json=request_body("by-bob"))
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        'remediationrequests.precedent.dev "by-bob" is forbidden: ValidatingAdmissionPolicy '
        "'approvers-only' with binding 'approvers-only' denied request: bob may not approve"
    )
    assert jane.post(RRS, json=request_body("by-jane")).status_code == 201
