"""Discovery: what kopf and kubectl read before they touch a resource."""

from __future__ import annotations

import httpx

from tests.sandbox.conftest import GROUP

AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


async def test_version(api: httpx.AsyncClient) -> None:
    body = (await api.get("/version")).json()
    assert body["major"] == "1"
    assert body["gitVersion"].startswith("v1.32")


async def test_core_api_lists_namespaces_events_and_status_subresource(
    api: httpx.AsyncClient,
) -> None:
    versions = (await api.get("/api")).json()
    assert versions["kind"] == "APIVersions"
    assert versions["versions"] == ["v1"]
    resources = (await api.get("/api/v1")).json()
    assert resources["kind"] == "APIResourceList"
    by_name = {r["name"]: r for r in resources["resources"]}
    assert by_name["namespaces"]["namespaced"] is False
    assert by_name["events"]["namespaced"] is True
    assert "create" in by_name["events"]["verbs"]
    assert by_name["namespaces/status"]["verbs"] == ["get", "patch", "update"]


async def test_group_list_has_the_crd_group_and_apiextensions(api: httpx.AsyncClient) -> None:
    groups = (await api.get("/apis")).json()
    assert groups["kind"] == "APIGroupList"
    names = {g["name"]: g for g in groups["groups"]}
    assert names["precedent.dev"]["preferredVersion"]["groupVersion"] == "precedent.dev/v1alpha1"
    assert "apiextensions.k8s.io" in names
    group = (await api.get("/apis/precedent.dev")).json()
    assert group["kind"] == "APIGroup"
    assert group["versions"][0]["version"] == "v1alpha1"


async def test_resource_list_describes_each_custom_resource(api: httpx.AsyncClient) -> None:
    body = (await api.get(GROUP)).json()
    assert body["groupVersion"] == "precedent.dev/v1alpha1"
    by_name = {r["name"]: r for r in body["resources"]}
    rr = by_name["remediationrequests"]
    assert rr["kind"] == "RemediationRequest"
    assert rr["singularName"] == "remediationrequest"
    assert rr["namespaced"] is True
    assert rr["shortNames"] == ["rr"]
    assert rr["categories"] == ["precedent"]
    assert set(rr["verbs"]) >= {"create", "get", "list", "watch", "patch", "update", "delete"}
    assert by_name["remediationrequests/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["playbooks"]["namespaced"] is False
    assert by_name["playbooks"]["shortNames"] == ["pb"]
    assert by_name["incidents"]["shortNames"] == ["inc"]


async def test_aggregated_discovery_v2(api: httpx.AsyncClient) -> None:
    response = await api.get("/apis", headers={"Accept": AGGREGATED})
    assert response.headers["Content-Type"].startswith(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    body = response.json()
    assert body["kind"] == "APIGroupDiscoveryList"
    group = next(i for i in body["items"] if i["metadata"]["name"] == "precedent.dev")
    resources = {r["resource"]: r for r in group["versions"][0]["resources"]}
    rr = resources["remediationrequests"]
    assert rr["scope"] == "Namespaced"
    assert rr["responseKind"]["kind"] == "RemediationRequest"
    assert rr["subresources"][0]["subresource"] == "status"
    core = (await api.get("/api", headers={"Accept": AGGREGATED})).json()
    assert core["items"][0]["versions"][0]["version"] == "v1"


async def test_openapi_v3_says_patch_takes_field_validation(api: httpx.AsyncClient) -> None:
    paths = (await api.get("/openapi/v3")).json()["paths"]
    core = (await api.get(paths["api/v1"]["serverRelativeURL"])).json()
    assert (
        core["paths"]["/api/v1/namespaces/{name}"]["patch"]["x-kubernetes-group-version-kind"][
            "kind"
        ]
        == "Namespace"
    )
    url = paths["apis/precedent.dev/v1alpha1"]["serverRelativeURL"]
    document = (await api.get(url)).json()
    item = document["paths"][
        "/apis/precedent.dev/v1alpha1/namespaces/{namespace}/remediationrequests/{name}"
    ]
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "RemediationRequest"
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]


async def test_unknown_paths_are_404_status(api: httpx.AsyncClient) -> None:
    for path in ("/nope", "/apis/nope.dev/v1", f"{GROUP}/widgets", "/api/v2"):
        response = await api.get(path)
        assert response.status_code == 404, path
        assert response.json()["kind"] == "Status"
        assert response.json()["reason"] == "NotFound"
