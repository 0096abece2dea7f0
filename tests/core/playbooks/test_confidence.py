"""Seed 004's confidence: the formula with the seed's numbers, its weights and smoothing."""

from __future__ import annotations

import numpy as np
import pytest

from precedent.core.playbooks import (
    ConfidenceParts,
    ConfidenceWeights,
    SuccessPrior,
    check_confidence_weights,
    combine,
    evidence,
    historical_success,
)
from precedent.models import PlaybookHistory, PlaybookSelection

W = ConfidenceWeights()
PRIOR = SuccessPrior()

# (semantic, label match, historical) of the seed's worked examples, what its weights give, and
# the total it prints.
SEED_EXAMPLES = [
    # Use case 1, pod-oom-recovery: the seed prints 0.92; its own weights give 0.942.
    (0.88, 1.0, 0.95, 0.942, 0.92),
    # Use case 1, pod-force-delete-recovery: the seed prints 0.78; the formula gives 0.82.
    (0.85, 0.95, 0.50, 0.82, 0.78),
    # Use case 2, database-recovery (new): the seed prints 0.65; the formula gives 0.72.
    (0.80, 1.0, 0.0, 0.72, 0.65),
]


# -- the formula --------------------------------------------------------------------------------


def test_default_weights_are_the_seeds() -> None:
    assert (W.semantic, W.labels, W.historical) == (0.4, 0.4, 0.2)


@pytest.mark.parametrize(
    ("semantic", "labels", "historical", "expected", "seed_says"), SEED_EXAMPLES
)
def test_seed_examples_follow_the_formula_not_the_printed_totals(
    semantic: float, labels: float, historical: float, expected: float, seed_says: float
) -> None:
    total = combine(semantic, labels, historical, W)
    assert total == pytest.approx(expected)
    # The seed's arithmetic is inconsistent with its weights (documented in docs/catalog.md).
    assert total != pytest.approx(seed_says, abs=0.005)


def test_seed_examples_scored_as_one_array_give_the_same_totals() -> None:
    # The catalog index scores the whole catalog in one call: the same function, on arrays.
    semantic, labels, historical, expected, _ = (
        np.array(c) for c in zip(*SEED_EXAMPLES, strict=True)
    )
    assert combine(semantic, labels, historical, W) == pytest.approx(expected)


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
    with pytest.raises(ValueError, match=r"sum to 1, got 1\.5"):
        ConfidenceWeights(semantic=0.5, labels=0.5, historical=0.5)
    with pytest.raises(ValueError, match="≥ 0"):
        ConfidenceWeights(semantic=-0.2, labels=1.0, historical=0.2)


def test_the_weight_rule_is_callable_without_building_weights() -> None:
    # Settings validate PRECEDENT_CONFIDENCE_WEIGHT_* with this same rule.
    check_confidence_weights(0.1, 0.2, 0.7)  # 0.1 + 0.2 is not exactly 0.3 in binary
    with pytest.raises(ValueError, match=r"sum to 1, got 0\.9"):
        check_confidence_weights(0.4, 0.4, 0.1)


def test_evidence_sets_the_history_weight_aside() -> None:
    # A new playbook with semantic 0.80 and label match 1.0 (seed use case 2): 0.9, not 0.72.
    assert evidence(0.80, 1.0, W) == pytest.approx(0.9)
    assert evidence(0.80, 1.0, ConfidenceWeights(0.2, 0.6, 0.2)) == pytest.approx(0.95)
    assert evidence(0.80, 1.0, ConfidenceWeights(0.0, 0.0, 1.0)) == 0.0


def test_strongest_part_is_the_largest_weighted_contribution() -> None:
    parts = ConfidenceParts(semantic=0.9, label_match=0.5, historical=1.0, confidence=0.76)
    # 0.36 semantic > 0.2 labels > 0.2 historical, although historical is the largest value.
    assert parts.strongest(W) == ("semantic similarity", 0.9)
    history_heavy = ConfidenceWeights(semantic=0.1, labels=0.1, historical=0.8)
    assert parts.strongest(history_heavy) == ("historical success", 1.0)


def test_status_components_use_the_wire_names_rounded() -> None:
    components = PlaybookSelection.components_of(
        semantic=0.123456, label_match=0.5, historical=39 / 42
    )
    assert components == {"semantic": 0.1235, "labelMatch": 0.5, "historical": 0.9286}


# -- smoothing ----------------------------------------------------------------------------------


def test_new_playbook_has_a_low_but_non_zero_history_part() -> None:
    assert historical_success(0.0, 0.0, PRIOR) == 0.5


def test_one_success_does_not_make_a_playbook_perfect() -> None:
    assert historical_success(1.0, 1.0, PRIOR) == pytest.approx(2 / 3)
    assert historical_success(0.0, 1.0, PRIOR) == pytest.approx(1 / 3)


def test_a_long_record_approaches_its_raw_rate() -> None:
    assert historical_success(38.0, 40.0, PRIOR) == pytest.approx(39 / 42)  # README: 0.929
    assert historical_success(950.0, 1000.0, PRIOR) == pytest.approx(0.95, abs=0.001)


def test_prior_is_configurable() -> None:
    pessimistic = SuccessPrior(successes=1.0, failures=3.0)
    assert historical_success(0.0, 0.0, pessimistic) == 0.25
    with pytest.raises(ValueError, match="pseudo-counts"):
        SuccessPrior(successes=0.0)


def test_history_cannot_claim_more_successes_than_runs() -> None:
    with pytest.raises(ValueError, match="cannot exceed executions"):
        PlaybookHistory(executions=1, successes=2)
