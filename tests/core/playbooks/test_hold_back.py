"""The default model holds back a playbook that scores well but does not fit: one that changes
things for a request that asks for none, and the best-scored playbook when a close runner-up is
written for a failure the request names and it is not. The ``concepts`` model (the same without
the rule) shows what the rule changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedent.adapters.loader import load_playbooks
from precedent.core.playbooks import SELECTION_MODELS, CatalogIndex, PlaybookQuery, decide
from precedent.core.playbooks.phrases import (
    asks_read_only,
    concept_counts,
    inferred_incident_types,
    is_read_only,
)
from precedent.core.playbooks.profile import workload_kinds
from precedent.models import Playbook, RemediationRequestSpec

CATALOG = Path(__file__).resolve().parents[3] / "data" / "playbooks"  # the bundled catalog


@pytest.fixture(scope="module")
def playbooks() -> list[Playbook]:
    return load_playbooks([CATALOG])


@pytest.fixture(scope="module")
def default(playbooks: list[Playbook]) -> CatalogIndex:
    return CatalogIndex(playbooks)


@pytest.fixture(scope="module")
def without_rule(playbooks: list[Playbook]) -> CatalogIndex:
    return CatalogIndex(playbooks, model=SELECTION_MODELS["concepts"])


def query(action: str, kind: str, description: str, **labels: str) -> PlaybookQuery:
    return PlaybookQuery.from_spec(
        RemediationRequestSpec.model_validate(
            {
                "action": action,
                "target": {"kind": kind, "name": "x", "namespace": "ns"},
                "description": description,
                "labels": labels,
            }
        )
    )


def picked(index: CatalogIndex, q: PlaybookQuery) -> str:
    decision = decide(q, index.search(q))
    return decision.selection.id if decision.selection else "manual_investigation"


@pytest.mark.parametrize(
    ("text", "action", "read_only"),
    [
        ("collect CoreDNS logs and metrics for the postmortem before anyone touches it", "", True),
        ("grab logs and events for the ticket, do not restart anything", "restart_service", True),
        ("gather kubelet logs and disk usage, read-only", "", True),
        ("collect diagnostics", "collect_diagnostics", True),
        ("check the logs and restart it if the cause was transient", "collect_diagnostics", False),
        ("restart coredns one replica at a time", "restart_service", False),
    ],
)
def test_a_request_asks_for_no_change_when_it_says_so_or_only_reads(
    text: str, action: str, read_only: bool
) -> None:
    assert asks_read_only(concept_counts(text), action) is read_only


def test_a_playbook_is_read_only_when_every_action_changes_nothing() -> None:
    assert is_read_only(["collect_diagnostics"])
    assert not is_read_only(["collect_diagnostics", "restart_service"])
    assert not is_read_only([])  # not known: never treated as read-only


def test_a_read_only_request_is_never_answered_with_a_playbook_that_changes_things(
    default: CatalogIndex, without_rule: CatalogIndex
) -> None:
    q = query(
        "collect_diagnostics",
        "Deployment",
        "[FIRING:1] CoreDNSErrorsHigh - collect CoreDNS logs and metrics for the postmortem "
        "before anyone touches it.",
        environment="production",
        **{"incident-type": "dns-failure"},
    )
    assert picked(default, q) == "diagnostics-collection"
    assert all(c.id != "coredns-recovery" for c in default.search(q).candidates)


def test_when_only_changes_fit_the_manual_reason_names_the_one_held_back(
    default: CatalogIndex, without_rule: CatalogIndex
) -> None:
    q = query(
        "restart_service",
        "Deployment",
        "read-only please: CoreDNS SERVFAIL since the Corefile edit, look but do not restart",
        environment="staging",
        **{"incident-type": "dns-failure"},
    )
    assert picked(without_rule, q) == "coredns-recovery"
    answer = default.search(q)
    decision = decide(q, answer)
    assert decision.recommendation is not None
    assert answer.best_below is not None
    assert answer.best_below.confidence >= q.min_confidence  # it scored above the bar …
    reason = decision.recommendation.reason
    assert reason.startswith("no playbook selected: the best, coredns-recovery")
    assert "held back: it changes things and the request asks for none" in reason


def test_a_close_runner_up_written_for_the_named_failure_wins_and_the_rationale_says_why(
    default: CatalogIndex, without_rule: CatalogIndex
) -> None:
    q = query(
        "rollback",
        "Deployment",
        "billing 3.4 deploy: alembic migration stuck waiting for a lock on invoices, checkout "
        "writes time out. roll it back.",
        environment="production",
        priority="P0",
    )
    assert picked(without_rule, q) == "deployment-rollback"
    decision = decide(q, default.search(q))
    assert decision.selection is not None
    assert decision.selection.id == "db-migration-rollback"
    assert (
        "deployment-rollback scored 0.89 but was held back: it is not written for "
        "migration-blocked, which the request names and db-migration-rollback, close behind, is"
        in decision.selection.rationale
    )


@pytest.mark.parametrize(
    ("action", "kind", "text", "expected"),
    [
        # the near neighbours the rule tells apart …
        (
            "drain_node",
            "Node",
            "KubeNodeDiskPressure aks-nodepool1-12: imagefs at 93%, kubelet evicting pods.",
            "node-disk-pressure-cleanup",
        ),
        # … and the plain requests it leaves alone
        (
            "drain_node",
            "Node",
            "drain worker-3 tonight for kernel patching, it comes back in an hour.",
            "node-drain-safe",
        ),
        (
            "rollback",
            "Deployment",
            "api v2.1 throws 500s on /login since the deploy; roll back to v2.0.",
            "deployment-rollback",
        ),
        (
            "update_resource_limits",
            "Deployment",
            "api container OOMKilled three times this hour; bump the memory limit to 1Gi.",
            "pod-oom-recovery",
        ),
    ],
)
def test_near_neighbours(
    default: CatalogIndex, action: str, kind: str, text: str, expected: str
) -> None:
    labels = {"environment": "production", "priority": "P1"}
    assert picked(default, query(action, kind, text, **labels)) == expected


def test_a_cpu_limit_is_not_a_memory_limit(
    default: CatalogIndex, without_rule: CatalogIndex
) -> None:
    q = query(
        "update_resource_limits",
        "Deployment",
        "worker pods are throttled hard at the 250m CPU limit; bump the cpu limit to 1 core.",
        environment="production",
    )
    assert "memory-limit" not in concept_counts(q.text)
    assert picked(default, q) == "manual_investigation"  # no catalog playbook changes CPU


def test_a_memory_leak_is_not_a_leaked_credential() -> None:
    assert "secret-rotation" not in inferred_incident_types(
        concept_counts("Four checkout pods were OOMKilled; restart until the leak fix ships.")
    )
    assert "secret-rotation" in inferred_incident_types(
        concept_counts("the payments API key leaked in a public gist; rotate it")
    )


@pytest.mark.parametrize(
    ("run", "kinds"),
    [
        ("kubectl scale deployment/$DEPLOYMENT -n $NAMESPACE --replicas=$r", {"Deployment"}),
        ("kubectl -n $NS rollout restart sts/kafka", {"StatefulSet"}),
        (
            "kubectl get deploy $APP -o yaml\nkubectl rollout status daemonsets.apps/x",
            {"Deployment", "DaemonSet"},
        ),
        ("kubectl get deploy,sts -A -o json", {"Deployment", "StatefulSet"}),
        ("kubectl drain $NODE --ignore-daemonsets --delete-emptydir-data", set()),
        ("kubectl rollout restart $KIND/$NAME", set()),
        ("redeploy the statefulset from the pipeline", set()),  # no kubectl: not read
    ],
)
def test_the_workload_kinds_a_playbook_runs_kubectl_on(run: str, kinds: set[str]) -> None:
    playbook = Playbook.model_validate(
        {"id": "p", "version": "v1", "description": "d", "steps": [{"name": "s", "run": run}]}
    )
    assert workload_kinds(playbook) == kinds


def test_a_playbook_whose_steps_act_on_another_workload_kind_is_held_back(
    default: CatalogIndex, without_rule: CatalogIndex
) -> None:
    # kafka-consumer-safe-scale scales deployment/$DEPLOYMENT: not for the brokers' StatefulSet.
    brokers = query(
        "scale_down", "StatefulSet", "scale down the kafka StatefulSet from 5 to 3 brokers"
    )
    assert picked(without_rule, brokers) == "kafka-consumer-safe-scale"
    assert picked(default, brokers) == "manual_investigation"
    answer = default.search(brokers)
    held = {c.id: c.held_back for c in answer.held_back}
    assert held["kafka-consumer-safe-scale"] == (
        "its steps act on a Deployment, and the target is a StatefulSet"
    )
    # The consumers' Deployment still gets it.
    consumers = query(
        "scale_down",
        "Deployment",
        "scale the order events kafka consumer down from 12 to 6 replicas",
    )
    assert picked(default, consumers) == "kafka-consumer-safe-scale"
    # A target that is no workload is not compared: a node pool's playbook runs kubectl on nodes.
    pool = query("scale_down", "AgentPool", "scale the user node pool down from 12 to 8 nodes")
    assert picked(default, pool) == "node-pool-scale-down-guarded"


@pytest.mark.parametrize(
    "description",
    [
        "reduce zookeeper replicas to 1",
        # The node pool is the reason, not the target: the action scales the StatefulSet.
        "scale kafka down to 3 brokers so the node pool can shrink",
    ],
)
def test_a_playbook_written_for_a_node_pool_is_held_back_for_a_workload(
    default: CatalogIndex, without_rule: CatalogIndex, description: str
) -> None:
    request = query("scale_down", "StatefulSet", description)
    answer = default.search(request)
    held = {c.id: c.held_back for c in answer.held_back}
    listed = {c.id for c in answer.candidates}
    assert "node-pool-scale-down-guarded" not in listed
    assert "node-pool-scale-down-guarded" in {c.id for c in without_rule.search(request).candidates}
    if "node-pool-scale-down-guarded" in held:  # listed only when it would have won
        assert held["node-pool-scale-down-guarded"] == (
            "it is written for a node or node-pool, and the target is a StatefulSet"
        )
    assert picked(default, request) != "node-pool-scale-down-guarded"


def test_only_a_playbook_whose_id_names_a_node_pool_node_or_vm_is_written_for_one(
    default: CatalogIndex,
) -> None:
    # diagnostics-collection reads "a workload or node": its id names neither, so it stays
    # a workload's playbook; node-drain-safe's id names a node.
    logs = query(
        "collect_diagnostics", "Deployment", "collect logs and events of the crashlooping ledger"
    )
    assert picked(default, logs) == "diagnostics-collection"
    drain = query("drain_node", "Deployment", "drain the node the checkout pods run on")
    assert "node-drain-safe" not in {c.id for c in default.search(drain).candidates}
    # A node target is no workload: its node playbooks stay listed.
    node = default.search(query("drain_node", "Node", "drain the node the checkout pods run on"))
    assert "node-drain-safe" in {c.id for c in node.candidates}
    assert not any("written for" in c.held_back for c in node.held_back)
