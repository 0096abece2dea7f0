"""Validation against the CRD schema: 422 Invalid naming the field, pruning, defaults, CEL.

Every test runs on the sandbox and on a real kube-apiserver with the same CRDs: the refusals
are the CRDs' own, and the real server is the judge of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from precedent_sandbox import Sandbox
from tests.backends import install_crds, real_server
from tests.sandbox.conftest import (
    INCIDENTS,
    JSON_PATCH,
    MERGE,
    PLAYBOOKS,
    RRS,
    incident_body,
    playbook_body,
    ready_status,
    request_body,
    widget_crd,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sandbox", "real"])
async def api(
    request: pytest.FixtureRequest, sandbox: Sandbox, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """An admin HTTP client for the sandbox, or for a fresh real API server with the CRDs."""
    if request.param == "sandbox":
        async with httpx.AsyncClient(base_url=sandbox.url, timeout=10) as client:
            yield client
        return
    with real_server({}, tmp_path / "control-plane", request) as (_, admin):
        install_crds(admin, REPO / "crds")
        async with httpx.AsyncClient(
            base_url=str(admin.base_url),
            verify=False,
            timeout=10,
            headers={"Authorization": admin.headers["Authorization"]},
        ) as client:
            yield client


def causes(response: httpx.Response) -> dict[str, dict[str, Any]]:
    """The Status causes of a 422, by field."""
    assert response.status_code == 422, response.text
    status = response.json()
    assert status["kind"] == "Status"
    assert status["reason"] == "Invalid"
    assert status["code"] == 422
    return {c["field"]: c for c in status["details"]["causes"]}


async def test_missing_required_field(api: httpx.AsyncClient) -> None:
    response = await api.post(RRS, json=request_body("x", target={"kind": "Deployment"}))
    found = causes(response)
    assert found["spec.target.name"]["reason"] == "FieldValueRequired"
    status = response.json()
    # A missing field stops the CRD's CEL rules, and kube-apiserver says so in a second cause.
    assert status["message"] == (
        'RemediationRequest.precedent.dev "x" is invalid: [spec.target.name: Required value, '
        "<nil>: Invalid value: null: some validation rules were not checked because the object "
        "was invalid; correct the existing errors to complete validation]"
    )
    assert status["details"]["name"] == "x"
    assert status["details"]["group"] == "precedent.dev"
    assert status["details"]["kind"] == "RemediationRequest"


async def test_pattern(api: httpx.AsyncClient) -> None:
    found = causes(await api.post(RRS, json=request_body("x", action="Restart-Service")))
    cause = found["spec.action"]
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["message"] == (
        "Invalid value: \"Restart-Service\": spec.action in body should match '^[a-z][a-z0-9_]*$'"
    )


async def test_enum(api: httpx.AsyncClient) -> None:
    found = causes(await api.post(INCIDENTS, json=incident_body("i", severity="disastrous")))
    assert found["spec.severity"]["reason"] == "FieldValueNotSupported"
    assert found["spec.severity"]["message"] == (
        'Unsupported value: "disastrous": supported values: "critical", "high", "medium", "low"'
    )


async def test_max_length_max_items_and_bounds(api: httpx.AsyncClient) -> None:
    found = causes(await api.post(RRS, json=request_body("x", description="d" * 8193)))
    assert found["spec.description"]["reason"] == "FieldValueTooLong"
    assert found["spec.description"]["message"] == "Too long: may not be more than 8192 bytes"
    found = causes(
        await api.post(
            INCIDENTS,
            json=incident_body("i", tags=[f"t{i}" for i in range(65)], qualityScore=1.5),
        )
    )
    assert found["spec.tags"]["reason"] == "FieldValueTooMany"
    assert found["spec.tags"]["message"] == "Too many: 65: must have at most 64 items"
    assert found["spec.qualityScore"]["message"] == (
        "Invalid value: 1.5: spec.qualityScore in body should be less than or equal to 1"
    )


async def test_wrong_type_and_format(api: httpx.AsyncClient) -> None:
    found = causes(
        await api.post(
            INCIDENTS, json=incident_body("i", resolutionHours="two", occurredAt="yesterday")
        )
    )
    assert found["spec.resolutionHours"]["reason"] == "FieldValueTypeInvalid"
    assert "must be of type number" in found["spec.resolutionHours"]["message"]
    assert "must be of type date-time" in found["spec.occurredAt"]["message"]


async def test_invalid_name(api: httpx.AsyncClient) -> None:
    found = causes(await api.post(RRS, json=request_body("Not_A_Name")))
    assert "RFC 1123 subdomain" in found["metadata.name"]["message"]


async def test_unknown_fields_are_pruned_with_a_warning(api: httpx.AsyncClient) -> None:
    body = request_body("pruned", surprise=True)
    body["metadata"]["bogus"] = 1
    response = await api.post(RRS, json=body)
    assert response.status_code == 201
    assert "surprise" not in response.json()["spec"]
    assert "bogus" not in response.json()["metadata"]
    warnings = response.headers.get_list("Warning")
    assert '299 - "unknown field \\"spec.surprise\\""' in warnings


async def test_strict_field_validation_rejects_unknown_fields(api: httpx.AsyncClient) -> None:
    response = await api.post(
        RRS, params={"fieldValidation": "Strict"}, json=request_body("strict", surprise=True)
    )
    assert response.status_code == 400
    assert response.json()["message"].endswith(
        'strict decoding error: unknown field "spec.surprise"'
    )


async def test_schema_defaults_are_applied(api: httpx.AsyncClient) -> None:
    created = (await api.post(PLAYBOOKS, json=playbook_body("d", history={}))).json()
    assert created["spec"]["history"] == {"executions": 0, "successes": 0}


async def test_status_is_validated_too(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json=request_body("s"))
    bad = ready_status()
    bad["status"]["risk"]["band"] = "enormous"
    found = causes(await api.patch(f"{RRS}/s/status", json=bad, headers=MERGE))
    assert found["status.risk.band"]["reason"] == "FieldValueNotSupported"


async def test_cel_spec_immutability(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json=request_body("frozen"))
    response = await api.patch(
        f"{RRS}/frozen", json={"spec": {"description": "changed"}}, headers=MERGE
    )
    found = causes(response)
    assert found["spec.description"]["message"] == (
        "Invalid value: spec.description cannot be added, changed or removed"
    )
    assert response.json()["message"] == (
        'RemediationRequest.precedent.dev "frozen" is invalid: spec.description: Invalid value: '
        "spec.description cannot be added, changed or removed"
    )
    # Metadata and status stay writable.
    labelled = await api.patch(
        f"{RRS}/frozen", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE
    )
    assert labelled.status_code == 200
    assert (await api.patch(f"{RRS}/frozen/status", json=ready_status(), headers=MERGE)).is_success


async def test_cel_rule_on_create(api: httpx.AsyncClient) -> None:
    response = await api.post(
        PLAYBOOKS, json=playbook_body("p", history={"executions": 1, "successes": 2})
    )
    found = causes(response)
    assert found["spec.history"]["message"] == ("Invalid value: successes cannot exceed executions")


async def test_json_patch_that_breaks_the_schema_is_rejected(api: httpx.AsyncClient) -> None:
    await api.post(PLAYBOOKS, json=playbook_body("j"))
    response = await api.patch(
        f"{PLAYBOOKS}/j",
        json=[{"op": "replace", "path": "/spec/version", "value": ""}],
        headers=JSON_PATCH,
    )
    assert causes(response)["spec.version"]["reason"] == "FieldValueInvalid"


async def test_a_crd_whose_pattern_is_not_re2_is_refused(api: httpx.AsyncClient) -> None:
    # kube-apiserver compiles patterns with Go's regexp (RE2): no lookaround.
    crd = widget_crd(
        {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(?=a)a$"}}}
    )
    refused = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    assert refused.status_code == 422, refused.text
    assert "must be a valid regular expression" in refused.json()["message"]
