"""The threaded variant, the kubeconfig, and ``precedent sandbox`` as a process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import yaml

from precedent_sandbox import SandboxThread
from tests.sandbox.conftest import CRDS, RRS, request_body


def test_sandbox_thread_serves_synchronous_clients(tmp_path: Path) -> None:
    with SandboxThread(CRDS) as sandbox:
        assert sandbox.url.startswith("http://127.0.0.1:")
        created = httpx.post(f"{sandbox.url}{RRS}", json=request_body("threaded"), timeout=10)
        assert created.status_code == 201
        count = sandbox.call(
            lambda: len(sandbox.store.buckets[("precedent.dev", "remediationrequests")].objects)
        )
        assert count == 1
        path = sandbox.write_kubeconfig(tmp_path / "kube" / "config")
        config = yaml.safe_load(path.read_text())
        assert config["clusters"][0]["cluster"]["server"] == sandbox.url
        assert config["current-context"] == config["contexts"][0]["name"]
        assert config["users"][0]["user"]["token"]
    # Stopped: the port no longer answers.
    try:
        httpx.get(f"{sandbox.url}/version", timeout=2)
    except httpx.TransportError:
        pass
    else:
        raise AssertionError("the sandbox still answers after stop()")


def test_cli_starts_writes_a_kubeconfig_and_stops_on_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "precedent.cli", "sandbox", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+); kubeconfig: (\S+)", line)
        assert found, line
        assert Path(found.group(2)) == kubeconfig
        url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert url == found.group(1)
        assert httpx.get(f"{url}/apis/precedent.dev/v1alpha1", timeout=10).status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "stopped" in out
