"""Columns carried over from the snapshot before: several at once are each the column alone."""

from __future__ import annotations

from typing import Any

import numpy as np

from precedent.core.carried import carried_column, carried_columns
from precedent.models import Incident


def _incidents(n: int, tag: str) -> list[Incident]:
    return [
        Incident.model_validate(
            {
                "id": f"{tag}-{k}",
                "title": f"incident {k}",
                "severity": ("low", "high", "critical")[k % 3],
                "namespace": None if k % 4 == 0 else f"ns-{k % 5}",
            }
        )
        for k in range(n)
    ]


def _values(i: Incident) -> tuple[Any, ...]:
    return (len(i.id), i.severity.value == "critical", float(len(i.namespace or "")))


DTYPES = (np.int32, np.bool_, np.float64)


def _alone(incidents: list[Incident], held: list[Any], source: Any) -> list[list[Any]]:
    return [
        carried_column(incidents, lambda i, k=k: _values(i)[k], dtype, held[k], source).tolist()
        for k, dtype in enumerate(DTYPES)
    ]


def test_several_columns_at_once_are_each_column_alone() -> None:
    before = _incidents(12, "a")
    fresh = carried_columns(before, _values, DTYPES, [None, None, None], None)
    assert [c.tolist() for c in fresh] == _alone(before, [None] * 3, None)
    assert [c.dtype for c in fresh] == [np.dtype(d) for d in DTYPES]
    # Some incidents kept (their rows copied), some new, in another order.
    after = [before[5], *_incidents(3, "b"), before[0], before[11]]
    source = np.array([5, -1, -1, -1, 0, 11], dtype=np.int64)
    carried = carried_columns(after, _values, DTYPES, fresh, source)
    assert [c.tolist() for c in carried] == _alone(after, fresh, source)
    assert [c.tolist() for c in carried] == [
        c.tolist() for c in carried_columns(after, _values, DTYPES, [None] * 3, None)
    ]


def test_no_incidents_give_empty_columns_of_their_types() -> None:
    empty = carried_columns([], _values, DTYPES, [None] * 3, None)
    assert [(len(c), c.dtype) for c in empty] == [(0, np.dtype(d)) for d in DTYPES]
