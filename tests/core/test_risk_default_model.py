"""The default risk model on the bundled history: seed 000's table, the listed precedents, the
routine requests that used to score high, and agreement with the labelled risk set."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from precedent.adapters.loader import load_incidents, load_labelled_requests, load_requests
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import LexicalEmbedder
from precedent.core.historical import (
    HistoricalResult,
    SeedRiskModel,
    SimilarityMode,
    evaluate_history,
    risk_model_named,
)
from precedent.core.normalize import ProposedAction, normalize_request
from precedent.core.policy import BAND_DECISIONS
from precedent.core.risk_evaluation import BandResult, evaluate_bands
from precedent.core.snapshot import History
from precedent.models import Band, Decision, RemediationRequestSpec
from precedent.settings import Settings
from precedent.wiring import build_embedder, build_neighbours
from tests.conftest import BUNDLED_INCIDENTS, ROOT

SEED_REQUESTS = ROOT / "data" / "requests" / "seed-000.yaml"
EXAMPLES = ROOT / "data" / "requests" / "examples.yaml"
RISK_SET = Path(__file__).resolve().parents[1] / "data" / "risk"

SEED_ROWS = {
    ("restart_service", "payment-api"): ("INC-2025-0847", Band.HIGH),
    ("modify_nsg", "nsg-east"): ("INC-2025-0923", Band.HIGH),
    ("scale_down", "aks-prod"): ("INC-2025-1089", Band.HIGH),
    ("update_config", "sql-prod"): ("INC-2025-0634", Band.MEDIUM),
    ("scale_up", "web-tier-01"): ("INC-2026-0012", Band.LOW),
}


@pytest.fixture(scope="module")
def history() -> History:
    return History(load_incidents([BUNDLED_INCIDENTS]))


@pytest.fixture(scope="module")
def neighbours() -> VectorNeighbours:
    """The configured embedder and index, as the operator builds them."""
    return build_neighbours(Settings().retrieval, build_embedder(Settings().retrieval))


def assess(
    history: History,
    spec: RemediationRequestSpec,
    mode: SimilarityMode,
    neighbours: VectorNeighbours | None,
    *,
    risk_model: str = "default",
) -> HistoricalResult:
    action = normalize_request(spec)
    semantic: Mapping[int, float] | None = None
    if mode != "rules":
        assert neighbours is not None
        semantic = neighbours.neighbours(action, history, 50)
    return evaluate_history(
        history,
        action,
        mode=mode,
        semantic=semantic,
        model=risk_model_named(risk_model),
    )


@pytest.mark.parametrize("mode", ["rules", "hybrid"])
def test_seed_table_keeps_each_rows_band_and_top_incident(
    history: History, neighbours: VectorNeighbours, mode: SimilarityMode
) -> None:
    requests = load_requests([SEED_REQUESTS])
    assert len(requests) == len(SEED_ROWS)
    for embedder in (neighbours, VectorNeighbours(LexicalEmbedder())):
        for request in requests:
            spec = request.spec
            top, band = SEED_ROWS[(spec.action, spec.target.name)]
            result = assess(history, spec, mode, embedder)
            assert result.risk.most_relevant_incident == top, request.name
            assert result.risk.band is band, (request.name, result.risk.reasoning)
            assert (
                BAND_DECISIONS[result.risk.band]
                is {
                    Band.LOW: Decision.APPROVED,
                    Band.MEDIUM: Decision.ESCALATED,
                    Band.HIGH: Decision.DENIED,
                }[band]
            )
            assert result.similar[0].id == top
            assert top in result.risk.reasoning


def spec(action: str, kind: str, name: str, **labels: str) -> RemediationRequestSpec:
    return RemediationRequestSpec.model_validate(
        {"action": action, "target": {"kind": kind, "name": name}, "labels": labels}
    )


@pytest.mark.parametrize(
    "request_spec",
    [
        spec("scale_up", "Deployment", "frontend", environment="staging"),
        spec("restart_service", "Deployment", "hello-world", environment="dev"),
        spec("drain_node", "Node", "aks-test-nodepool-0001", environment="test"),
        spec("rollback", "Deployment", "search-v2-canary", environment="staging"),
    ],
    ids=["scale-frontend-staging", "restart-hello-world-dev", "drain-test-node", "rollback-canary"],
)
def test_routine_requests_that_the_seed_model_denies_are_low(
    history: History,
    neighbours: VectorNeighbours,
    request_spec: RemediationRequestSpec,
) -> None:
    seed = assess(history, request_spec, "hybrid", neighbours, risk_model="seed")
    default = assess(history, request_spec, "hybrid", neighbours)
    assert seed.risk.band is Band.HIGH
    assert default.risk.band is Band.LOW, default.risk.reasoning


def test_listed_incidents_are_precedents_including_those_below_the_threshold(
    history: History,
) -> None:
    """A read-only action on payment-api: same-resource incidents are listed (the ones under
    the threshold after the counted ones), never the type-only matches the seed model lists."""
    request = spec("collect_logs", "Deployment", "payment-api")
    default = assess(history, request, "rules", None)
    seed = assess(history, request, "rules", None, risk_model="seed")
    assert default.similar, "payment-api has incidents"
    for item in default.similar:
        assert item.parts.resource_name > 0 or item.parts.action > 0
    assert any(s.parts.rule < 0.30 for s in default.similar)
    counted = [s.parts.rule >= 0.30 for s in default.similar]
    assert counted == sorted(counted, reverse=True)
    assert any(s.parts.resource_name == 0 for s in seed.similar)
    assert default.similar_count < seed.similar_count


def test_seed_model_listing_is_unchanged(history: History) -> None:
    """The seed model still lists every incident at or above the threshold."""
    action = ProposedAction("restart_service", "deployment", "checkout")
    result = evaluate_history(history, action, model=SeedRiskModel(), top_k=1000)
    assert all(s.similarity >= 0.30 for s in result.similar)
    assert result.risk.factors == []


def test_factors_explain_a_real_score(history: History) -> None:
    request = spec("restart_service", "Deployment", "payment-api", environment="staging")
    risk = assess(history, request, "rules", None).risk
    names = [f.name for f in risk.factors]
    assert names[0] == "precedent"
    assert "environment" in names
    environment = next(f for f in risk.factors if f.name == "environment")
    assert environment.contribution < 0
    assert "production incident, staging request" in environment.detail
    assert sum(f.contribution for f in risk.factors) == pytest.approx(risk.score, abs=0.05)


def test_labelled_set_agreement(history: History, neighbours: VectorNeighbours) -> None:
    """The default model agrees with the labelled set far better than the seed model, and
    never rates a request the labels call high below high."""
    labelled = load_labelled_requests([RISK_SET])
    assert len(labelled) >= 60
    evaluations = {}
    for model in ("seed", "default"):
        outcomes = []
        for item in labelled:
            result = assess(history, item.request.spec, "hybrid", neighbours, risk_model=model)
            outcomes.append(
                BandResult(
                    item.request.name, item.expected_band, result.risk.band, result.risk.score
                )
            )
        evaluations[model] = evaluate_bands(outcomes)
    default, seed = evaluations["default"], evaluations["seed"]
    assert default.accuracy >= 0.80
    assert default.accuracy >= seed.accuracy + 0.25
    assert default.confusion[Band.HIGH][Band.HIGH] == sum(default.confusion[Band.HIGH].values())


def test_examples_spread_over_the_bands(history: History, neighbours: VectorNeighbours) -> None:
    bands = [
        assess(history, r.spec, "hybrid", neighbours).risk.band
        for r in load_requests([EXAMPLES, SEED_REQUESTS])
    ]
    assert len(bands) == 15
    assert bands.count(Band.HIGH) <= len(bands) // 2
    assert {Band.LOW, Band.MEDIUM, Band.HIGH} <= set(bands)
