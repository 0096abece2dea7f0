"""End to end with a real Prometheus: Debian's ``prometheus`` scrapes the real operator (a
``kopf run`` process against the sandbox) and evaluates the shipped alerting rules; every
dashboard query returns data through Prometheus' HTTP API, every rule evaluates, and the alerts
whose conditions the run creates go pending.

The operator's playbook catalog is a Context API URL nobody listens on, so every selection falls
back to the in-process catalog and the circuit opens: the catalog metrics and alerts have series.
One request has an invalid spec (Stalled) and one reports an outcome.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.helpers import eventually
from tests.integration.conftest import REPO, Cluster, condition
from tests.observability import dashboard

pytestmark = pytest.mark.integration

RULES = REPO / "manifests" / "monitoring" / "rules" / "precedent.rules.yaml"
EXAMPLES = REPO / "data" / "requests" / "examples.yaml"
MERGE = {"Content-Type": "application/merge-patch+json"}
# What Grafana would substitute: rates over a few 1 s scrapes, ranges over the whole run.
GRAFANA_VARIABLES = {"$__rate_interval": "20s", "$__range": "5m"}
# The approvals workflow exports this gauge; until it does its queries return no series.


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def process(args: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    """Run ``args`` until the block ends (SIGINT, then SIGKILL), output in ``log``."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def ready(prom: httpx.Client) -> bool:
    """Whether Prometheus is listening and has loaded its storage and rules."""
    try:
        return prom.get("/-/ready").status_code == 200
    except httpx.TransportError:  # not listening yet
        return False


def query(prom: httpx.Client, expr: str) -> list[dict[str, Any]]:
    """An instant query; fails on an invalid expression."""
    response = prom.get("/api/v1/query", params={"query": expr})
    body = response.json()
    assert body["status"] == "success", f"{expr}: {body}"
    return list(body["data"]["result"])


def rules(prom: httpx.Client) -> dict[str, dict[str, Any]]:
    """The loaded alerting rules by name."""
    groups = prom.get("/api/v1/rules").json()["data"]["groups"]
    return {r["name"]: r for g in groups for r in g["rules"]}


def test_dashboard_and_alerts_against_the_real_operator(cluster: Cluster, tmp_path: Path) -> None:
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.skip("prometheus is not installed: install it with `apt-get install -y prometheus`")
    metrics_port, prom_port, dead_port = free_port(), free_port(), free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [
            {
                "job_name": "precedent-metrics",
                "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
            }
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "PRECEDENT_METRICS_PORT": str(metrics_port),
        "PRECEDENT_CATALOG": f"http://127.0.0.1:{dead_port}",
        "PRECEDENT_CATALOG_RETRIES": "0",
        "PRECEDENT_LOG_FORMAT": "json",
    }
    operator_args = [sys.executable, "-m", "kopf", "run", "-m", "precedent.handlers"]
    prom_args = [
        prometheus,
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{prom_port}",
    ]
    with (
        process([*operator_args, "--all-namespaces", "--standalone"], tmp_path / "op.log", env),
        process(prom_args, tmp_path / "prometheus.log"),
        httpx.Client(base_url=f"http://127.0.0.1:{prom_port}", timeout=10) as prom,
    ):
        with EXAMPLES.open() as stream:
            requests = [d for d in yaml.safe_load_all(stream) if d]
        invalid = {
            "apiVersion": "precedent.dev/v1alpha1",
            "kind": "RemediationRequest",
            "metadata": {"name": "bad-resource-id", "namespace": "default"},
            # The schema allows it; the operator does not (Stalled, the field named).
            "spec": {
                "action": "drain_node",
                "target": {"kind": "Node", "name": "x", "resourceId": "///"},
            },
        }
        # Prometheus scrapes before and between two rounds of the same requests: a series'
        # first sample is its starting point, so rate() and increase() see the second round.
        # Prometheus answers 503 until it has loaded its TSDB and rules: wait for /-/ready.
        eventually(lambda: ready(prom), timeout=60)
        eventually(lambda: query(prom, 'up{job="precedent-metrics"} == 1'), timeout=60)
        again = [copy.deepcopy(b) for b in requests]
        for body in again:
            body["metadata"]["name"] += "-again"
        for round_, batch in enumerate((requests, again), start=1):
            for body in batch if round_ == 2 else [*batch, invalid]:
                body["metadata"]["namespace"] = "default"
                assert cluster.create(body).status_code == 201
            for body in batch:
                cluster.wait_ready(body["metadata"]["name"])
            answered = round_ * len(requests)
            eventually(
                lambda n=answered: (
                    (r := query(prom, "sum(precedent_decisions_total)"))
                    and float(r[0]["value"][1]) == n
                ),
                timeout=30,
            )
        requests += again
        eventually(
            lambda: (
                (c := condition(cluster.get_request("bad-resource-id"), "Stalled"))
                and c["status"] == "True"
            )
        )
        # Outcomes count only on approved requests: report on one policy approved.
        first = next(
            b["metadata"]["name"]
            for b in requests
            if cluster.get_request(b["metadata"]["name"])["status"]["risk"]["decision"]
            == "Approved"
        )
        outcome = {"spec": {"outcome": {"result": "succeeded", "message": "pods restarted"}}}
        path = f"/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests/{first}"
        assert cluster.client.patch(path, json=outcome, headers=MERGE).status_code == 200

        eventually(lambda: query(prom, "sum(precedent_outcomes_total)"), timeout=60)

        # Every dashboard query returns data (rates need two scrapes of a series).
        for expr in dashboard.queries(dashboard.build()):
            for name, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(name, value)
            assert eventually(lambda e=expr: query(prom, e), timeout=20), f"no data: {expr}"

        # Every alerting rule is loaded and evaluates without error; the run's conditions
        # (a Stalled request, every selection a fallback, the circuit open) make theirs pending.
        loaded = eventually(
            lambda: (
                (found := rules(prom))
                and all(r.get("lastEvaluation", "").startswith("2") for r in found.values())
                and found
            ),
            timeout=30,
        )
        with RULES.open() as stream:
            shipped = {r["alert"] for g in yaml.safe_load(stream)["groups"] for r in g["rules"]}
        assert set(loaded) == shipped
        for name, rule in loaded.items():
            assert rule["health"] == "ok", f"{name}: {rule.get('lastError')}"
            assert not query(prom, rule["query"]) or rule["state"] != "inactive", name
        pending = {"PrecedentStalledRequests", "PrecedentFallbackSelectionsHigh"}
        # The Escalated example requests wait for a human: the approvals gauge is above 0.
        pending |= {"PrecedentCatalogCircuitOpen", "PrecedentApprovalsPending"}
        states: dict[str, str] = {}

        def pending_now() -> bool:
            states.update({n: r["state"] for n, r in rules(prom).items()})
            return {n for n, s in states.items() if s == "pending"} >= pending

        try:
            eventually(pending_now, timeout=30)
        except AssertionError:
            pytest.fail(f"alert states {states}, expected pending: {sorted(pending)}")
        assert query(prom, 'up{job="precedent-metrics"}')[0]["value"][1] == "1"
        for quiet in ("PrecedentOperatorDown", "PrecedentOperatorAbsent"):
            assert states[quiet] == "inactive", quiet

    # One JSON line per decision in the operator's output; kopf's own lines are JSON too.
    lines = (tmp_path / "op.log").read_text().splitlines()
    decided = [json.loads(x) for x in lines if x.startswith("{") and "precedent.decisions" in x]
    names = {d["name"] for d in decided if d.get("decision")}
    assert names == {b["metadata"]["name"] for b in requests}
    stalled = [d for d in decided if d["name"] == "bad-resource-id"]
    assert stalled
    assert stalled[0]["reason"] == "InvalidSpec"
    assert all(x.startswith("{") for x in lines)  # kopf's lines are JSON too
