"""Print the "Retrieval quality" table: every labelled set × method × mode, with bootstrap 95 %
intervals.

    python -m tests.eval            # make eval
    python -m tests.eval --quick    # without the sentence model (onnx) rows

Sets: the paraphrase set in tests/data; the two sets built from the bundled history in
tests/data/eval (Alertmanager alerts; change requests, paraphrases and ticket titles — see its
README); and the public post-mortem list from the shared eval directory when it is there
(converted by tests.eval.danluu into .cache/danluu). Methods: rules; lexical (the default
embedder: hashed word and character n-grams, action vocabulary, query-side idf from the
history); tfidf (plain word TF-IDF fitted on the history, a baseline); bm25 (Okapi BM25 fitted
on the history, k1 1.2, b 0.75, a baseline; ranking only, so semantic mode only); onnx
(all-MiniLM-L6-v2, when `make model-files` has run); rrf(lexical, onnx) (reciprocal-rank
fusion, semantic ranking only). Each embedder row ranks with the operator's own code (the
assessment service that fills ``similarIncidents``): it is what `precedent eval retrieval
--history H --queries Q --embedder E --mode M` prints.

Intervals: the queries are resampled with replacement 1,000 times (seed 0) and the 2.5th and
97.5th percentiles of each metric's mean are printed beside it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from precedent.adapters.evaluation import EvalQuery, load_history_jsonl, load_queries_jsonl
from precedent.adapters.model_files import verify_model_files
from precedent.core.embedding import Bm25
from precedent.core.evaluation import QueryResult
from precedent.core.semantic import incident_text, reciprocal_rank_fusion
from precedent.core.snapshot import History
from precedent.services import IncidentScorer
from precedent.services.evaluation import rank_for_query
from precedent.settings import Settings
from precedent.wiring import build_service
from tests.conftest import MODEL_DIR, PARAPHRASE_HISTORY, PARAPHRASE_QUERIES
from tests.eval.danluu import convert, find_source

EVAL_DIR = Path(__file__).resolve().parents[1] / "data" / "eval"
BOOTSTRAP_SAMPLES = 1_000
BOOTSTRAP_SEED = 0

Ranker = Callable[[EvalQuery], list[str]]


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table: a method, a mode and its per-query outcomes."""

    method: str
    mode: str
    outcomes: list[QueryResult]


def labelled_sets() -> list[tuple[str, Path, Path]]:
    """(label, history, queries) of every labelled set present."""
    sets = [
        ("paraphrase", PARAPHRASE_HISTORY, PARAPHRASE_QUERIES),
        ("alerts", EVAL_DIR / "history.jsonl", EVAL_DIR / "alerts.jsonl"),
        ("changes", EVAL_DIR / "history.jsonl", EVAL_DIR / "changes.jsonl"),
    ]
    source = find_source()
    if source is not None:
        h, q = convert(source, Path(".cache/danluu"))
        sets.append(("post-mortems", h, q))
    return sets


def bm25_ranker(history: History) -> Ranker:
    """Rank by Okapi BM25 over the incident text (score > 0 only)."""
    bm25 = Bm25(incident_text(i) for i in history)

    def rank(q: EvalQuery) -> list[str]:
        scores = bm25.score(q.text)
        order = sorted(np.flatnonzero(scores > 0).tolist(), key=lambda p: (-scores[p], p))
        ids = [history.incidents[p].id for p in order]
        return [i for i in ids if i not in q.exclude]

    return rank


def service_for(hpath: Path, mode: str, embedder: str | None) -> IncidentScorer:
    """The operator's incident scorer over one labelled history (what `precedent eval` runs)."""
    settings = Settings(history_path=hpath, catalog="", model_dir=MODEL_DIR)
    return build_service(
        settings,
        history=[hpath],
        mode=mode,  # type: ignore[arg-type]
        embedder=embedder,
        require_history=True,
    ).assessor.scorer


def rrf_ranker(a: IncidentScorer, b: IncidentScorer) -> Ranker:
    """Reciprocal-rank fusion of two semantic rankings."""

    def rank(q: EvalQuery) -> list[str]:
        fused = reciprocal_rank_fusion([rank_for_query(a, q), rank_for_query(b, q)])
        return sorted(fused, key=lambda k: -fused[k])

    return rank


def rows_for(
    hpath: Path, history: History, queries: Sequence[EvalQuery], with_onnx: bool
) -> list[Row]:
    """Every method × mode on one set; embedder rows rank as the operator does."""
    names = ["lexical", "tfidf"] + (["onnx"] if with_onnx else [])
    rankers: list[tuple[str, str, Ranker]] = [
        ("—", "rules", _service_ranker(service_for(hpath, "rules", None))),
        ("bm25", "semantic", bm25_ranker(history)),
    ]
    semantic: dict[str, IncidentScorer] = {}
    for name in names:
        for mode in ("semantic", "hybrid"):
            service = service_for(hpath, mode, name)
            if mode == "semantic":
                semantic[name] = service
            rankers.append((name, mode, _service_ranker(service)))
    if with_onnx:
        rankers.append(
            ("rrf(lexical, onnx)", "semantic", rrf_ranker(semantic["lexical"], semantic["onnx"]))
        )
    return [
        Row(name, mode, [QueryResult.of(rank(q), q.relevant) for q in queries])
        for name, mode, rank in rankers
    ]


def _service_ranker(service: IncidentScorer) -> Ranker:
    return lambda q: rank_for_query(service, q)


def per_query(outcomes: Sequence[QueryResult]) -> np.ndarray:
    """Matrix queries × (RR, hit@1, hit@5, AP@10)."""
    return np.array(
        [[o.reciprocal_rank, o.hit_at_1, o.hit_at_5, o.average_precision] for o in outcomes],
        dtype=np.float64,
    )


def bootstrap(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means and the 95 % percentile interval of the means over resampled queries."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    n = len(values)
    picks = rng.integers(0, n, size=(BOOTSTRAP_SAMPLES, n))
    means = values[picks].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5], axis=0)
    return values.mean(axis=0), lo, hi


def main(argv: Sequence[str] = ()) -> None:
    """Print a markdown table."""
    with_onnx = "--quick" not in argv and not verify_model_files(MODEL_DIR)
    print("| set | method | mode | queries | MRR | hit@1 | hit@5 | MAP@10 |")
    print("|---|---|---|---|---|---|---|---|")
    for label, hpath, qpath in labelled_sets():
        history = load_history_jsonl(hpath)
        queries = load_queries_jsonl(qpath, history)
        for row in rows_for(Path(hpath), history, queries, with_onnx):
            mean, lo, hi = bootstrap(per_query(row.outcomes))
            cells = " | ".join(
                f"{m:.3f} [{a:.2f}–{b:.2f}]" for m, a, b in zip(mean, lo, hi, strict=True)
            )
            print(f"| {label} | {row.method} | {row.mode} | {len(row.outcomes)} | {cells} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
