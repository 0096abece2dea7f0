"""kubectl against the sandbox: apply the CRDs and objects, read the columns, wait, reject.

The sandbox starts with no CRDs, so ``kubectl apply -f crds/`` registers them at runtime.
Each test module gets one sandbox; kubectl's discovery cache lives in a temporary directory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from precedent_sandbox import SandboxThread
from tests.e2e.conftest import Kubectl

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH"),
]

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "sandbox"


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """A sandbox with no CRDs, then ``kubectl apply -f crds/`` and wait until established."""
    home = tmp_path_factory.mktemp("kubectl")
    with SandboxThread(crds_dir=None) as sandbox:
        run = Kubectl(sandbox.write_kubeconfig(home / "kubeconfig"), home / "cache")
        run("apply", "-f", str(REPO / "crds"))
        run("wait", "--for", "condition=established", "--timeout=30s", "crd", "--all")
        yield run


def test_apply_crds_registers_the_resources(kubectl: Kubectl) -> None:
    resources = kubectl("api-resources", "--api-group=precedent.dev", "-o", "name").stdout.split()
    assert sorted(resources) == [
        "incidents.precedent.dev",
        "playbooks.precedent.dev",
        "remediationapprovals.precedent.dev",
        "remediationrequests.precedent.dev",
    ]
    again = kubectl("apply", "-f", str(REPO / "crds")).stdout
    assert "unchanged" in again


def test_apply_objects_and_get_the_printer_columns(kubectl: Kubectl) -> None:
    created = kubectl(
        "apply",
        "-f",
        str(DATA / "request.yaml"),
        "-f",
        str(DATA / "incident.yaml"),
        "-f",
        str(DATA / "playbook.yaml"),
    ).stdout
    assert "remediationrequest.precedent.dev/restart-payment-api created" in created
    assert "incident.precedent.dev/inc-2025-0847 created" in created
    assert "playbook.precedent.dev/restart-with-readiness-gate created" in created
    header = kubectl("get", "rr").stdout.splitlines()[0].split()
    assert header == ["NAME", "RISK", "SCORE", "DECISION", "READY", "STATUS", "AGE"]
    wide = kubectl("get", "rr", "-o", "wide").stdout.splitlines()[0].split()
    assert wide == [
        "NAME",
        "RISK",
        "SCORE",
        "DECISION",
        "READY",
        "STATUS",
        "INCIDENT",
        "PLAYBOOK",
        "CONFIDENCE",
        "UPSTREAM",
        "AGE",
        "MESSAGE",
    ]
    incidents = kubectl("get", "inc").stdout.splitlines()
    assert incidents[0].split() == ["NAME", "SEVERITY", "ACTION", "RESOURCE", "AGE"]
    assert incidents[1].split()[:4] == [
        "inc-2025-0847",
        "critical",
        "restart_service",
        "payment-api",
    ]
    category = kubectl("get", "precedent").stdout
    assert "remediationrequest.precedent.dev/restart-payment-api" in category
    assert "playbook.precedent.dev/restart-with-readiness-gate" in category
    as_yaml = kubectl("get", "rr", "restart-payment-api", "-o", "yaml").stdout
    assert "generation: 1" in as_yaml
    again = kubectl("apply", "-f", str(DATA / "request.yaml")).stdout
    assert "unchanged" in again


def test_invalid_request_is_rejected_naming_the_field(kubectl: Kubectl) -> None:
    result = kubectl("apply", "-f", str(DATA / "request-invalid.yaml"), check=False)
    assert result.returncode != 0
    assert "spec.target.name: Required value" in result.stderr
    assert 'RemediationRequest "missing-target-name" is invalid' in result.stderr


def test_wait_for_ready_after_a_status_patch(kubectl: Kubectl) -> None:
    status = {
        "status": {
            "observedGeneration": 1,
            "risk": {
                "score": 85,
                "band": "high",
                "decision": "Denied",
                "reasoning": "A critical incident after the same restart.",
                "mostRelevantIncident": "INC-2025-0847",
            },
            "playbook": {
                "id": "restart-with-readiness-gate",
                "version": "v1.2",
                "confidence": 0.82,
                "components": {"semantic": 0.7, "labelMatch": 1.0, "historical": 0.86},
                "selectionMethod": "data_driven",
                "rationale": "Pinned to production latency incidents.",
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Assessed",
                    "message": "risk high (85), Denied",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                    "observedGeneration": 1,
                }
            ],
        }
    }
    kubectl("apply", "-f", str(DATA / "request.yaml"))
    not_yet = kubectl(
        "wait", "--for=condition=Ready", "rr/restart-payment-api", "--timeout=1s", check=False
    )
    assert not_yet.returncode != 0
    kubectl(
        "patch",
        "rr",
        "restart-payment-api",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    waited = kubectl("wait", "--for=condition=Ready", "rr/restart-payment-api", "--timeout=30s")
    assert "condition met" in waited.stdout
    row = kubectl("get", "rr", "restart-payment-api", "--no-headers").stdout.split()
    # No Approved condition in this status: STATUS is an empty cell, AGE follows.
    assert row[:5] == ["restart-payment-api", "high", "85", "Denied", "True"]
    assert len(row) == 6
    wide = kubectl("get", "rr", "restart-payment-api", "--no-headers", "-o", "wide").stdout
    assert wide.split()[5:8] == ["INC-2025-0847", "restart-with-readiness-gate", "0.82"]
    assert wide.rstrip().endswith("risk high (85), Denied")


def test_spec_change_is_rejected_by_the_immutability_rule(kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl("apply", "-f", str(DATA / "request.yaml"))
    changed = (
        (DATA / "request.yaml").read_text().replace("action: restart_service", "action: scale_down")
    )
    path = tmp_path / "changed.yaml"
    path.write_text(changed)
    result = kubectl("apply", "-f", str(path), check=False)
    assert result.returncode != 0
    assert "spec.action is immutable; create a new RemediationRequest" in result.stderr
    action = kubectl("get", "rr", "restart-payment-api", "-o", "jsonpath={.spec.action}").stdout
    assert action == "restart_service"


def test_get_watch_prints_changes(kubectl: Kubectl, tmp_path: Path) -> None:
    config = tmp_path / "watch.yaml"
    config.write_text(
        (DATA / "request.yaml").read_text().replace("restart-payment-api", "watched-request")
    )
    kubectl("apply", "-f", str(config))
    command = [*kubectl.base, "get", "rr", "watched-request", "-w"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as watch:
        guard = threading.Timer(60, watch.kill)  # a silent watch must not hang the suite
        guard.start()
        try:
            assert watch.stdout is not None
            assert watch.stdout.readline().split()[:2] == ["NAME", "RISK"]
            assert watch.stdout.readline().split()[0] == "watched-request"
            kubectl("label", "rr", "watched-request", "seen=yes")
            assert watch.stdout.readline().split()[0] == "watched-request"
        finally:
            guard.cancel()
            watch.terminate()


def test_core_objects_apply_without_disabling_validation(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "namespace.yaml"
    manifest.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n")
    assert "namespace/team-a created" in kubectl("apply", "-f", str(manifest)).stdout
    request = (DATA / "request.yaml").read_text().replace("namespace: default", "namespace: team-a")
    placed = tmp_path / "request.yaml"
    placed.write_text(request)
    kubectl("apply", "-f", str(placed))
    everywhere = kubectl("get", "rr", "-A").stdout.splitlines()
    assert everywhere[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert any(line.split()[:2] == ["team-a", "restart-payment-api"] for line in everywhere)
    kubectl("delete", "namespace", "team-a")
    assert kubectl("get", "rr", "-n", "team-a", "-o", "name").stdout == ""


def test_describe_and_delete(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(DATA / "playbook.yaml"))
    described = kubectl("describe", "pb", "restart-with-readiness-gate").stdout
    assert "Kind:         Playbook" in described
    deleted = kubectl("delete", "-f", str(DATA / "playbook.yaml")).stdout
    assert 'playbook.precedent.dev "restart-with-readiness-gate" deleted' in deleted
    missing = kubectl("get", "pb", "restart-with-readiness-gate", check=False)
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr


def test_create_namespace_configmap_and_secret(kubectl: Kubectl) -> None:
    # These commands send protobuf bodies; the sandbox reads those three kinds.
    assert "namespace/tools created" in kubectl("create", "namespace", "tools").stdout
    kubectl("create", "configmap", "settings", "-n", "tools", "--from-literal=mode=audit")
    kubectl("create", "secret", "generic", "token", "-n", "tools", "--from-literal=key=s3cret")
    mode = kubectl("get", "cm", "settings", "-n", "tools", "-o", "jsonpath={.data.mode}").stdout
    assert mode == "audit"
    secret = kubectl("get", "secret", "token", "-n", "tools", "-o", "json").stdout
    assert json.loads(secret)["type"] == "Opaque"
    assert json.loads(secret)["data"] == {"key": "czNjcmV0"}
