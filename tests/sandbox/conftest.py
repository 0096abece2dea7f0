"""Fixtures: a real sandbox server on a free loopback port, and an HTTP client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from precedent_sandbox import Sandbox

# The repository's CRDs: the sandbox registers none unless told where they are.
CRDS = Path(__file__).resolve().parents[2] / "crds"

GROUP = "/apis/precedent.dev/v1alpha1"
RRS = f"{GROUP}/namespaces/default/remediationrequests"
PLAYBOOKS = f"{GROUP}/playbooks"
INCIDENTS = f"{GROUP}/incidents"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def request_body(name: str, **spec: Any) -> dict[str, Any]:
    """A valid RemediationRequest; keyword arguments override spec fields."""
    body: dict[str, Any] = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "labels": {"team": "payments"}},
        "spec": {
            "action": "restart_service",
            "target": {"kind": "Deployment", "name": "payment-api", "namespace": "payments"},
            "description": "Restart payment-api to clear stuck worker threads.",
            "labels": {"environment": "production"},
        },
    }
    body["spec"].update(spec)
    return body


def widget_crd(schema: dict[str, Any]) -> dict[str, Any]:
    """A CRD ``widgets.example.dev`` (kind Widget, namespaced, v1) with ``schema``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.dev"},
        "spec": {
            "group": "example.dev",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def playbook_body(name: str, **spec: Any) -> dict[str, Any]:
    """A valid Playbook; keyword arguments override spec fields."""
    body: dict[str, Any] = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "Playbook",
        "metadata": {"name": name},
        "spec": {
            "version": "v1",
            "description": "Rolling restart with a readiness gate.",
            "actions": ["restart_service"],
            "labels": {"environment": ["production"]},
            "steps": [{"name": "restart", "run": "kubectl rollout restart"}],
        },
    }
    body["spec"].update(spec)
    return body


def incident_body(name: str, **spec: Any) -> dict[str, Any]:
    """A valid Incident; keyword arguments override spec fields."""
    body: dict[str, Any] = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "Incident",
        "metadata": {"name": name},
        "spec": {
            "id": "INC-2025-0847",
            "title": "Restart of payment-api cascaded",
            "action": "restart_service",
            "resource": {"type": "Deployment", "name": "payment-api"},
            "severity": "critical",
            "tags": ["cascade-failure"],
            "outcome": "resolved",
            "occurredAt": "2025-03-02T14:07:00Z",
            "resolutionHours": 2.25,
            "qualityScore": 0.9,
        },
    }
    body["spec"].update(spec)
    return body


def ready_status(generation: int = 1) -> dict[str, Any]:
    """A status the operator would write: an assessment and Ready=True."""
    return {
        "status": {
            "observedGeneration": generation,
            "risk": {
                "score": 45.0,
                "band": "medium",
                "decision": "Escalated",
                "reasoning": "One similar critical incident.",
                "mostRelevantIncident": "INC-2025-0847",
            },
            "playbook": {
                "id": "restart-with-gate",
                "version": "v1",
                "confidence": 0.82,
                "components": {"semantic": 0.9, "labelMatch": 1.0, "historical": 0.5},
                "selectionMethod": "data_driven",
                "rationale": "Best label match.",
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Assessed",
                    "message": "risk medium",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                    "observedGeneration": generation,
                }
            ],
        }
    }


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    """A sandbox with the repository's CRDs, listening on a free port."""
    async with Sandbox(CRDS) as server:
        yield server


@pytest.fixture
async def api(sandbox: Sandbox) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for the sandbox."""
    async with httpx.AsyncClient(base_url=sandbox.url, timeout=10) as client:
        yield client


MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
