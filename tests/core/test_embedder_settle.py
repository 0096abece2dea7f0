"""Once the history is embedded, requests' one-off words do not grow the embedder's tables."""

from __future__ import annotations

import random

import numpy as np
import pytest

from precedent.core.embedding import LexicalEmbedder, native_available
from tests.bench.synthetic import titles

REQUESTS = 3_000


def _requests() -> list[str]:
    rng = random.Random(5)
    return [
        f"restart pod payment-api-{rng.getrandbits(40):010x} after alert {rng.randint(0, 10**7)}"
        for _ in range(REQUESTS)
    ]


def test_a_settled_embedder_stays_bounded_and_gives_the_same_vectors() -> None:
    history = titles(2_000, seed=3)
    settled, unsettled = LexicalEmbedder(native=False), LexicalEmbedder(native=False)
    settled.embed(history)
    unsettled.embed(history)
    start = len(settled._grams.numbers)
    settled.settle(margin=2_000)
    biggest = 0
    for text in _requests():
        assert np.array_equal(settled.embed([text]), unsettled.embed([text]))
        biggest = max(biggest, len(settled._grams.numbers))
        assert len(settled._hashes) <= settled._hashes.bound
    # The tables were started again (a request adds ~20 n-grams; 3,000 add ~60,000) and never
    # held more than the bound and one text's n-grams; without settling they kept them all.
    assert biggest <= start + 2_000 + 200
    assert len(unsettled._grams.numbers) > start + 40_000
    # The history's texts embed as before, after the tables were started again.
    assert np.array_equal(settled.embed(history[:50]), unsettled.embed(history[:50]))
    for text in history[:20]:
        assert np.array_equal(settled.embed([text]), unsettled.embed([text]))


@pytest.mark.skipif(not native_available(), reason="no compiled core: make native")
def test_the_compiled_core_s_tables_are_bounded_the_same_way() -> None:
    history = titles(2_000, seed=3)
    settled, python = LexicalEmbedder(native=True), LexicalEmbedder(native=False)
    settled.embed(history)
    assert settled._native is not None
    words, grams = settled._native.tables()
    assert words > 100
    assert grams > 1_000
    settled.settle(margin=2_000)
    for text in _requests():
        assert np.array_equal(settled.embed([text]), python.embed([text]))
    # Past the bound a text's n-grams are counted over their bytes: the same vectors.
    after_words, after_grams = settled._native.tables()
    assert after_words <= words + 2_000
    assert after_grams <= grams + 2_000
    assert np.array_equal(settled.embed(history[:50]), python.embed(history[:50]))


def test_the_operator_settles_the_embedder_once_the_index_is_ready() -> None:
    from precedent.adapters.vector_neighbours import VectorNeighbours
    from precedent.core.snapshot import History
    from tests.bench.synthetic import incidents
    from tests.helpers import scorer

    embedder = LexicalEmbedder(native=False)  # the Python tables
    neighbours = VectorNeighbours(embedder)
    assessor = scorer(History(incidents(500)), mode="hybrid", semantic=neighbours).assessor
    assert embedder._grams.limit == 500_000
    assessor.scorer.prepare_index()
    assert embedder._grams.limit == len(embedder._grams.numbers) + 50_000


def test_settling_bounds_the_vocabulary_word_table_and_finds_the_same_concepts() -> None:
    from precedent.core import vocabulary

    table = vocabulary._WORD_CONCEPTS
    bound = table.bound
    try:
        LexicalEmbedder().settle(margin=100)
        assert table.bound <= len(table) + 100
        before = len(table)
        words = [f"restartpod{n:06d}" for n in range(500)] + ["restart", "drain", "rollback"]
        found = vocabulary.word_concepts(words)
        assert len(table) <= before + 100
        table.bound = bound
        assert vocabulary.word_concepts(words) == found
    finally:
        table.bound = bound
