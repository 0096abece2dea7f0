"""ValidatingAdmissionPolicy parameters: ``paramKind`` with a binding's ``paramRef`` by name or
by selector, in a namespace or in the admitted object's own, one evaluation per param with all
of them required to pass, ``parameterNotFoundAction`` Allow / Deny, and the binding's API
validation. The rules and messages are the Kubernetes API reference's (ParamRef v1
admissionregistration: "If multiple params are found, they are all evaluated with the policy
expressions and the results are ANDed together") and kube-apiserver's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from precedent_sandbox import Sandbox
from tests.sandbox.conftest import CRDS
from tests.sandbox.test_admission_policy import ADMISSION, _crd, deployment

DEPLOYMENTS = "/apis/apps/v1/namespaces/{ns}/deployments"
LIMITS = "/apis/rules.example.com/v1/namespaces/{ns}/replicalimits"
REPO = Path(__file__).resolve().parents[2]
NOT_FOUND = (
    "failed to configure binding: no params found for policy binding with `Deny` "
    "parameterNotFoundAction"
)


@pytest.fixture
async def api() -> AsyncIterator[httpx.AsyncClient]:
    """A sandbox with deployments.apps and replicalimits.rules.example.com, and namespace other."""
    extra = [
        _crd("apps", "deployments", "Deployment"),
        _crd("rules.example.com", "replicalimits", "ReplicaLimit"),
    ]
    async with (
        Sandbox(CRDS, crds=extra) as sandbox,
        httpx.AsyncClient(base_url=sandbox.url, timeout=10) as client,
    ):
        other = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
        assert (await client.post("/api/v1/namespaces", json=other)).status_code == 201
        yield client


async def limit(
    api: httpx.AsyncClient, name: str, most: int, ns: str = "default", **labels: str
) -> None:
    """A ReplicaLimit param object."""
    body = {
        "apiVersion": "rules.example.com/v1",
        "kind": "ReplicaLimit",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "maxReplicas": most,
    }
    assert (await api.post(LIMITS.format(ns=ns), json=body)).status_code == 201


POLICY: dict[str, Any] = {
    "metadata": {"name": "replicalimit-policy.example.com"},
    "spec": {
        "failurePolicy": "Fail",
        "paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["deployments"],
                }
            ]
        },
        "validations": [
            {
                "expression": "params == null || object.spec.replicas <= params.maxReplicas",
                "messageExpression": "'at most ' + string(params.maxReplicas) + ' replicas ('"
                " + params.metadata.name + ')'",
                "reason": "Forbidden",
            }
        ],
    },
}


async def bind(
    api: httpx.AsyncClient, param_ref: dict[str, Any] | None, *, failure: str = "Fail"
) -> None:
    """Install POLICY (with ``failurePolicy``) and a binding with ``param_ref``."""
    policy = {**POLICY, "spec": {**POLICY["spec"], "failurePolicy": failure}}
    assert (
        await api.post(f"{ADMISSION}/validatingadmissionpolicies", json=policy)
    ).status_code == 201
    spec: dict[str, Any] = {
        "policyName": "replicalimit-policy.example.com",
        "validationActions": ["Deny"],
    }
    if param_ref is not None:
        spec["paramRef"] = param_ref
    binding = {"metadata": {"name": "replicalimit-binding"}, "spec": spec}
    created = await api.post(f"{ADMISSION}/validatingadmissionpolicybindings", json=binding)
    assert created.status_code == 201, created.text


async def create(api: httpx.AsyncClient, name: str, replicas: int, ns: str = "default") -> Any:
    """POST a Deployment; returns the response."""
    return await api.post(DEPLOYMENTS.format(ns=ns), json=deployment(name, replicas))


async def test_an_empty_selector_evaluates_every_param_in_the_objects_namespace_and_ands_them(
    api: httpx.AsyncClient,
) -> None:
    await limit(api, "loose", 5)
    await limit(api, "tight", 3)
    await limit(api, "elsewhere", 1, ns="other")  # another namespace: never a param here
    await bind(api, {"selector": {}, "parameterNotFoundAction": "Deny"})
    assert (await create(api, "three", 3)).status_code == 201  # passes both params
    denied = await create(api, "four", 4)  # passes loose, fails tight: denied
    assert denied.status_code == 403
    assert denied.json()["message"] == (
        'deployments.apps "four" is forbidden: ValidatingAdmissionPolicy '
        "'replicalimit-policy.example.com' with binding 'replicalimit-binding' denied request: "
        "at most 3 replicas (tight)"
    )
    # In namespace other the only param is "elsewhere".
    assert (await create(api, "one", 1, ns="other")).status_code == 201
    assert (await create(api, "two", 2, ns="other")).status_code == 403


async def test_a_label_selector_picks_the_params_it_matches(api: httpx.AsyncClient) -> None:
    await limit(api, "prod", 2, tier="prod")
    await limit(api, "dev", 9, tier="dev")
    await bind(
        api, {"selector": {"matchLabels": {"tier": "dev"}}, "parameterNotFoundAction": "Deny"}
    )
    assert (await create(api, "eight", 8)).status_code == 201  # the prod limit is not selected


async def test_an_explicit_namespace_is_where_params_are_looked_up(
    api: httpx.AsyncClient,
) -> None:
    await limit(api, "central", 2, ns="other")
    await bind(api, {"name": "central", "namespace": "other", "parameterNotFoundAction": "Deny"})
    assert (await create(api, "two", 2)).status_code == 201
    assert (await create(api, "three", 3)).status_code == 403


async def test_no_params_with_allow_admits(api: httpx.AsyncClient) -> None:
    await bind(api, {"selector": {}, "parameterNotFoundAction": "Allow"})
    assert (await create(api, "many", 50)).status_code == 201
    await limit(api, "now-there-is-one", 3)
    assert (await create(api, "many-again", 50)).status_code == 403


async def test_no_params_with_deny_is_a_configuration_error_under_the_failure_policy(
    api: httpx.AsyncClient,
) -> None:
    await bind(api, {"name": "missing", "parameterNotFoundAction": "Deny"})
    denied = await create(api, "one", 1)
    assert denied.status_code == 422
    assert denied.json()["reason"] == "Invalid"
    assert denied.json()["message"].endswith(f"denied request: {NOT_FOUND}")


async def test_deny_under_failure_policy_ignore_admits(api: httpx.AsyncClient) -> None:
    await bind(api, {"selector": {}, "parameterNotFoundAction": "Deny"}, failure="Ignore")
    assert (await create(api, "one", 1)).status_code == 201


async def test_a_binding_without_param_ref_evaluates_with_null_params(
    api: httpx.AsyncClient,
) -> None:
    await limit(api, "ignored", 1)
    await bind(api, None)
    assert (await create(api, "ten", 10)).status_code == 201  # params == null


@pytest.mark.parametrize(
    ("param_ref", "message"),
    [
        (
            {"name": "a", "selector": {}, "parameterNotFoundAction": "Deny"},
            "[spec.paramRef.name: Forbidden: name and selector are mutually exclusive, "
            "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive]",
        ),
        (
            {"parameterNotFoundAction": "Deny"},
            "spec.paramRef: Required value: one of name or selector must be specified",
        ),
        ({"selector": {}}, "spec.paramRef.parameterNotFoundAction: Required value"),
        (
            {"selector": {}, "parameterNotFoundAction": "Maybe"},
            'spec.paramRef.parameterNotFoundAction: Unsupported value: "Maybe": '
            'supported values: "Deny", "Allow"',
        ),
    ],
)
async def test_the_binding_s_param_ref_is_validated(
    api: httpx.AsyncClient, param_ref: dict[str, Any], message: str
) -> None:
    binding = {
        "metadata": {"name": "bad"},
        "spec": {"policyName": "p", "validationActions": ["Deny"], "paramRef": param_ref},
    }
    refused = await api.post(f"{ADMISSION}/validatingadmissionpolicybindings", json=binding)
    assert refused.status_code == 422
    assert refused.json()["message"] == (
        f'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "bad" is invalid: {message}'
    )


async def test_a_namespace_for_a_cluster_scoped_param_kind_is_a_configuration_error(
    api: httpx.AsyncClient,
) -> None:
    policy = {
        **POLICY,
        "spec": {
            **POLICY["spec"],
            "paramKind": {"apiVersion": "precedent.dev/v1alpha1", "kind": "Playbook"},
        },
    }
    assert (
        await api.post(f"{ADMISSION}/validatingadmissionpolicies", json=policy)
    ).status_code == 201
    binding = {
        "metadata": {"name": "replicalimit-binding"},
        "spec": {
            "policyName": "replicalimit-policy.example.com",
            "validationActions": ["Deny"],
            "paramRef": {
                "selector": {},
                "namespace": "default",
                "parameterNotFoundAction": "Allow",
            },
        },
    }
    created = await api.post(f"{ADMISSION}/validatingadmissionpolicybindings", json=binding)
    assert created.status_code == 201
    denied = await create(api, "one", 1)
    assert denied.status_code == 422
    assert denied.json()["message"].endswith(
        "denied request: failed to configure binding: paramRef.namespace must not be provided "
        "for a cluster-scoped `paramKind`"
    )


def test_the_shipped_self_approval_binding_uses_these_semantics() -> None:
    documents = list(
        yaml.safe_load_all((REPO / "manifests/admission/no-self-approval.yaml").read_text())
    )
    policy, binding = documents
    assert policy["spec"]["paramKind"] == {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
    }
    assert binding["spec"]["paramRef"] == {"selector": {}, "parameterNotFoundAction": "Allow"}
