"""``precedent eval risk`` with the clusters' facts: each labelled request is answered in its
verified context (the Namespaces' labels and the environment mapping of the cluster it runs
in), as that cluster's operator answers it, and the agreement does not drop."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.cli.test_score import REPO, run

RISK = "tests/data/risk"
FACTS = "tests/data/risk-facts"


def _accuracy(*args: str) -> dict[str, object]:
    proc = run("eval", "risk", RISK, "-o", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def test_the_labelled_set_is_answered_in_verified_contexts_and_does_not_drop() -> None:
    claimed = _accuracy()
    verified = _accuracy("-f", FACTS)
    assert claimed["context"] == "claimed"
    assert verified["context"] == "verified"
    assert verified["total"] == claimed["total"] == 91
    assert verified["correct"] >= claimed["correct"]
    assert verified["accuracy"] >= 0.846
    # Seed 000's formula keeps its figure too.
    assert (
        _accuracy("-f", FACTS, "--risk-model", "seed")["correct"]
        == _accuracy("--risk-model", "seed")["correct"]
    )


def test_every_labelled_request_names_its_cluster_and_the_facts_place_it() -> None:
    # The same namespace name is production in one cluster and staging or dev in another.
    namespaces: dict[tuple[str, str], str] = {}
    for path in (REPO / FACTS).glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "Namespace":
                meta = doc["metadata"]
                key = (meta["annotations"]["precedent.dev/cluster"], meta["name"])
                namespaces[key] = meta["labels"]["precedent.dev/environment"]
    assert namespaces[("aks-prod-weu", "payments")] == "production"
    assert namespaces[("aks-staging-weu", "payments")] == "staging"
    for path in (REPO / RISK).glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            cluster = doc["metadata"]["annotations"]["precedent.dev/cluster"]
            namespace = doc["spec"]["target"].get("namespace")
            if namespace:
                assert (cluster, namespace) in namespaces, doc["metadata"]["name"]


def test_a_claim_the_facts_contradict_is_not_used_by_the_eval(tmp_path: Path) -> None:
    # A labelled request claiming dev in a namespace its cluster labels production is
    # answered as production: its band rises to the label's, where the claim gave low.
    body = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {
            "name": "restart-payment-api-claims-dev",
            "namespace": "default",
            "annotations": {
                "precedent.dev/expected-band": "high",
                "precedent.dev/cluster": "aks-prod-weu",
            },
        },
        "spec": {
            "action": "restart_service",
            "target": {"kind": "Deployment", "name": "payment-api", "namespace": "payments"},
            "description": "Restart payment-api: its workers are stuck.",
            "labels": {"environment": "dev", "cluster": "aks-prod-weu"},
        },
    }
    labelled = tmp_path / "claims.yaml"
    labelled.write_text(yaml.safe_dump(body))
    claimed = run("eval", "risk", str(labelled), "-o", "json")
    verified = run("eval", "risk", str(labelled), "-f", str(REPO / FACTS), "-o", "json")
    assert claimed.returncode == 0, claimed.stderr
    assert verified.returncode == 0, verified.stderr
    assert json.loads(claimed.stdout)["correct"] == 0
    assert json.loads(verified.stdout)["correct"] == 1
    # The table says which it was.
    table = run("eval", "risk", str(labelled))
    assert "claims (unverified)" in table.stdout
    assert (
        "verified from the given facts"
        in run("eval", "risk", str(labelled), "-f", str(REPO / FACTS)).stdout
    )
