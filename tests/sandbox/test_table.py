"""Server-side printing: the Table kubectl get asks for."""

from __future__ import annotations

import re

import httpx

from precedent_sandbox.meta import human_duration
from tests.sandbox.conftest import MERGE, RRS, TABLE, ready_status, request_body


async def test_list_as_table_has_the_printer_columns(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json=request_body("tbl"))
    await api.patch(f"{RRS}/tbl/status", json=ready_status(), headers=MERGE)
    table = (await api.get(RRS, headers={"Accept": TABLE})).json()
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == [
        "Name",
        "Risk",
        "Score",
        "Decision",
        "Ready",
        "Status",
        "Incident",
        "Playbook",
        "Confidence",
        "Upstream",
        "Age",
        "Message",
    ]
    priorities = {c["name"]: c.get("priority", 0) for c in table["columnDefinitions"]}
    wide_only = {"Incident", "Playbook", "Confidence", "Upstream", "Message"}
    assert {n for n, p in priorities.items() if p == 1} == wide_only  # kubectl's -o wide
    types = {c["name"]: c["type"] for c in table["columnDefinitions"]}
    assert types["Score"] == "number"
    assert types["Age"] == "date"
    row = table["rows"][0]
    cells = row["cells"]
    name, risk, score, decision, ready, _status, incident, playbook, confidence = cells[:9]
    upstream, age, message = cells[9:]
    assert upstream is None  # no blast radius in this status
    assert (name, risk, score, decision) == ("tbl", "medium", 45.0, "Escalated")
    assert (incident, playbook, confidence, ready) == (
        "INC-2025-0847",
        "restart-with-gate",
        0.82,
        "True",
    )
    ready_condition = next(
        c for c in ready_status()["status"]["conditions"] if c["type"] == "Ready"
    )
    assert message == ready_condition["message"]
    assert re.fullmatch(r"\d+s", age)
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "tbl"


async def test_single_object_table_and_empty_cells(api: httpx.AsyncClient) -> None:
    await api.post(RRS, json=request_body("fresh"))
    table = (
        await api.get(f"{RRS}/fresh", headers={"Accept": TABLE}, params={"includeObject": "Object"})
    ).json()
    cells = table["rows"][0]["cells"]
    assert cells[0] == "fresh"
    assert cells[1:8] == [None] * 7
    assert table["rows"][0]["object"]["spec"]["action"] == "restart_service"


async def test_builtin_tables(api: httpx.AsyncClient) -> None:
    namespaces = (await api.get("/api/v1/namespaces", headers={"Accept": TABLE})).json()
    assert [c["name"] for c in namespaces["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert namespaces["rows"][0]["cells"][:2] == ["default", "Active"]


def test_human_duration_matches_kubectl() -> None:
    cases = {5: "5s", 119: "119s", 182: "3m2s", 600: "10m", 3 * 3600 + 60: "3h1m", 30 * 3600: "30h"}
    cases.update({3 * 86400 + 3600: "3d1h", 30 * 86400: "30d", 3 * 365 * 86400: "3y"})
    for seconds, text in cases.items():
        assert human_duration(seconds) == text
