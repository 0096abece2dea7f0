"""Seed 000's rule similarity, dimension by dimension, and the vectorised matrix against it."""

from __future__ import annotations

import random

import pytest

from precedent.core.normalize import ProposedAction, normalize_request
from precedent.core.similarity import (
    W_ACTION,
    W_RESOURCE_NAME,
    W_RESOURCE_TYPE,
    W_TAGS,
    RuleMatrix,
    rule_similarity,
)
from precedent.models import Incident, RemediationRequestSpec

INC_0847 = Incident.model_validate(
    {
        "id": "INC-2025-0847",
        "title": "Restart of payment-api cascaded",
        "action": "restart_service",
        "resource": {"type": "managedClusters", "name": "payment-api"},
        "severity": "critical",
        "tags": ["cascade-failure", "restart"],
    }
)


def _action(action: str, kind: str, name: str) -> ProposedAction:
    spec = RemediationRequestSpec.model_validate(
        {"action": action, "target": {"kind": kind, "name": name}}
    )
    return normalize_request(spec)


def test_weights_sum_to_one() -> None:
    assert pytest.approx(1.0) == W_ACTION + W_RESOURCE_TYPE + W_RESOURCE_NAME + W_TAGS


def test_seed_example_restart_payment_api_scores_one() -> None:
    parts = rule_similarity(INC_0847, _action("restart_service", "managedClusters", "payment-api"))
    assert (parts.action, parts.resource_type, parts.resource_name, parts.tags) == (
        pytest.approx(0.40),
        pytest.approx(0.30),
        pytest.approx(0.20),
        pytest.approx(0.10),
    )
    assert parts.total == pytest.approx(1.0)


def test_action_dimension_alone_is_040() -> None:
    parts = rule_similarity(INC_0847, _action("restart_service", "Deployment", "other"))
    assert parts.action == pytest.approx(W_ACTION)
    assert parts.resource_type == 0.0
    assert parts.resource_name == 0.0
    # restart keywords still hit the incident's "restart" tag
    assert parts.total == pytest.approx(W_ACTION + W_TAGS)


def test_resource_type_dimension_alone_is_030() -> None:
    parts = rule_similarity(INC_0847, _action("collect_logs", "managedClusters", "other"))
    assert parts.total == pytest.approx(W_RESOURCE_TYPE)
    assert parts.resource_type == pytest.approx(0.30)


def test_resource_name_dimension_alone_is_020() -> None:
    parts = rule_similarity(INC_0847, _action("collect_logs", "Deployment", "payment-api"))
    assert parts.total == pytest.approx(W_RESOURCE_NAME)


def test_tag_dimension_needs_an_action_keyword_in_the_tags() -> None:
    hit = rule_similarity(INC_0847, _action("restart_pod", "Deployment", "x"))
    assert hit.tags == pytest.approx(W_TAGS)
    miss = rule_similarity(INC_0847, _action("scale_down", "Deployment", "x"))
    assert miss.tags == 0.0


def test_resource_type_aliases_and_case_fold() -> None:
    assert rule_similarity(INC_0847, _action("x_y", "AKS", "z")).resource_type == pytest.approx(0.3)
    assert rule_similarity(
        INC_0847, _action("x_y", "MANAGEDCLUSTERS", "PAYMENT-API")
    ).total == pytest.approx(0.5)


def test_matrix_matches_reference_on_random_history() -> None:
    rng = random.Random(7)
    actions = ["restart_service", "scale_down", "rollback", "drain_node", ""]
    kinds = ["Deployment", "managedClusters", "Node", "StatefulSet"]
    names = ["payment-api", "checkout", "aks-prod", "node-1"]
    tags = ["restart", "scaling", "drain", "rollback", "oom", "eviction"]
    incidents = [
        Incident.model_validate(
            {
                "id": f"INC-{i}",
                "title": f"incident {i}",
                "action": rng.choice(actions),
                "resource": {"type": rng.choice(kinds), "name": rng.choice(names)},
                "tags": rng.sample(tags, rng.randint(0, 3)),
            }
        )
        for i in range(300)
    ]
    matrix = RuleMatrix(incidents)
    for action in actions[:-1]:
        for kind in kinds:
            query = _action(action, kind, rng.choice([*names, "unseen"]))
            scores = matrix.score(query)
            for i, incident in enumerate(incidents):
                assert scores.parts(i) == rule_similarity(incident, query)
                assert float(scores.total[i]) == pytest.approx(scores.parts(i).total, abs=1e-6)
