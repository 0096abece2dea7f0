"""Argo CD health checks, run under Lua 5.1 (Argo CD's gopher-lua dialect) against the test
cases in Argo CD's own ``health_test.yaml`` format, and shipped unchanged in ``argocd-cm``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from lupa import lua51

from tests.observability.conftest import REPO

ARGOCD = REPO / "manifests" / "argocd"
KINDS = ("RemediationRequest", "Playbook")


def health(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Run ``precedent.dev/<kind>/health.lua`` as Argo CD does: ``obj`` global, ``hs`` returned."""
    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute((ARGOCD / "precedent.dev" / kind / "health.lua").read_text())
    return {"status": result["status"], "message": result["message"]}


def cases() -> list[tuple[str, Path, dict[str, str]]]:
    found = []
    for kind in KINDS:
        folder = ARGOCD / "precedent.dev" / kind
        for case in yaml.safe_load((folder / "health_test.yaml").read_text())["tests"]:
            found.append((kind, folder / case["inputPath"], case["healthStatus"]))
    return found


@pytest.mark.parametrize(
    ("kind", "path", "expected"), cases(), ids=lambda v: v.stem if isinstance(v, Path) else None
)
def test_health_matches_health_test_yaml(kind: str, path: Path, expected: dict[str, str]) -> None:
    obj = yaml.safe_load(path.read_text())
    assert obj["kind"] == kind
    assert health(kind, obj) == expected


def test_every_testdata_object_has_a_case_and_every_state_is_covered() -> None:
    for kind in KINDS:
        folder = ARGOCD / "precedent.dev" / kind
        listed = {c[1].name for c in cases() if c[0] == kind}
        assert listed == {p.name for p in (folder / "testdata").glob("*.yaml")}
        # Files are named after the state they expect, as in Argo CD's repository.
        for kind_, path, expected in cases():
            if kind_ == kind:
                assert path.name.startswith(expected["status"].lower()), path.name
    statuses = {c[2]["status"] for c in cases() if c[0] == "RemediationRequest"}
    assert statuses == {"Healthy", "Progressing", "Degraded"}


def test_argocd_cm_carries_the_tested_scripts() -> None:
    cm = yaml.safe_load((ARGOCD / "argocd-cm.yaml").read_text())
    assert cm["kind"] == "ConfigMap"
    assert cm["metadata"]["name"] == "argocd-cm"
    for kind in KINDS:
        key = f"resource.customizations.health.precedent.dev_{kind}"
        assert cm["data"][key] == (ARGOCD / "precedent.dev" / kind / "health.lua").read_text()
