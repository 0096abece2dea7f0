"""The in-process catalog's per-request look-ups follow playbooks added, changed and removed."""

from __future__ import annotations

from pathlib import Path

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.loader import load_playbooks
from precedent.models import Playbook

DATA = Path(__file__).resolve().parents[1] / "data"


def _declared(playbooks: list[Playbook]) -> set[str]:
    return {value.strip().lower() for p in playbooks for value in p.labels.get("incident-type", ())}


def test_incident_types_and_label_keys_follow_upserts_and_removals() -> None:
    playbooks = load_playbooks([DATA / "playbooks"])
    catalog = LocalPlaybookCatalog(playbooks)
    types = _declared(playbooks)
    assert types, "the bundled test playbooks declare incident types"
    assert all(catalog.declares_incident_type(t.upper() + " ") for t in types)
    assert not catalog.declares_incident_type("no-such-type")
    assert catalog.label_keys() == {key for p in playbooks for key in p.labels}

    # One playbook takes a new type and a new label key; the other playbooks keep theirs.
    first = playbooks[0]
    changed = first.model_copy(
        update={"labels": {**first.labels, "incident-type": ["cert-expiry"], "tier": ["gold"]}}
    )
    catalog.upsert(changed)
    assert catalog.declares_incident_type("cert-expiry")
    assert "tier" in catalog.label_keys()
    kept = _declared(playbooks[1:])
    assert all(catalog.declares_incident_type(t) for t in kept)
    for gone in _declared([first]) - kept:
        assert not catalog.declares_incident_type(gone)

    # Removing every playbook that declares a type removes the type.
    for p in playbooks:
        catalog.remove(p.id)
    assert not catalog.declares_incident_type("cert-expiry")
    assert not any(catalog.declares_incident_type(t) for t in types)
