"""Conditions keep their lastTransitionTime unless their status changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from precedent.core.conditions import ConditionUpdate, merge_conditions

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def test_new_conditions_get_now() -> None:
    out = merge_conditions(
        None, [ConditionUpdate("Ready", "True", "Assessed", "ok")], generation=1, now=T0
    )
    assert out == [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Assessed",
            "message": "ok",
            "observedGeneration": 1,
            "lastTransitionTime": "2026-01-01T12:00:00Z",
        }
    ]


def test_same_status_keeps_the_transition_time_but_updates_the_message() -> None:
    first = merge_conditions(
        None, [ConditionUpdate("Ready", "True", "Assessed", "a")], generation=1, now=T0
    )
    second = merge_conditions(
        first, [ConditionUpdate("Ready", "True", "Assessed", "b")], generation=2, now=T1
    )
    assert second[0]["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    assert second[0]["message"] == "b"
    assert second[0]["observedGeneration"] == 2


def test_status_change_moves_the_transition_time_and_others_are_kept() -> None:
    first = merge_conditions(
        None,
        [ConditionUpdate("Ready", "False", "Waiting"), ConditionUpdate("Stalled", "False", "OK")],
        generation=1,
        now=T0,
    )
    second = merge_conditions(
        first, [ConditionUpdate("Ready", "True", "Assessed")], generation=1, now=T1
    )
    ready, stalled = second
    assert ready["lastTransitionTime"] == "2026-01-01T12:05:00Z"
    assert stalled["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    assert [c["type"] for c in second] == ["Ready", "Stalled"]
