"""A CI pre-check given the cluster's facts gives the operator's answer.

``precedent score -f <Namespace manifests and the mapping> --cluster NAME`` (a real process)
and the real operator against the sandbox (the same Namespaces, the same mapping, the same
cluster name) answer a request whose claims contradict the facts the same way; given no facts
the command uses the claims and says they are unverified.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_score import run
from tests.integration.conftest import Cluster
from tests.integration.test_trust_facts import answered, namespace, payment_restart

pytestmark = pytest.mark.integration

MAPPING = """\
kind: EnvironmentMapping
rules:
  - resourceId: "/subscriptions/*/resourceGroups/rg-prod/*"
    environment: production
  - cluster: "kind-*"
    environment: dev
"""
# The operator reads the bundled incidents and playbooks from the cluster; the command from
# the files they were applied from.
SOURCES = ("--history", "data/incidents", "--catalog", "data/playbooks")
ARM = (
    "/subscriptions/0000/resourceGroups/rg-prod/providers/Microsoft.ContainerService/"
    "managedClusters/aks-prod/deployments/payment-api"
)


def requests() -> list[dict[str, Any]]:
    # Claims dev (and another cluster) in a namespace labelled production.
    claims_dev = payment_restart("claims-dev", "payments", environment="dev", cluster="kind-local")
    # Claims dev in a dev namespace for a resource the mapping places in production.
    arm = payment_restart("arm-in-scratch", "scratch", environment="dev")
    arm["spec"]["target"]["resourceId"] = ARM
    # An honest dev request.
    honest = payment_restart("honest-dev", "scratch", environment="dev")
    return [claims_dev, arm, honest]


def test_score_with_the_clusters_facts_gives_the_operators_answer(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = tmp_path / "facts"
    facts.mkdir()
    manifests = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"precedent.dev/environment": env}},
        }
        for name, env in (("payments", "production"), ("scratch", "dev"))
    ]
    (facts / "namespaces.yaml").write_text(yaml.safe_dump_all(manifests))
    (facts / "environments.yaml").write_text(MAPPING)
    bodies = requests()
    (tmp_path / "requests.yaml").write_text(yaml.safe_dump_all(bodies))

    # The operator: the same Namespaces in the cluster, the same mapping and cluster name.
    namespace(cluster, "payments", "production")
    namespace(cluster, "scratch", "dev")
    monkeypatch.setenv("PRECEDENT_ENVIRONMENT_MAPPING", str(facts / "environments.yaml"))
    monkeypatch.setenv("PRECEDENT_CLUSTER_NAME", "aks-prod-weu")
    for body in bodies:
        assert cluster.create(body).status_code == 201
    with cluster.operator():
        statuses = {b["metadata"]["name"]: answered(cluster, b["metadata"]["name"]) for b in bodies}
    monkeypatch.delenv("PRECEDENT_ENVIRONMENT_MAPPING")
    monkeypatch.delenv("PRECEDENT_CLUSTER_NAME")

    # The command, as a CI job runs it, with the cluster's facts from files.
    proc = run(
        "score",
        str(tmp_path / "requests.yaml"),
        *SOURCES,
        "-f",
        str(facts),
        "--cluster",
        "aks-prod-weu",
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    offline = {d["name"]: d["assessment"] for d in json.loads(proc.stdout)["items"]}
    for name, obj in statuses.items():
        status, answer = obj["status"], offline[name]
        assert answer["risk"]["score"] == status["risk"]["score"], name
        assert answer["risk"]["band"] == status["risk"]["band"], name
        assert answer["risk"]["decision"] == status["risk"]["decision"], name
        assert answer["context"] == status["context"], name
        assert answer["inputHash"] == status["inputHash"], name
    claim = statuses["claims-dev"]["status"]["context"]
    assert claim["environment"] == "production"
    assert claim["claim"].startswith(
        "claimed dev, verified production from namespace label on payments"
    )
    assert statuses["arm-in-scratch"]["status"]["context"]["environment"] == "production"
    assert statuses["honest-dev"]["status"]["context"]["environment"] == "dev"

    # Without facts the claims are used as written, and said to be unverified.
    bare = run("score", str(tmp_path / "requests.yaml"), *SOURCES, "-o", "json")
    assert bare.returncode == 0, bare.stderr
    unverified = {d["name"]: d["assessment"] for d in json.loads(bare.stdout)["items"]}
    assert unverified["claims-dev"]["context"]["verified"] is False
    assert unverified["claims-dev"]["context"]["environment"] == "dev"
    assert "unverified" in unverified["claims-dev"]["context"]["source"]
    assert unverified["claims-dev"]["risk"]["score"] < offline["claims-dev"]["risk"]["score"]
    table = run("score", str(tmp_path / "requests.yaml"), *SOURCES)
    assert table.returncode == 0, table.stderr
    assert "claims (unverified)" in table.stdout + table.stderr
