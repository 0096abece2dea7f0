"""The alerting rules: valid for promtool, unit-tested by promtool, one source for both files,
every runbook a section of docs/monitoring.md, every metric one the operator exports."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from precedent.metrics import Metrics
from tests.observability.conftest import MONITORING, RULES, binary, readme_anchors

# Metrics the rules may use that Precedent does not define: Prometheus' own, and the gauge the
# approvals workflow exports.
EXTERNAL = {"up", "precedent_approvals_pending"}


def load(path: Any) -> Any:
    with open(path) as stream:
        return yaml.safe_load(stream)


def alerts() -> list[dict[str, Any]]:
    return [rule for group in load(RULES)["groups"] for rule in group["rules"]]


def test_promtool_checks_the_rules() -> None:
    run = subprocess.run(
        [binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in run.stdout


def test_promtool_unit_tests_pass() -> None:
    tests = MONITORING / "rules" / "precedent.rules.test.yaml"
    run = subprocess.run(
        [binary("promtool"), "test", "rules", str(tests)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # Every alert has at least one case that expects it to fire.
    cases = load(tests)["tests"]
    fired = {
        check["alertname"]
        for case in cases
        for check in case["alert_rule_test"]
        if check.get("exp_alerts")
    }
    assert fired == {rule["alert"] for rule in alerts()}


def test_prometheusrule_holds_the_same_groups() -> None:
    resource = load(MONITORING / "prometheusrule.yaml")
    assert resource["kind"] == "PrometheusRule"
    assert resource["spec"] == load(RULES)


def test_every_alert_has_a_runbook_section_in_the_readme() -> None:
    anchors = readme_anchors()
    for rule in alerts():
        url = rule["annotations"]["runbook_url"]
        assert url.endswith(f"docs/monitoring.md#{rule['alert'].lower()}"), url
        assert rule["alert"].lower() in anchors, f"docs/monitoring.md has no {rule['alert']}"
        assert rule["labels"]["severity"] in {"critical", "warning"}


def test_rules_only_use_metrics_the_operator_exports() -> None:
    registry = CollectorRegistry()
    Metrics(registry)
    exported = set()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
    for family in registry.collect():
        exported.update(family.name + suffix for suffix in suffixes[family.type])
    for rule in alerts():
        names = set(re.findall(r"\b(?:precedent|ai)_[a-z_]+\b|\bup\b", rule["expr"]))
        assert names, rule["alert"]
        unknown = names - exported - EXTERNAL
        assert not unknown, f"{rule['alert']} uses {unknown}"
