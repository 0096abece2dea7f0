"""Embedding throughput per embedder: short texts per second on one core."""

from __future__ import annotations

import time
from pathlib import Path

from precedent.core.embedding import LexicalEmbedder
from precedent.core.ports import Embedder
from tests.bench.synthetic import titles

MODEL_DIR = Path(__file__).resolve().parents[2] / ".cache" / "minilm"


def _throughput(embedder: Embedder, texts: list[str], batch: int) -> float:
    embedder.embed(texts[:batch])  # warm-up (caches, sessions)
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    """Print texts/s for the lexical embedder, and the ONNX model when its files are there."""
    texts = titles(20_000, seed=7)
    lexical = _throughput(LexicalEmbedder(), texts, 256)
    print(f"lexical-512   {lexical:10.0f} texts/s   (target ≥ 2,000 on one core)")
    if (MODEL_DIR / "model.onnx").is_file():
        from precedent.adapters.onnx_embedder import OnnxEmbedder

        onnx = _throughput(OnnxEmbedder(MODEL_DIR, threads=1), texts[:1_000], 32)
        print(f"onnx-minilm    {onnx:10.0f} texts/s   (int8, one thread, batches of 32)")
        print(f"ratio lexical / onnx: {lexical / onnx:.1f}×")
    else:
        print("onnx-minilm    skipped: run `make model-files`")
