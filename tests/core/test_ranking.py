"""Seed 002's hybrid score and seed 001's rerank boosts, with the seeds' numbers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from precedent.core.ranking import RankingWeights, boost_parts, rank_score, same_action
from precedent.models import Incident


def _incident(**fields: object) -> Incident:
    base: dict[str, object] = {"id": "INC-1", "title": "t", "outcome": "unknown"}
    base.update(fields)
    return Incident.model_validate(base)


def test_hybrid_score_is_point_seven_vector_plus_point_three_metadata() -> None:
    incident = _incident(severity="high", resolutionHours=25.0)
    score = rank_score(incident, 0.5)
    # metadata = 0.6 × priority(high 0.8) + 0.4 × (1 − 25/100)
    assert score.metadata == pytest.approx(0.6 * 0.8 + 0.4 * 0.75)
    assert score.hybrid == pytest.approx(0.7 * 0.5 + 0.3 * score.metadata)


@pytest.mark.parametrize(
    ("priority", "weight"), [("critical", 1.0), ("high", 0.8), ("medium", 0.5), ("low", 0.3)]
)
def test_priority_weights(priority: str, weight: float) -> None:
    score = rank_score(_incident(priority=priority, resolutionHours=100.0), 0.0)
    assert score.metadata == pytest.approx(0.6 * weight)


def test_time_score_floors_at_zero_and_missing_hours_count_as_zero() -> None:
    assert rank_score(_incident(priority="low", resolutionHours=250.0), 0.0).metadata == (
        pytest.approx(0.6 * 0.3)
    )
    assert rank_score(_incident(priority="low"), 0.0).metadata == pytest.approx(0.6 * 0.3)


def test_boosts_exact_name_resolved_partial_quality() -> None:
    plain = rank_score(_incident(qualityScore=1.0), 0.4)
    named = rank_score(
        _incident(resource={"type": "Deployment", "name": "Payment-API"}, qualityScore=1.0),
        0.4,
        resource_name="payment-api",
    )
    resolved = rank_score(_incident(outcome="resolved", qualityScore=1.0), 0.4)
    partial = rank_score(_incident(outcome="partial", qualityScore=1.0), 0.4)
    poor = rank_score(_incident(qualityScore=0.0), 0.4)
    assert plain.boost == pytest.approx(1.0)
    assert named.boost == pytest.approx(1.5)
    assert resolved.boost == pytest.approx(1.3)
    assert partial.boost == pytest.approx(1.1)
    assert poor.boost == pytest.approx(0.5)


def test_recency_boost_needs_now() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    week = _incident(occurredAt=now - timedelta(days=3))
    month = _incident(occurredAt=now - timedelta(days=20))
    old = _incident(occurredAt=now - timedelta(days=90))
    assert rank_score(week, 0.5, now=now).boost == pytest.approx(1.2)
    assert rank_score(month, 0.5, now=now).boost == pytest.approx(1.1)
    assert rank_score(old, 0.5, now=now).boost == pytest.approx(1.0)
    assert rank_score(week, 0.5).boost == pytest.approx(1.0)


def test_relevance_is_capped_at_one_but_keeps_the_order() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    best = _incident(
        priority="critical",
        resolutionHours=0.0,
        outcome="resolved",
        resource={"type": "Deployment", "name": "api"},
        occurredAt=now - timedelta(days=1),
    )
    top = rank_score(best, 1.0, resource_name="api", now=now)
    lower = rank_score(best, 0.9, resource_name="api", now=now)
    assert top.relevance == 1.0
    assert lower.relevance == 1.0
    assert top.uncapped > lower.uncapped


def test_weights_are_configurable() -> None:
    weights = RankingWeights(vector_weight=0.9, metadata_weight=0.1, time_normalization_hours=10)
    score = rank_score(_incident(priority="critical", resolutionHours=5.0), 1.0, weights=weights)
    assert score.hybrid == pytest.approx(0.9 + 0.1 * (0.6 * 1.0 + 0.4 * 0.5))
    with pytest.raises(ValueError, match="time_normalization_hours"):
        RankingWeights(time_normalization_hours=0)


# -- the two orders ---------------------------------------------------------------------------

SEED = RankingWeights(order="seed")
BOUNDED = RankingWeights()


def _order(
    candidates: list[tuple[Incident, float]],
    weights: RankingWeights,
    *,
    action: str | None = None,
    resource_name: str | None = None,
) -> list[str]:
    """Ids best first, as the scorer sorts them (uncapped relevance, then position)."""
    scored = [
        (
            -rank_score(
                incident, sim, resource_name=resource_name, weights=weights, action=action
            ).uncapped,
            n,
            incident.id,
        )
        for n, (incident, sim) in enumerate(candidates)
    ]
    return [i for _, _, i in sorted(scored)]


def _cleanup_and_drain() -> list[tuple[Incident, float]]:
    """For "clean up Released persistent volumes": the cleanup incident is far more similar; the
    drain is resolved, high priority and quickly resolved (the bundled history's numbers)."""
    cleanup = _incident(
        id="INC-2025-3289",
        title="Cleanup of Released PersistentVolumes deleted a retained volume",
        action="delete_resource",
        severity="medium",
        qualityScore=0.6,
    )
    drain = _incident(
        id="INC-2026-0242",
        title="Draining a node with local persistent volumes left Elasticsearch red",
        action="drain_node",
        severity="high",
        outcome="resolved",
        resolutionHours=3.0,
        qualityScore=0.92,
    )
    return [(cleanup, 0.8335), (drain, 0.3831)]


def test_seed_order_lifts_a_resolved_drain_above_a_far_more_similar_cleanup() -> None:
    assert _order(_cleanup_and_drain(), SEED) == ["INC-2026-0242", "INC-2025-3289"]


def test_bounded_order_keeps_the_far_more_similar_cleanup_first() -> None:
    assert _order(_cleanup_and_drain(), BOUNDED) == ["INC-2025-3289", "INC-2026-0242"]


def _order_processing() -> list[tuple[Incident, float]]:
    """For "scale down order-processing": a restart and a scale-down of the very Deployment."""
    target = {"type": "Deployment", "name": "order-processing"}
    restart = _incident(
        id="INC-2024-1877",
        title="Rolling restart of order-processing dropped in-flight orders",
        action="restart_service",
        resource=target,
        severity="high",
        outcome="resolved",
        resolutionHours=2.0,
    )
    scale_down = _incident(
        id="INC-2026-1322",
        title="Scaling down order-processing caused a stop-the-world consumer rebalance",
        action="scale_down",
        resource=target,
        severity="medium",
        outcome="partial",
        resolutionHours=20.0,
    )
    return [(restart, 0.62), (scale_down, 0.56)]


def test_seed_order_lists_the_restart_of_the_same_name_first() -> None:
    order = _order(
        _order_processing(), SEED, action="reduce_replicas", resource_name="order-processing"
    )
    assert order == ["INC-2024-1877", "INC-2026-1322"]


def test_bounded_order_gives_the_exact_name_boost_to_the_same_kind_of_change_only() -> None:
    # reduce_replicas is a scale-down (core/vocabulary.py), so only the scale-down incident
    # is "the same change to the same resource".
    order = _order(
        _order_processing(), BOUNDED, action="reduce_replicas", resource_name="order-processing"
    )
    assert order == ["INC-2026-1322", "INC-2024-1877"]
    [restart, scale_down] = [i for i, _ in _order_processing()]
    gated = {"resource_name": "order-processing", "now": None, "action": "reduce_replicas"}
    assert "exactName" not in boost_parts(restart, **gated)  # type: ignore[arg-type]
    assert boost_parts(scale_down, **gated)["exactName"] == 1.5  # type: ignore[arg-type]
    # Without the request's action (seed 001's fleet-memory re-rank) the name alone decides.
    assert boost_parts(restart, resource_name="order-processing", now=None)["exactName"] == 1.5


@pytest.mark.parametrize(
    ("requested", "done", "same"),
    [
        ("reduce_replicas", "scale_down", True),
        ("bounce", "restart_service", True),
        ("rolling_restart", "restart_service", True),
        ("reduce_replicas", "restart_service", False),
        ("update_hpa", "update_hpa", True),
        ("update_hpa", "update_configmap", False),
        ("", "scale_down", False),
    ],
)
def test_same_action_compares_action_concepts(requested: str, done: str, same: bool) -> None:
    assert same_action(requested, done) is same


def test_bounded_boosts_reorder_only_within_the_margin() -> None:
    # The same priority and resolution time (the same metadata); the most useful record
    # possible (resolved, perfect quality, this week) against the least (quality 0, old).
    now = datetime(2026, 3, 1, tzinfo=UTC)
    best = _incident(
        id="A",
        priority="high",
        resolutionHours=10.0,
        outcome="resolved",
        qualityScore=1.0,
        occurredAt=now - timedelta(days=1),
    )
    worst = _incident(id="B", priority="high", resolutionHours=10.0, qualityScore=0.0)
    for similarity in (0.2, 0.5, 0.9):
        low = rank_score(best, similarity, now=now)
        near = rank_score(worst, similarity * 1.05, now=now)
        far = rank_score(worst, similarity * 1.3, now=now)
        # Within the margin the more useful, slightly less similar record goes first ...
        assert low.uncapped > near.uncapped
        # ... but never above a record whose hybrid score is more than 10 % higher.
        assert far.hybrid > 1.1 * low.hybrid
        assert low.uncapped < far.uncapped
        # The seed order lifts it that far and further.
        assert rank_score(best, similarity, now=now, weights=SEED).uncapped > (
            rank_score(worst, similarity * 1.3, now=now, weights=SEED).uncapped
        )


def test_bounded_order_keeps_seed_002_weights_in_full() -> None:
    # Seed 002's formula is the ranking: a metadata-heavy weighting lifts the critical,
    # quickly resolved incident over a more similar low-priority one, in both orders.
    urgent = _incident(id="A", priority="critical", resolutionHours=1.0)
    minor = _incident(id="B", priority="low")
    candidates = [(minor, 0.8), (urgent, 0.3)]
    heavy = RankingWeights(vector_weight=0.1, metadata_weight=0.9)
    assert _order(candidates, BOUNDED) == ["B", "A"]
    assert _order(candidates, heavy) == ["A", "B"]


def test_order_and_margin_are_checked() -> None:
    with pytest.raises(ValueError, match="order"):
        RankingWeights(order="other")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="margin"):
        RankingWeights(margin=-0.1)


# -- the setting, end to end over the bundled history ------------------------------------------


@pytest.mark.parametrize(
    ("order", "first"), [("bounded", "INC-2025-3289"), ("seed", "INC-2026-0242")]
)
def test_ranking_order_setting_reaches_the_operator_ranking(
    monkeypatch: pytest.MonkeyPatch, order: str, first: str
) -> None:
    # The seeds' example, with the operator's own service: "clean up Released persistent
    # volumes" lists the cleanup incident first by default and the resolved drain first in the
    # seed order.
    from precedent.adapters.evaluation import text_query
    from precedent.settings import Settings
    from precedent.wiring import build_service
    from tests.eval.__main__ import EVAL_DIR

    monkeypatch.setenv("PRECEDENT_RANKING_ORDER", order)
    settings = Settings(history_path=EVAL_DIR / "history.jsonl", catalog="")
    assert settings.ranking.weights.order == order
    engine = build_service(settings, history=[EVAL_DIR / "history.jsonl"], require_history=True)
    ranked = engine.assessor.scorer.rank(text_query("clean up Released persistent volumes"), 5)
    assert ranked[0].id == first


def test_ranking_order_setting_rejects_other_values(monkeypatch: pytest.MonkeyPatch) -> None:
    from precedent.errors import InputError
    from precedent.settings import load_settings

    monkeypatch.setenv("PRECEDENT_RANKING_ORDER", "literal")
    with pytest.raises(InputError, match="PRECEDENT_RANKING_ORDER"):
        load_settings()


def test_rank_scores_are_rank_score_bit_for_bit() -> None:
    # Every bundled incident at several similarities, against requests with and without a
    # matching name and action, a recency anchor or none, in both orders and with other
    # weights: the batch gives exactly rank_score's uncapped value and relevance.
    from pathlib import Path

    from precedent.adapters.loader import load_incidents
    from precedent.core.ranking import rank_scores

    data = Path(__file__).resolve().parents[2] / "data" / "incidents"
    incidents = load_incidents([data])
    dated = [i.occurred_at for i in incidents if i.occurred_at is not None]
    anchors = [None, max(dated) + timedelta(days=3), max(dated) + timedelta(days=20)]
    similarities = [round(0.013 * (n % 77), 4) for n in range(len(incidents))]
    named = [i for i in incidents if i.resource is not None]
    requests = [
        (None, None),
        (named[0].resource.name.upper() + " ", named[0].action),  # type: ignore[union-attr]
        (named[1].resource.name, "restart_service"),  # type: ignore[union-attr]
        (" ", None),
    ]
    weightings = [
        RankingWeights(),
        RankingWeights(order="seed"),
        RankingWeights(margin=0.25, quality_floor=0.2, recent_boost=1.7, resolved_boost=0.9),
    ]
    checked = 0
    for weights in weightings:
        for now in anchors:
            for name, action in requests:
                batch = rank_scores(
                    incidents,
                    similarities,
                    resource_name=name,
                    now=now,
                    weights=weights,
                    action=action,
                )
                for incident, similarity, got in zip(incidents, similarities, batch, strict=True):
                    one = rank_score(
                        incident,
                        similarity,
                        resource_name=name,
                        now=now,
                        weights=weights,
                        action=action,
                    )
                    assert got == (one.uncapped, one.relevance)
                    checked += 1
    assert checked > 3000
