"""Patch formats: merge, JSON, strategic merge (as merge) and apply."""

from __future__ import annotations

import httpx

from tests.sandbox.conftest import JSON_PATCH, MERGE, PLAYBOOKS, playbook_body


async def test_merge_patch_adds_and_removes(api: httpx.AsyncClient) -> None:
    await api.post(PLAYBOOKS, json=playbook_body("m"))
    added = await api.patch(
        f"{PLAYBOOKS}/m", json={"metadata": {"labels": {"a": "1", "b": "2"}}}, headers=MERGE
    )
    assert added.json()["metadata"]["labels"] == {"a": "1", "b": "2"}
    removed = await api.patch(
        f"{PLAYBOOKS}/m", json={"metadata": {"labels": {"a": None}}}, headers=MERGE
    )
    assert removed.json()["metadata"]["labels"] == {"b": "2"}


async def test_json_patch_with_a_resource_version_test(api: httpx.AsyncClient) -> None:
    created = (await api.post(PLAYBOOKS, json=playbook_body("j"))).json()
    rv = created["metadata"]["resourceVersion"]
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {
            "op": "add",
            "path": "/metadata/finalizers",
            "value": ["kopf.zalando.org/KopfFinalizerMarker"],
        },
        {"op": "add", "path": "/spec/actions/-", "value": "scale_up"},
    ]
    patched = await api.patch(f"{PLAYBOOKS}/j", json=ops, headers=JSON_PATCH)
    assert patched.status_code == 200
    assert patched.json()["spec"]["actions"] == ["restart_service", "scale_up"]
    stale = await api.patch(f"{PLAYBOOKS}/j", json=ops[:1], headers=JSON_PATCH)
    assert stale.status_code == 422  # kopf relies on 422 for a failed test
    missing = await api.patch(
        f"{PLAYBOOKS}/j", json=[{"op": "remove", "path": "/spec/nothing"}], headers=JSON_PATCH
    )
    assert missing.status_code == 422


async def test_a_strategic_merge_patch_of_a_custom_resource_is_refused(
    api: httpx.AsyncClient,
) -> None:
    # Custom resources have no patch strategies: kube-apiserver answers 415 (kubectl patch
    # then asks for --type merge).
    await api.post(PLAYBOOKS, json=playbook_body("s"))
    patched = await api.patch(
        f"{PLAYBOOKS}/s",
        json={"metadata": {"annotations": {"k": "v"}}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert patched.status_code == 415
    assert "strategic-merge-patch" not in patched.json()["message"]


async def test_apply_patch_creates_then_updates(api: httpx.AsyncClient) -> None:
    headers = {"Content-Type": "application/apply-patch+yaml"}
    body = playbook_body("a")
    created = await api.patch(
        f"{PLAYBOOKS}/a", params={"fieldManager": "me"}, json=body, headers=headers
    )
    assert created.status_code == 201
    body["spec"]["version"] = "v9"
    updated = await api.patch(
        f"{PLAYBOOKS}/a", params={"fieldManager": "me"}, json=body, headers=headers
    )
    assert updated.json()["spec"]["version"] == "v9"
    assert updated.json()["metadata"]["generation"] == 2
    no_manager = await api.patch(f"{PLAYBOOKS}/a", json=body, headers=headers)
    assert no_manager.status_code == 422
    assert no_manager.json()["details"]["causes"][0]["field"] == "fieldManager"


async def test_unknown_patch_type_is_415(api: httpx.AsyncClient) -> None:
    await api.post(PLAYBOOKS, json=playbook_body("u"))
    response = await api.patch(
        f"{PLAYBOOKS}/u", content=b"{}", headers={"Content-Type": "text/x-patch"}
    )
    assert response.status_code == 415
    assert response.json()["reason"] == "UnsupportedMediaType"
