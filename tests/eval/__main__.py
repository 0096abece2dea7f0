"""Print the "Retrieval quality" table: every embedder × mode on the labelled sets.

    python -m tests.eval            # make eval

Sets: the paraphrase set in tests/data, and the post-mortem list in ../shared/eval when it is
there (converted by tests.eval.danluu into .cache/danluu). Embedders: lexical (the default),
tfidf (plain word TF-IDF fitted on the history, the baseline), onnx (all-MiniLM-L6-v2, when
`make model-files` has run), and rrf (reciprocal-rank fusion of lexical and onnx, semantic
ranking only). Each row is what `precedent eval --history H --queries Q --embedder E --mode M`
prints.
"""

from __future__ import annotations

from pathlib import Path

from precedent.adapters.evaluation import (
    EvalQuery,
    load_history_jsonl,
    load_queries_jsonl,
    rank_for_query,
    run_evaluation,
)
from precedent.adapters.model_files import verify_model_files
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import LexicalEmbedder, TfidfEmbedder
from precedent.core.evaluation import QueryOutcome, RetrievalMetrics, summarize
from precedent.core.history import History
from precedent.core.semantic import incident_text, reciprocal_rank_fusion
from tests.conftest import MODEL_DIR, PARAPHRASE_HISTORY, PARAPHRASE_QUERIES
from tests.eval.danluu import DEFAULT_SOURCE, convert


def _rrf(
    history: History, queries: list[EvalQuery], a: VectorNeighbours, b: VectorNeighbours
) -> RetrievalMetrics:
    outcomes = []
    for q in queries:
        fused = reciprocal_rank_fusion(
            [rank_for_query(history, q, "semantic", a), rank_for_query(history, q, "semantic", b)]
        )
        ranking = sorted(fused, key=lambda k: -fused[k])
        outcomes.append(QueryOutcome.of(ranking, q.relevant))
    return summarize(outcomes)


def main() -> None:
    """Print a markdown table."""
    sets = [("paraphrase (tests/data)", PARAPHRASE_HISTORY, PARAPHRASE_QUERIES)]
    if DEFAULT_SOURCE.is_file():
        h, q = convert(DEFAULT_SOURCE, Path(".cache/danluu"))
        sets.append(("post-mortems (shared/eval)", h, q))
    have_model = not verify_model_files(MODEL_DIR)
    print("| set | embedder | mode | queries | MRR | hit@1 | hit@5 | MAP@10 |")
    print("|---|---|---|---|---|---|---|---|")
    for label, hpath, qpath in sets:
        history = load_history_jsonl(hpath)
        queries = load_queries_jsonl(qpath, history)
        embedders: dict[str, VectorNeighbours] = {
            "lexical": VectorNeighbours(LexicalEmbedder()),
            "tfidf": VectorNeighbours(TfidfEmbedder(incident_text(i) for i in history)),
        }
        if have_model:
            from precedent.adapters.onnx_embedder import OnnxEmbedder

            embedders["onnx"] = VectorNeighbours(OnnxEmbedder(MODEL_DIR))
        rows: list[tuple[str, str, RetrievalMetrics]] = [
            ("—", "rules", run_evaluation(history, queries, "rules", None))
        ]
        for name, neighbours in embedders.items():
            for mode in ("semantic", "hybrid"):
                rows.append((name, mode, run_evaluation(history, queries, mode, neighbours)))  # type: ignore[arg-type]
        if have_model:
            rows.append(
                (
                    "rrf(lexical, onnx)",
                    "semantic",
                    _rrf(history, queries, embedders["lexical"], embedders["onnx"]),
                )
            )
        for name, mode, m in rows:
            print(
                f"| {label} | {name} | {mode} | {m.queries} | {m.mrr:.3f} | {m.hit_at_1:.3f} "
                f"| {m.hit_at_5:.3f} | {m.map:.3f} |"
            )


if __name__ == "__main__":
    main()
