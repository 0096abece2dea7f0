"""A real kopf operator against the sandbox: handlers run, status and finalizers round-trip."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from precedent_sandbox import SandboxThread
from tests.sandbox.conftest import CRDS, PLAYBOOKS, RRS, playbook_body, request_body

pytestmark = pytest.mark.integration

OPERATOR = """
import kopf

@kopf.on.create("precedent.dev", "v1alpha1", "remediationrequests", id="assess")
def assess(body, patch, **_):
    patch.status["observedGeneration"] = body["metadata"]["generation"]
    patch.status["conditions"] = [{
        "type": "Ready", "status": "True", "reason": "Assessed", "message": "ok",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }]
    kopf.info(body, reason="Assessed", message="scored")

@kopf.on.delete("precedent.dev", "v1alpha1", "playbooks", id="retire")
def retire(**_):
    pass
"""


def eventually(check: Callable[[], Any], attempts: int = 300) -> Any:
    """Poll ``check`` until it returns something truthy (bounded by attempts, not asserted)."""
    for _ in range(attempts):
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("condition not reached")


@pytest.fixture
def operator(tmp_path: Path) -> Iterator[str]:
    """A sandbox and a kopf operator process watching it; yields the sandbox URL."""
    (tmp_path / "sandbox_test_operator.py").write_text(OPERATOR)
    with SandboxThread(CRDS) as sandbox:
        kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
        log = (tmp_path / "kopf.log").open("w")
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces"),
                *("-m", "sandbox_test_operator"),
            ],
            env={**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONPATH": str(tmp_path)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield sandbox.url
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()


def test_kopf_handlers_write_status_post_events_and_release_finalizers(operator: str) -> None:
    with httpx.Client(base_url=operator, timeout=10) as api:
        api.post(RRS, json=request_body("scored")).raise_for_status()

        def ready() -> dict[str, Any] | None:
            obj: dict[str, Any] = api.get(f"{RRS}/scored").json()
            return obj if obj.get("status", {}).get("conditions") else None

        obj = eventually(ready)
        assert obj["status"]["conditions"][0]["status"] == "True"
        assert obj["metadata"]["generation"] == 1
        assert "kopf.zalando.org/last-handled-configuration" in obj["metadata"]["annotations"]
        events = eventually(
            lambda: api.get(
                "/api/v1/namespaces/default/events",
                params={"fieldSelector": "involvedObject.name=scored"},
            ).json()["items"]
        )
        assert events[0]["reason"] == "Assessed"

        api.post(PLAYBOOKS, json=playbook_body("retiring")).raise_for_status()
        eventually(lambda: api.get(f"{PLAYBOOKS}/retiring").json()["metadata"].get("finalizers"))
        api.delete(f"{PLAYBOOKS}/retiring")
        eventually(lambda: api.get(f"{PLAYBOOKS}/retiring").status_code == 404)
