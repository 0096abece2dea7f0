"""``kubectl precedent`` takes kubectl's flags where kubectl takes them: ``-n``, ``--context``,
``--kubeconfig``, ``-o`` and ``-h`` before or after the command, run as ``kubectl precedent``
(the real kubectl finding the plugin on PATH) against the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from precedent.plugin import main, render
from tests.integration.conftest import Cluster
from tests.integration.test_approvals import approved_condition, request

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent  # kubectl-precedent, installed with the package


def plugin(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def kubectl(*args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("KUBECONFIG", None)
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return subprocess.run(
        ["kubectl", *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


def create_in_staging(cluster: Cluster, name: str) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "staging"}}
    assert cluster.client.post("/api/v1/namespaces", json=namespace).status_code in (201, 409)
    body = request(name)
    body["metadata"]["namespace"] = "staging"
    assert cluster.create(body).status_code == 201


def test_flags_before_or_after_the_command(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_in_staging(cluster, "tls")
    monkeypatch.delenv("KUBECONFIG")  # only --kubeconfig says where the cluster is
    config = str(cluster.kubeconfig)
    context = yaml.safe_load(cluster.kubeconfig.read_text())["current-context"]
    after = plugin("explain", "rr/tls", "-n", "staging", "--kubeconfig", config)
    before = plugin("-n", "staging", "--kubeconfig", config, "explain", "rr/tls")
    mixed = plugin(
        "--kubeconfig", config, "explain", "--context", context, "rr/tls", "-n", "staging"
    )
    assert after[0] == 0, after[2]
    assert "RemediationRequest staging/tls" in after[1]
    assert before == after == mixed
    # After the command wins over before it, as the last of a repeated kubectl flag does.
    overridden = plugin(
        "-n", "default", "explain", "rr/tls", "-n", "staging", "--kubeconfig", config
    )
    assert overridden == after
    code, _, err = plugin("explain", "rr/tls", "--kubeconfig", config)
    assert code == 1
    assert err.strip() == "error: remediationrequest default/tls not found"
    code, _, err = plugin("explain", "rr/tls", "--kubeconfig", config, "--context", "nope")
    assert code == 1
    assert err.count("\n") == 1
    assert "nope" in err


def test_output_formats(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    create_in_staging(cluster, "tls")
    code, out, err = plugin("explain", "rr/tls", "-n", "staging", "-o", "json")
    assert code == 0, err
    body = json.loads(out)
    assert (body["kind"], body["metadata"]["name"]) == ("RemediationRequest", "tls")
    assert yaml.safe_load(plugin("-o", "yaml", "explain", "rr/tls", "-n", "staging")[1]) == body
    assert plugin("explain", "rr/tls", "-n", "staging", "-o", "name")[1] == (
        "remediationrequest.precedent.dev/tls\n"
    )
    assert (
        plugin("explain", "rr/tls", "-n", "staging", "-o", "wide")[1]
        == (plugin("explain", "rr/tls", "-n", "staging")[1])
    )
    code, _, err = plugin("explain", "rr/tls", "-o", "toml")
    assert code == 2
    assert "toml" in err


def test_help_on_every_command() -> None:
    for args in ([], ["explain"], ["approve"], ["reject"], ["outcome"]):
        for flag in ("-h", "--help"):
            code, out, err = plugin(*args, flag)
            assert code == 0, (args, err)
            assert out.startswith("Usage:"), out
    assert "--kubeconfig" in plugin("explain", "-h")[1]


def test_real_kubectl_passes_the_flags_through(cluster: Cluster) -> None:
    create_in_staging(cluster, "tls")
    found = kubectl(
        "precedent",
        "explain",
        "rr/tls",
        "-n",
        "staging",
        "-o",
        "name",
        "--kubeconfig",
        str(cluster.kubeconfig),
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout == "remediationrequest.precedent.dev/tls\n"
    helped = kubectl("precedent", "-h")
    assert helped.returncode == 0, helped.stderr
    assert "explain" in helped.stdout


def test_explain_lists_the_strongest_incident_first(cluster: Cluster) -> None:
    names = ["tls", "tls-2"]
    for name in names:
        assert cluster.create(request(name)).status_code == 201
    with cluster.operator():
        for name in names:
            approved_condition(cluster, name, "Pending")
        code, out, err = plugin("approve", "rr/tls", "--reason", "window open", "-o", "yaml")
        assert code == 0, err
        created = yaml.safe_load(out)
    assert created["kind"] == "RemediationApproval"
    assert created["spec"]["requestRef"]["name"] == "tls"
    for name in names:
        status = cluster.get_request(name)["status"]
        strongest = status["risk"]["mostRelevantIncident"]
        code, out, _ = plugin("explain", f"rr/{name}")
        listed = out.split("  similar incidents:\n")[1].splitlines()
        assert listed[0].startswith(f"    {strongest} (strongest, "), out
        assert f"Strongest: {strongest} " in status["risk"]["reasoning"]


def test_render_puts_the_strongest_first_whatever_the_status_order() -> None:
    incidents = [
        {"id": f"INC-{n}", "severity": "low", "similarity": 0.9 - n / 10, "title": f"t{n}"}
        for n in range(4)
    ]
    body = {
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {"action": "restart", "target": {"kind": "Deployment", "name": "api"}},
        "status": {
            "risk": {
                "band": "low",
                "score": 9,
                "decision": "Approved",
                "mostRelevantIncident": "INC-2",
            },
            "similarIncidents": incidents,
        },
    }
    text = render(body, [])
    order = [line.split()[0] for line in text.split("similar incidents:\n")[1].splitlines()[:4]]
    assert order == ["INC-2", "INC-0", "INC-1", "INC-3"]
