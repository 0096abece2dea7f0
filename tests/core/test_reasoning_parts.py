"""The reasoning as typed parts: rendered once, read back with the deciding approval's note as
its own part, and the risk models chosen by name once."""

from __future__ import annotations

import pytest

from precedent.core.historical import (
    DefaultRiskModel,
    SeedRiskModel,
    risk_model_named,
)
from precedent.core.policy import BAND_DECISIONS, decision_without_approval
from precedent.models import (
    ApprovalNote,
    ApprovalState,
    Band,
    ContextNote,
    Decision,
    DecisionNote,
    KeptNote,
    PolicyApproval,
    Reasoning,
    RecordedText,
    RiskAssessment,
)

APPROVAL = PolicyApproval(
    state=ApprovalState.APPROVED, by="alice", reason="change window", approval="ok-1"
)


def test_parts_render_space_separated_once_on_the_wire() -> None:
    reasoning = Reasoning((RecordedText("3 precedents."),)).plus(
        ContextNote("claimed dev, verified production"),
        DecisionNote(Decision.ESCALATED, "ADMIN action: always needs approval"),
    )
    risk = RiskAssessment(
        score=40, band=Band.MEDIUM, decision=Decision.ESCALATED, reasoning=reasoning
    )
    wire = risk.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["reasoning"] == (
        "3 precedents. Context: claimed dev, verified production. "
        "Decision: Escalated (ADMIN action: always needs approval)."
    )
    assert list(wire) == ["score", "band", "decision", "reasoning", "factors"]
    again = RiskAssessment.model_validate(wire)
    assert again.reasoning.text == wire["reasoning"]


def test_a_stored_reasoning_gets_its_approval_note_back_as_a_part() -> None:
    note = ApprovalNote.of(APPROVAL)
    assert note is not None
    stored = Reasoning((RecordedText("r."), note)).text
    assert stored == "r. Approved by alice (RemediationApproval ok-1): change window"
    read = Reasoning.read(stored, APPROVAL)
    assert read.parts == (RecordedText("r."), note)
    assert read.without(ApprovalNote).text == "r."


@pytest.mark.parametrize(
    "stored",
    [
        "r. Approved by bob (RemediationApproval ok-1): change window",  # another approver
        "Approved by alice (RemediationApproval ok-1): change window",  # nothing before it
        "r.",
    ],
)
def test_text_that_does_not_end_with_the_note_stays_whole(stored: str) -> None:
    read = Reasoning.read(stored, APPROVAL)
    assert read.parts == (RecordedText(stored),)
    assert read.without(ApprovalNote).text == stored


def test_a_pending_approval_has_no_note() -> None:
    assert ApprovalNote.of(PolicyApproval(state=ApprovalState.PENDING)) is None
    assert ApprovalNote.of(None) is None


def test_kept_note_wording() -> None:
    text = KeptNote(Decision.DENIED, Decision.APPROVED).text()
    assert text.startswith("Kept Denied from the earlier answer (assessed again as Approved)")


def test_risk_models_are_chosen_by_name() -> None:
    assert isinstance(risk_model_named("seed"), SeedRiskModel)
    assert isinstance(risk_model_named("default"), DefaultRiskModel)
    assert risk_model_named("seed").name == "seed"
    assert risk_model_named("default").name == "default"
    with pytest.raises(ValueError, match="unknown risk model 'sed': expected one of seed, default"):
        risk_model_named("sed")


@pytest.mark.parametrize(
    ("band", "decision"),
    [
        (Band.LOW, Decision.ESCALATED),
        (Band.MEDIUM, Decision.ESCALATED),
        (Band.HIGH, Decision.DENIED),
    ],
)
def test_an_expired_approval_leaves_the_policys_decision(band: Band, decision: Decision) -> None:
    assert decision_without_approval(band) is decision
    assert BAND_DECISIONS[Band.HIGH] is Decision.DENIED
