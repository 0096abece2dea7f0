"""The whole assessment service call at 10k incidents: rules vs hybrid (lexical + exact FAISS).

Prints p50/p99 over a few hundred requests and the hybrid / rules ratio from the same run.
"""

from __future__ import annotations

import random
import time

import numpy as np

from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import LexicalEmbedder
from precedent.core.snapshot import History
from precedent.models import RemediationRequestSpec
from tests.bench.synthetic import incidents, titles
from tests.helpers import scorer

SIZE = 10_000
REQUESTS = 400


def _requests() -> list[RemediationRequestSpec]:
    rng = random.Random(3)
    actions = ["restart_service", "scale_down", "update_config", "rollback", "drain_node"]
    return [
        RemediationRequestSpec.model_validate(
            {
                "action": rng.choice(actions),
                "target": {"kind": "Deployment", "name": rng.choice(["payment-api", "cart"])},
                "description": text,
            }
        )
        for text in titles(REQUESTS, seed=42)
    ]


def main() -> None:
    """Print p50/p99 of rules and hybrid scoring and their ratio."""
    history = History(incidents(SIZE))
    neighbours = VectorNeighbours(LexicalEmbedder())
    started = time.perf_counter()
    neighbours.sync(history)
    print(f"history {SIZE:,} incidents; index built in {time.perf_counter() - started:.1f} s")
    specs = _requests()
    results = {}
    for mode in ("rules", "hybrid"):
        assessor = scorer(history, mode=mode, semantic=neighbours if mode == "hybrid" else None)  # type: ignore[arg-type]
        assessor.assess(specs[0])
        times = []
        for spec in specs:
            t = time.perf_counter()
            assessor.assess(spec)
            times.append(time.perf_counter() - t)
        p50, p99 = (float(np.quantile(times, q)) * 1000 for q in (0.5, 0.99))
        results[mode] = p50
        print(f"score {mode:<7} p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   (target p50 ≤ 5, p99 ≤ 20)")
    print(f"ratio hybrid / rules (p50): {results['hybrid'] / results['rules']:.2f}×")
