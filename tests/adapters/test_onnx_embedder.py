"""The ONNX sentence embedder on all-MiniLM-L6-v2 files that PyPI packages ship (sha256-checked),
and on a tiny encoder built here with onnx.helper."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precedent.adapters.model_files import MINILM_FILES, verify_model_files
from precedent.adapters.onnx_embedder import OnnxEmbedder
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.snapshot import History
from precedent.errors import DependencyError
from precedent.models import RemediationRequestSpec
from tests.helpers import scorer


def test_model_files_match_their_pinned_sha256(model_dir: Path) -> None:
    assert verify_model_files(model_dir) == []
    assert {f.name for f in MINILM_FILES} == {"model.onnx", "tokenizer.json"}


def test_minilm_embeds_a_paraphrase_close(model_dir: Path) -> None:
    embedder = OnnxEmbedder(model_dir)
    assert embedder.dimension == 384
    assert embedder.name == "onnx-minilm"
    query, para, other = embedder.embed(
        [
            "Scaling down the order-processing service",
            "Premature scale-down of the payment API",
            "TLS certificate expired on the ingress",
        ]
    )
    np.testing.assert_allclose(np.linalg.norm([query, para, other], axis=1), 1.0, rtol=1e-5)
    assert float(query @ para) > float(query @ other) + 0.2
    # Batching and padding do not change a text's vector.
    alone = embedder.embed(["Scaling down the order-processing service"])[0]
    np.testing.assert_allclose(alone, query, atol=1e-4)


def test_minilm_in_hybrid_mode_finds_the_seed_paraphrase(
    model_dir: Path, seed_history: History
) -> None:
    spec = RemediationRequestSpec.model_validate(
        {
            "action": "scale_down",
            "target": {"kind": "Deployment", "name": "order-processing"},
            "description": "Scaling down the order-processing service",
        }
    )
    result = scorer(
        seed_history, mode="hybrid", semantic=VectorNeighbours(OnnxEmbedder(model_dir))
    ).assess(spec)
    found = {s.id: s for s in result.similar_incidents}
    assert found["INC-2025-1089"].parts.semantic is not None
    assert found["INC-2025-1089"].parts.semantic > 0.30


def _tiny_model(directory: Path) -> None:
    """A 4-token-vocabulary 'encoder': token states = embedding lookup (ids → [batch, seq, 3])."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    table = np.array(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 0, 0]], dtype=np.float32
    )
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])],
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "s"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "s", 3])],
        [helper.make_tensor("table", TensorProto.FLOAT, table.shape, table.flatten())],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, directory / "model.onnx")
    vocab = {"[PAD]": 0, "disk": 1, "full": 2, "cert": 3, "[UNK]": 4}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer))


def test_mean_pooling_over_the_attention_mask(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    _tiny_model(tmp_path)
    embedder = OnnxEmbedder(tmp_path)
    assert embedder.dimension == 3
    vectors = embedder.embed(["disk full", "cert", "disk disk full"])
    # "cert" is padded to two tokens; the pad row must not count in the mean.
    np.testing.assert_allclose(vectors[1], [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(vectors[0], np.array([1, 1, 0]) / np.sqrt(2), atol=1e-6)
    np.testing.assert_allclose(vectors[2], np.array([2, 1, 0]) / np.sqrt(5), atol=1e-6)


def test_missing_files_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DependencyError, match=r"lacks model\.onnx, tokenizer\.json"):
        OnnxEmbedder(tmp_path)
