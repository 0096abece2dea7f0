"""ValidatingAdmissionPolicy and its bindings, checked against the examples and messages of the
Kubernetes documentation ("Validating Admission Policy")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from precedent_sandbox import Sandbox
from tests.sandbox.conftest import CRDS, RRS, request_body

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = {"Content-Type": "application/merge-patch+json"}


def _crd(group: str, plural: str, kind: str) -> dict[str, Any]:
    # A stand-in for the documentation's ReplicaLimit parameter kind (Deployments are built in).
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture
async def api() -> AsyncIterator[httpx.AsyncClient]:
    """A sandbox with the CRDs plus replicalimits.rules.example.com."""
    extra = [_crd("rules.example.com", "replicalimits", "ReplicaLimit")]
    async with (
        Sandbox(CRDS, crds=extra) as sandbox,
        httpx.AsyncClient(base_url=sandbox.url, timeout=10) as client,
    ):
        yield client


def deployment(name: str, replicas: int) -> dict[str, Any]:
    """A valid Deployment of the built-in apps/v1 kind."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2"}]},
            },
        },
    }


async def install(api: httpx.AsyncClient, policy: dict[str, Any], binding: dict[str, Any]) -> None:
    """Create a policy and its binding."""
    for plural, body in (
        ("validatingadmissionpolicies", policy),
        ("validatingadmissionpolicybindings", binding),
    ):
        response = await api.post(f"{ADMISSION}/{plural}", json=body)
        assert response.status_code == 201, response.text


DEMO_POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "demo-policy.example.com"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["deployments"],
                }
            ]
        },
        "validations": [{"expression": "object.spec.replicas <= 5"}],
    },
}
DEMO_BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "demo-binding-test.example.com"},
    "spec": {
        "policyName": "demo-policy.example.com",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"environment": "test"}}},
    },
}


async def test_the_documented_replicas_policy_denies_with_the_documented_message(
    api: httpx.AsyncClient,
) -> None:
    await install(api, DEMO_POLICY, DEMO_BINDING)
    # Not yet in a namespace labelled environment=test: the binding does not apply.
    assert (await api.post(DEPLOYMENTS, json=deployment("early", 6))).status_code == 201
    labelled = await api.patch(
        "/api/v1/namespaces/default",
        json={"metadata": {"labels": {"environment": "test"}}},
        headers=MERGE,
    )
    assert labelled.status_code == 200
    denied = await api.post(DEPLOYMENTS, json=deployment("nginx", 6))
    assert denied.status_code == 422
    body = denied.json()
    message = (
        "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding "
        "'demo-binding-test.example.com' denied request: failed expression: "
        "object.spec.replicas <= 5"
    )
    assert body["reason"] == "Invalid"
    assert body["message"] == f'deployments.apps "nginx" is forbidden: {message}'
    assert body["details"] == {
        "name": "nginx",
        "kind": "deployments",
        "group": "apps",
        "causes": [{"message": message}],
    }
    assert (await api.post(DEPLOYMENTS, json=deployment("small", 5))).status_code == 201
    update = await api.patch(f"{DEPLOYMENTS}/small", json={"spec": {"replicas": 9}}, headers=MERGE)
    assert update.status_code == 422
    assert (await api.delete(f"{DEPLOYMENTS}/small")).status_code == 200  # DELETE not matched


async def test_the_documented_param_kind_example(api: httpx.AsyncClient) -> None:
    limit = {
        "apiVersion": "rules.example.com/v1",
        "kind": "ReplicaLimit",
        "metadata": {"name": "replica-limit-test.example.com", "namespace": "default"},
        "maxReplicas": 3,
    }
    created = await api.post(
        "/apis/rules.example.com/v1/namespaces/default/replicalimits", json=limit
    )
    assert created.status_code == 201
    policy = {
        "metadata": {"name": "replicalimit-policy.example.com"},
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["deployments"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": "object.spec.replicas <= params.maxReplicas",
                    "messageExpression": (
                        "'object.spec.replicas must be no greater than ' "
                        "+ string(params.maxReplicas)"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    }
    binding = {
        "metadata": {"name": "replicalimit-binding-test.example.com"},
        "spec": {
            "policyName": "replicalimit-policy.example.com",
            "validationActions": ["Deny"],
            "paramRef": {
                "name": "replica-limit-test.example.com",
                "namespace": "default",
                "parameterNotFoundAction": "Deny",
            },
        },
    }
    await install(api, policy, binding)
    denied = await api.post(DEPLOYMENTS, json=deployment("big", 4))
    assert denied.status_code == 403
    assert denied.json()["reason"] == "Forbidden"
    assert denied.json()["message"].endswith(
        "denied request: object.spec.replicas must be no greater than 3"
    )
    assert (await api.post(DEPLOYMENTS, json=deployment("ok", 3))).status_code == 201
    gone = await api.delete(
        "/apis/rules.example.com/v1/namespaces/default/replicalimits/replica-limit-test.example.com"
    )
    assert gone.status_code == 200
    missing = await api.post(DEPLOYMENTS, json=deployment("no-params", 1))
    assert missing.status_code == 422
    assert (
        "no params found for policy binding with `Deny` parameterNotFoundAction"
        in (missing.json()["message"])
    )


async def test_status_subresource_request_user_variables_and_warn(
    api: httpx.AsyncClient,
) -> None:
    policy = {
        "metadata": {"name": "status-writers"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["precedent.dev"],
                        "apiVersions": ["*"],
                        "operations": ["UPDATE"],
                        "resources": ["remediationrequests/status"],
                    }
                ]
            },
            "matchConditions": [
                {"name": "has-risk", "expression": "has(object.status) && has(object.status.risk)"}
            ],
            "variables": [{"name": "decision", "expression": "object.status.risk.decision"}],
            "validations": [
                {
                    "expression": "variables.decision != 'Approved' || "
                    "request.userInfo.username == 'precedent'",
                    "messageExpression": "'user ' + request.userInfo.username + ' may not approve "
                    "via ' + request.subResource",
                }
            ],
        },
    }
    await install(
        api,
        policy,
        {
            "metadata": {"name": "status-writers"},
            "spec": {"policyName": "status-writers", "validationActions": ["Deny"]},
        },
    )
    assert (await api.post(RRS, json=request_body("rr"))).status_code == 201
    risk = {"score": 10.0, "band": "low", "reasoning": "r", "mostRelevantIncident": "I"}
    approved = {"status": {"risk": {**risk, "decision": "Approved"}}}
    denied = await api.patch(f"{RRS}/rr/status", json=approved, headers=MERGE)
    assert denied.status_code == 422, denied.text
    assert denied.json()["message"].endswith(
        "denied request: user system:admin may not approve via status"
    )
    escalated = {"status": {"risk": {**risk, "decision": "Escalated"}}}
    assert (await api.patch(f"{RRS}/rr/status", json=escalated, headers=MERGE)).status_code == 200
    # The main resource is not matched by remediationrequests/status.
    relabel = await api.patch(f"{RRS}/rr", json={"metadata": {"labels": {"x": "y"}}}, headers=MERGE)
    assert relabel.status_code == 200
    # Warn instead of Deny: the write goes through with a Warning header.
    binding = await api.get(f"{ADMISSION}/validatingadmissionpolicybindings/status-writers")
    changed = binding.json()
    changed["spec"]["validationActions"] = ["Warn"]
    replaced = await api.put(
        f"{ADMISSION}/validatingadmissionpolicybindings/status-writers", json=changed
    )
    assert replaced.status_code == 200
    warned = await api.patch(f"{RRS}/rr/status", json=approved, headers=MERGE)
    assert warned.status_code == 200
    assert (
        "Validation failed for ValidatingAdmissionPolicy 'status-writers' with binding "
        "'status-writers': user system:admin may not approve via status"
        in (warned.headers["Warning"])
    )


async def test_failure_policy_and_the_authorizer_library(api: httpx.AsyncClient) -> None:
    policy = {
        "metadata": {"name": "approve-verb"},
        "spec": {
            "failurePolicy": "Fail",
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
                    "expression": (
                        "authorizer.group('precedent.dev').resource('remediationrequests')"
                        ".namespace(request.namespace).check('approve').allowed()"
                    ),
                    "message": "needs approve",
                },
                {"expression": "authorizer.requestResource.check('create').allowed()"},
                {"expression": "object.spec.noSuchField == 1"},
            ],
        },
    }
    await install(
        api,
        policy,
        {
            "metadata": {"name": "approve-verb"},
            "spec": {"policyName": "approve-verb", "validationActions": ["Deny"]},
        },
    )
    # Without RBAC the authorizer allows; the erroring expression fails closed.
    denied = await api.post(RRS, json=request_body("a"))
    assert denied.status_code == 422
    assert (
        "expression 'object.spec.noSuchField == 1' resulted in error" in (denied.json()["message"])
    )
    stored = (await api.get(f"{ADMISSION}/validatingadmissionpolicies/approve-verb")).json()
    stored["spec"]["failurePolicy"] = "Ignore"
    assert (
        await api.put(f"{ADMISSION}/validatingadmissionpolicies/approve-verb", json=stored)
    ).status_code == 200
    assert (await api.post(RRS, json=request_body("a"))).status_code == 201
