"""The ``precedent`` command line: score requests, and (later) search, evaluate, serve."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from precedent.adapters.loader import NamedRequest, load_incidents, load_requests
from precedent.adapters.selector import build_selector, select_all
from precedent.catalog_cli import catalog
from precedent.core.assess import Assessor
from precedent.core.history import History
from precedent.core.policy import PolicyEngine
from precedent.demo import demo_command
from precedent.errors import InputError, PrecedentError
from precedent.models import Assessment
from precedent.output import dump_yaml, format_table
from precedent.sandbox.cli import sandbox_command
from precedent.settings import Settings

__all__ = ["main"]


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def load_history(paths: Sequence[str]) -> History:
    """Load incidents from ``paths``; an empty history is an error worth stopping for."""
    incidents = load_incidents(paths)
    if not incidents:
        raise InputError(f"history is empty: no Incident documents in {', '.join(paths)}")
    return History(incidents)


def _history_paths(history: tuple[str, ...], settings: Settings) -> list[str]:
    if history:
        return list(history)
    default = settings.history_path
    if default is None or not default.exists():
        raise InputError(
            f"no history at {default}: pass --history PATH or set PRECEDENT_HISTORY_PATH"
        )
    return [str(default)]


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
    help="Incident YAML file or directory (repeatable). Default: $PRECEDENT_HISTORY_PATH "
    "or data/incidents.",
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
    "--catalog",
    metavar="PATH|URL",
    help="Playbook catalog: YAML file or directory, or a Context API URL. Default: "
    "$PRECEDENT_CATALOG, else data/playbooks if it exists, else no playbook selection.",
)
def score(
    paths: tuple[str, ...], history: tuple[str, ...], output: str, catalog: str | None
) -> None:
    """Score RemediationRequest documents in PATHS (files, directories, or - for stdin)."""
    settings = Settings()
    try:
        requests = load_requests(paths)
        if not requests:
            raise InputError(f"no RemediationRequest documents in {', '.join(paths)}")
        snapshot = load_history(_history_paths(history, settings))
        assessor = Assessor(
            snapshot,
            threshold=settings.similarity_threshold,
            top_k=settings.top_similar,
            policy=PolicyEngine(enforce=settings.policy_mode == "enforce"),
        )
        selector = build_selector(catalog, settings)
        picks = select_all(selector, [r.spec for r in requests]) if selector else None
        decisions = [p.decision for p in picks] if picks else [None] * len(requests)
        results = [
            (req, assessor.assess(req.spec, playbook=decision))
            for req, decision in zip(requests, decisions, strict=True)
        ]
    except PrecedentError as exc:
        _fail(str(exc))
        return
    if output == "table":
        click.echo(_score_table(results))
    else:
        docs = [_full(req, a) for req, a in results]
        if output == "json":
            click.echo(json.dumps(docs, indent=2))
        else:
            click.echo(dump_yaml(docs), nl=False)


def _score_table(results: Sequence[tuple[NamedRequest, Assessment]]) -> str:
    rows = []
    for req, a in results:
        top = a.similar_incidents[0] if a.similar_incidents else None
        rows.append(
            [
                req.name,
                req.spec.action,
                f"{a.risk.score:g}",
                a.risk.band.value,
                a.risk.decision.value,
                top.id if top else "-",
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
main.add_command(catalog)

if __name__ == "__main__":  # pragma: no cover
    main()
