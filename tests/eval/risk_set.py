"""Score the labelled risk set (tests/data/risk) with both risk models and print the agreement.

    python -m tests.eval.risk_set [--mode hybrid|rules] [--misses]

The history is data/incidents; semantic neighbours come from ``build_neighbours(Settings())``
(the configured embedder, lexical by default). Also prints the default model's bands for the
example requests (data/requests/examples.yaml).
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Mapping, Sequence
from pathlib import Path

from precedent.adapters.loader import (
    LabelledRequest,
    load_incidents,
    load_labelled_requests,
    load_requests,
)
from precedent.adapters.retrieval import build_neighbours
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.historical import RiskModelName, SimilarityMode, evaluate_history
from precedent.core.history import History
from precedent.core.normalize import normalize_request
from precedent.core.risk_evaluation import (
    BandOutcome,
    RiskEvaluation,
    evaluate_bands,
    format_confusion,
)
from precedent.models import RemediationRequestSpec
from precedent.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
RISK_SET = ROOT / "tests" / "data" / "risk"
INCIDENTS = ROOT / "data" / "incidents"
EXAMPLES = ROOT / "data" / "requests" / "examples.yaml"
SEMANTIC_K = 50


def _semantic(
    neighbours: VectorNeighbours | None, spec: RemediationRequestSpec, history: History
) -> Mapping[int, float] | None:
    if neighbours is None:
        return None
    return neighbours.neighbours(normalize_request(spec), history, SEMANTIC_K)


def score_set(
    history: History,
    labelled: Sequence[LabelledRequest],
    *,
    risk_model: RiskModelName,
    mode: SimilarityMode,
    neighbours: VectorNeighbours | None,
) -> RiskEvaluation:
    """Score every labelled request and count agreement."""
    outcomes = []
    for item in labelled:
        spec = item.request.spec
        result = evaluate_history(
            history,
            normalize_request(spec),
            mode=mode,
            semantic=_semantic(neighbours, spec, history),
            risk_model=risk_model,
        )
        outcomes.append(
            BandOutcome(
                name=item.request.name,
                expected=item.expected_band,
                predicted=result.risk.band,
                score=result.risk.score,
                reasoning=result.risk.reasoning,
                rationale=item.rationale,
            )
        )
    return evaluate_bands(outcomes)


def main(argv: Sequence[str] | None = None) -> None:
    """Print both models' agreement with the labelled set, then the examples' bands."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["rules", "hybrid"], default="hybrid")
    parser.add_argument("--misses", action="store_true", help="print every miss")
    args = parser.parse_args(argv)
    history = History(load_incidents([INCIDENTS]))
    labelled = load_labelled_requests([RISK_SET])
    neighbours = build_neighbours(Settings()) if args.mode != "rules" else None
    print(f"{len(labelled)} labelled requests, {len(history)} incidents, mode {args.mode}")
    for model in ("seed", "default"):
        evaluation = score_set(
            history, labelled, risk_model=model, mode=args.mode, neighbours=neighbours
        )
        print(
            f"\n{model}: accuracy {evaluation.accuracy:.1%} ({evaluation.correct}/"
            f"{evaluation.total}), within one band {evaluation.within_one}, "
            f"under the label {evaluation.under}"
        )
        print(format_confusion(evaluation))
        if args.misses:
            for miss in evaluation.misses:
                print(
                    f"  {miss.name}: expected {miss.expected.value}, got {miss.predicted.value} "
                    f"({miss.score:g})\n    label: {miss.rationale}\n    model: {miss.reasoning}"
                )
    bands: collections.Counter[str] = collections.Counter()
    print("\nExamples (default model):")
    for request in load_requests([EXAMPLES]):
        result = evaluate_history(
            history,
            normalize_request(request.spec),
            mode=args.mode,
            semantic=_semantic(neighbours, request.spec, history),
            risk_model="default",
        )
        bands[result.risk.band.value] += 1
        print(
            f"  {request.name:<36} {result.risk.band.value:<6} {result.risk.score:>5g} "
            f"{result.risk.most_relevant_incident or '-'}"
        )
    print("  spread:", dict(bands))


if __name__ == "__main__":
    main()
