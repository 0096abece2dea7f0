"""A no-op kopf operator: the baseline the operator benchmark divides by.

It does the least a useful operator must do for a RemediationRequest — receive the create
event and write a Ready condition into status — with the same kopf storage settings as
Precedent, so the ratio measures Precedent's own work.
"""

from __future__ import annotations

from typing import Any

import kopf

from tests.bench.noop_settings import keep_state_in_status


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Same bookkeeping as Precedent: kopf state in status, no annotations."""
    keep_state_in_status(settings)


@kopf.on.create("precedent.dev", "v1alpha1", "remediationrequests", id="assess")
async def ready(patch: kopf.Patch, meta: kopf.Meta, **_: Any) -> None:
    """Mark the request Ready without assessing it."""
    patch.status["observedGeneration"] = meta.get("generation", 1)
    patch.status["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "NoOp",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
