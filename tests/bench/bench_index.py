"""Vector search at 1k / 10k / 100k (and 1M with PRECEDENT_BENCH_1M=1) incidents.

For each size: single-query latency p50/p99 of the exact index (IndexFlatIP) and the
approximate ones (IVF with 16-bit float codes, the default, and with 8-bit codes; the lists'
centroids from the two-level k-means, the default, and for fp16 also from one k-means over
every list, ``flat``) on one thread, each planned for the size as the operator plans it;
recall@10 of approximate against exact, bytes per incident of each index as serialised, the
time to build it and to load it from disk. Vectors are the default lexical embedder's, of
synthetic incident titles. Ratios (approximate / exact) come from the same run.

Two recalls: ``recall@10`` is the share of exact search's top 10 ids found; ``tie-aware``
counts a found incident as right when its exact cosine reaches the 10th best exact cosine.
The synthetic titles repeat a few thousand phrases, so at 1M many incidents tie with the
10th (identical vectors but for an id number) and exact search's choice among them is
arbitrary; the tie-aware figure is the one that says whether the index lost a better match.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt

from precedent.adapters.faiss_index import ApproximateCodes, Coarse, FaissIncidentIndex
from precedent.core.embedding import LexicalEmbedder
from tests.bench.synthetic import titles

QUERIES = 300
VARIANTS: tuple[tuple[ApproximateCodes, Coarse], ...] = (
    ("fp16", "two-level"),
    ("fp16", "flat"),
    ("sq8", "two-level"),
)


def _vectors(n: int) -> npt.NDArray[np.float32]:
    embedder = LexicalEmbedder()
    out = np.empty((n, embedder.dimension), dtype=np.float32)
    step = 50_000
    for start in range(0, n, step):
        chunk = titles(min(step, n - start), seed=start)
        out[start : start + len(chunk)] = embedder.embed(chunk)
    return out


def _latencies(index: FaissIncidentIndex, queries: npt.NDArray[np.float32]) -> list[float]:
    times = []
    for q in queries:
        started = time.perf_counter()
        index.search(q, 10)
        times.append(time.perf_counter() - started)
    return times


def _ms(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) * 1000


def _bytes(index: FaissIncidentIndex) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        index.save(tmp)
        return (Path(tmp) / "index.faiss").stat().st_size


def main() -> None:
    """Print one line per size and index kind."""
    sizes = [1_000, 10_000, 100_000]
    if os.environ.get("PRECEDENT_BENCH_1M") == "1":
        sizes.append(1_000_000)
    all_vectors = _vectors(max(sizes))
    query_vectors = LexicalEmbedder().embed(titles(QUERIES, seed=999_999))
    print(f"faiss {faiss.__version__}, {os.cpu_count()} cores, search on 1 thread, k=10")
    header = (
        "size        index                  p50 ms   p99 ms   recall@10   tie-aware"
        "   bytes/incident   load s"
    )
    print(header)
    for n in sizes:
        vectors = all_vectors[:n]
        ids = [f"i{i}" for i in range(n)]
        exact = FaissIncidentIndex(vectors.shape[1], approximate_threshold=n + 1)
        exact.add(ids, vectors)
        exact_lat = _latencies(exact, query_vectors)
        exact_top = [exact.search(q, 10) for q in query_vectors]
        truth = [{i for i, _ in found} for found in exact_top]
        tenth = [found[-1][1] for found in exact_top]
        print(
            f"{n:<11,} {'exact (flat)':<22}{_ms(exact_lat, 0.5):7.2f}"
            f"  {_ms(exact_lat, 0.99):7.2f}"
            f"   {1.0:9.3f}   {1.0:9.3f}   {_bytes(exact) / n:14.0f}        -"
        )
        del exact
        if n < 10_000:
            continue
        for codes, coarse in VARIANTS:
            built = time.perf_counter()
            # Planned for n, as the operator's index at the threshold: the lists and the
            # training sample follow the threshold.
            approx = FaissIncidentIndex(
                vectors.shape[1], approximate_threshold=n, approximate_codes=codes, coarse=coarse
            )
            approx.add(ids, vectors)
            build_s = time.perf_counter() - built
            for nprobe in (16, 48):
                approx.set_nprobe(nprobe)
                lat = _latencies(approx, query_vectors)
                found = [approx.search(q, 10) for q in query_vectors]
                recall = np.mean(
                    [len({i for i, _ in f} & t) / 10 for f, t in zip(found, truth, strict=True)]
                )
                # The exact cosine of each found incident, against the 10th exact cosine.
                tie_aware = np.mean(
                    [
                        np.sum(vectors[[int(i[1:]) for i, _ in f]] @ q >= t10 - 1e-6) / 10
                        for f, q, t10 in zip(found, query_vectors, tenth, strict=True)
                    ]
                )
                with tempfile.TemporaryDirectory() as tmp:
                    approx.save(tmp)
                    size = (Path(tmp) / "index.faiss").stat().st_size
                    started = time.perf_counter()
                    FaissIncidentIndex.load(tmp)
                    load_s = time.perf_counter() - started
                short = "2lvl" if coarse == "two-level" else "flat"
                label = f"ivf-{codes}-{short} np={nprobe}"
                print(
                    f"{n:<11,} {label:<22}{_ms(lat, 0.5):7.2f}  {_ms(lat, 0.99):7.2f}"
                    f"   {recall:9.3f}   {tie_aware:9.3f}   {size / n:14.0f}   {load_s:6.2f}"
                    f"   (p50 {_ms(lat, 0.5) / _ms(exact_lat, 0.5):.2f}× exact;"
                    f" {approx._index.nlist} lists, built in {build_s:.0f} s)",
                    flush=True,
                )
            del approx
