"""Object semantics: create/get/list/replace/delete, resourceVersion, generation, finalizers."""

from __future__ import annotations

import httpx

from tests.sandbox.conftest import (
    GROUP,
    INCIDENTS,
    JSON_PATCH,
    MERGE,
    PLAYBOOKS,
    RRS,
    incident_body,
    playbook_body,
    ready_status,
    request_body,
)


async def test_create_sets_server_fields_and_get_returns_the_same(api: httpx.AsyncClient) -> None:
    created = await api.post(RRS, json=request_body("first"))
    assert created.status_code == 201
    obj = created.json()
    meta = obj["metadata"]
    assert meta["namespace"] == "default"
    assert meta["generation"] == 1
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    fetched = await api.get(f"{RRS}/first")
    assert fetched.status_code == 200
    assert fetched.json() == obj


async def test_list_kind_and_resource_version(api: httpx.AsyncClient) -> None:
    for name in ("a", "b"):
        await api.post(RRS, json=request_body(name))
    listed = (await api.get(RRS)).json()
    assert listed["kind"] == "RemediationRequestList"
    assert listed["apiVersion"] == "precedent.dev/v1alpha1"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    latest = max(int(i["metadata"]["resourceVersion"]) for i in listed["items"])
    assert int(listed["metadata"]["resourceVersion"]) >= latest


async def test_generate_name(api: httpx.AsyncClient) -> None:
    body = request_body("ignored")
    body["metadata"] = {"generateName": "restart-"}
    name = (await api.post(RRS, json=body)).json()["metadata"]["name"]
    assert name.startswith("restart-")
    assert len(name) == len("restart-") + 5


async def test_already_exists_and_not_found_are_status_objects(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json=request_body("dup"))
    again = await api.post(RRS, json=request_body("dup"))
    assert again.status_code == 409
    status = again.json()
    assert status["kind"] == "Status"
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == 'remediationrequests.precedent.dev "dup" already exists'
    missing = await api.get(f"{RRS}/nope")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"
    assert missing.json()["details"] == {
        "name": "nope",
        "group": "precedent.dev",
        "kind": "remediationrequests",
    }


async def test_create_in_a_missing_namespace_is_404(api: httpx.AsyncClient) -> None:
    response = await api.post(
        f"{GROUP}/namespaces/ghost/remediationrequests", json=request_body("x")
    )
    assert response.status_code == 404
    assert response.json()["message"] == 'namespaces "ghost" not found'


async def test_cluster_wide_list_of_a_namespaced_resource(api: httpx.AsyncClient) -> None:
    await api.post("/api/v1/namespaces", json={"metadata": {"name": "team-a"}})
    await api.post(RRS, json=request_body("in-default"))
    await api.post(f"{GROUP}/namespaces/team-a/remediationrequests", json=request_body("in-team-a"))
    everywhere = (await api.get(f"{GROUP}/remediationrequests")).json()
    found = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere["items"]}
    assert found == {("default", "in-default"), ("team-a", "in-team-a")}
    only_a = (await api.get(f"{GROUP}/namespaces/team-a/remediationrequests")).json()
    assert [i["metadata"]["name"] for i in only_a["items"]] == ["in-team-a"]


async def test_cluster_scoped_resources(api: httpx.AsyncClient) -> None:
    created = await api.post(INCIDENTS, json=incident_body("inc-1"))
    assert created.status_code == 201
    assert "namespace" not in created.json()["metadata"]
    assert (await api.get(f"{INCIDENTS}/inc-1")).status_code == 200
    wrong = await api.get(f"{GROUP}/namespaces/default/incidents/inc-1")
    assert wrong.status_code == 404


async def test_label_and_field_selectors(api: httpx.AsyncClient) -> None:
    one = request_body("one")
    two = request_body("two")
    two["metadata"]["labels"] = {"team": "search"}
    await api.post(RRS, json=one)
    await api.post(RRS, json=two)

    async def names(**params: str) -> list[str]:
        body = (await api.get(RRS, params=params)).json()
        return [i["metadata"]["name"] for i in body["items"]]

    assert await names(labelSelector="team=search") == ["two"]
    assert await names(labelSelector="team!=search") == ["one"]
    assert await names(labelSelector="team in (payments,search)") == ["one", "two"]
    assert await names(labelSelector="!team") == []
    assert await names(fieldSelector="metadata.name=one") == ["one"]
    assert await names(fieldSelector="metadata.namespace=default,metadata.name!=one") == ["two"]
    unsupported = await api.get(RRS, params={"fieldSelector": "spec.action=x"})
    assert unsupported.status_code == 400
    assert unsupported.json()["message"] == "field label not supported: spec.action"


async def test_limit_and_continue(api: httpx.AsyncClient) -> None:
    for index in range(5):
        await api.post(RRS, json=request_body(f"page-{index}"))
    first = (await api.get(RRS, params={"limit": "2"})).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["page-0", "page-1"]
    assert first["metadata"]["remainingItemCount"] == 3
    token = first["metadata"]["continue"]
    second = (await api.get(RRS, params={"limit": "2", "continue": token})).json()
    assert [i["metadata"]["name"] for i in second["items"]] == ["page-2", "page-3"]
    last = (
        await api.get(RRS, params={"limit": "2", "continue": second["metadata"]["continue"]})
    ).json()
    assert [i["metadata"]["name"] for i in last["items"]] == ["page-4"]
    assert "continue" not in last["metadata"]


async def test_resource_version_is_one_counter_across_resources(api: httpx.AsyncClient) -> None:
    versions = []
    for index in range(3):
        versions.append((await api.post(RRS, json=request_body(f"rv-{index}"))).json())
        versions.append((await api.post(PLAYBOOKS, json=playbook_body(f"pb-{index}"))).json())
    numbers = [int(v["metadata"]["resourceVersion"]) for v in versions]
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == len(numbers)


async def test_replace_with_a_stale_resource_version_is_409(api: httpx.AsyncClient) -> None:
    created = (await api.post(PLAYBOOKS, json=playbook_body("pb"))).json()
    stale = dict(created)
    fresh = (
        await api.put(
            f"{PLAYBOOKS}/pb", json={**created, "spec": {**created["spec"], "version": "v2"}}
        )
    ).json()
    assert fresh["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    conflict = await api.put(
        f"{PLAYBOOKS}/pb", json={**stale, "spec": {**stale["spec"], "version": "v3"}}
    )
    assert conflict.status_code == 409
    status = conflict.json()
    assert status["reason"] == "Conflict"
    assert "the object has been modified" in status["message"]
    without = {
        **created,
        "metadata": {k: v for k, v in created["metadata"].items() if k != "resourceVersion"},
    }
    assert (await api.put(f"{PLAYBOOKS}/pb", json=without)).status_code == 422


async def test_generation_counts_spec_changes_only(api: httpx.AsyncClient) -> None:
    created = (await api.post(PLAYBOOKS, json=playbook_body("gen"))).json()
    assert created["metadata"]["generation"] == 1
    labelled = (
        await api.patch(
            f"{PLAYBOOKS}/gen", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE
        )
    ).json()
    assert labelled["metadata"]["generation"] == 1
    status = (
        await api.patch(
            f"{PLAYBOOKS}/gen/status",
            json={"status": {"executions": 3, "successes": 2}},
            headers=MERGE,
        )
    ).json()
    assert status["metadata"]["generation"] == 1
    changed = (
        await api.patch(f"{PLAYBOOKS}/gen", json={"spec": {"version": "v2"}}, headers=MERGE)
    ).json()
    assert changed["metadata"]["generation"] == 2
    rv = changed["metadata"]["resourceVersion"]
    same = (
        await api.patch(f"{PLAYBOOKS}/gen", json={"spec": {"version": "v2"}}, headers=MERGE)
    ).json()
    assert same["metadata"]["resourceVersion"] == rv  # a no-op write is not a new version


async def test_status_subresource_isolation(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json={**request_body("iso"), "status": {"observedGeneration": 9}})
    assert "status" not in (await api.get(f"{RRS}/iso")).json()  # create cannot set status
    written = await api.patch(f"{RRS}/iso/status", json=ready_status(), headers=MERGE)
    assert written.status_code == 200
    assert written.json()["status"]["risk"]["band"] == "medium"
    # Main-resource writes ignore status...
    main = await api.patch(
        f"{RRS}/iso",
        json={"metadata": {"labels": {"x": "y"}}, "status": {"observedGeneration": 7}},
        headers=MERGE,
    )
    assert main.json()["status"]["observedGeneration"] == 1
    assert main.json()["metadata"]["labels"]["x"] == "y"
    # ...and status writes ignore everything else.
    current = main.json()
    current["metadata"]["labels"] = {"changed": "yes"}
    current["spec"]["description"] = "changed"
    current["status"]["observedGeneration"] = 2
    replaced = (await api.put(f"{RRS}/iso/status", json=current)).json()
    assert replaced["status"]["observedGeneration"] == 2
    assert replaced["metadata"]["labels"] == {"team": "payments", "x": "y"}
    assert replaced["spec"]["description"].startswith("Restart payment-api")
    assert replaced["metadata"]["generation"] == 1


async def test_delete_without_finalizers(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json=request_body("gone"))
    deleted = await api.delete(f"{RRS}/gone")
    assert deleted.status_code == 200
    # Gone at once: a Status of Success, as kube-apiserver answers (not the object).
    status = deleted.json()
    assert (status["kind"], status["status"]) == ("Status", "Success")
    assert status["details"]["name"] == "gone"
    assert status["details"]["kind"] == "remediationrequests"
    assert (await api.get(f"{RRS}/gone")).status_code == 404


async def test_finalizers_hold_deletion_until_removed(api: httpx.AsyncClient) -> None:
    body = request_body("held")
    body["metadata"]["finalizers"] = ["precedent.dev/cleanup"]
    await api.post(RRS, json=body)
    marked = (await api.delete(f"{RRS}/held")).json()
    assert marked["metadata"]["deletionTimestamp"].endswith("Z")
    still = await api.get(f"{RRS}/held")
    assert still.status_code == 200
    more = await api.patch(
        f"{RRS}/held",
        json={"metadata": {"finalizers": ["precedent.dev/cleanup", "other"]}},
        headers=MERGE,
    )
    assert more.status_code == 422
    assert "no new finalizers can be added" in more.json()["message"]
    released = await api.patch(
        f"{RRS}/held",
        json=[{"op": "remove", "path": "/metadata/finalizers"}],
        headers=JSON_PATCH,
    )
    assert released.status_code == 200
    assert (await api.get(f"{RRS}/held")).status_code == 404


async def test_delete_preconditions(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json=request_body("pre"))
    wrong = await api.request(
        "DELETE", f"{RRS}/pre", json={"preconditions": {"resourceVersion": "1"}}
    )
    assert wrong.status_code == 409
    assert (await api.get(f"{RRS}/pre")).status_code == 200


async def test_dry_run_does_not_store(api: httpx.AsyncClient) -> None:
    response = await api.post(RRS, params={"dryRun": "All"}, json=request_body("dry"))
    assert response.status_code == 201
    assert (await api.get(f"{RRS}/dry")).status_code == 404


async def test_wrong_method_is_405(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json=request_body("m"))
    response = await api.post(f"{RRS}/m", json=request_body("m"))
    assert response.status_code == 405
    assert response.json()["reason"] == "MethodNotAllowed"


async def test_deleting_a_namespace_deletes_its_content(api: httpx.AsyncClient) -> None:
    await api.post("/api/v1/namespaces", json={"metadata": {"name": "doomed"}})
    path = f"{GROUP}/namespaces/doomed/remediationrequests"
    await api.post(path, json=request_body("inside"))
    await api.delete("/api/v1/namespaces/doomed")
    assert (await api.get(f"{path}/inside")).status_code == 404
    assert (await api.get("/api/v1/namespaces/doomed")).status_code == 404


async def test_events_can_be_posted_and_listed_by_involved_object(api: httpx.AsyncClient) -> None:
    event = {
        "metadata": {"generateName": "kopf-event-", "namespace": "default"},
        "type": "Normal",
        "reason": "Escalated",
        "message": "risk medium",
        "involvedObject": {"kind": "RemediationRequest", "name": "x", "namespace": "default"},
        "lastTimestamp": "2025-01-01T00:00:00.123456+00:00",
    }
    created = await api.post("/api/v1/namespaces/default/events", json=event)
    assert created.status_code == 201
    listed = (
        await api.get(
            "/api/v1/namespaces/default/events",
            params={
                "fieldSelector": "involvedObject.name=x,involvedObject.kind=RemediationRequest"
            },
        )
    ).json()
    assert listed["kind"] == "EventList"
    assert [e["reason"] for e in listed["items"]] == ["Escalated"]
