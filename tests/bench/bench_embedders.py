"""Embedding throughput per embedder: short texts per second on one core, incidents per
second as the index embeds them (title and text, with the concept vocabulary; the synthetic
incidents and the bundled ones, whose texts are longer; embedded again in each run, and
texts never seen before), and the CPU time of one request's query vector."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from precedent.adapters.loader import load_incidents, load_requests
from precedent.core import vocabulary
from precedent.core.embedding import DocumentFrequencies, LexicalEmbedder
from precedent.core.normalize import normalize_request
from precedent.core.ports import Embedder
from precedent.core.semantic import embed_incidents, incident_text, request_text
from precedent.models import Incident
from tests.bench.synthetic import incidents, titles

ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = ROOT / ".cache" / "minilm"


def _throughput(embedder: Embedder, texts: list[str], batch: int) -> float:
    embedder.embed(texts[:batch])  # warm-up (caches, sessions)
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def _incident_rate(
    embedder: LexicalEmbedder, history: list[Incident] | None = None, rounds: int = 3
) -> tuple[float, float]:
    """Median incidents/s of ``embed_incidents`` (what the index stores per incident) over
    ``rounds`` runs: wall clock and CPU time of this process (the machine may be shared)."""
    history = incidents(10_000, seed=7) if history is None else history
    embed_incidents(embedder, history[:256])
    wall, cpu = [], []
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), time.process_time()
        for i in range(0, len(history), 256):
            embed_incidents(embedder, history[i : i + 256])
        wall.append(len(history) / (time.perf_counter() - started))
        cpu.append(len(history) / (time.process_time() - started_cpu))
    return statistics.median(wall), statistics.median(cpu)


def _forget_windows() -> None:
    # The concept vocabulary keeps each window's match count; a text embedded again is
    # answered from them, which an index embedding each incident once never gets.
    for counts in vocabulary._WINDOW_COUNTS:
        counts.clear()


def _unseen_rate(embedder: LexicalEmbedder, rounds: list[list[list[Incident]]]) -> float:
    """Median incidents per CPU second of ``embed_incidents`` over ``rounds``, each a list of
    passes over distinct incidents, the windows' counts forgotten before each pass: no text
    is answered from an earlier embedding of itself (the word caches stay warm, as in an
    index that has embedded a few hundred incidents)."""
    rates = []
    for passes in rounds:
        spent, count = 0.0, 0
        for history in passes:
            _forget_windows()
            started = time.process_time()
            for i in range(0, len(history), 256):
                embed_incidents(embedder, history[i : i + 256])
            spent += time.process_time() - started
            count += len(history)
        rates.append(count / spent)
    return statistics.median(rates)


def _mean_length(history: list[Incident]) -> float:
    return sum(len(incident_text(i)) for i in history) / len(history)


def _query_cpu(history: list[Incident], rounds: int = 50) -> tuple[float, float]:
    """p50 and p99 CPU microseconds of ``embed_queries`` for one bundled request's text,
    weighted by the bundled history's document frequencies (as a request is scored)."""
    embedder, frequencies = LexicalEmbedder(), DocumentFrequencies()
    for incident in history:
        frequencies.add(embedder.feature_keys(incident_text(incident), frequencies))
    queries = [
        request_text(normalize_request(r.spec)) for r in load_requests([ROOT / "data" / "requests"])
    ]
    embedder.embed_queries(queries, frequencies)
    spent = []
    for _ in range(rounds):
        for query in queries:
            started = time.process_time_ns()
            embedder.embed_queries([query], frequencies)
            spent.append((time.process_time_ns() - started) / 1_000)
    spent.sort()
    return spent[len(spent) // 2], spent[int(len(spent) * 0.99)]


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
    embedder = LexicalEmbedder()
    embed_incidents(embedder, incidents(256, seed=7))
    fresh = [[incidents(10_000, seed=100 + r)] for r in range(3)]
    print(
        f"lexical-512   {_unseen_rate(embedder, fresh):10.0f} incidents per CPU second "
        "(synthetic, 10,000 new incidents in each of 3 runs, no text seen before, median)"
    )
    bundled = load_incidents([ROOT / "data" / "incidents"])
    wall, cpu = _incident_rate(LexicalEmbedder(), (bundled * (3_000 // len(bundled) + 1))[:3_000])
    print(
        f"lexical-512   {wall:10.0f} incidents/s ({cpu:.0f} per CPU second; the {len(bundled)} "
        f"bundled incidents, ~{_mean_length(bundled):.0f} characters, 3,000 embedded, median of 3)"
    )
    passes = [[bundled] * (3_000 // len(bundled)) for _ in range(3)]
    print(
        f"lexical-512   {_unseen_rate(LexicalEmbedder(), passes):10.0f} incidents per CPU second "
        "(bundled, the windows' counts forgotten before each pass over them, median of 3)"
    )
    p50, p99 = _query_cpu(bundled)
    print(
        f"lexical-512   query vector CPU time p50 {p50:.0f} µs, p99 {p99:.0f} µs (bundled requests)"
    )
    if (MODEL_DIR / "model.onnx").is_file():
        from precedent.adapters.onnx_embedder import OnnxEmbedder

        onnx = _throughput(OnnxEmbedder(MODEL_DIR, threads=1), texts[:1_000], 32)
        print(f"onnx-minilm    {onnx:10.0f} texts/s   (int8, one thread, batches of 32)")
        print(f"ratio lexical / onnx: {lexical / onnx:.1f}×")
    else:
        print("onnx-minilm    skipped: run `make model-files`")
