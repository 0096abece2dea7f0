"""The OpenAPI documents and field validation, against what the Kubernetes documentation says.

Quotes are from kubernetes.io: "The Kubernetes API" (concepts/overview/kubernetes-api) for the
documents, "API Concepts", section "Field validation" (reference/using-api/api-concepts) for
``fieldValidation``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import httpx

from precedent_sandbox import builtin_schemas
from tests.sandbox.conftest import GROUP, playbook_body, widget_crd

DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }
    body["spec"].update(spec)
    return body


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Follow a v3 reference (plain, or wrapped in allOf) to the schema it names."""
    ref = schema.get("$ref") or (schema.get("allOf") or [{}])[0].get("$ref")
    if ref is None:
        return schema
    return document["components"]["schemas"][ref.removeprefix("#/components/schemas/")]


async def test_the_v3_index_lists_each_group_version_with_a_hashed_relative_url(
    api: httpx.AsyncClient,
) -> None:
    # "The /openapi/v3 discovery endpoint provides a list of all group/versions available.
    # This endpoint only returns JSON." … {"paths": {"api/v1": {"serverRelativeURL":
    # "/openapi/v3/api/v1?hash=CC0E…"}, "apis/admissionregistration.k8s.io/v1": {…}}}
    index = (await api.get("/openapi/v3")).json()
    assert set(index) == {"paths"}
    paths = index["paths"]
    for key in ("api/v1", "apis/apps/v1", "apis/precedent.dev/v1alpha1", "apis/kopf.dev/v1"):
        url = paths[key]["serverRelativeURL"]
        assert url.startswith(f"/openapi/v3/{key}?hash=")
        digest = url.split("hash=")[1]
        assert len(digest) == 128
        assert digest == digest.upper()
        assert (await api.get(url)).status_code == 200


async def test_a_group_version_document_has_its_kinds_schemas_with_their_gvk(
    api: httpx.AsyncClient,
) -> None:
    paths = (await api.get("/openapi/v3")).json()["paths"]
    apps = (await api.get(paths["apis/apps/v1"]["serverRelativeURL"])).json()
    assert apps["openapi"].startswith("3.")
    schema = apps["components"]["schemas"][DEPLOYMENT]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "version": "v1", "kind": "Deployment"}
    ]
    spec = resolve(apps, schema["properties"]["spec"])
    replicas = spec["properties"]["replicas"]
    assert replicas["type"] == "integer"
    assert replicas["format"] == "int32"
    assert "Number of desired pods" in replicas["description"]
    # Every reference in the document names a schema the document has.
    text = json.dumps(apps)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}:
        assert ref in apps["components"]["schemas"], ref


async def test_a_crd_document_has_the_openapiv3schema_and_objectmeta(
    api: httpx.AsyncClient,
) -> None:
    paths = (await api.get("/openapi/v3")).json()["paths"]
    document = (await api.get(paths["apis/precedent.dev/v1alpha1"]["serverRelativeURL"])).json()
    schemas = document["components"]["schemas"]
    rr = schemas["dev.precedent.v1alpha1.RemediationRequest"]
    assert rr["x-kubernetes-group-version-kind"] == [
        {"group": "precedent.dev", "version": "v1alpha1", "kind": "RemediationRequest"}
    ]
    assert "action" in rr["properties"]["spec"]["properties"]
    metadata = resolve(document, rr["properties"]["metadata"])
    assert "name" in metadata["properties"]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas


async def test_a_new_crd_gets_a_document_and_the_index_changes(api: httpx.AsyncClient) -> None:
    before = (await api.get("/openapi/v3")).json()["paths"]
    assert "apis/example.dev/v1" not in before
    crd = widget_crd(
        {"type": "object", "properties": {"spec": {"type": "object", "description": "size"}}}
    )
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert (await api.post(path, json=crd)).status_code == 201
    after = (await api.get("/openapi/v3")).json()["paths"]
    document = (await api.get(after["apis/example.dev/v1"]["serverRelativeURL"])).json()
    widget = document["components"]["schemas"]["dev.example.v1.Widget"]
    assert widget["properties"]["spec"]["description"] == "size"
    assert (await api.delete(f"{path}/widgets.example.dev")).status_code == 200
    assert "apis/example.dev/v1" not in (await api.get("/openapi/v3")).json()["paths"]


async def test_v2_is_one_swagger_document_with_definitions(api: httpx.AsyncClient) -> None:
    # "The Kubernetes API server serves an aggregated OpenAPI v2 spec via the /openapi/v2
    # endpoint."
    document = (await api.get("/openapi/v2", headers={"Accept": "application/json"})).json()
    assert document["swagger"] == "2.0"
    definitions = document["definitions"]
    assert definitions[DEPLOYMENT]["x-kubernetes-group-version-kind"][0]["kind"] == "Deployment"
    playbook = definitions["dev.precedent.v1alpha1.Playbook"]
    assert playbook["properties"]["metadata"]["$ref"] == (
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    patch = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    # The protobuf form is not served: 406, not a body kubectl could not parse.
    protobuf = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    assert (await api.get("/openapi/v2", headers={"Accept": protobuf})).status_code == 406


async def test_strict_refuses_unknown_fields_of_a_builtin_kind_naming_them(
    api: httpx.AsyncClient,
) -> None:
    # "Strict: This will fail the request with a BadRequest error if any unknown fields would
    # be dropped from the object, or if any duplicate fields are present. The error returned
    # from the server will contain all unknown and duplicate fields encountered."
    body = deployment("web", replicaz=2)
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    refused = await api.post(DEPLOYMENTS, params={"fieldValidation": "Strict"}, json=body)
    assert refused.status_code == 400
    assert refused.json()["reason"] == "BadRequest"
    message = refused.json()["message"]
    assert 'unknown field "spec.replicaz"' in message
    assert 'unknown field "spec.template.spec.containers[0].imagePullPolicyy"' in message


async def test_strict_refuses_duplicate_fields(api: httpx.AsyncClient) -> None:
    text = json.dumps(deployment("dup")).replace('"replicas": 1', '"replicas": 1, "replicas": 2')
    refused = await api.post(
        DEPLOYMENTS,
        params={"fieldValidation": "Strict"},
        content=text,
        headers={"Content-Type": "application/json"},
    )
    assert refused.status_code == 400
    assert 'duplicate field "spec.replicas"' in refused.json()["message"]


async def test_warn_drops_and_warns_ignore_drops_silently(api: httpx.AsyncClient) -> None:
    # "Warn: … the request will succeed, and the response will contain a warning for each
    # unknown and duplicate field" / "Ignore: … silently drop any unknown fields"
    text = json.dumps(deployment("warned", replicaz=2)).replace(
        '"replicas": 1', '"replicas": 1, "replicas": 3'
    )
    headers = {"Content-Type": "application/json"}
    warned = await api.post(
        DEPLOYMENTS, params={"fieldValidation": "Warn"}, content=text, headers=headers
    )
    assert warned.status_code == 201
    warnings = " ".join(warned.headers.get_list("Warning"))
    assert 'unknown field \\"spec.replicaz\\"' in warnings
    assert 'duplicate field \\"spec.replicas\\"' in warnings
    assert "replicaz" not in warned.json()["spec"]
    assert warned.json()["spec"]["replicas"] == 3  # the last value wins
    ignored = await api.post(
        DEPLOYMENTS,
        params={"fieldValidation": "Ignore"},
        json=deployment("ignored", replicaz=2),
    )
    assert ignored.status_code == 201
    assert not ignored.headers.get_list("Warning")
    assert "replicaz" not in ignored.json()["spec"]


async def test_custom_resources_get_the_same_field_validation(api: httpx.AsyncClient) -> None:
    body = playbook_body("strict", bogus=1)
    refused = await api.post(f"{GROUP}/playbooks", params={"fieldValidation": "Strict"}, json=body)
    assert refused.status_code == 400
    assert 'unknown field "spec.bogus"' in refused.json()["message"]


def test_the_vendored_definitions_are_what_kubernetes_validate_gives() -> None:
    # The data file is generated (python -m precedent_sandbox.builtin_schemas); a change of
    # kubernetes-validate or of the served kinds shows here until it is regenerated.
    data_file = Path(builtin_schemas.__file__).with_name(builtin_schemas.DATA_FILE)
    vendored = gzip.decompress(data_file.read_bytes())
    assert json.loads(gzip.decompress(builtin_schemas.regenerate())) == json.loads(vendored)
