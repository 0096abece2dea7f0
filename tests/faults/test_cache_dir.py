"""An index cache directory that cannot be written: the operator starts, says so in one log
line, and answers from memory."""

from __future__ import annotations

import copy
from pathlib import Path

import httpx
import pytest

from precedent.demo import apply
from precedent_sandbox import SandboxThread
from tests.faults.rig import REQUESTS, operator_process, template
from tests.helpers import eventually
from tests.integration.conftest import DATA, REPO, is_true

pytestmark = [pytest.mark.faults, pytest.mark.integration]


def test_an_unwritable_index_directory_costs_one_log_line_and_nothing_else(
    tmp_path: Path,
) -> None:
    # Beneath a regular file: no user, root included, can create it (a chmod would not stop
    # root, which CI containers often are).
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file\n")
    index_dir = blocker / "index"
    log = tmp_path / "operator.log"
    names = [f"cache-{i}" for i in range(5)]
    with SandboxThread(REPO / "crds") as sandbox:
        kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
        with httpx.Client(base_url=sandbox.url, timeout=30) as client:
            apply(client, [DATA / "incidents", DATA / "playbooks"])
            settings = {
                "PRECEDENT_INDEX_DIR": str(index_dir),
                "PRECEDENT_SIMILARITY_MODE": "hybrid",
            }
            with operator_process(kubeconfig, log, **settings):
                for name in names:
                    body = copy.deepcopy(template())
                    body["metadata"]["name"] = name
                    assert client.post(REQUESTS, json=body).status_code == 201

                def all_ready() -> bool:
                    items = client.get(REQUESTS).json()["items"]
                    return sum(is_true(o, "Ready") for o in items) == len(names)

                eventually(all_ready, timeout=120)
                items = client.get(REQUESTS).json()["items"]
    text = log.read_text(errors="replace")
    warnings = [line for line in text.splitlines() if "the index stays in memory only" in line]
    assert len(warnings) == 1, warnings
    assert str(index_dir) in warnings[0]
    assert "Traceback" not in text
    for obj in items:
        assert obj["status"]["similarIncidents"], obj["metadata"]["name"]  # scored from memory
    assert not index_dir.exists()
