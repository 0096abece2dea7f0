"""The bundled data loads, and keeps the properties seed 000's table depends on."""

from __future__ import annotations

from pathlib import Path

from precedent.adapters.loader import iter_documents, load_incidents, load_playbooks, load_requests

DATA = Path(__file__).resolve().parents[1] / "data"
SEED_IDS = {"INC-2025-0847", "INC-2025-0923", "INC-2025-1089", "INC-2025-0634", "INC-2026-0012"}


def test_every_document_is_a_precedent_object_kubectl_would_accept() -> None:
    # data/shop holds the demo shop's plain Kubernetes manifests (tests/core/graph reads them).
    for doc in iter_documents(sorted(p for p in DATA.iterdir() if p.name != "shop")):
        assert doc.body["apiVersion"] == "precedent.dev/v1alpha1", doc.where
        assert doc.kind in {"Incident", "Playbook", "RemediationRequest"}, doc.where
        assert doc.name, doc.where
        assert doc.name == doc.name.lower(), doc.where
        assert (doc.namespace is not None) == (doc.kind == "RemediationRequest"), doc.where


def test_history_size_and_seed_incidents() -> None:
    incidents = load_incidents([DATA / "incidents"])
    assert len(incidents) >= 85
    assert {i.id for i in incidents} >= SEED_IDS


def test_seed_actions_types_and_names_stay_unique_to_their_seed_incident() -> None:
    # update_config/sql-prod must score exactly 40 and scale_up/web-tier-01 exactly 8 (seed 000),
    # so no other incident may share their action, resource type or resource name.
    others = [i for i in load_incidents([DATA / "incidents"]) if i.id not in SEED_IDS]
    for incident in others:
        assert incident.action not in {"update_config", "scale_up", "modify_nsg"}, incident.id
        assert incident.resource is not None
        assert incident.resource.type not in {"servers", "virtualMachines"}, incident.id
        assert incident.resource.name not in {"sql-prod", "web-tier-01", "web-tier-02"}, incident.id


def test_playbooks_and_requests_load() -> None:
    playbooks = {p.id: p for p in load_playbooks([DATA / "playbooks"])}
    assert len(playbooks) >= 30
    assert playbooks["pod-oom-recovery"].version == "v1.2"
    assert playbooks["database-recovery"].history.executions == 0
    requests = load_requests([DATA / "requests"])
    assert len(requests) >= 10
