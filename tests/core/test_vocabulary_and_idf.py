"""The default embedder's action vocabulary and history-fitted query weighting: seed 000's
paraphrase with a different action, concept folding, and the document-frequency table kept in
step with a history that grows, shrinks and changes."""

from __future__ import annotations

import numpy as np
import pytest

from precedent.adapters.loader import load_incidents
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import Bm25, DocumentFrequencies, LexicalEmbedder
from precedent.core.normalize import normalize_request
from precedent.core.semantic import incident_text
from precedent.core.snapshot import History
from precedent.core.vocabulary import concepts
from precedent.models import RemediationRequestSpec
from tests.conftest import SEED_INCIDENTS
from tests.helpers import scorer


def _spec(action: str, kind: str, name: str, description: str) -> RemediationRequestSpec:
    return RemediationRequestSpec.model_validate(
        {"action": action, "target": {"kind": kind, "name": name}, "description": description}
    )


@pytest.mark.parametrize(
    "description",
    [
        "lower the replica count of the orders Deployment",
        "scaling down the order-processing service",
    ],
)
def test_reduce_replicas_paraphrase_finds_the_premature_scale_down_first(description: str) -> None:
    """Seed 000's upgrade case with another action name: ``reduce_replicas`` on a Deployment
    must still count "Premature scale-down of the payment API" (≥ 0.30) and list it first
    among the seed's incidents (the rules see neither the action nor the resource)."""
    spec = _spec("reduce_replicas", "Deployment", "order-processing", description)
    history = History(load_incidents([SEED_INCIDENTS]))
    result = scorer(history, mode="hybrid", semantic=VectorNeighbours(LexicalEmbedder())).assess(
        spec
    )
    top = result.similar_incidents[0]
    assert top.id == "INC-2025-1089"
    assert top.parts.rule == 0.0
    assert top.parts.semantic >= 0.30
    assert top.parts.counted == "semantic"


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        ("lower the replica count", "~scale-down"),
        ("reduce_replicas", "~scale-down"),
        ("scale in the workers", "~scale-down"),
        ("Premature scale-down of the payment API", "~scale-down"),
        ("bounce the pods", "~restart"),
        ("recycle pgbouncer", "~restart"),
        ("revert order-processing", "~rollback"),
        ("kubectl rollout undo search-api", "~rollback"),
        ("upsize the web tier VM", "~scale-up"),
    ],
)
def test_synonyms_fold_to_one_concept(text: str, concept: str) -> None:
    """Other verbs and nouns for the same action give the same concept feature."""
    assert concept in concepts(text)


def test_unrelated_text_has_no_action_concept() -> None:
    """A phrase with none of the vocabulary's verbs adds nothing."""
    assert concepts("checkout latency rose to two seconds") == []


def test_query_idf_discounts_words_every_incident_shares() -> None:
    """A word in every document gets idf near 0; a word in one document a high idf; an
    unseen word 0 (it can only match hash collisions)."""
    embedder = LexicalEmbedder(64)
    frequencies = DocumentFrequencies(1 << 12)
    for text in ["pod restart failed", "pod evicted", "pod oomkilled"]:
        frequencies.add(embedder.feature_keys(text, frequencies))
    keys = embedder.feature_keys("pod", frequencies)
    word = np.array([hash_key(embedder, "pod", frequencies)])
    rare = np.array([hash_key(embedder, "evicted", frequencies)])
    unseen = np.array([hash_key(embedder, "zebra", frequencies)])
    assert frequencies.idf(word)[0] < 0.2 < frequencies.idf(rare)[0]
    assert frequencies.idf(unseen)[0] == 0.0
    assert len(keys) > 1  # the word and its character n-grams


def hash_key(embedder: LexicalEmbedder, token: str, frequencies: DocumentFrequencies) -> int:
    """The counter index of one word feature."""
    import zlib

    return zlib.crc32(token.encode()) & frequencies.mask


def _table(history: History) -> np.ndarray:
    embedder = LexicalEmbedder()
    fresh = DocumentFrequencies()
    for incident in history:
        fresh.add(embedder.feature_keys(incident_text(incident), fresh))
    return fresh.counts.copy()


def test_frequencies_follow_additions_removals_and_changes(seed_history: History) -> None:
    """After each sync the table equals one counted from scratch on the current history."""
    incidents = list(seed_history)
    neighbours = VectorNeighbours(LexicalEmbedder())
    steps = [
        History(incidents[:5]),
        History(incidents[:9]),  # additions: counted one by one
        History(incidents[2:9]),  # removals: recounted
        History([incidents[2].model_copy(update={"title": "Changed title"}), *incidents[3:9]]),
    ]
    for history in steps:
        neighbours.sync(history)
        assert neighbours.frequencies is not None
        assert neighbours.frequencies.documents == len(history)
        assert np.array_equal(neighbours.frequencies.counts, _table(history))


def test_incident_vectors_do_not_depend_on_the_history(seed_history: History) -> None:
    """Only the query is weighted: an incident's stored vector is the same in any history."""
    incidents = list(seed_history)
    small, large = VectorNeighbours(LexicalEmbedder()), VectorNeighbours(LexicalEmbedder())
    small.sync(History(incidents[:3]))
    large.sync(History(incidents))
    query = normalize_request(_spec("restart", "Deployment", "x", "restart the payment api"))
    assert small.neighbours(query, History(incidents[:3]), 3)  # it does find something
    a = dict(small.index.search(LexicalEmbedder().embed([incidents[0].title])[0], 3))
    b = dict(large.index.search(LexicalEmbedder().embed([incidents[0].title])[0], 50))
    assert a[incidents[0].id] == pytest.approx(b[incidents[0].id], abs=1e-6)


def test_bm25_ranks_the_document_with_the_rare_word_first() -> None:
    """Textbook BM25: the rarer shared word outweighs the common one."""
    bm25 = Bm25(["pod restart", "pod restart loop", "pod evicted under disk pressure"])
    scores = bm25.score("pod evicted")
    assert int(np.argmax(scores)) == 2
    assert bm25.score("unknown words")[0] == 0.0


def test_a_view_with_more_documents_weighs_as_the_table_would_and_changes_nothing() -> None:
    """Incidents outside the history weigh a query as if counted, yet the table is not
    written: the same idf as adding them, and the table's counts unchanged after."""
    embedder = LexicalEmbedder(64)
    table = DocumentFrequencies(1 << 12)
    for text in ["pod restart failed", "pod evicted", "pod oomkilled"]:
        table.add(embedder.feature_keys(text, table))
    before, documents = table.counts.copy(), table.documents
    extra = [embedder.feature_keys(t, table) for t in ["volume defrag", "pod defrag stalled"]]
    keys = embedder.feature_keys("pod defrag zebra evicted", table)
    view = table.with_documents(extra)
    seen = view.idf(keys)
    assert np.array_equal(table.counts, before)
    assert table.documents == documents
    for document in extra:  # what the view stands for: the table with them counted
        table.add(document)
    assert np.array_equal(seen, table.idf(keys))
    assert view.documents == table.documents == 5


def test_document_keys_count_as_the_distinct_keys_inside_and_outside_a_batch() -> None:
    # The sync counts an incident with the hashes its vector was made of (kept while the
    # batch is embedded) and without removing repeats; the table must be the one the
    # distinct keys give.
    embedder = LexicalEmbedder()
    texts = [incident_text(i) for i in load_incidents([SEED_INCIDENTS])]
    distinct, repeated = DocumentFrequencies(), DocumentFrequencies()
    for text in texts:
        distinct.add(embedder.feature_keys(text, distinct))
    with embedder.remembering():
        embedder.embed_documents(texts)
        remembered = [embedder.document_keys(text, repeated) for text in texts]
    for text, keys in zip(texts, remembered, strict=True):
        assert np.array_equal(np.unique(keys), embedder.feature_keys(text, repeated))
        repeated.add(keys)
    assert any(len(np.unique(k)) < len(k) for k in remembered)  # repeats were there to count
    assert np.array_equal(distinct.counts, repeated.counts)
    assert distinct.documents == repeated.documents == len(texts)


def test_bm25_terms_from_the_embedder_s_reading_are_the_ones_it_reads_itself() -> None:
    from precedent.core.embedding import Bm25Match

    embedder = LexicalEmbedder()
    incidents = load_incidents([SEED_INCIDENTS])
    texts = [incident_text(i) for i in incidents]
    own, reused = Bm25Match(), Bm25Match()
    with embedder.remembering():
        embedder.embed_documents(texts)
        for incident, text in zip(incidents, texts, strict=True):
            tokens = embedder.tokens(text)
            assert tokens is not None
            own.add(incident.id, text)
            reused.add(incident.id, text, tokens=tokens)
    assert embedder.tokens(texts[0]) is None  # forgotten after the batch
    mine, theirs = own.export(), reused.export()
    assert mine.keys() == theirs.keys()
    for key in mine:
        assert np.array_equal(np.asarray(mine[key]), np.asarray(theirs[key])), key
