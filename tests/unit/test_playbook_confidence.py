"""Seed 004's confidence: the formula, smoothing and label matching."""

from __future__ import annotations

import pytest

from precedent.core.playbooks import (
    LABEL_MATCH,
    LABEL_MISMATCH,
    LABEL_UNPINNED,
    NO_LABELS,
    ConfidenceParts,
    ConfidenceWeights,
    PlaybookQuery,
    SuccessPrior,
    combine,
    historical_success,
    label_match,
    label_score,
    normalize_label_key,
    parse_label,
    score_playbook,
)
from precedent.models import Playbook, PlaybookHistory, RemediationRequestSpec, Target

W = ConfidenceWeights()
PRIOR = SuccessPrior()


# -- the formula --------------------------------------------------------------------------------


def test_default_weights_are_the_seeds() -> None:
    assert (W.semantic, W.labels, W.historical) == (0.4, 0.4, 0.2)


@pytest.mark.parametrize(
    ("semantic", "labels", "historical", "expected", "seed_says"),
    [
        # Use case 1, pod-oom-recovery: the seed prints 0.92; its own weights give 0.942.
        (0.88, 1.0, 0.95, 0.942, 0.92),
        # Use case 1, pod-force-delete-recovery: the seed prints 0.78; the formula gives 0.82.
        (0.85, 0.95, 0.50, 0.82, 0.78),
        # Use case 2, database-recovery (new): the seed prints 0.65; the formula gives 0.72.
        (0.80, 1.0, 0.0, 0.72, 0.65),
    ],
)
def test_seed_examples_follow_the_formula_not_the_printed_totals(
    semantic: float, labels: float, historical: float, expected: float, seed_says: float
) -> None:
    total = combine(semantic, labels, historical, W)
    assert total == pytest.approx(expected)
    # The seed's arithmetic is inconsistent with its weights (documented in docs/catalog.md).
    assert total != pytest.approx(seed_says, abs=0.005)


def test_seed_examples_keep_the_seeds_order() -> None:
    oom = combine(0.88, 1.0, 0.95, W)
    force_delete = combine(0.85, 0.95, 0.50, W)
    assert oom > force_delete


def test_each_part_contributes_its_weight() -> None:
    assert combine(1.0, 0.0, 0.0, W) == pytest.approx(0.4)
    assert combine(0.0, 1.0, 0.0, W) == pytest.approx(0.4)
    assert combine(0.0, 0.0, 1.0, W) == pytest.approx(0.2)
    assert combine(1.0, 1.0, 1.0, W) == pytest.approx(1.0)
    assert combine(0.0, 0.0, 0.0, W) == 0.0


def test_weights_are_configurable_and_validated() -> None:
    custom = ConfidenceWeights(semantic=0.5, labels=0.3, historical=0.2)
    assert combine(1.0, 0.0, 0.0, custom) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="sum to 1"):
        ConfidenceWeights(semantic=0.5, labels=0.5, historical=0.5)
    with pytest.raises(ValueError, match="≥ 0"):
        ConfidenceWeights(semantic=-0.2, labels=1.0, historical=0.2)


def test_strongest_part_is_the_largest_weighted_contribution() -> None:
    parts = ConfidenceParts(semantic=0.9, labels=0.5, historical=1.0, confidence=0.76)
    # 0.36 semantic > 0.2 labels > 0.2 historical, although historical is the largest value.
    assert parts.strongest(W) == ("semantic similarity", 0.9)
    assert parts.components() == {"semantic": 0.9, "labelMatch": 0.5, "historical": 1.0}


# -- smoothing ----------------------------------------------------------------------------------


def test_new_playbook_has_a_low_but_non_zero_history_part() -> None:
    assert historical_success(0.0, 0.0, PRIOR) == 0.5


def test_one_success_does_not_make_a_playbook_perfect() -> None:
    assert historical_success(1.0, 1.0, PRIOR) == pytest.approx(2 / 3)
    assert historical_success(0.0, 1.0, PRIOR) == pytest.approx(1 / 3)


def test_a_long_record_approaches_its_raw_rate() -> None:
    assert historical_success(38.0, 40.0, PRIOR) == pytest.approx(39 / 42)
    assert historical_success(950.0, 1000.0, PRIOR) == pytest.approx(0.95, abs=0.001)


def test_prior_is_configurable() -> None:
    pessimistic = SuccessPrior(successes=1.0, failures=3.0)
    assert historical_success(0.0, 0.0, pessimistic) == 0.25
    with pytest.raises(ValueError, match="pseudo-counts"):
        SuccessPrior(successes=0.0)


def test_history_cannot_claim_more_successes_than_runs() -> None:
    with pytest.raises(ValueError, match="cannot exceed executions"):
        PlaybookHistory(executions=1, successes=2)


# -- labels -------------------------------------------------------------------------------------

ACCEPTED = {"incident-type": frozenset({"pod-oom-killer"}), "environment": frozenset({"*"})}


def test_pinned_to_the_same_value_is_a_match() -> None:
    assert label_score(ACCEPTED, "incident-type", "pod-oom-killer") == LABEL_MATCH == 1.0


def test_pinned_to_another_value_is_a_mismatch() -> None:
    assert label_score(ACCEPTED, "incident-type", "database-failure") == LABEL_MISMATCH == 0.0


def test_not_pinned_is_half_credit() -> None:
    assert label_score(ACCEPTED, "priority", "p1") == LABEL_UNPINNED == 0.5


def test_wildcard_accepts_any_value() -> None:
    assert label_score(ACCEPTED, "environment", "anything") == LABEL_MATCH


def test_label_match_is_the_share_over_the_requests_labels() -> None:
    labels = [
        ("environment", "production"),
        ("incident-type", "pod-oom-killer"),
        ("priority", "p1"),
    ]
    assert label_match(ACCEPTED, labels) == pytest.approx((1 + 1 + 0.5) / 3)
    mismatched = [("incident-type", "database-failure"), ("priority", "p1")]
    assert label_match(ACCEPTED, mismatched) == pytest.approx(0.25)


def test_request_without_labels_is_neutral() -> None:
    assert label_match(ACCEPTED, []) == NO_LABELS == 0.5


def test_playbook_labels_the_request_does_not_mention_do_not_count() -> None:
    assert label_match(ACCEPTED, [("incident-type", "pod-oom-killer")]) == 1.0


def test_label_keys_compare_without_prefix_and_case() -> None:
    assert normalize_label_key("Kubernaut.ai/Incident-Type") == "incident-type"
    query = PlaybookQuery.create("x", {"kubernaut.ai/incident-type": "Pod-OOM-Killer"})
    assert query.labels == (("incident-type", "pod-oom-killer"),)


def test_same_key_twice_with_two_values_is_rejected() -> None:
    with pytest.raises(ValueError, match="given twice"):
        PlaybookQuery.create("x", [("a.io/env", "prod"), ("b.io/env", "dev")])
    same = PlaybookQuery.create("x", [("a.io/env", "prod"), ("env", "PROD")])
    assert same.labels == (("env", "prod"),)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("incident-type:pod-oom-killer", ("incident-type", "pod-oom-killer")),
        ("kubernaut.ai/environment:production", ("environment", "production")),
        ("Priority:P0", ("priority", "p0")),
    ],
)
def test_parse_label(text: str, expected: tuple[str, str]) -> None:
    assert parse_label(text) == expected


@pytest.mark.parametrize(
    "text", ["no-colon", ":value", "key:", "bad key:v", "k:bad value", "k:a,b", "-k:v"]
)
def test_parse_label_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError, match=r"key:value|not a valid label"):
        parse_label(text)


# -- one playbook, end to end -------------------------------------------------------------------


def test_score_playbook_reports_each_part_beside_the_total() -> None:
    playbook = Playbook(
        id="pod-oom-recovery",
        version="v1.2",
        description="Increases memory limits and restarts pod",
        labels={"incident-type": ["pod-oom-killer"], "environment": ["production", "staging"]},
        history=PlaybookHistory(executions=40, successes=38),
    )
    query = PlaybookQuery.create(
        "memory", {"incident-type": "pod-oom-killer", "environment": "production"}
    )
    parts = score_playbook(playbook, query, semantic=0.88)
    assert parts.semantic == 0.88
    assert parts.labels == 1.0
    assert parts.historical == pytest.approx(39 / 42)
    assert parts.confidence == pytest.approx(0.4 * 0.88 + 0.4 * 1.0 + 0.2 * 39 / 42)


def test_query_from_spec_uses_action_description_labels_and_target() -> None:
    spec = RemediationRequestSpec(
        action="restart_service",
        target=Target(kind="Deployment", name="payment-api", namespace="shop"),
        description="High memory usage causing pod restarts",
        labels={"incident-type": "pod-oom-killer"},
    )
    query = PlaybookQuery.from_spec(spec, min_confidence=0.5, max_results=3)
    assert query.text == "restart service. High memory usage causing pod restarts"
    assert query.labels == (("incident-type", "pod-oom-killer"),)
    assert query.subject == "Deployment shop/payment-api"
    assert (query.min_confidence, query.max_results) == (0.5, 3)
    assert query.incident_type == "pod-oom-killer"


def test_cache_key_normalises_whitespace_case_and_label_order() -> None:
    a = PlaybookQuery.create("High  memory\nusage", {"b": "2", "a": "1"})
    b = PlaybookQuery.create("high memory usage", [("a", "1"), ("B", "2")])
    assert a.cache_key() == b.cache_key()
    c = PlaybookQuery.create("high memory usage", {"a": "1", "b": "2"}, max_results=3)
    assert c.cache_key() != a.cache_key()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_confidence": 1.5}, "min_confidence"),
        ({"min_confidence": -0.1}, "min_confidence"),
        ({"max_results": 0}, "max_results"),
        ({"max_results": 101}, "max_results"),
    ],
)
def test_query_parameters_are_bounded(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PlaybookQuery.create("x", **kwargs)  # type: ignore[arg-type]
