"""The ``precedent`` command line: score requests, and (later) search, evaluate, serve."""

from __future__ import annotations

import json
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
    dump_yaml,
    fail,
    format_table,
    run_async,
    settings_or_fail,
)
from precedent.sandbox_process import sandbox_command
from precedent.wiring import build_facts, build_service

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
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml"]),
    default="table",
    show_default=True,
    help="table: one line per request; json/yaml: the full assessments.",
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
@click.option(
    "-f",
    "--filename",
    "facts",
    multiple=True,
    metavar="PATH",
    help="The target cluster's facts: Namespace manifests (their precedent.dev/environment "
    "labels) and EnvironmentMapping documents (files or directories; other kinds are "
    "skipped). Without it the requests' environment labels are used as claimed, marked "
    "unverified.",
)
@click.option(
    "--cluster",
    metavar="NAME",
    help="The target cluster's name (as PRECEDENT_CLUSTER_NAME in the operator), matched by "
    "the mapping's cluster rules. Default: $PRECEDENT_CLUSTER_NAME.",
)
def score(
    paths: tuple[str, ...],
    history: tuple[str, ...],
    output: str,
    mode: str | None,
    catalog: str | None,
    risk_model: str | None,
    facts: tuple[str, ...],
    cluster: str | None,
) -> None:
    """Score RemediationRequest documents in PATHS (files, directories, or - for stdin).

    Given the cluster's facts (-f), the environment is taken from them as the operator takes
    it (docs/security.md): a request's labels can only make its answer stricter."""
    settings = settings_or_fail()
    if cluster is not None:
        settings = settings.model_copy(update={"cluster_name": cluster})
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
        if facts or settings.environment_mapping is not None:
            service.facts = build_facts(settings, facts)
        assessments = run_async(
            service,
            service.assess_many(
                [r.spec for r in requests],
                now=datetime.now(UTC),
                namespaces=[r.namespace for r in requests],
            ),
        )
        results = list(zip(requests, assessments, strict=True))
    except PrecedentError as exc:
        fail(str(exc))
        return
    if output == "table":
        click.echo(_score_table(results))
        if service.facts is None:
            click.echo(
                "context: the requests' environment labels are claims (unverified): "
                "give the cluster's Namespaces and environment mapping with -f",
                err=True,
            )
    else:
        docs = [_full(req, a) for req, a in results]
        if output == "json":
            click.echo(json.dumps(docs, indent=2))
        else:
            click.echo(dump_yaml(docs), nl=False)


def _score_table(results: Sequence[tuple[NamedRequest, Assessment]]) -> str:
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
