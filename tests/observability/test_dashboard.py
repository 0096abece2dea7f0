"""The Grafana dashboard: built by Grafana's SDK, read back by it, shipped unchanged as a file and
a sidecar ConfigMap, and every query valid PromQL for promtool."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml
from grafana_foundation_sdk.models import dashboard as dm

from tests.observability import dashboard
from tests.observability.conftest import binary
from tests.observability.test_alerts import test_rules_only_use_metrics_the_operator_exports

# Grafana's variables, as a Prometheus query would see them once Grafana substituted them.
GRAFANA_VARIABLES = {"$__rate_interval": "2m", "$__range": "1h"}


def expand(expr: str) -> str:
    """``expr`` with Grafana's interval variables replaced by durations."""
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def test_shipped_files_are_what_the_sdk_builds() -> None:
    model = dashboard.build()
    assert dashboard.JSON_PATH.read_text() == dashboard.render(model)
    assert dashboard.CONFIGMAP_PATH.read_text() == dashboard.render_configmap(model)
    configmap = yaml.safe_load(dashboard.CONFIGMAP_PATH.read_text())
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["precedent-dashboard.json"]) == model


def test_grafanas_model_reads_the_dashboard_back() -> None:
    model = json.loads(dashboard.JSON_PATH.read_text())
    parsed = dm.Dashboard.from_json(model)
    assert parsed.uid == dashboard.UID
    assert parsed.panels is not None
    assert [p.title for p in parsed.panels] == [p["title"] for p in model["panels"]]


def test_every_panel_queries_prometheus_with_distinct_ref_ids() -> None:
    model = dashboard.build()
    titles = set()
    for panel in model["panels"]:
        titles.add(panel["title"])
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        refs = [t["refId"] for t in panel["targets"]]
        assert refs, panel["title"]
        assert sorted(set(refs)) == sorted(refs), panel["title"]
        assert all(refs), panel["title"]
    for wanted in (
        "Decisions by band",
        "Denied and Escalated",
        "Top similar incidents",
        "Playbook selections by method",
        "Catalog latency",
        "Catalog circuit breaker",
        "Scoring latency",
        "History size",
        "Approvals waiting",
        "Outcomes",
    ):
        assert wanted in titles


def test_promtool_parses_every_query(tmp_path: Path) -> None:
    exprs = dashboard.queries(dashboard.build())
    rules: dict[str, Any] = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}", "expr": expand(e)}
                    for i, e in enumerate(exprs)
                ],
            }
        ]
    }
    path = tmp_path / "dashboard.rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    run = subprocess.run(
        [binary("promtool"), "check", "rules", str(path)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in run.stdout


def test_dashboard_only_uses_metrics_the_operator_exports(monkeypatch: Any) -> None:
    exprs = dashboard.queries(dashboard.build())
    monkeypatch.setattr(
        "tests.observability.test_alerts.alerts",
        lambda: [{"alert": e, "expr": e} for e in exprs],
    )
    test_rules_only_use_metrics_the_operator_exports()
