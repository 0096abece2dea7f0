"""``precedent score -f <the cluster's manifests>`` gives the operator's answer: every bundled
request scored by the CLI (the demo shop and its Namespaces given with -f) and by the real
operator in the sandbox (the same objects created there), compared field by field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from precedent.adapters.loader import iter_documents
from precedent.demo import apply
from tests.integration.conftest import DATA, REPO, Cluster

pytestmark = pytest.mark.integration

# Everything the assessment says. Left out: `engine` (which sources answered: files for the CLI,
# the cluster's objects for the operator, and likewise each similar incident's `source`),
# `inputHash` (a hash over the engine too), and the status' own bookkeeping (conditions,
# observedGeneration, the mark).
COMPARED = (
    "risk",
    "similarIncidents",
    "playbook",
    "alternatives",
    "recommendation",
    "policy",
    "blastRadius",
    "context",
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precedent.cli", "score", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    picked = {key: doc.get(key) for key in COMPARED}
    policy = dict(picked["policy"] or {})
    # The approval's state is the operator's bookkeeping of approvals, which the CLI has none of.
    policy.pop("approval", None)
    picked["policy"] = policy
    # Where each incident was read from (files here, Incident objects there) is not the answer.
    picked["similarIncidents"] = [
        {k: v for k, v in s.items() if k != "source"} for s in picked["similarIncidents"] or []
    ]
    return picked


def test_every_bundled_request_gets_the_operators_answer(cluster: Cluster) -> None:
    apply(cluster.client, [DATA / "shop"])
    bodies = [doc.body for doc in iter_documents([DATA / "requests"])]
    for body in bodies:
        assert cluster.create(body).status_code == 201
    with cluster.operator():
        answered = {
            b["metadata"]["name"]: cluster.wait_ready(b["metadata"]["name"]) for b in bodies
        }

    # The history and catalog the cluster was given (the fixture created them as objects).
    done = _cli(
        str(DATA / "requests"),
        *("-f", str(DATA / "shop")),
        *("--history", str(DATA / "incidents"), "--catalog", str(DATA / "playbooks")),
        *("-o", "json"),
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert listed["kind"] == "List"
    offline = {d["name"]: d["assessment"] for d in listed["items"]}
    assert set(offline) == set(answered)
    for name, obj in answered.items():
        assert _comparable(offline[name]) == _comparable(obj["status"]), name
    # The shop's requests are where the dependency graph matters: one is Escalated by it.
    fraud = answered["restart-fraud-check"]["status"]
    assert fraud["risk"]["decision"] == "Escalated"
    assert fraud["blastRadius"]["inGraph"] is True


def test_the_gate_exit_codes_and_the_junit_report(tmp_path: Path) -> None:
    requests = str(DATA / "requests")
    shop = str(DATA / "shop")
    report = tmp_path / "report.xml"
    passed = _cli(str(DATA / "requests" / "shop.yaml"), "-f", shop, "--fail-on", "denied")
    assert passed.returncode == 0, passed.stderr
    gated = _cli(requests, "-f", shop, "--fail-on", "escalated", "--junit", str(report))
    assert gated.returncode == 3, gated.stderr
    [line] = [ln for ln in gated.stderr.splitlines() if ln.startswith("gate: ")]
    assert "default/restart-fraud-check (Escalated)" in line
    assert "restart-email-worker" not in line  # Approved: passes
    import xml.etree.ElementTree as ET

    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert len(cases) == len(list(iter_documents([DATA / "requests"])))
    assert cases["restart-fraud-check"].find("failure") is not None
    assert cases["restart-email-worker"].find("failure") is None
    assert suite.get("failures") == str(sum(c.find("failure") is not None for c in cases.values()))
    # Bad input is 1, a usage error 2: a pipeline can tell them from a gate that stopped.
    assert _cli(str(tmp_path / "missing.yaml"), "--fail-on", "denied").returncode == 1
    assert _cli(requests, "--fail-on", "sometimes").returncode == 2
