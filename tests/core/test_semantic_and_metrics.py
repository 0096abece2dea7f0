"""Calibration, reciprocal-rank fusion, the lexical embedder and the retrieval metrics."""

from __future__ import annotations

import numpy as np
import pytest

from precedent.core.embedding import LexicalEmbedder, TfidfEmbedder, tokenize
from precedent.core.evaluation import QueryResult, average_precision, summarize
from precedent.core.semantic import (
    SemanticCalibration,
    calibration_for,
    reciprocal_rank_fusion,
)


def test_calibration_maps_floor_to_zero_and_ceiling_to_one() -> None:
    cal = SemanticCalibration(floor=0.2, ceiling=0.6)
    assert cal(0.1) == 0.0
    assert cal(0.2) == 0.0
    assert cal(0.4) == pytest.approx(0.5)
    assert cal(0.9) == 1.0
    with pytest.raises(ValueError, match="floor < ceiling"):
        SemanticCalibration(floor=0.5, ceiling=0.5)


def test_calibration_defaults_per_family_and_overrides() -> None:
    assert calibration_for("lexical-512") == SemanticCalibration(0.10, 0.55)
    assert calibration_for("onnx-minilm").floor == 0.25
    assert calibration_for("lexical-512", floor=0.1).floor == 0.1


def test_reciprocal_rank_fusion() -> None:
    fused = reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert max(fused, key=fused.__getitem__) == "b"


def test_lexical_embedder_is_unit_length_stable_and_fitted_on_nothing() -> None:
    texts = ["Premature scale-down of the payment API", "Scaling down the order-processing service"]
    a, b = LexicalEmbedder(256).embed(texts), LexicalEmbedder(256).embed(texts)
    assert a.dtype == np.float32
    assert a.shape == (2, 256)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(a, b)
    assert not LexicalEmbedder(64).embed(["the of and"]).any()


def test_lexical_embedder_ranks_a_paraphrase_above_an_unrelated_text() -> None:
    embedder = LexicalEmbedder()
    query, para, other = embedder.embed(
        [
            "Scaling down the order-processing service",
            "Premature scale-down of the payment API",
            "TLS certificate expired on the ingress",
        ]
    )
    assert float(query @ para) > float(query @ other) + 0.1


def test_tokenize_drops_stopwords() -> None:
    assert tokenize("The scale-down of THE API") == ["scale", "down", "api"]


def test_tfidf_baseline() -> None:
    embedder = TfidfEmbedder(["disk full", "disk latency", "certificate expired"])
    vectors = embedder.embed(["disk full", "unknown words"])
    assert embedder.dimension == 5
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0)
    assert not vectors[1].any()


def test_metrics_by_hand() -> None:
    ranking = ["x", "a", "y", "b"]
    outcome = QueryResult.of(ranking, {"a", "b", "c"})
    assert outcome.reciprocal_rank == pytest.approx(0.5)
    assert not outcome.hit_at_1
    assert outcome.hit_at_5
    # precision@2 = 1/2, precision@4 = 2/4, over min(3, 10)
    assert outcome.average_precision == pytest.approx((0.5 + 0.5) / 3)
    assert average_precision(["a"] * 0 + [str(i) for i in range(20)], {"15"}) == 0.0
    missed = QueryResult.of(["x"], {"a"})
    summary = summarize([outcome, missed])
    assert summary.mrr == pytest.approx(0.25)
    assert summary.as_dict() == {
        "mrr": 0.25,
        "hit@1": 0.0,
        "hit@5": 0.5,
        "map": round(1 / 3 / 2, 4),
        "queries": 2,
    }
    assert summarize([]).queries == 0
