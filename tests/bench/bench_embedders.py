"""Embedding throughput per embedder: short texts per second on one core, and incidents per
second as the index embeds them (title and text, with the concept vocabulary)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from precedent.core.embedding import LexicalEmbedder
from precedent.core.ports import Embedder
from precedent.core.semantic import embed_incidents
from tests.bench.synthetic import incidents, titles

MODEL_DIR = Path(__file__).resolve().parents[2] / ".cache" / "minilm"


def _throughput(embedder: Embedder, texts: list[str], batch: int) -> float:
    embedder.embed(texts[:batch])  # warm-up (caches, sessions)
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def _incident_rate(embedder: LexicalEmbedder, rounds: int = 3) -> tuple[float, float]:
    """Median incidents/s of ``embed_incidents`` (what the index stores per incident) over
    ``rounds`` runs: wall clock and CPU time of this process (the machine may be shared)."""
    history = incidents(10_000, seed=7)
    embed_incidents(embedder, history[:256])
    wall, cpu = [], []
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), time.process_time()
        for i in range(0, len(history), 256):
            embed_incidents(embedder, history[i : i + 256])
        wall.append(len(history) / (time.perf_counter() - started))
        cpu.append(len(history) / (time.process_time() - started_cpu))
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    """Print texts/s for the lexical embedder, and the ONNX model when its files are there."""
    texts = titles(20_000, seed=7)
    lexical = _throughput(LexicalEmbedder(), texts, 256)
    print(f"lexical-512   {lexical:10.0f} texts/s   (target ≥ 2,000 on one core)")
    wall, cpu = _incident_rate(LexicalEmbedder())
    print(
        f"lexical-512   {wall:10.0f} incidents/s ({cpu:.0f} per CPU second; title + text with "
        "concepts, synthetic incidents, median of 3)"
    )
    if (MODEL_DIR / "model.onnx").is_file():
        from precedent.adapters.onnx_embedder import OnnxEmbedder

        onnx = _throughput(OnnxEmbedder(MODEL_DIR, threads=1), texts[:1_000], 32)
        print(f"onnx-minilm    {onnx:10.0f} texts/s   (int8, one thread, batches of 32)")
        print(f"ratio lexical / onnx: {lexical / onnx:.1f}×")
    else:
        print("onnx-minilm    skipped: run `make model-files`")
