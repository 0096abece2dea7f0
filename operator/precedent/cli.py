"""The ``precedent`` command line: score requests, and (later) search, evaluate, serve."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import click

from precedent import retrieval_cli
from precedent.adapters.loader import NamedRequest, load_requests
from precedent.catalog_cli import catalog, serve_command
from precedent.demo import demo_command
from precedent.errors import InputError, PrecedentError
from precedent.graph_cli import graph_command
from precedent.memory_cli import memory
from precedent.models import Assessment
from precedent.output import (
    HISTORY_HELP,
    fail,
    format_table,
    output_option,
    render_documents,
    run_async,
    settings_or_fail,
)
from precedent.sandbox_process import sandbox_command
from precedent.wiring import build_service

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="precedent")
def main() -> None:
    """Precedent: has something like this gone wrong before, and what should we run?"""


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--history",
    multiple=True,
    metavar="PATH",
    help=HISTORY_HELP,
)
@output_option(
    help_text="table: one line per request; wide: with namespace and source; json/yaml: the "
    "full assessments (a List when there are several); name: one request a line."
)
@click.option(
    "--mode",
    type=click.Choice(["rules", "semantic", "hybrid"]),
    default=None,
    help="Similarity mode. Default: $PRECEDENT_SIMILARITY_MODE or hybrid.",
)
@click.option(
    "--catalog",
    metavar="PATH|URL",
    help="Playbook catalog: YAML file or directory, or a Context API URL. Default: "
    "$PRECEDENT_CATALOG, else data/playbooks if it exists, else no playbook selection.",
)
@click.option(
    "--risk-model",
    type=click.Choice(["seed", "default"]),
    default=None,
    help="seed: seed 000's formula as written; default: the discriminating model. Default: "
    "$PRECEDENT_RISK_MODEL or default.",
)
def score(
    paths: tuple[str, ...],
    history: tuple[str, ...],
    output: str,
    mode: str | None,
    catalog: str | None,
    risk_model: str | None,
) -> None:
    """Score RemediationRequest documents in PATHS (files, directories, or - for stdin)."""
    settings = settings_or_fail()
    if risk_model is not None:
        settings = settings.model_copy(update={"risk_model": risk_model})
    try:
        requests = load_requests(paths)
        if not requests:
            raise InputError(f"no RemediationRequest documents in {', '.join(paths)}")
        service = build_service(
            settings,
            history=history or None,
            catalog=catalog,
            mode=mode,  # type: ignore[arg-type]
            require_history=True,
        )
        assessments = run_async(
            service, service.assess_many([r.spec for r in requests], now=datetime.now(UTC))
        )
        results = list(zip(requests, assessments, strict=True))
    except PrecedentError as exc:
        fail(str(exc))
        return
    if output in ("table", "wide"):
        click.echo(_score_table(results, wide=output == "wide"))
    elif output == "name":
        for req, _ in results:
            click.echo(f"remediationrequest.precedent.dev/{req.name}")
    else:
        click.echo(render_documents([_full(req, a) for req, a in results], output))


def _score_table(results: Sequence[tuple[NamedRequest, Assessment]], *, wide: bool) -> str:
    rows = []
    for req, a in results:
        top_id = a.risk.most_relevant_incident
        top = next((s for s in a.similar_incidents if s.id == top_id), None)
        rows.append(
            [
                req.name,
                req.spec.action,
                f"{a.risk.score:g}",
                a.risk.band.value,
                a.risk.decision.value,
                top_id or "-",
                f"{top.similarity:.2f}" if top else "-",
                str(a.similar_count),
                *_playbook_cells(a),
            ]
        )
        if wide:
            rows[-1] = [req.namespace or "-", *rows[-1], req.source]
    headers = [
        "NAME",
        "ACTION",
        "SCORE",
        "BAND",
        "DECISION",
        "TOP INCIDENT",
        "SIMILARITY",
        "SIMILAR",
        "PLAYBOOK",
        "CONFIDENCE",
        "METHOD",
    ]
    if wide:
        headers = ["NAMESPACE", *headers, "SOURCE"]
    return format_table(headers, rows)


def _playbook_cells(a: Assessment) -> list[str]:
    if a.playbook is not None:
        return [a.playbook.id, f"{a.playbook.confidence:.2f}", a.playbook.selection_method]
    if a.recommendation is not None:
        return [a.recommendation.action, "-", "-"]
    return ["-", "-", "-"]


def _full(req: NamedRequest, assessment: Assessment) -> dict[str, Any]:
    return {
        "name": req.name,
        "namespace": req.namespace,
        "source": req.source,
        "assessment": assessment.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


main.add_command(sandbox_command)
main.add_command(demo_command)
main.add_command(retrieval_cli.search_command)
main.add_command(retrieval_cli.eval_command)
main.add_command(retrieval_cli.index_command)
main.add_command(retrieval_cli.fetch_model_command)
main.add_command(catalog)
main.add_command(serve_command)
main.add_command(memory)
main.add_command(graph_command)

if __name__ == "__main__":  # pragma: no cover
    main()
