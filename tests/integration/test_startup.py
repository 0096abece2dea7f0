"""Start-up of the real operator (``kopf run -m precedent.handlers``) against the sandbox.

- A configuration it cannot load (a bad setting, an oversized or unreadable history) stops it
  at once with one line naming the cause and a non-zero exit status, so Kubernetes shows
  CrashLoopBackOff with the reason, instead of a process that looks alive and never works.
- The vector index is built (or loaded from ``PRECEDENT_INDEX_DIR``) before ``/healthz``
  answers: readiness is never reported before the index is there, and the first request is
  answered from it. A saved index that is corrupt, or stale for the history, is rebuilt (the
  stale incidents re-embedded), never searched as it is.
"""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from precedent.adapters.faiss_index import FaissIncidentIndex
from precedent_sandbox import SandboxThread
from tests.faults.rig import REQUESTS, template, wait_for
from tests.integration.conftest import DATA, REPO, is_true

pytestmark = pytest.mark.integration

COMMAND = [sys.executable, "-m", "kopf", "run", "-m", "precedent.handlers"]
CANNOT_START = "precedent: cannot start: "


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(kubeconfig: Path, **settings: str) -> dict[str, str]:
    return {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PRECEDENT_HISTORY_PATH": "",
        "PRECEDENT_CATALOG": "",
        "PRECEDENT_METRICS_PORT": "0",
        "PRECEDENT_STATUS_KEY": "startup-test-key",
        **settings,
    }


def _refused(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    with SandboxThread(REPO / "crds") as sandbox:
        kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
        # Without the stop, kopf retried the other startup activities every 60 s: a timeout.
        return subprocess.run(
            [*COMMAND, "--standalone", "--all-namespaces"],
            capture_output=True,
            text=True,
            env=_env(kubeconfig, **settings),
            cwd=tmp_path,
            timeout=60,
            check=False,
        )


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith(CANNOT_START)]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "KeyError" not in done.stderr, done.stderr
    # The last thing it says is the reason (what `kubectl logs --previous` shows first).
    assert done.stderr.rstrip().splitlines()[-1] == lines[0]
    return lines[0]


def test_a_bad_setting_stops_the_operator_with_one_line(tmp_path: Path) -> None:
    line = _one_line(_refused(tmp_path, PRECEDENT_SIMILARITY_MODE="sometimes"))
    assert "PRECEDENT_SIMILARITY_MODE" in line


def test_an_oversized_history_stops_it_naming_the_ways_that_load(tmp_path: Path) -> None:
    history = tmp_path / "history.yaml"
    with history.open("wb") as handle:  # sparse: larger than the limit, nothing written
        handle.truncate(65 * 1024 * 1024)
    line = _one_line(_refused(tmp_path, PRECEDENT_HISTORY_PATH=str(history)))
    assert str(history) in line
    assert "input limit" in line
    assert "directory" in line
    assert "JSON Lines" in line


def test_an_unreadable_history_stops_it_naming_the_file(tmp_path: Path) -> None:
    history = tmp_path / "history"
    history.mkdir()
    (history / "incidents.yaml").write_bytes(b"kind: Incident\nspec: \xff\xfe\n")
    line = _one_line(_refused(tmp_path, PRECEDENT_HISTORY_PATH=str(history)))
    assert "incidents.yaml" in line
    assert "UTF-8" in line


# -- the vector index at start-up ---------------------------------------------------------------


@contextmanager
def _operator(
    kubeconfig: Path, log: Path, health: int, **settings: str
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [
                *COMMAND,
                "--standalone",
                "--all-namespaces",
                f"--liveness=http://127.0.0.1:{health}/healthz",
            ],
            env=_env(kubeconfig, **settings),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _until_ready(process: subprocess.Popen[bytes], health: int, log: Path) -> dict[str, object]:
    """Poll /healthz from the start; every answer before the first 200 is a refusal or an
    error, and the index was reported built (in the log) before that 200."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            response = httpx.get(f"http://127.0.0.1:{health}/healthz", timeout=5)
        except httpx.HTTPError:
            time.sleep(0.1)
            continue
        if response.status_code == 200:
            assert "vector index ready" in log.read_text(), "ready before the index was built"
            body: dict[str, object] = response.json()
            return body
        time.sleep(0.1)
    raise AssertionError(f"not ready within 120 s: {log.read_text()[-2000:]}")


def _answered(url: str, name: str) -> dict[str, object]:
    body = copy.deepcopy(template())
    body["metadata"]["name"] = name
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.post(REQUESTS, json=body).status_code == 201
        found: dict[str, object] = wait_for(
            lambda: next(
                (o for o in [client.get(f"{REQUESTS}/{name}").json()] if is_true(o, "Ready")),
                None,
            ),
            timeout=60,
            missing=lambda: f"{name} is not Ready",
        )
    return found


def _index_line(log: Path, occurrence: int) -> str:
    lines = [line for line in log.read_text().splitlines() if "vector index ready" in line]
    assert len(lines) >= occurrence, log.read_text()
    return lines[occurrence - 1]


def test_the_index_is_built_before_ready_and_a_corrupt_or_stale_one_is_rebuilt(
    tmp_path: Path,
) -> None:
    history = tmp_path / "history.yaml"
    docs = [
        d
        for d in yaml.safe_load_all((DATA / "incidents" / "seed-000.yaml").read_text())
        if d and d.get("kind") == "Incident"
    ]
    history.write_text(yaml.safe_dump_all(docs))
    index_dir = tmp_path / "index"
    settings = {"PRECEDENT_HISTORY_PATH": str(history), "PRECEDENT_INDEX_DIR": str(index_dir)}
    log = tmp_path / "operator.log"
    with SandboxThread(REPO / "crds") as sandbox:
        kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")

        def start(round_: int, request: str) -> str:
            health = _free_port()
            with _operator(kubeconfig, log, health, **settings) as process:
                body = _until_ready(process, health, log)
                assert body["ready"] is True
                assert body["history"] == len(docs)
                status = _answered(sandbox.url, request)["status"]
                assert isinstance(status, dict)
                assert status.get("risk")
            return _index_line(log, round_)

        # First start: nothing saved, every incident embedded; the index is saved.
        first = start(1, "first")
        assert f"{len(docs)} embedded, 0 kept" in first
        assert len(FaissIncidentIndex.load(index_dir)) == len(docs)

        # Second start: read from the saved index, nothing embedded.
        second = start(2, "second")
        assert f"0 embedded, {len(docs)} kept" in second
        assert f"({len(docs)} read from the saved index)" in second

        # Corrupt: bytes in the middle of the vectors overwritten. Refused, rebuilt, saved.
        data = bytearray((index_dir / "index.faiss").read_bytes())
        data[len(data) // 2 : len(data) // 2 + 64] = os.urandom(64)
        (index_dir / "index.faiss").write_bytes(bytes(data))
        third = start(3, "third")
        assert "rebuilding the vector index" in log.read_text()
        assert f"{len(docs)} embedded, 0 kept" in third
        assert len(FaissIncidentIndex.load(index_dir)) == len(docs)

        # Stale: one incident's text changed and one removed since the index was saved.
        changed = copy.deepcopy(docs)
        changed[0]["spec"]["title"] = changed[0]["spec"]["title"] + " (edited)"
        del changed[-1]
        history.write_text(yaml.safe_dump_all(changed))
        docs = changed
        fourth = start(4, "fourth")
        assert f"1 embedded, {len(docs) - 1} kept, 1 removed" in fourth
        saved = FaissIncidentIndex.load(index_dir)
        assert len(saved) == len(docs)
