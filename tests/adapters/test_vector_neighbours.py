"""VectorNeighbours keeps the index in step with the history and embeds only what changed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from precedent.adapters import vector_neighbours
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import LexicalEmbedder
from precedent.core.normalize import normalize_request
from precedent.core.snapshot import History
from precedent.models import Incident, RemediationRequestSpec, Severity
from precedent.settings import Settings
from precedent.wiring import build_embedder, build_neighbours
from tests.helpers import incidents_passed_to


class CountingEmbedder(LexicalEmbedder):
    """The real lexical embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__(256)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts += len(texts)
        return super().embed(texts)


def test_sync_embeds_only_new_or_changed_incidents(seed_history: History, tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    neighbours = VectorNeighbours(embedder, index_dir=tmp_path)
    first = neighbours.sync(seed_history)
    assert first.embedded == len(seed_history)
    assert first.removed == 0
    assert neighbours.sync(seed_history).embedded == 0

    changed = [
        i.model_copy(update={"title": "Changed title"}) if i.id == "PAR-010" else i
        for i in seed_history.incidents
        if i.id != "PAR-011"
    ]
    report = neighbours.sync(History(changed))
    assert (report.embedded, report.removed) == (1, 1)

    # A new process loads the saved index and embeds nothing.
    again = CountingEmbedder()
    reloaded = VectorNeighbours(again, index_dir=tmp_path)
    assert len(reloaded.index) == len(changed)
    assert reloaded.sync(History(changed)).embedded == 0
    assert again.texts == 0


def test_a_change_reads_the_text_of_the_changed_incidents_only(
    seed_history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An incident object seen by the last sync keeps its fingerprint; a replaced one (a new
    object, even with equal content) and a new one are read again."""
    neighbours = VectorNeighbours(LexicalEmbedder(256))
    neighbours.sync(seed_history)
    read: list[str] = []
    fingerprint = VectorNeighbours._fingerprint

    def counted(self: VectorNeighbours, incident: Incident, text: str | None = None) -> str:
        read.append(incident.id)
        return fingerprint(self, incident, text)

    monkeypatch.setattr(VectorNeighbours, "_fingerprint", counted)
    added = Incident(id="PAR-NEW", title="payment-api restart dropped connections")
    changed = [
        i.model_copy(update={"title": "Changed title"}) if i.id == "PAR-010" else i
        for i in seed_history.incidents
    ]
    report = neighbours.sync(History([*changed, added]))
    assert sorted(read) == ["PAR-010", "PAR-NEW"]
    assert report.embedded == 2
    # Into an empty index, each fingerprint is made from the text the vector is made of: the
    # same fingerprints, and each incident's text made once.
    texts = incidents_passed_to(monkeypatch, vector_neighbours, "incident_text")
    fresh = VectorNeighbours(LexicalEmbedder(256))
    fresh.sync(History([*changed, added]))
    assert sorted(texts) == sorted(i.id for i in [*changed, added])
    assert [neighbours.index.fingerprint(i.id) for i in changed] == [
        fresh.index.fingerprint(i.id) for i in changed
    ]
    # BM25's document frequencies are worked out by the sync, not by the first request.
    assert fresh.bm25._df is not None
    # Those fingerprints are the ones the next sync reuses for the same objects.
    read.clear()
    report = fresh.sync(History(changed))
    assert (report.embedded, report.removed, read) == (0, 1, [])


def test_neighbours_are_calibrated_and_domain_filtered(seed_history: History) -> None:
    neighbours = VectorNeighbours(LexicalEmbedder())
    spec = RemediationRequestSpec.model_validate(
        {
            "action": "renew_cert",
            "target": {"kind": "Certificate", "name": "api-tls"},
            "description": "Renew the expired TLS certificate of the ingress",
            "domain": "network",
        }
    )
    found = neighbours.neighbours(normalize_request(spec), seed_history, 10)
    assert found
    assert all(0 < s <= 1 for s in found.values())
    assert all(seed_history.incidents[p].domain == "network" for p in found)
    best = max(found, key=found.__getitem__)
    assert seed_history.incidents[best].id == "PAR-008"


def test_build_from_settings() -> None:
    settings = Settings(embedding_dimension=128, semantic_floor=0.05, ranking_vector_weight=0.9)
    neighbours = build_neighbours(settings.retrieval, build_embedder(settings.retrieval))
    assert neighbours.name == "lexical-128"
    assert neighbours.calibration.floor == 0.05
    weights = settings.ranking.weights
    assert weights.vector_weight == 0.9
    assert weights.priority_weights[Severity.LOW] == 0.3
    assert Incident.model_validate({"id": "x", "title": "y"}).severity is Severity.MEDIUM


def test_an_unwritable_index_directory_degrades_to_memory(
    tmp_path: Path, seed_history: History, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    neighbours = VectorNeighbours(LexicalEmbedder(), index_dir=blocker)
    with caplog.at_level(logging.WARNING):
        report = neighbours.sync(seed_history)
        neighbours.sync(History(list(seed_history.incidents)[:-1]))
    assert report.embedded == len(seed_history)
    warnings = [r for r in caplog.records if "stays in memory only" in r.getMessage()]
    assert len(warnings) == 1  # said once, not on every change
    assert neighbours.cosines("payment api", 3)


def test_scoring_incidents_outside_the_index_leaves_the_shared_counts_alone(
    seed_history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fleet memory's incidents count in the query's idf, through a view: the history's
    word-frequency table is never written, so concurrent requests need no lock for it."""
    neighbours = VectorNeighbours(LexicalEmbedder(256))
    neighbours.sync(seed_history)
    frequencies = neighbours.frequencies
    assert frequencies is not None
    before, documents = frequencies.counts.copy(), frequencies.documents

    def written(*_: object) -> None:
        raise AssertionError("the shared word-frequency table was written")

    monkeypatch.setattr(frequencies, "add", written)
    monkeypatch.setattr(frequencies, "remove", written)
    outside = Incident.model_validate(
        {
            "id": "INC-OUTSIDE",
            "title": "Volume defragmentation stalled the node",
            "action": "defrag_volume",
            "resource": {"type": "volumeattachment", "name": "vol-9"},
        }
    )
    spec = RemediationRequestSpec.model_validate(
        {
            "action": "defrag_volume",
            "target": {"kind": "VolumeAttachment", "name": "vol-9"},
            "description": "Defragment the volume",
        }
    )
    [score] = neighbours.score_incidents(normalize_request(spec), [outside])
    assert score > 0
    assert np.array_equal(frequencies.counts, before)
    assert frequencies.documents == documents


def test_a_kept_answer_is_the_answer_worked_out_afresh(seed_history: History) -> None:
    # Requests that differ only in words the history does not know (an alert's number) share
    # the query vector and the known terms: the second is answered from the kept answers,
    # with exactly the neighbours and similarities of an index that keeps none.
    keeping = VectorNeighbours(LexicalEmbedder())
    fresh = VectorNeighbours(LexicalEmbedder(), recent=0)
    texts = [f"Restart checkout after OOM kills, alert {n}" for n in (48213, 90377, 48213)]
    for text in texts:
        spec = RemediationRequestSpec.model_validate(
            {
                "action": "restart_service",
                "target": {"kind": "Deployment", "name": "checkout"},
                "description": text,
            }
        )
        action = normalize_request(spec)
        kept = keeping.neighbours(action, seed_history, 10)
        assert kept
        assert kept == fresh.neighbours(action, seed_history, 10)
        assert list(kept.items()) == list(fresh.neighbours(action, seed_history, 10).items())
    assert len(keeping._answers) == 1  # the three requests, one answer
    assert not fresh._answers
