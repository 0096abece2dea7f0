"""Replica changes by their other names are WRITE in the bundled registry, not ADMIN."""

from __future__ import annotations

import pytest

from precedent.core.policy import ActionRegistry


@pytest.mark.parametrize("action", ["scale_deployment", "reduce_replicas", "increase_replicas"])
def test_replica_changes_by_other_names_are_write(action: str) -> None:
    assert ActionRegistry().level(action) == "WRITE"


def test_a_name_that_only_looks_like_one_stays_admin() -> None:
    assert ActionRegistry().level("reduce_replicas_and_delete_pvc") == "ADMIN"
