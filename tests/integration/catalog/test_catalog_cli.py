"""``precedent score --catalog`` and ``precedent catalog serve|query`` as real processes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"
PRECEDENT = shutil.which("precedent", path=str(Path(sys.executable).parent)) or "precedent"
SCORE = ["score", str(DATA / "requests.yaml"), "--history", str(DATA / "incidents.yaml")]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PRECEDENT, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def table(stdout: str) -> dict[str, dict[str, str]]:
    lines = stdout.splitlines()
    header = lines[0]
    names = ["NAME", "ACTION", "SCORE", "BAND", "DECISION", "TOP INCIDENT", "SIMILARITY"]
    names += ["SIMILAR", "PLAYBOOK", "CONFIDENCE", "METHOD"]
    starts = [header.index(n) for n in names]
    rows = {}
    for line in lines[1:]:
        cells = [
            line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1], strict=True)
        ]
        rows[cells[0]] = dict(zip(names, cells, strict=True))
    return rows


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``precedent catalog serve`` on a free loopback port, until the module's tests end."""
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    command = [PRECEDENT, "catalog", "serve", "--catalog", str(DATA / "playbooks")]
    with (
        log.open("w") as sink,
        subprocess.Popen(
            [*command, "--port", str(port)], cwd=REPO, stdout=sink, stderr=subprocess.STDOUT
        ) as proc,
    ):
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):  # wait until it answers (or exits)
                if proc.poll() is not None:
                    raise AssertionError(f"catalog serve exited: {log.read_text()}")
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
            else:
                raise AssertionError(f"catalog serve did not answer: {log.read_text()}")
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def test_score_shows_playbook_confidence_and_method() -> None:
    proc = run(*SCORE, "--catalog", str(DATA / "playbooks"))
    assert proc.returncode == 0, proc.stderr
    rows = table(proc.stdout)
    assert rows["oom-checkout"]["PLAYBOOK"] == "pod-oom-recovery"
    assert float(rows["oom-checkout"]["CONFIDENCE"]) >= 0.7
    assert rows["oom-checkout"]["METHOD"] == "data_driven"
    assert rows["orders-db-down"]["PLAYBOOK"] == "database-recovery"  # new, labelled for it
    assert rows["dns-flap"]["PLAYBOOK"] == "manual_investigation"
    assert rows["dns-flap"]["METHOD"] == "-"


def test_score_full_output_carries_the_selection() -> None:
    proc = run(*SCORE, "--catalog", str(DATA / "playbooks"), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    docs = {d["name"]: d["assessment"] for d in json.loads(proc.stdout)["items"]}
    playbook = docs["oom-checkout"]["playbook"]
    assert playbook["id"] == "pod-oom-recovery"
    assert playbook["selectionMethod"] == "data_driven"
    assert set(playbook["components"]) == {"semantic", "labelMatch", "historical"}
    assert playbook["rationale"].startswith("Selected pod-oom-recovery v1.2 with confidence")
    recommendation = docs["dns-flap"]["recommendation"]
    assert recommendation["action"] == "manual_investigation"
    assert recommendation["suggestedActions"]


def test_score_without_any_catalog_selects_nothing(tmp_path: Path) -> None:
    # No --catalog, no $PRECEDENT_CATALOG, and no data/playbooks in the working directory.
    proc = subprocess.run(
        [PRECEDENT, *SCORE],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PRECEDENT_CATALOG"},
    )
    assert proc.returncode == 0, proc.stderr
    assert all(r["PLAYBOOK"] == "-" for r in table(proc.stdout).values())


def test_score_with_a_missing_catalog_path_fails_cleanly() -> None:
    proc = run(*SCORE, "--catalog", "no/such/catalog")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: catalog no/such/catalog: no such file or directory"


def test_score_through_the_served_context_api(served: str) -> None:
    proc = run(*SCORE, "--catalog", served, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    docs = {d["name"]: d["assessment"] for d in json.loads(proc.stdout)["items"]}
    playbook = docs["oom-checkout"]["playbook"]
    assert playbook["id"] == "pod-oom-recovery"
    assert playbook["selectionMethod"] == "data_driven"
    local = run(*SCORE, "--catalog", str(DATA / "playbooks"), "-o", "json")
    local_docs = {d["name"]: d["assessment"] for d in json.loads(local.stdout)["items"]}
    assert playbook["confidence"] == local_docs["oom-checkout"]["playbook"]["confidence"]
    # The client asks for the parts (include_components=true): they survive the HTTP path.
    assert playbook["components"] == local_docs["oom-checkout"]["playbook"]["components"]
    assert set(playbook["components"]) == {"semantic", "labelMatch", "historical"}
    # Every request gets the same answer over HTTP as in process (the action is sent too).
    for name, assessment in docs.items():
        remote, here = assessment.get("playbook", {}), local_docs[name].get("playbook", {})
        assert (remote.get("id"), remote.get("confidence")) == (
            here.get("id"),
            here.get("confidence"),
        ), name


def test_score_falls_back_when_the_context_api_is_down() -> None:
    env = {"PRECEDENT_CATALOG_RETRIES": "0", "PRECEDENT_CATALOG_FALLBACK": str(DATA / "playbooks")}
    proc = run(*SCORE, "--catalog", f"http://127.0.0.1:{free_port()}", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = table(proc.stdout)
    assert rows["oom-checkout"]["PLAYBOOK"] == "pod-oom-recovery"
    assert rows["oom-checkout"]["METHOD"] == "fallback"
    assert "ConnectError" in proc.stderr  # the fallback is logged with its reason


def test_catalog_query_json(served: str) -> None:
    proc = run(
        "catalog", "query", "High memory usage causing pod restarts",
        "-l", "kubernaut.ai/incident-type:pod-oom-killer",
        "--catalog", str(DATA / "playbooks"), "--min-confidence", "0.3", "-o", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["method"] == "data_driven"
    assert doc["selection"]["id"] == "pod-oom-recovery"
    assert doc["candidates"][0]["components"]["labelMatch"] == 1.0
    remote = run(
        "catalog", "query", "High memory usage causing pod restarts",
        "-l", "incident-type:pod-oom-killer", "--catalog", served, "--min-confidence", "0.3",
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    assert "data_driven: Selected" in remote.stdout


def test_catalog_query_rejects_a_malformed_label() -> None:
    proc = run("catalog", "query", "x", "-l", "nocolon", "--catalog", str(DATA / "playbooks"))
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: 'nocolon' is not key:value"


def test_catalog_serve_refuses_a_url() -> None:
    proc = run("catalog", "serve", "--catalog", "http://example.invalid")
    assert proc.returncode == 1
    assert "needs a catalog path, not a URL" in proc.stderr


def test_bad_settings_are_one_line_naming_the_variable() -> None:
    proc = run("catalog", "query", "x", env={"PRECEDENT_MIN_CONFIDENCE": "2"})
    assert proc.returncode == 1
    # One line naming the variable; the reason after it is pydantic's wording, not pinned.
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: invalid configuration: PRECEDENT_MIN_CONFIDENCE: "), line
    weights = run("catalog", "query", "x", env={"PRECEDENT_CONFIDENCE_WEIGHT_SEMANTIC": "0.9"})
    assert (
        weights.stderr.strip()
        == "error: invalid configuration: confidence weights must sum to 1, got 1.5"
    )


def test_precedent_serve_answers_both_apis_on_one_port(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    command = [
        PRECEDENT,
        "serve",
        "--catalog",
        str(DATA / "playbooks"),
        "--history",
        str(DATA / "eval" / "history.jsonl"),
        "--port",
        str(port),
    ]
    url = f"http://127.0.0.1:{port}"
    with (
        log.open("w") as sink,
        subprocess.Popen(command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT) as proc,
    ):
        try:
            for _ in range(300):
                assert proc.poll() is None, log.read_text()
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
            found = httpx.post(
                f"{url}/api/v1/incidents/search",
                json={"query_text": "postgres connection pool exhausted", "top_k": 3},
            ).json()
            playbooks = httpx.get(
                f"{url}/api/v1/context/playbooks", params={"description": "pod OOM restarts"}
            ).json()
            stats = httpx.get(f"{url}/api/v1/incidents/stats").json()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    assert len(found["similar_incidents"]) == 3
    assert found["search_metadata"]["index_total"] == stats["total_vectors"] == 106
    assert "total_results" in playbooks
    assert "Incident search: 106 incidents" in log.read_text()
