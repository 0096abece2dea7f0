"""The operator's diff base is kopf's, built without copying the status first."""

from __future__ import annotations

import copy
from typing import Any

import kopf
import pytest

from precedent.handlers import _SpecDiffBase

FIELD = "status.kopf.last-handled-configuration"

BODY: dict[str, Any] = {
    "apiVersion": "precedent.dev/v1alpha1",
    "kind": "RemediationRequest",
    "metadata": {
        "name": "restart-checkout",
        "namespace": "shop",
        "uid": "7f0",
        "resourceVersion": "12",
        "generation": 2,
        "labels": {"team": "payments"},
        "annotations": {
            "note": "kept",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            "kopf.zalando.org/last-handled-configuration": "{}",
        },
        "managedFields": [{"manager": "kubectl"}],
    },
    "spec": {"action": "restart_service", "outcome": {"result": "success"}},
    "status": {"assessment": {"risk": {"score": 12.5}}, "kopf": {"progress": {}}},
}


@pytest.mark.parametrize(
    "extra",
    [None, [], ["spec.outcome"], ["status.assessment.risk"], [("metadata", "uid")]],
)
@pytest.mark.parametrize(
    "body",
    [
        BODY,
        {**BODY, "status": {}},
        {k: v for k, v in BODY.items() if k != "status"},
        {**BODY, "metadata": {"name": "bare"}},
    ],
)
def test_the_essence_is_kopfs(body: dict[str, Any], extra: list[Any] | None) -> None:
    ours = _SpecDiffBase(field=FIELD).build(body=kopf.Body(copy.deepcopy(body)), extra_fields=extra)
    theirs = kopf.StatusDiffBaseStorage(field=FIELD).build(
        body=kopf.Body(copy.deepcopy(body)), extra_fields=extra
    )
    assert ours == theirs
    if extra and str(extra[0]).startswith("status"):
        # A status field asked for is kept, as kopf keeps it.
        assert ("status" in ours) == bool((body.get("status") or {}).get("assessment"))
    else:
        assert "status" not in ours
        assert ours.get("spec") == body.get("spec")
