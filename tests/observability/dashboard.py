"""The Grafana dashboard, built with Grafana's own SDK (grafana-foundation-sdk).

``python -m tests.observability.dashboard`` writes ``manifests/monitoring/grafana/
precedent-dashboard.json`` (import it in Grafana) and ``manifests/monitoring/
dashboard-configmap.yaml`` (the same JSON in a ConfigMap the Grafana sidecar picks up by its
``grafana_dashboard: "1"`` label); ``test_dashboard.py`` fails when either file differs from
what this module builds, and checks every query with promtool and a real Prometheus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from grafana_foundation_sdk.builders import bargauge, dashboard, prometheus, stat, statetimeline
from grafana_foundation_sdk.builders import timeseries as ts
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dm

MONITORING = Path(__file__).resolve().parents[2] / "manifests" / "monitoring"
JSON_PATH = MONITORING / "grafana" / "precedent-dashboard.json"
CONFIGMAP_PATH = MONITORING / "dashboard-configmap.yaml"
UID = "precedent-overview"
RATE = "$__rate_interval"
DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")


def query(expr: str, legend: str = "", *, instant: bool = False) -> prometheus.Dataquery:
    """One PromQL target."""
    target = prometheus.Dataquery().expr(expr).legend_format(legend or "__auto")
    return target.instant() if instant else target.range()


def series(title: str, unit: str, description: str, *targets: prometheus.Dataquery) -> Any:
    """A time series panel."""
    panel = ts.Panel().title(title).unit(unit).description(description).datasource(DATASOURCE)
    for ref, target in zip("ABCDEF", targets, strict=False):
        panel = panel.with_target(target.ref_id(ref))
    return panel.height(8).span(12)


def single(title: str, unit: str, description: str, target: prometheus.Dataquery) -> Any:
    """A single-number panel."""
    return (
        stat.Panel()
        .title(title)
        .unit(unit)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(target.ref_id("A"))
        .height(4)
        .span(6)
    )


def build() -> dict[str, Any]:
    """The dashboard as Grafana's JSON model."""
    breaker = dm.ValueMap(
        options={
            "0": dm.ValueMappingResult(text="closed", color="green", index=0),
            "1": dm.ValueMappingResult(text="half-open", color="yellow", index=1),
            "2": dm.ValueMappingResult(text="open", color="red", index=2),
        }
    )
    board = (
        dashboard.Dashboard("Precedent")
        .uid(UID)
        .tags(["precedent", "kubernetes"])
        .description("Decisions, scoring latency, playbook selection, catalog health, outcomes.")
        .refresh("30s")
        .time("now-6h", "now")
        .with_variable(dashboard.DatasourceVariable("datasource").type("prometheus"))
        .with_row(dashboard.Row("Decisions"))
        .with_panel(
            single(
                "Requests answered",
                "short",
                "Requests answered over the time range.",
                query(f"sum(increase(precedent_decisions_total[{RANGE}]))", instant=True),
            )
        )
        .with_panel(
            single(
                "Stalled requests",
                "short",
                "Requests held Stalled now (invalid spec): kubectl get rr -A.",
                query("sum(precedent_stalled_requests)", instant=True),
            )
        )
        .with_panel(
            single(
                "Approvals waiting",
                "short",
                "Escalated requests waiting for a RemediationApproval.",
                query("sum(precedent_approvals_pending)", instant=True),
            )
        )
        .with_panel(
            single(
                "History size",
                "short",
                "Incidents in the history requests are scored against.",
                query("max(precedent_history_incidents)", instant=True),
            )
        )
        .with_panel(
            series(
                "Decisions by band",
                "reqps",
                "Answered requests per second by risk band.",
                query(f"sum by (band) (rate(precedent_decisions_total[{RATE}]))", "{{band}}"),
            )
        )
        .with_panel(
            series(
                "Denied and Escalated",
                "percentunit",
                "Share of answered requests Denied or Escalated.",
                query(
                    "sum by (decision) (rate(precedent_decisions_total"
                    f'{{decision=~"Denied|Escalated"}}[{RATE}]))'
                    f" / scalar(sum(rate(precedent_decisions_total[{RATE}])))",
                    "{{decision}}",
                ),
            )
        )
        .with_panel(
            bargauge.Panel()
            .title("Top similar incidents")
            .description("Past incidents most often the most relevant precedent of a request.")
            .datasource(DATASOURCE)
            .with_target(
                query(
                    "topk(10, sum by (incident) "
                    f"(increase(precedent_top_incident_matches_total[{RANGE}])))",
                    "{{incident}}",
                    instant=True,
                ).ref_id("A")
            )
            .height(8)
            .span(12)
        )
        .with_panel(
            series(
                "Scoring latency",
                "s",
                "p50 and p99 of one reconciliation (history, policy, playbook selection).",
                *(
                    query(
                        f"histogram_quantile({q}, sum by (le) (rate("
                        f'precedent_assessment_duration_seconds_bucket{{outcome="assessed"}}[{RATE}])))',
                        f"p{round(q * 100)}",
                    )
                    for q in (0.5, 0.99)
                ),
            )
        )
        .with_row(dashboard.Row("Playbooks and catalog"))
        .with_panel(
            series(
                "Playbook selections by method",
                "reqps",
                "data_driven, fallback (the in-process catalog answered) or none.",
                query(
                    f"sum by (selection_method) (rate(ai_playbook_selections_total[{RATE}]))",
                    "{{selection_method}}",
                ),
            )
        )
        .with_panel(
            series(
                "Catalog latency",
                "s",
                "p50 and p99 of one catalog query, retries included.",
                *(
                    query(
                        f"histogram_quantile({q}, sum by (le, catalog) (rate("
                        f"precedent_catalog_request_duration_seconds_bucket[{RATE}])))",
                        f"{{{{catalog}}}} p{round(q * 100)}",
                    )
                    for q in (0.5, 0.99)
                ),
            )
        )
        .with_panel(
            statetimeline.Panel()
            .title("Catalog circuit breaker")
            .description("The breaker in front of each remote catalog.")
            .datasource(DATASOURCE)
            .with_target(
                query("max by (catalog) (precedent_catalog_circuit_state)", "{{catalog}}").ref_id(
                    "A"
                )
            )
            .mappings([breaker])
            .height(6)
            .span(12)
        )
        .with_panel(
            series(
                "Outcomes",
                "short",
                "Reported outcomes of executed requests, by result.",
                query(
                    f"sum by (result) (increase(precedent_outcomes_total[{RATE}]))", "{{result}}"
                ),
            )
        )
    )
    encoded = json.dumps(board.build(), cls=JSONEncoder, sort_keys=True, indent=2)
    model: dict[str, Any] = json.loads(encoded)
    return model


RANGE = "$__range"


def queries(model: dict[str, Any]) -> list[str]:
    """Every PromQL expression in the dashboard."""
    return [t["expr"] for p in model["panels"] for t in p.get("targets") or []]


def configmap(model: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap Grafana's dashboard sidecar loads (label ``grafana_dashboard: "1"``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "precedent-dashboard",
            "namespace": "precedent-system",
            "labels": {"grafana_dashboard": "1", "app.kubernetes.io/name": "precedent"},
        },
        "data": {"precedent-dashboard.json": render(model)},
    }


def render(model: dict[str, Any]) -> str:
    """The dashboard file's text."""
    return json.dumps(model, sort_keys=True, indent=2) + "\n"


class _Block(str):
    """A string YAML writes as a literal block (the JSON stays readable in the ConfigMap)."""


def _block(dumper: yaml.SafeDumper, text: _Block) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Block, _block)


def render_configmap(model: dict[str, Any]) -> str:
    """The ConfigMap file's text."""
    body = configmap(model)
    body["data"] = {k: _Block(v) for k, v in body["data"].items()}
    head = "# Generated by `python -m tests.observability.dashboard`; do not edit.\n"
    return head + yaml.dump(body, Dumper=_Dumper, sort_keys=False, width=120)


def main() -> None:
    """Write both files."""
    model = build()
    JSON_PATH.parent.mkdir(parents=True, exist_ok=True)
    JSON_PATH.write_text(render(model))
    CONFIGMAP_PATH.write_text(render_configmap(model))


if __name__ == "__main__":
    main()
