"""Every date field a user writes, fuzzed through the real parse path: a time the operator can
use, or an InputError naming the field — never an OverflowError, a TypeError or a stall.

The fields: a request's ``spec.outcome.finishedAt`` (the outcome ledger, read at start-up), an
approval's ``spec.expiresAt`` (judged, and followed by the expiry daemon) and an Incident's
``spec.occurredAt`` (the history).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.core.playbooks import SuccessPrior
from precedent.errors import InputError
from precedent.models import EARLIEST, LATEST
from precedent.services import HistoryStore, OutcomeService
from precedent.services.approvals import parse_approval_spec
from precedent.services.assessment import parse_request_spec

FUZZ = settings(max_examples=300, deadline=None)
EDGE = "0001-01-01T00:00:00+01:00"  # accepted by an API server's date-time format


@st.composite
def rfc3339(draw: st.DrawFn) -> str:
    """Timestamps of RFC 3339 shape over the whole calendar and every offset (and Z)."""
    year = draw(st.integers(1, 9999))
    month, day = draw(st.integers(1, 12)), draw(st.integers(1, 28))
    hour, minute, second = (
        draw(st.integers(0, 23)),
        draw(st.integers(0, 59)),
        draw(st.integers(0, 59)),
    )
    offset = draw(
        st.just("Z")
        | st.builds(
            lambda sign, h, m: f"{sign}{h:02d}:{m:02d}",
            st.sampled_from("+-"),
            st.integers(0, 23),
            st.integers(0, 59),
        )
    )
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{offset}"


DATES = rfc3339() | st.text(max_size=30) | st.sampled_from([EDGE, "9999-12-31T23:59:59-23:59"])


def assert_names(exc: InputError, field: str) -> None:
    """The message names the field."""
    assert field in str(exc)


def _in_range(moment: datetime | None) -> None:
    assert moment is not None
    assert moment.utcoffset() is not None
    assert moment.utcoffset() == timedelta(0)
    assert EARLIEST <= moment <= LATEST


# A status recording the outcome as handled: the ledger then parses the spec.
ACCEPTED = {"outcome": {"result": "succeeded", "handledAt": "2026-01-01T00:00:00Z"}}


@FUZZ
@given(DATES)
def test_outcome_finished_at(value: str) -> None:
    spec = {
        "action": "restart_service",
        "target": {"kind": "Deployment", "name": "api"},
        "outcome": {"result": "succeeded", "finishedAt": value},
    }
    try:
        parsed = parse_request_spec(spec)
    except InputError as exc:
        problem = str(exc)
    else:
        problem = ""
    if problem:
        assert "spec.outcome.finishedAt" in problem
        # The start-up path (the outcome ledger) takes the same spec without raising.
        assert (
            OutcomeService(LocalPlaybookCatalog(), prior=SuccessPrior()).observe(
                "uid-1", spec, ACCEPTED
            )
            is None
        )
        return
    assert parsed.outcome is not None
    _in_range(parsed.outcome.finished_at)
    # Arithmetic on it never overflows (the expiry daemon and the ledger subtract times).
    assert abs((parsed.outcome.finished_at - datetime.now(UTC)).days) >= 0  # type: ignore[operator]


@FUZZ
@given(DATES)
def test_approval_expires_at(value: str) -> None:
    spec = {
        "requestRef": {"name": "r"},
        "decision": "approve",
        "reason": "ok",
        "approver": "alice",
        "expiresAt": value,
    }
    try:
        parsed = parse_approval_spec(spec)
    except InputError as exc:
        assert_names(exc, "spec.expiresAt")
        return
    _in_range(parsed.expires_at)
    assert isinstance((parsed.expires_at - datetime.now(UTC)).total_seconds(), float)  # type: ignore[operator]


@FUZZ
@given(DATES)
def test_incident_occurred_at(value: str) -> None:
    store = HistoryStore([])
    spec = {
        "id": "INC-1",
        "title": "restart failed",
        "action": "restart_service",
        "occurredAt": value,
    }
    try:
        incident = store.upsert("inc-1", spec)
    except InputError as exc:
        assert_names(exc, "occurredAt")
        return
    _in_range(incident.occurred_at)


def test_the_reported_edge_case_is_an_invalid_spec_naming_the_field() -> None:
    with pytest.raises(InputError, match=r"spec\.outcome\.finishedAt: .*out of range"):
        parse_request_spec(
            {
                "action": "restart_service",
                "target": {"kind": "Deployment", "name": "api"},
                "outcome": {"result": "succeeded", "finishedAt": EDGE},
            }
        )
