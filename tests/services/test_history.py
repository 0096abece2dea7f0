"""The history store: duplicate incident ids resolved by a rule, not by arrival order."""

from __future__ import annotations

import pytest

from precedent.errors import InputError
from precedent.services import HistoryStore

INCIDENT = {
    "id": "INC-2025-0634",
    "title": "Config change took sql-prod down",
    "severity": "medium",
}
IMPOSTOR = {"id": "INC-2025-0634", "title": "Unrelated low incident", "severity": "low"}


@pytest.mark.parametrize("impostor_first", [True, False])
def test_the_object_created_first_wins_whatever_the_arrival_order(impostor_first: bool) -> None:
    store = HistoryStore()
    calls = [
        ("original", INCIDENT, "2025-01-01T00:00:00Z"),
        ("impostor", IMPOSTOR, "2026-01-01T00:00:00Z"),
    ]
    for name, spec, created in reversed(calls) if impostor_first else calls:
        store.upsert(name, spec, created=created)
    [kept] = store.snapshot.incidents
    assert kept.title == INCIDENT["title"]
    assert store.shadowed_by("impostor") == "original"
    assert store.shadowed_by("original") is None


def test_same_creation_time_falls_back_to_the_name() -> None:
    store = HistoryStore()
    store.upsert("b", IMPOSTOR, created="2025-01-01T00:00:00Z")
    store.upsert("a", INCIDENT, created="2025-01-01T00:00:00Z")
    assert store.snapshot.incidents[0].title == INCIDENT["title"]
    assert store.shadowed_by("b") == "a"


def test_an_object_updated_to_an_invalid_spec_leaves_the_history() -> None:
    store = HistoryStore()
    store.upsert("original", INCIDENT)
    assert len(store) == 1
    with pytest.raises(InputError, match=r"spec\.severity"):
        store.upsert("original", {**INCIDENT, "severity": "catastrophic"})
    assert len(store) == 0  # not kept in its last valid form
