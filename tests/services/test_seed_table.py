"""Seed 000's table in rules mode (exact) and hybrid mode (same band and top incident), and
seed 000's paraphrase example with the default embedder."""

from __future__ import annotations

import pytest

from precedent.adapters.loader import load_incidents
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import LexicalEmbedder
from precedent.core.snapshot import History
from precedent.models import Band, Decision, RemediationRequestSpec
from tests.conftest import BUNDLED_INCIDENTS
from tests.helpers import scorer

# action, target kind, target name, top incident, top similarity, score (None: "75+"), band
SEED_ROWS = [
    ("restart_service", "managedClusters", "payment-api", "INC-2025-0847", 1.0, 100.0, Band.HIGH),
    ("modify_nsg", "networkSecurityGroups", "nsg-east", "INC-2025-0923", 1.0, 100.0, Band.HIGH),
    ("scale_down", "managedClusters", "aks-prod", "INC-2025-1089", 1.0, None, Band.HIGH),
    ("update_config", "servers", "sql-prod", "INC-2025-0634", 1.0, 40.0, Band.MEDIUM),
    ("scale_up", "virtualMachines", "web-tier-01", "INC-2026-0012", 0.8, 8.0, Band.LOW),
]
DECISIONS = {
    Band.HIGH: Decision.DENIED,
    Band.MEDIUM: Decision.ESCALATED,
    Band.LOW: Decision.APPROVED,
}


def _spec(action: str, kind: str, name: str, description: str = "") -> RemediationRequestSpec:
    return RemediationRequestSpec.model_validate(
        {"action": action, "target": {"kind": kind, "name": name}, "description": description}
    )


def _histories(seed_history: History) -> list[History]:
    return [seed_history, History(load_incidents([BUNDLED_INCIDENTS]))]


@pytest.mark.parametrize(("action", "kind", "name", "top", "sim", "score", "band"), SEED_ROWS)
def test_rules_mode_reproduces_the_seed_table(
    seed_history: History,
    action: str,
    kind: str,
    name: str,
    top: str,
    sim: float,
    score: float | None,
    band: Band,
) -> None:
    for history in _histories(seed_history):
        result = scorer(history, mode="rules").assess(_spec(action, kind, name))
        assert result.risk.most_relevant_incident == top
        assert result.similar_incidents[0].id == top
        assert result.risk.band is band
        assert result.risk.decision is DECISIONS[band]
        if score is None:
            assert result.risk.score >= 75
        else:
            assert result.risk.score == pytest.approx(score)
        top_item = next(s for s in result.similar_incidents if s.id == top)
        assert top_item.similarity == pytest.approx(sim)
        assert top_item.parts.semantic is None
        assert top_item.parts.counted == "rule"


@pytest.mark.parametrize(("action", "kind", "name", "top", "sim", "score", "band"), SEED_ROWS)
def test_hybrid_mode_keeps_each_rows_band_and_top_incident(
    seed_history: History,
    action: str,
    kind: str,
    name: str,
    top: str,
    sim: float,
    score: float | None,
    band: Band,
) -> None:
    for history in _histories(seed_history):
        assessor = scorer(history, mode="hybrid", semantic=VectorNeighbours(LexicalEmbedder()))
        description = f"{action.replace('_', ' ')} {name}"
        result = assessor.assess(_spec(action, kind, name, description))
        assert result.risk.most_relevant_incident == top
        assert result.risk.band is band
        assert result.engine.similarity_mode == "hybrid"
        assert result.engine.embedder == "lexical-512"
        for item in result.similar_incidents:
            # Both parts are shown, and the larger one counted.
            assert item.parts.semantic is not None
            larger = max(item.parts.rule, item.parts.semantic)
            assert item.similarity == pytest.approx(larger, abs=1e-4)
            expected = "semantic" if item.parts.semantic > item.parts.rule else "rule"
            assert item.parts.counted == expected


def test_seed_paraphrase_is_found_above_the_threshold(seed_history: History) -> None:
    """Seed 000: "Scaling down the order-processing service" must find "Premature scale-down
    of the payment API" — different resource type and name, same risk."""
    spec = _spec(
        "scale_down", "Deployment", "order-processing", "Scaling down the order-processing service"
    )
    for history in _histories(seed_history):
        assessor = scorer(history, mode="hybrid", semantic=VectorNeighbours(LexicalEmbedder()))
        neighbours = assessor.assessor.scorer.neighbours
        assert neighbours is not None
        from precedent.core.normalize import normalize_request

        semantic = neighbours.neighbours(normalize_request(spec), history, 50)
        position = history.position("INC-2025-1089")
        assert position is not None
        assert semantic.get(position, 0.0) > 0.30


def test_semantic_mode_finds_the_paraphrase_without_any_rule_match(seed_history: History) -> None:
    """With an action and resource the rules know nothing about, only the text can match (it
    reports a scale-down rather than asking for one, so it adds no reading: core.effects)."""
    spec = _spec(
        "adjust_capacity", "Deployment", "order-processing", "The payment API after scaling down"
    )
    rules = scorer(seed_history, mode="rules").assess(spec)
    assert all(s.id != "INC-2025-1089" for s in rules.similar_incidents)
    hybrid = scorer(
        seed_history, mode="hybrid", semantic=VectorNeighbours(LexicalEmbedder())
    ).assess(spec)
    found = next(s for s in hybrid.similar_incidents if s.id == "INC-2025-1089")
    assert found.parts.rule == 0.0
    assert found.parts.counted == "semantic"
    assert found.similarity > 0.30
