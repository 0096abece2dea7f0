"""Both risk models at 10k incidents, end to end (normalise → neighbours → evaluate_history).

    python -m tests.bench.bench_risk

Prints p50/p99 per model and similarity mode over a few hundred requests (target p50 ≤ 5 ms,
p99 ≤ 20 ms).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping

import numpy as np

from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import LexicalEmbedder
from precedent.core.historical import (
    RiskModelName,
    SimilarityMode,
    evaluate_history,
    risk_model_named,
)
from precedent.core.normalize import normalize_request
from precedent.core.snapshot import History
from precedent.models import RemediationRequestSpec
from tests.bench.synthetic import incidents, titles

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
                "labels": {"environment": rng.choice(["production", "staging", "dev"])},
            }
        )
        for text in titles(REQUESTS, seed=42)
    ]


def main() -> None:
    """Print p50/p99 of each model in rules and hybrid mode."""
    history = History(incidents(SIZE))
    neighbours = VectorNeighbours(LexicalEmbedder())
    neighbours.sync(history)
    history.risk_context()
    specs = _requests()
    print(f"history {SIZE:,} incidents, {len(specs)} requests")
    models: tuple[RiskModelName, ...] = ("seed", "default")
    modes: tuple[SimilarityMode, ...] = ("rules", "hybrid")
    for model in models:
        for mode in modes:
            times = []
            for spec in specs:
                t = time.perf_counter()
                action = normalize_request(spec)
                semantic: Mapping[int, float] | None = None
                if mode == "hybrid":
                    semantic = neighbours.neighbours(action, history, 50)
                evaluate_history(
                    history, action, model=risk_model_named(model), mode=mode, semantic=semantic
                )
                times.append(time.perf_counter() - t)
            p50, p99 = (float(np.quantile(times, q)) * 1000 for q in (0.5, 0.99))
            print(f"{model:<8} {mode:<7} p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")


if __name__ == "__main__":
    main()
