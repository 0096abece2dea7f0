"""MutatingAdmissionPolicy and its bindings, checked against what the Kubernetes documentation
says ("Mutating Admission Policy", and the MutatingAdmissionPolicy / MutatingAdmissionPolicyBinding
API reference) about where mutation runs, what a binding applies, failurePolicy and
reinvocationPolicy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from precedent_sandbox import Sandbox
from tests.sandbox.conftest import CRDS, RRS, request_body
from tests.sandbox.test_admission_policy import deployment

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture
async def api() -> AsyncIterator[httpx.AsyncClient]:
    async with (
        Sandbox(CRDS) as sandbox,
        httpx.AsyncClient(base_url=sandbox.url, timeout=10) as client,
    ):
        yield client


def policy(name: str, *mutations: str, **spec: Any) -> dict[str, Any]:
    """A policy on Deployment CREATE/UPDATE whose mutations are JSONPatch expressions."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
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
            "mutations": [
                {"patchType": "JSONPatch", "jsonPatch": {"expression": m}} for m in mutations
            ],
            "reinvocationPolicy": "Never",
            **spec,
        },
    }


async def install(api: httpx.AsyncClient, body: dict[str, Any], version: str = "v1") -> None:
    base = f"/apis/admissionregistration.k8s.io/{version}"
    name = body["metadata"]["name"]
    answer = await api.post(f"{base}/mutatingadmissionpolicies", json=body)
    assert answer.status_code == 201, answer.text
    binding = {
        "apiVersion": f"admissionregistration.k8s.io/{version}",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name},
    }
    answer = await api.post(f"{base}/mutatingadmissionpolicybindings", json=binding)
    assert answer.status_code == 201, answer.text


def label(key: str, value: str) -> str:
    return "[JSONPatch{op: 'add', path: '/metadata/labels/" + key + "', value: '" + value + "'}]"


async def test_the_documented_sidecar_style_jsonpatch_mutates_before_it_is_stored(
    api: httpx.AsyncClient,
) -> None:
    # "Mutations can be defined either with an apply configuration that is merged using the
    # server side apply merge strategy, or a JSON patch."
    await install(
        api,
        policy(
            "env",
            "has(object.metadata.labels) ? [] : "
            "[JSONPatch{op: 'add', path: '/metadata/labels', value: {}}]",
            label("environment", "test"),
        ),
    )
    created = await api.post(DEPLOYMENTS, json=deployment("web", 1))
    assert created.status_code == 201, created.text
    assert created.json()["metadata"]["labels"]["environment"] == "test"
    stored = (await api.get(f"{DEPLOYMENTS}/web")).json()
    assert stored["metadata"]["labels"]["environment"] == "test"


async def test_apply_configuration_merges_maps(api: httpx.AsyncClient) -> None:
    body = policy("replicas")
    body["spec"]["mutations"] = [
        {
            "patchType": "ApplyConfiguration",
            "applyConfiguration": {
                "expression": "Object{spec: Object.spec{replicas: 3}}",
            },
        }
    ]
    await install(api, body)
    created = await api.post(DEPLOYMENTS, json=deployment("web", 1))
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["replicas"] == 3
    assert created.json()["spec"]["template"]["spec"]["containers"][0]["name"] == "nginx"


async def test_mutation_runs_before_schema_validation_and_validating_policies(
    api: httpx.AsyncClient,
) -> None:
    # Admission runs mutating admission first, then object validation and validating
    # admission: a validating policy sees the mutated object, and so does the CRD schema.
    rr_policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "requester"},
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
            "mutations": [
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {
                        "expression": "[JSONPatch{op: 'add', path: '/spec/requester', "
                        "value: request.userInfo.username}]"
                    },
                }
            ],
            "reinvocationPolicy": "Never",
        },
    }
    await install(api, rr_policy)
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "requester-is-set"},
        "spec": {
            "matchConstraints": rr_policy["spec"]["matchConstraints"],
            "validations": [{"expression": "has(object.spec.requester)"}],
        },
    }
    assert (
        await api.post(f"{ADMISSION}/validatingadmissionpolicies", json=validating)
    ).status_code == 201
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "requester-is-set"},
        "spec": {"policyName": "requester-is-set", "validationActions": ["Deny"]},
    }
    assert (
        await api.post(f"{ADMISSION}/validatingadmissionpolicybindings", json=binding)
    ).status_code == 201
    created = await api.post(RRS, json=request_body("a"))
    assert created.status_code == 201, created.text
    # The sandbox without authentication serves everyone as its admin user.
    assert created.json()["spec"]["requester"]


async def test_failure_policy_fail_refuses_and_ignore_skips(api: httpx.AsyncClient) -> None:
    # "failurePolicy defines how to handle failures for the admission policy. Failures can
    # occur from CEL expression parse errors, type check errors, runtime errors [...]
    # Defaults to Fail."
    await install(api, policy("broken", "[JSONPatch{op: 'add', path: '/x', value: object.nope}]"))
    refused = await api.post(DEPLOYMENTS, json=deployment("web", 1))
    assert refused.status_code == 422
    assert "MutatingAdmissionPolicy 'broken'" in refused.json()["message"]
    assert (await api.get(f"{DEPLOYMENTS}/web")).status_code == 404

    ignored = await api.patch(
        f"{ADMISSION}/mutatingadmissionpolicies/broken",
        json={"spec": {"failurePolicy": "Ignore"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert ignored.status_code == 200, ignored.text
    created = await api.post(DEPLOYMENTS, json=deployment("web", 1))
    assert created.status_code == 201, created.text


async def test_a_patch_that_cannot_apply_is_a_failure(api: httpx.AsyncClient) -> None:
    # A JSON patch "test" that fails, or a path that does not exist, fails the mutation.
    await install(api, policy("missing", "[JSONPatch{op: 'replace', path: '/nope/x', value: 1}]"))
    refused = await api.post(DEPLOYMENTS, json=deployment("web", 1))
    assert refused.status_code == 422
    assert "mutations[0]" in refused.json()["message"]


async def test_reinvocation_if_needed_runs_again_after_a_later_change(
    api: httpx.AsyncClient,
) -> None:
    # reinvocationPolicy IfNeeded: "the mutations may be called at least one additional time
    # as part of the admission evaluation if the object being admitted is modified by other
    # admission plugins after the initial mutation". Never (the default): called once.
    copy_expr = (
        "has(object.metadata.labels) && 'b' in object.metadata.labels ? "
        + label("copied", "yes")
        + " : "
        + label("copied", "no")
    )
    first = policy(
        "a-copies",
        "has(object.metadata.labels) ? [] : "
        "[JSONPatch{op: 'add', path: '/metadata/labels', value: {}}]",
        copy_expr,
        reinvocationPolicy="IfNeeded",
    )
    await install(api, first)
    await install(api, policy("b-sets", label("b", "set")))
    created = await api.post(DEPLOYMENTS, json=deployment("web", 1))
    assert created.status_code == 201, created.text
    assert created.json()["metadata"]["labels"]["copied"] == "yes"

    never = await api.patch(
        f"{ADMISSION}/mutatingadmissionpolicies/a-copies",
        json={"spec": {"reinvocationPolicy": "Never"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert never.status_code == 200
    again = await api.post(DEPLOYMENTS, json=deployment("web2", 1))
    assert again.json()["metadata"]["labels"]["copied"] == "no"


async def test_params_each_selected_param_is_applied(api: httpx.AsyncClient) -> None:
    # "each binding will cause its policy to be evaluated N times, where N is 1 for
    # policies/bindings that don't use params, otherwise N is the number of parameters
    # selected by the binding."
    for name in ("one", "two"):
        assert (await api.post(RRS, json=request_body(name))).status_code == 201
    body = policy(
        "names",
        "has(object.metadata.annotations) ? [] : "
        "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}]",
        "[JSONPatch{op: 'add', path: '/metadata/annotations/seen-' + params.metadata.name, "
        "value: params.metadata.uid}]",
        paramKind={"apiVersion": "precedent.dev/v1alpha1", "kind": "RemediationRequest"},
    )
    await api.post(f"{ADMISSION}/mutatingadmissionpolicies", json=body)
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "names"},
        "spec": {
            "policyName": "names",
            "paramRef": {"selector": {}, "parameterNotFoundAction": "Allow"},
        },
    }
    assert (
        await api.post(f"{ADMISSION}/mutatingadmissionpolicybindings", json=binding)
    ).status_code == 201
    created = await api.post(DEPLOYMENTS, json=deployment("web", 1))
    assert created.status_code == 201, created.text
    annotations = created.json()["metadata"]["annotations"]
    uids = {n: (await api.get(f"{RRS}/{n}")).json()["metadata"]["uid"] for n in ("one", "two")}
    assert annotations["seen-one"] == uids["one"]
    assert annotations["seen-two"] == uids["two"]


async def test_v1beta1_is_served_and_bad_policies_are_refused(api: httpx.AsyncClient) -> None:
    beta = policy(
        "beta", "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'beta': 'yes'}}]"
    )
    beta["apiVersion"] = "admissionregistration.k8s.io/v1beta1"
    await install(api, beta, version="v1beta1")
    created = await api.post(DEPLOYMENTS, json=deployment("web", 1))
    assert created.status_code == 201, created.text
    assert created.json()["metadata"]["labels"] == {"beta": "yes"}
    bad = policy("bad")
    bad["spec"]["mutations"] = [{"patchType": "StrategicMerge"}]
    refused = await api.post(f"{ADMISSION}/mutatingadmissionpolicies", json=bad)
    assert refused.status_code == 422
    assert "spec.mutations[0].patchType" in refused.text
    empty = policy("empty")
    refused = await api.post(f"{ADMISSION}/mutatingadmissionpolicies", json=empty)
    assert refused.status_code == 422
    assert "spec.mutations" in refused.text
