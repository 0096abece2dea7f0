"""The operator fails fast, with one clear message, when its metrics port is taken: a real
``kopf run`` process against the sandbox, not a retry every 60 s while nothing is scored."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from precedent_sandbox import SandboxThread

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_a_taken_metrics_port_stops_the_operator_with_one_message(tmp_path: Path) -> None:
    with SandboxThread(REPO / "crds") as sandbox, socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {
            **os.environ,
            "KUBECONFIG": str(sandbox.write_kubeconfig(tmp_path / "kubeconfig")),
            "PRECEDENT_HISTORY_PATH": "",
            "PRECEDENT_CATALOG": "",
            "PRECEDENT_METRICS_PORT": str(port),
            "PRECEDENT_METRICS_HOST": "127.0.0.1",
            "PRECEDENT_STATUS_KEY": "startup-test-key",
        }
        command = [sys.executable, "-m", "kopf", "run", "-m", "precedent.handlers"]
        # Before the fix kopf retried the startup handler every 60 s: this would time out.
        done = subprocess.run(
            [*command, "--standalone", "--all-namespaces"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=45,
            check=False,
        )
    assert done.returncode != 0
    message = f"metrics: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert done.stderr.count(message) >= 1, done.stderr
    assert "will retry" not in done.stderr.lower(), done.stderr
