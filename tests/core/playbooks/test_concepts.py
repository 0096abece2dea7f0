"""The default model's reading of what a playbook is for: profile, selection vocabulary,
inferred incident type, labels as filters, and new playbooks only for the request's object."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from precedent.adapters.loader import load_playbooks
from precedent.core.embedding import FloatMatrix, LexicalEmbedder
from precedent.core.playbooks import (
    DEFAULT_SELECTION_MODEL,
    SELECTION_MODELS,
    CatalogIndex,
    PlaybookQuery,
    decide,
)
from precedent.core.playbooks.phrases import (
    SELECTION_CONCEPTS,
    concept_counts,
    inferred_incident_types,
)
from precedent.core.playbooks.profile import ConceptTable, profile_text, request_concepts
from precedent.models import Playbook, PlaybookHistory, RemediationRequestSpec

CATALOG = Path(__file__).resolve().parents[3] / "data" / "playbooks"  # the bundled catalog


@pytest.fixture(scope="module")
def playbooks() -> list[Playbook]:
    return load_playbooks([CATALOG])


def spec(
    action: str, kind: str, name: str, description: str, **labels: str
) -> RemediationRequestSpec:
    return RemediationRequestSpec.model_validate(
        {
            "action": action,
            "target": {"kind": kind, "name": name, "namespace": "ns"},
            "description": description,
            "labels": labels,
        }
    )


class CountingEmbedder:
    """The lexical embedder, counting the texts it is given."""

    def __init__(self) -> None:
        self.inner = LexicalEmbedder()
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.mark.parametrize(
    ("text", "incident"),
    [
        ("container app exited with exit code 137, oom-killer invoked", "pod-oom-killer"),
        ("KubeContainerOOMKilled checkout", "pod-oom-killer"),
        ('failed calling webhook "v.io": x509: certificate has expired', "certificate-expiry"),
        ("KubeNodeDiskPressure ip-10-0-0-1 imagefs 93%", "node-pressure"),
        (
            "Back-off restarting failed container: panic: required env DB_URL not set",
            "crashloop-backoff",
        ),
        ("lookup db.svc.cluster.local: i/o timeout, coredns SERVFAIL", "dns-failure"),
        ("Cannot evict pod as it would violate the pod's disruption budget", "pdb-blocking-drain"),
    ],
)
def test_failures_in_other_words_imply_their_incident_type(text: str, incident: str) -> None:
    assert incident in inferred_incident_types(concept_counts(text))


def test_a_text_without_a_failure_implies_no_incident_type() -> None:
    assert inferred_incident_types(concept_counts("quarterly budget review")) == ()


def test_every_concept_has_a_sort_and_a_unique_name() -> None:
    names = [c.name for c in SELECTION_CONCEPTS]
    assert len(names) == len(set(names))
    assert {c.sort for c in SELECTION_CONCEPTS} == {"failure", "object", "change"}


def test_the_profile_reads_steps_incident_types_and_served_requests(
    playbooks: list[Playbook],
) -> None:
    oom = next(p for p in playbooks if p.id == "pod-oom-recovery")
    served = oom.model_copy(update={"examples": ["cart-api exited 137 at its limit"]})
    text = profile_text(served)
    assert text.startswith(oom.description)
    assert "raise memory limit" in text  # a step name
    assert "pod oom killer" in text  # its incident type in words
    assert "exited 137" in text  # a request it served


def test_playbooks_are_embedded_once_and_a_request_once(playbooks: list[Playbook]) -> None:
    embedder = CountingEmbedder()
    index = CatalogIndex(playbooks, embedder=embedder, model=DEFAULT_SELECTION_MODEL)
    assert len(embedder.texts) == len(playbooks)
    for _ in range(3):
        index.search(PlaybookQuery.create("pods OOMKilled", {"environment": "production"}))
    assert len(embedder.texts) == len(playbooks) + 3  # one per query, never per playbook
    index.upsert(playbooks[0].model_copy(update={"examples": ["a request it served"]}))
    assert len(embedder.texts) == len(playbooks) + 4


def test_a_request_without_incident_type_reaches_the_bar_and_says_what_it_read(
    playbooks: list[Playbook],
) -> None:
    request = spec(
        "restart_service",
        "Deployment",
        "cart-api",
        "ALERT KubeContainerOOMKilled cart-api: container exited 137 three times, working set "
        "pinned at the 768Mi limit.",
        environment="production",
        priority="P2",
    )
    query = PlaybookQuery.from_spec(request)
    before = CatalogIndex(playbooks, model=SELECTION_MODELS["unstated-unknown"]).search(query)
    answer = CatalogIndex(playbooks).search(query)
    assert not before.candidates  # the description-only model answered manual investigation
    assert answer.inferred_incident_types[0] == "pod-oom-killer"
    decision = decide(query, answer)
    assert decision.selection is not None
    assert decision.selection.id in {"pod-oom-recovery", "pod-oom-vertical-scaling"}
    assert decision.selection.confidence >= 0.7
    assert "read from its text as pod-oom-killer" in decision.selection.rationale


def test_a_stated_incident_type_is_never_overridden(playbooks: list[Playbook]) -> None:
    query = PlaybookQuery.create(
        "exit code 137", {"incident-type": "crashloop-backoff"}, action="restart_service"
    )
    answer = CatalogIndex(playbooks).search(query)
    assert answer.inferred_incident_types == ()


def test_a_playbook_pinning_a_stated_label_to_another_value_is_not_listed(
    playbooks: list[Playbook],
) -> None:
    # argo-rollout-abort is written for production only.
    query = PlaybookQuery.create(
        "roll back the canary of checkout, AnalysisRun failed",
        {"environment": "staging"},
        action="rollback",
        min_confidence=0.0,
        max_results=100,
    )
    ids = {c.id for c in CatalogIndex(playbooks).search(query).candidates}
    assert "argo-rollout-abort" not in ids
    assert "deployment-rollback" in ids


def test_a_new_playbook_is_never_offered_for_another_kind_of_object(
    playbooks: list[Playbook],
) -> None:
    # ingress-tls-secret-replace is new (never run) and lists update_secret among its actions.
    tls_secret = next(p for p in playbooks if p.id == "ingress-tls-secret-replace")
    assert tls_secret.history.executions == 0
    table = ConceptTable()
    table.grow(1)
    table.set(0, tls_secret)
    password = "Rotate the database password for payments-db."
    certificate = "The purchased wildcard certificate was renewed; replace the TLS Secret."
    assert not table.same_object(request_concepts(password, "Secret"), 1)[0]
    assert table.same_object(request_concepts(certificate, "Secret"), 1)[0]
    # Through the catalog: without the credential playbooks, at a bar its evidence reaches
    # but its confidence does not, it is still not offered for the password.
    catalog = [
        p
        for p in playbooks
        if p.id not in {"secret-rotation-dual-credential", "iam-binding-change-verified"}
    ]
    query = PlaybookQuery.from_spec(
        spec("update_secret", "Secret", "payments-db", password, environment="production"),
        min_confidence=0.65,
    )
    answer = CatalogIndex(catalog).search(query)
    below = CatalogIndex(catalog).search(
        PlaybookQuery.from_spec(
            spec("update_secret", "Secret", "payments-db", password, environment="production"),
            min_confidence=0.0,
            max_results=100,
        )
    )
    scored = next(c for c in below.candidates if c.id == "ingress-tls-secret-replace")
    assert scored.parts is not None
    assert (
        scored.confidence
        < 0.65
        <= (0.4 * scored.parts.semantic + 0.4 * scored.parts.label_match) / 0.8
    )
    assert "ingress-tls-secret-replace" not in {c.id for c in answer.candidates}


def test_requests_a_playbook_served_raise_its_semantic_part(playbooks: list[Playbook]) -> None:
    drain = next(p for p in playbooks if p.id == "node-drain-safe")
    query = PlaybookQuery.create(
        "cloud provider host maintenance notice, move the workloads off the box",
        {"environment": "production"},
        action="drain_node",
        min_confidence=0.0,
        max_results=100,
    )

    def semantic(playbook: Playbook) -> float:
        answer = CatalogIndex([*playbooks[:5], playbook]).search(query)
        found = next(c for c in answer.candidates if c.id == playbook.id)
        assert found.parts is not None
        return found.parts.semantic

    served = drain.model_copy(
        update={
            "examples": ["host maintenance notice for ip-10-2-0-15, move the workloads off it"],
            "history": PlaybookHistory(executions=34, successes=33),
        }
    )
    assert semantic(served) > semantic(drain)


def test_the_concept_part_is_bounded(playbooks: list[Playbook]) -> None:
    answer = CatalogIndex(playbooks).search(
        PlaybookQuery.create("x509 certificate expired " * 50, min_confidence=0.0, max_results=100)
    )
    semantic = np.array([c.parts.semantic for c in answer.candidates if c.parts])
    assert ((semantic >= 0) & (semantic <= 1)).all()
