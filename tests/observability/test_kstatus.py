"""What Flux (and kpt, and ``kubectl wait``-style tools built on kstatus) conclude from the
statuses the real service layer writes, for every state a request can be in.

``kstatus`` is the status library of sigs.k8s.io/cli-utils that Flux's ``healthChecks`` and
``wait`` use. For a custom resource its rules (``checkGenericProperties`` in
``pkg/kstatus/status/generic.go``) are, in order: ``metadata.deletionTimestamp`` → Terminating;
``status.observedGeneration`` present and != ``metadata.generation`` → InProgress
(LatestGenerationNotObserved); a ``Reconciling`` condition True → InProgress; a ``Stalled``
condition True → Failed; otherwise → Current. ``Ready`` does not enter into it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from precedent.services import Assessor, StatusUpdate
from precedent.settings import Settings
from precedent.wiring import build_service
from tests.observability.test_argocd_health import health
from tests.observability.test_recorder import examples

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def kstatus(obj: dict[str, Any]) -> tuple[str, str]:
    """kstatus' status and message for a custom resource (the generic rules quoted above)."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "Terminating", "Resource scheduled for deletion"
    generation, observed = meta.get("generation"), status.get("observedGeneration")
    if generation is not None and observed is not None and observed != generation:
        return "InProgress", (
            f"{obj['kind']} generation is {generation}, "
            f"but latest observed generation is {observed}"
        )
    for condition in status.get("conditions") or []:
        if condition["type"] == "Reconciling" and condition["status"] == "True":
            return "InProgress", condition.get("message", "")
        if condition["type"] == "Stalled" and condition["status"] == "True":
            return "Failed", condition.get("message", "")
    return "Current", "Resource is current"


@pytest.fixture(scope="module")
def service() -> Assessor:
    return build_service(Settings(), mode="rules", follows_cluster=True).assessor


def request(spec: dict[str, Any], update: StatusUpdate, generation: int = 1) -> dict[str, Any]:
    """The object as the API server holds it after the handler merged ``update.patch()``."""
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": "rr", "namespace": "default", "generation": generation},
        "spec": spec,
        "status": update.patch(),
    }


def reconciled(service: Assessor, name: str, generation: int = 1) -> dict[str, Any]:
    spec = examples()[name]
    update = asyncio.run(
        service.reconcile(spec, uid="u", generation=generation, previous=None, now=NOW)
    )
    return request(spec, update, generation)


# name → (kstatus status, Argo CD health) for the bundled example requests.
ANSWERED = {
    "collect-diagnostics-coredns": ("Approved", "Current", "Healthy"),
    "rollback-search-api": ("Escalated", "Current", "Progressing"),
    "apply-netpol-payments-egress": ("Denied", "Current", "Degraded"),
}


@pytest.mark.parametrize("name", sorted(ANSWERED))
def test_answered_requests_are_current_whatever_the_decision(service: Assessor, name: str) -> None:
    decision, expected, argo = ANSWERED[name]
    obj = reconciled(service, name)
    assert obj["status"]["risk"]["decision"] == decision
    # kstatus says "reconciled": Flux's health check passes even for Denied and for an
    # Escalated request still waiting for a human; Argo CD's health check tells them apart.
    assert kstatus(obj) == (expected, "Resource is current")
    assert health("RemediationRequest", obj)["status"] == argo


def test_invalid_spec_is_failed_naming_the_field(service: Assessor) -> None:
    spec = {"action": "rollback", "target": {"kind": "Deployment"}}
    obj = request(
        spec,
        asyncio.run(service.reconcile(spec, uid="u", generation=1, previous=None, now=NOW)),
    )
    status, message = kstatus(obj)
    assert status == "Failed"
    assert "spec.target.name" in message
    assert health("RemediationRequest", obj) == {"status": "Degraded", "message": message}


def test_waiting_for_a_dependency_is_in_progress() -> None:
    update = StatusUpdate.waiting("catalog down", generation=1, previous=None, now=NOW)
    obj = request({"action": "rollback"}, update)
    assert kstatus(obj) == ("InProgress", "waiting for a dependency: catalog down")
    # A later generation waiting too: the generation rule speaks first.
    update = StatusUpdate.waiting("catalog down", generation=3, previous=None, now=NOW)
    obj = request({"action": "rollback"}, update, generation=3)
    obj["status"]["observedGeneration"] = 2  # what the object kept from generation 2
    assert kstatus(obj) == (
        "InProgress",
        "RemediationRequest generation is 3, but latest observed generation is 2",
    )
    assert health("RemediationRequest", obj)["status"] == "Progressing"


def test_a_generation_not_yet_observed_is_in_progress(service: Assessor) -> None:
    obj = reconciled(service, "collect-diagnostics-coredns")
    obj["metadata"]["generation"] = 2  # an outcome was reported: the spec changed
    assert kstatus(obj)[0] == "InProgress"
    assert health("RemediationRequest", obj)["status"] == "Progressing"
    obj["metadata"]["deletionTimestamp"] = "2026-03-02T12:00:00Z"
    assert kstatus(obj)[0] == "Terminating"
