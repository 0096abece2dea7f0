"""Status conditions in the metav1.Condition shape, kstatus-compatible.

``lastTransitionTime`` changes only when a condition's ``status`` changes, so re-writing the
same answer leaves every timestamp where it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

__all__ = ["ConditionUpdate", "merge_conditions", "rfc3339"]

Status = Literal["True", "False", "Unknown"]


@dataclass(frozen=True, slots=True)
class ConditionUpdate:
    """The new state of one condition."""

    type: str
    status: Status
    reason: str
    message: str = ""


def rfc3339(moment: datetime) -> str:
    """Kubernetes' timestamp format: seconds precision, ``Z`` suffix."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_conditions(
    previous: Sequence[Mapping[str, Any]] | None,
    updates: Sequence[ConditionUpdate],
    *,
    generation: int,
    now: datetime,
) -> list[dict[str, Any]]:
    """Apply ``updates`` to ``previous``; conditions not updated are kept as they were."""
    by_type: dict[str, dict[str, Any]] = {
        str(c["type"]): dict(c) for c in (previous or []) if isinstance(c, Mapping) and "type" in c
    }
    for update in updates:
        old = by_type.get(update.type)
        changed = old is None or old.get("status") != update.status
        by_type[update.type] = {
            "type": update.type,
            "status": update.status,
            "reason": update.reason,
            "message": update.message[:32768],
            "observedGeneration": generation,
            "lastTransitionTime": rfc3339(now)
            if changed or old is None or "lastTransitionTime" not in old
            else old["lastTransitionTime"],
        }
    order = {"Ready": 0, "Reconciling": 1, "Stalled": 2}
    return sorted(by_type.values(), key=lambda c: (order.get(c["type"], 9), c["type"]))
