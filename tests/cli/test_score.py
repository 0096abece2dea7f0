"""The ``precedent score`` command, run as a user runs it: a real process, real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PRECEDENT = shutil.which("precedent", path=str(Path(sys.executable).parent)) or "precedent"

VALID = """\
apiVersion: precedent.dev/v1alpha1
kind: RemediationRequest
metadata: {name: restart-payment-api, namespace: default}
spec:
  action: restart_service
  target: {kind: managedClusters, name: payment-api}
"""


def run(*args: str, stdin: str | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PRECEDENT, *args], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_default_model_keeps_each_seed_rows_band_and_top_incident() -> None:
    proc = run("score", "data/requests/seed-000.yaml", "--history", "data/incidents")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[1:]}
    expected = {
        "restart-payment-api": ("high", "Denied", "INC-2025-0847"),
        "modify-nsg-east": ("high", "Denied", "INC-2025-0923"),
        "scale-down-aks-prod": ("high", "Denied", "INC-2025-1089"),
        "update-config-sql-prod": ("medium", "Escalated", "INC-2025-0634"),
        "scale-up-web-tier-01": ("low", "Approved", "INC-2026-0012"),
    }
    assert {name: tuple(row[3:6]) for name, row in rows.items()} == expected


def test_score_bundled_requests_prints_the_seed_rows() -> None:
    proc = run(
        "score",
        "data/requests/seed-000.yaml",
        "--history",
        "data/incidents",
        "--risk-model",
        "seed",
    )
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[1:]}
    assert rows["restart-payment-api"][2:6] == ["100", "high", "Denied", "INC-2025-0847"]
    assert rows["modify-nsg-east"][2:6] == ["100", "high", "Denied", "INC-2025-0923"]
    assert float(rows["scale-down-aks-prod"][2]) >= 75
    assert rows["scale-down-aks-prod"][5] == "INC-2025-1089"
    assert rows["update-config-sql-prod"][2:7] == [
        "40",
        "medium",
        "Escalated",
        "INC-2025-0634",
        "1.00",
    ]
    assert rows["scale-up-web-tier-01"][2:7] == ["8", "low", "Approved", "INC-2026-0012", "0.80"]


def test_score_uses_data_incidents_by_default_and_reads_stdin() -> None:
    proc = run("score", "-", stdin=VALID)
    assert proc.returncode == 0, proc.stderr
    assert "INC-2025-0847" in proc.stdout


def test_json_output_is_the_full_assessment() -> None:
    proc = run("score", "-", "-o", "json", "--risk-model", "seed", stdin=VALID)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # one request: the object itself, as kubectl prints one
    assert doc["name"] == "restart-payment-api"
    risk = doc["assessment"]["risk"]
    assert risk["score"] == 100
    assert risk["mostRelevantIncident"] == "INC-2025-0847"
    assert doc["assessment"]["similarIncidents"][0]["parts"]["resourceName"] == 0.2


def test_yaml_output_parses() -> None:
    proc = run("score", "-", "-o", "yaml", stdin=VALID)
    assert proc.returncode == 0, proc.stderr
    [doc] = yaml.safe_load_all(proc.stdout)
    assert doc["assessment"]["risk"]["band"] == "high"


BAD_INPUTS = {
    "not-yaml": ("spec: [unclosed\n", ["line 2, column 1", "not valid YAML"]),
    "wrong-kind": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {}\n",
        ["document 1", "expected kind 'RemediationRequest'", "ConfigMap"],
    ),
    "missing-action": (
        VALID.replace("  action: restart_service\n", ""),
        ["document 1", "restart-payment-api", "spec.action: required field is missing"],
    ),
    "missing-target": (
        VALID.replace("  target: {kind: managedClusters, name: payment-api}\n", ""),
        ["spec.target: required field is missing"],
    ),
    "missing-target-name": (
        VALID.replace("name: payment-api}", "namespace: x}"),
        ["spec.target.name: required field is missing"],
    ),
    "bad-action": (VALID.replace("restart_service", "'restart service!'"), ["spec.action"]),
    "second-document": (
        VALID
        + "---\n"
        + VALID.replace("restart-payment-api", "second").replace("  action: restart_service\n", ""),
        ["document 2", "second", "spec.action"],
    ),
    "unknown-field": (VALID + "  colour: blue\n", ["spec.colour: unknown field"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_requests_fail_with_one_line_naming_the_document_and_field(
    case: str, tmp_path: Path
) -> None:
    text, expected = BAD_INPUTS[case]
    file = tmp_path / f"{case}.yaml"
    file.write_text(text)
    proc = run("score", str(file))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {file}")
    for fragment in expected:
        assert fragment in lines[0]


def test_unknown_severity_in_history_names_the_incident(tmp_path: Path) -> None:
    history = tmp_path / "history.yaml"
    history.write_text(
        "apiVersion: precedent.dev/v1alpha1\nkind: Incident\nmetadata: {name: inc-9}\n"
        "spec: {id: INC-9, title: t, severity: catastrophic}\n"
    )
    proc = run("score", "-", "--history", str(history), stdin=VALID)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "inc-9" in proc.stderr
    assert "spec.severity" in proc.stderr
    assert "'critical', 'high', 'medium' or 'low'" in proc.stderr


def test_empty_history_is_an_error(tmp_path: Path) -> None:
    history = tmp_path / "empty"
    history.mkdir()
    proc = run("score", "-", "--history", str(history), stdin=VALID)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: history is empty: no Incident documents in {history}"


def test_missing_file_is_an_error() -> None:
    proc = run("score", "no/such/file.yaml")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: no/such/file.yaml: no such file or directory"


def test_invalid_setting_names_the_variable() -> None:
    proc = subprocess.run(
        [PRECEDENT, "score", "-"],
        input=VALID,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, "PRECEDENT_MIN_CONFIDENCE": "2"},
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    # One line naming the variable; the reason after it is pydantic's wording, not pinned.
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: invalid configuration: PRECEDENT_MIN_CONFIDENCE: "), line


def _namespace(name: str, environment: str) -> str:
    return (
        "apiVersion: v1\nkind: Namespace\n"
        f"metadata: {{name: {name}, labels: {{precedent.dev/environment: {environment}}}}}\n"
    )


def test_a_namespace_given_twice_with_other_labels_is_refused_in_either_order(
    tmp_path: Path,
) -> None:
    # The environment is what the gate trusts: it never depends on which file came last.
    prod, staging = tmp_path / "prod.yaml", tmp_path / "staging.yaml"
    prod.write_text(_namespace("shop", "production"))
    staging.write_text(_namespace("shop", "staging"))
    for first, second in ((prod, staging), (staging, prod)):
        proc = run("score", "-", "-f", str(first), "-f", str(second), stdin=VALID)
        assert proc.returncode == 1
        assert "Traceback" not in proc.stderr
        line = proc.stderr.strip()
        assert line.startswith(f"error: {second}, document 1 (Namespace shop): ")
        assert f"also in {first}, document 1 (Namespace shop) with other labels" in line
        assert "precedent.dev/environment=production" in line
        assert "precedent.dev/environment=staging" in line


def test_the_same_namespace_manifest_twice_is_one_fact(tmp_path: Path) -> None:
    first, again = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(_namespace("shop", "production"))
    again.write_text(_namespace("shop", "production"))
    proc = run("score", "-", "-f", str(first), "-f", str(again), stdin=VALID)
    assert proc.returncode == 0, proc.stderr
