"""A user's session: kubectl applies the CRDs and data/, the real operator answers, kubectl reads.

kubectl (installed on the machine) talks to the sandbox; the operator is the real
``kopf run -m precedent.handlers``, in this process. Skipped, with the reason, without kubectl.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kopf.testing import KopfRunner

from precedent_sandbox import SandboxThread
from tests.e2e.conftest import Kubectl

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH"),
]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kubectl]:
    """An empty sandbox; kubectl installs the CRDs and applies data/; the operator runs."""
    with SandboxThread(crds_dir=None) as sandbox:
        kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        kubectl("apply", "-f", str(REPO / "crds"))
        kubectl("wait", "--for", "condition=established", "--timeout=30s", "crd", "--all")
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.setenv("PRECEDENT_HISTORY_PATH", "")
        monkeypatch.setenv("PRECEDENT_CATALOG", "")
        monkeypatch.setenv("PRECEDENT_STATUS_KEY", "integration-test-key")
        monkeypatch.setenv("PRECEDENT_METRICS_PORT", "0")
        kubectl("apply", "-R", "-f", str(REPO / "data" / "incidents"))
        kubectl("apply", "-R", "-f", str(REPO / "data" / "playbooks"))
        args = ["run", "-m", "precedent.handlers", "--all-namespaces", "--standalone"]
        with KopfRunner(args, timeout=60):
            yield kubectl


def test_apply_data_wait_ready_and_read_the_columns(session: Kubectl) -> None:
    session("apply", "-R", "-f", str(REPO / "data" / "requests"))
    session("wait", "--for=condition=Ready", "--timeout=60s", "rr", "--all", "-n", "default")
    out = session("get", "rr", "-n", "default").stdout.splitlines()
    assert out[0].split() == ["NAME", "RISK", "SCORE", "DECISION", "READY", "STATUS", "AGE"]
    # Every namespace, with the NAMESPACE column: fits a 120-column terminal.
    everywhere = session("get", "rr", "-A").stdout.splitlines()
    assert everywhere[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert max(len(line) for line in everywhere) <= 120, "\n".join(everywhere)
    # -o wide: the evidence and the Ready message too.
    wide = session("get", "rr", "-n", "default", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == [
        "NAME", "RISK", "SCORE", "DECISION", "READY", "STATUS", "INCIDENT", "PLAYBOOK",
        "CONFIDENCE", "UPSTREAM", "AGE", "MESSAGE",
    ]  # fmt: skip
    # Cut rows at the header's column starts: an empty cell stays a cell (the message, last,
    # runs to the end of the line).
    starts = [i for i, ch in enumerate(wide[0]) if ch != " " and (i == 0 or wide[0][i - 1] == " ")]
    ends = [*starts[1:], None]
    rows = {
        line.split()[0]: [line[a:b].strip() for a, b in zip(starts, ends, strict=True)]
        for line in wide[1:]
    }
    applied = [
        doc
        for path in sorted((REPO / "data" / "requests").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == "RemediationRequest"
    ]
    assert len(rows) == len(applied) == 18  # the 15 examples and the 3 shop requests

    # The default risk model keeps each seed row's band and top incident (scores age with the
    # incidents: recency is measured from each request's creation time).
    def cells(name: str) -> list[str]:
        return [rows[name][i] for i in (1, 3, 6)]

    assert cells("restart-payment-api") == ["high", "Denied", "INC-2025-0847"]
    assert cells("update-config-sql-prod") == ["medium", "Escalated", "INC-2025-0634"]
    assert rows["update-config-sql-prod"][5] == "Pending"  # Escalated: waits for a human
    assert rows["restart-payment-api"][5] == "Denied"  # Denied: nothing to approve
    assert rows["update-config-sql-prod"][7] == "azure-sql-server-parameter-change"
    assert cells("scale-up-web-tier-01") == ["low", "Approved", "INC-2026-0012"]
    assert rows["scale-up-web-tier-01"][5] == "NotRequired"
    assert all(row[4] == "True" for row in rows.values())
    assert rows["restart-payment-api"][-1].startswith("risk high (")


def test_category_lists_every_precedent_kind(session: Kubectl) -> None:
    out = session("get", "precedent", "-A", "-o", "name").stdout.split()
    assert any(name.startswith("incident.precedent.dev/") for name in out)
    assert any(name.startswith("playbook.precedent.dev/") for name in out)


def test_invalid_request_is_rejected_with_the_field_named(session: Kubectl, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: precedent.dev/v1alpha1\nkind: RemediationRequest\n"
        "metadata: {name: bad, namespace: default}\n"
        "spec: {action: Restart Service, target: {kind: Deployment, name: api}}\n"
    )
    result = session("apply", "-f", str(bad), check=False)
    assert result.returncode != 0
    assert "spec.action" in result.stderr
