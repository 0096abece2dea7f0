"""The historical pattern scorer against the bundled history: seed 000's tables and test groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedent.adapters.loader import load_incidents
from precedent.core.historical import SeedRiskModel, evaluate_history
from precedent.core.normalize import normalize_request
from precedent.core.snapshot import DuplicateIncidentError, History
from precedent.models import (
    Band,
    Decision,
    Incident,
    RemediationRequestSpec,
    SimilarIncident,
)
from tests.helpers import HistoryScorer, scorer

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def history() -> History:
    return History(load_incidents([DATA / "incidents"]))


@pytest.fixture(scope="module")
def assessor(history: History) -> HistoryScorer:
    return scorer(history, mode="rules")


def spec(action: str, kind: str, name: str, **target: str) -> RemediationRequestSpec:
    return RemediationRequestSpec.model_validate(
        {"action": action, "target": {"kind": kind, "name": name, **target}}
    )


RESTART = spec("restart_service", "managedClusters", "payment-api")
MODIFY_NSG = spec("modify_nsg", "networkSecurityGroups", "nsg-east")
SCALE_DOWN = spec("scale_down", "managedClusters", "aks-prod")
UPDATE_CONFIG = spec("update_config", "servers", "sql-prod")
SCALE_UP = spec("scale_up", "virtualMachines", "web-tier-01")
UNKNOWN = spec("frobnicate", "QuantumFluxCapacitor", "flux-1")

# Seed 000's table itself (rules and hybrid, seed-only and bundled history): test_seed_table.py.


# --- Fields ---


def test_score_is_in_range(assessor: HistoryScorer) -> None:
    assert 0 <= assessor.assess(SCALE_DOWN).risk.score <= 100


def test_engine_info_and_input_hash(assessor: HistoryScorer, history: History) -> None:
    result = assessor.assess(RESTART)
    assert result.engine.history_size == len(history)
    assert result.engine.similarity_mode == "rules"
    assert result.input_hash.startswith("sha256:")
    assert result.input_hash == assessor.assess(RESTART).input_hash
    assert result.input_hash != assessor.assess(SCALE_UP).input_hash


# --- No-match scenario (2) ---


def test_unknown_resource_type_scores_zero(assessor: HistoryScorer) -> None:
    result = assessor.assess(UNKNOWN)
    assert result.risk.score == 0
    assert result.risk.band is Band.LOW
    assert result.similar_incidents == []
    assert result.similar_count == 0
    assert result.risk.most_relevant_incident is None


def test_no_match_reasoning_says_so(assessor: HistoryScorer) -> None:
    reasoning = assessor.assess(UNKNOWN).risk.reasoning.text
    assert reasoning.startswith("No similar past incidents")
    assert "0.30" in reasoning


# --- High-risk scenarios (8) ---


@pytest.mark.parametrize("request_spec", [RESTART, MODIFY_NSG, SCALE_DOWN])
def test_high_risk_requests_are_denied(
    assessor: HistoryScorer, request_spec: RemediationRequestSpec
) -> None:
    result = assessor.assess(request_spec)
    assert result.risk.band is Band.HIGH
    assert result.risk.decision is Decision.DENIED


def test_restart_finds_the_cascade_incident_with_all_four_dimensions(
    assessor: HistoryScorer,
) -> None:
    top = assessor.assess(RESTART).similar_incidents[0]
    assert (top.parts.action, top.parts.resource_type, top.parts.resource_name, top.parts.tags) == (
        0.4,
        0.3,
        0.2,
        0.1,
    )
    assert top.severity == "critical"


def test_nsg_change_by_resource_id(assessor: HistoryScorer) -> None:
    by_id = spec(
        "modify_nsg",
        "nsg",
        "NSG-East",  # agrees with the ID, case aside (a different name is a bad spec)
        resourceId="/subscriptions/s/resourceGroups/rg-network/providers/Microsoft.Network/"
        "networkSecurityGroups/nsg-east",
    )
    result = assessor.assess(by_id)
    assert result.risk.most_relevant_incident == "INC-2025-0923"
    assert result.risk.score == 100


def test_scale_down_is_more_than_its_top_incident_alone(assessor: HistoryScorer) -> None:
    result = assessor.assess(SCALE_DOWN)
    assert result.similar_count > 1
    assert result.risk.score > 75


def test_critical_match_of_a_different_resource_still_counts(assessor: HistoryScorer) -> None:
    result = assessor.assess(spec("restart_service", "managedClusters", "checkout-api"))
    assert result.risk.most_relevant_incident == "INC-2025-0847"
    assert result.similar_incidents[0].similarity == pytest.approx(0.8)
    assert result.risk.band is Band.HIGH


# --- Low-risk scenario (4) ---


def test_scale_up_is_approved(assessor: HistoryScorer) -> None:
    result = assessor.assess(SCALE_UP)
    assert result.risk.band is Band.LOW
    assert result.risk.decision is Decision.APPROVED


def test_scale_up_has_one_low_severity_precedent(assessor: HistoryScorer) -> None:
    result = assessor.assess(SCALE_UP)
    assert result.similar_count == 1
    assert result.similar_incidents[0].severity == "low"


def test_scale_up_name_does_not_match(assessor: HistoryScorer) -> None:
    parts = assessor.assess(SCALE_UP).similar_incidents[0].parts
    assert parts.resource_name == 0.0
    assert parts.rule == pytest.approx(0.8)


def test_low_score_stays_under_the_escalation_line(assessor: HistoryScorer) -> None:
    assert assessor.assess(SCALE_UP).risk.score <= 25


# --- Output fields (3) ---


def test_most_relevant_incident_is_the_top_similar(assessor: HistoryScorer) -> None:
    result = assessor.assess(MODIFY_NSG)
    assert result.risk.most_relevant_incident == result.similar_incidents[0].id


def test_recommended_procedure_comes_from_the_top_incident(
    assessor: HistoryScorer, history: History
) -> None:
    result = assessor.assess(RESTART)
    top = history.get("INC-2025-0847")
    assert top is not None
    assert result.risk.recommended_procedure == top.recommended_procedure
    assert result.risk.recommended_procedure


def test_no_match_has_no_procedure(assessor: HistoryScorer) -> None:
    assert assessor.assess(UNKNOWN).risk.recommended_procedure is None


# --- SimilarIncident fields (3) ---


def test_similar_incidents_have_similarity(assessor: HistoryScorer) -> None:
    for inc in assessor.assess(SCALE_DOWN).similar_incidents:
        assert isinstance(inc, SimilarIncident)
        assert 0.3 <= inc.similarity <= 1.0


def test_similar_incidents_sorted_by_relevance_for_people(assessor: HistoryScorer) -> None:
    listed = assessor.assess(SCALE_DOWN).similar_incidents
    relevance = [i.relevance for i in listed]
    assert None not in relevance
    assert relevance == sorted(relevance, reverse=True)  # type: ignore[type-var]


def test_similar_incident_fields_are_populated(assessor: HistoryScorer) -> None:
    for inc in assessor.assess(SCALE_DOWN).similar_incidents:
        assert inc.id
        assert inc.title
        assert inc.parts.rule == pytest.approx(
            inc.parts.action + inc.parts.resource_type + inc.parts.resource_name + inc.parts.tags
        )
        assert inc.parts.counted == "rule"


# --- Reasoning (2) ---


def test_reasoning_names_the_top_incident(assessor: HistoryScorer) -> None:
    assert "INC-2025-0847" in assessor.assess(RESTART).risk.reasoning


def test_reasoning_counts_the_similar_incidents(assessor: HistoryScorer) -> None:
    result = assessor.assess(SCALE_DOWN)
    assert f"{result.similar_count} similar past incidents" in result.risk.reasoning


# --- Dependency injection (2) ---


def test_custom_history_path(tmp_path: Path) -> None:
    custom = tmp_path / "history.yaml"
    custom.write_text(
        """
apiVersion: precedent.dev/v1alpha1
kind: Incident
metadata: {name: inc-1}
spec:
  id: INC-1
  title: Draining node-7 evicted the only etcd member
  action: drain_node
  resource: {type: Node, name: node-7}
  severity: high
  tags: [drain]
"""
    )
    history = History(load_incidents([custom]))
    result = scorer(history).assess(spec("drain_node", "Node", "node-7"))
    assert result.risk.most_relevant_incident == "INC-1"
    assert result.risk.score == 75


def test_empty_history_scores_zero(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    history = History(load_incidents([empty]))
    assert len(history) == 0
    result = scorer(history).assess(RESTART)
    assert result.risk.score == 0
    assert result.risk.decision is Decision.APPROVED


def test_duplicate_ids_are_rejected() -> None:
    inc = Incident(id="INC-1", title="t")
    with pytest.raises(DuplicateIncidentError, match="INC-1"):
        History([inc, inc])


def test_scalar_and_vectorised_paths_agree(history: History) -> None:
    action = normalize_request(SCALE_DOWN)
    result = evaluate_history(history, action, model=SeedRiskModel(), top_k=1000)
    from precedent.core.similarity import rule_similarity

    expected = sorted(
        (
            rule_similarity(i, action).total
            for i in history
            if rule_similarity(i, action).total >= 0.3
        ),
        reverse=True,
    )
    assert sorted((s.similarity for s in result.similar), reverse=True) == pytest.approx(expected)
