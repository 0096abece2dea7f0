"""The default lexical embedder behind the semantic part of a playbook's confidence."""

from __future__ import annotations

import numpy as np
import pytest

from precedent.core.lexical import LexicalEmbedder, cosine_similarity, similarity

EMBEDDER = LexicalEmbedder()


def test_rows_are_unit_length_float32() -> None:
    rows = EMBEDDER.embed(["Increases memory limits and restarts pod", "drain node"])
    assert rows.dtype == np.float32
    assert rows.shape == (2, EMBEDDER.dim)
    assert np.linalg.norm(rows, axis=1) == pytest.approx([1.0, 1.0], abs=1e-6)


def test_identical_text_scores_one_and_unrelated_text_about_zero() -> None:
    [same, other] = similarity(
        EMBEDDER, "Restarts database", ["restarts   DATABASE", "quarterly budget review"]
    )
    assert same == pytest.approx(1.0, abs=1e-6)
    assert other < 0.1


def test_related_wording_scores_between() -> None:
    query = "High memory usage causing pod restarts"
    oom, drain = similarity(
        EMBEDDER, query, ["Increases memory limits and restarts pod", "Drains a node"]
    )
    assert 0.3 < oom < 1.0
    assert drain < oom


def test_plural_and_verb_forms_meet() -> None:
    # Same stems (the word half is 1.0); the character half differs by the trailing "s".
    [score] = similarity(EMBEDDER, "restart pods", ["restarts pod"])
    assert 0.8 < score < 1.0


def test_text_without_words_is_a_zero_row() -> None:
    rows = EMBEDDER.embed(["", "the and of", "restart"])
    assert not rows[0].any()
    assert not rows[1].any()
    assert cosine_similarity(rows[2], rows[:2]).tolist() == [0.0, 0.0]


def test_vectors_are_deterministic_across_instances() -> None:
    text = ["Force deletes pod and recreates with higher limits"]
    assert np.array_equal(LexicalEmbedder().embed(text), LexicalEmbedder().embed(text))


def test_similarity_of_nothing_is_empty() -> None:
    assert similarity(EMBEDDER, "x", []) == []


@pytest.mark.parametrize("dim", [0, 100, 32])
def test_dim_must_be_a_power_of_two(dim: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        LexicalEmbedder(dim=dim)


def test_name_records_the_dimension() -> None:
    assert LexicalEmbedder(dim=1024).name == "lexical-hash-1024"
