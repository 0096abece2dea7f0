"""``precedent serve`` (the API server) and ``precedent catalog``: serve, or ask a catalog which
playbook fits."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

import click

from precedent.adapters.context_api import run
from precedent.core.playbooks import PlaybookQuery, ScoredPlaybook, parse_label
from precedent.errors import PrecedentError
from precedent.models import PlaybookSelection
from precedent.output import (
    HISTORY_HELP,
    fail,
    format_table,
    output_option,
    render_documents,
    settings_or_fail,
)
from precedent.services import PlaybookChoice, PlaybookSelector
from precedent.settings import DEFAULT_CATALOG_PATH
from precedent.wiring import build_embedder, build_selector, build_service

__all__ = ["catalog", "serve_command"]


@click.group()
def catalog() -> None:
    """The playbook catalog: serve the Context API or query a catalog."""


_CATALOG_PATH_HELP = (
    "Playbook YAML file or directory. Default: $PRECEDENT_CATALOG or data/playbooks."
)


def _serve(
    location: str | None,
    history: tuple[str, ...],
    host: str | None,
    port: int | None,
    embedder: str | None,
    mode: str | None,
) -> None:
    settings = settings_or_fail(
        {
            "--mode": ("similarity_mode", mode),
            "--host": ("catalog_host", host),
            "--port": ("catalog_port", port),
        }
    )
    source = settings.catalog.source(location)
    if source.url is not None:
        fail(f"serve needs a catalog path, not a URL: {source.url}")
    if source.path is None:
        fail(
            f"no catalog: pass --catalog PATH, set PRECEDENT_CATALOG or add {DEFAULT_CATALOG_PATH}/"
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        # The operator's own engine: the search ranks as a RemediationRequest's status does,
        # and the catalog is the engine's in-process catalog (one embedder for both).
        engine = build_service(
            settings,
            history=history or None,
            catalog=str(source.path),
            embedder=embedder,
        )
    except PrecedentError as exc:
        fail(str(exc))
        return
    address, listen = settings.catalog.host, settings.catalog.port
    try:
        run(
            engine.objects.catalog,
            search=engine.assessor.scorer,
            host=address,
            port=listen,
            announce=click.echo,
        )
    except OSError as exc:  # the port is taken, or the address is not this host's
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        fail(f"serve: cannot listen on {address}:{listen}: {reason}")


def _serve_options(command: Callable[..., None]) -> Callable[..., None]:
    options = [
        click.option("--catalog", "location", metavar="PATH", help=_CATALOG_PATH_HELP),
        click.option("--history", multiple=True, metavar="PATH", help=HISTORY_HELP),
        click.option(
            "--host", default=None, help="Listen address. Default: $PRECEDENT_CATALOG_HOST."
        ),
        click.option(
            "--port",
            type=click.IntRange(0, 65535),
            default=None,
            help="Default: $PRECEDENT_CATALOG_PORT.",
        ),
        click.option(
            "--embedder",
            type=click.Choice(["lexical", "onnx", "http"]),
            default=None,
            help="Default: settings.",
        ),
        click.option(
            "--mode",
            type=click.Choice(["rules", "semantic", "hybrid"]),
            default=None,
            help="Default: settings (hybrid).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.command("serve")
@_serve_options
def serve_command(
    location: str | None,
    history: tuple[str, ...],
    host: str | None,
    port: int | None,
    embedder: str | None,
    mode: str | None,
) -> None:
    """Serve the API on one port: the Context API (GET /api/v1/context/playbooks), incident
    search (POST /api/v1/incidents/search, GET /api/v1/incidents/stats), /openapi.json,
    /healthz and /metrics."""
    _serve(location, history, host, port, embedder, mode)


@catalog.command("serve")
@_serve_options
def serve(
    location: str | None,
    history: tuple[str, ...],
    host: str | None,
    port: int | None,
    embedder: str | None,
    mode: str | None,
) -> None:
    """The same server as `precedent serve` (kept for compatibility)."""
    _serve(location, history, host, port, embedder, mode)


def _components(candidate: ScoredPlaybook) -> dict[str, float]:
    # The same map as the status's playbook.components, so the two read alike.
    parts = candidate.parts
    if parts is None:
        return {}
    return PlaybookSelection.components_of(
        semantic=parts.semantic, label_match=parts.label_match, historical=parts.historical
    )


def _outcome_document(outcome: PlaybookChoice) -> dict[str, Any]:
    answer = outcome.answer
    decision = outcome.decision
    return {
        "method": outcome.method,
        "source": outcome.source,
        "reason": outcome.reason,
        "cached": outcome.cached,
        "selection": decision.selection.model_dump(mode="json", by_alias=True)
        if decision.selection
        else None,
        "alternatives": [a.model_dump(mode="json", by_alias=True) for a in decision.alternatives],
        "recommendation": decision.recommendation.model_dump(mode="json", by_alias=True)
        if decision.recommendation
        else None,
        "candidates": [
            {
                "id": c.id,
                "version": c.version,
                "confidence": round(c.confidence, 4),
                "components": _components(c),
            }
            for c in (answer.candidates if answer else ())
        ],
        "totalResults": answer.total if answer else 0,
    }


def _outcome_table(outcome: PlaybookChoice, *, wide: bool = False) -> str:
    rows = []
    for c in outcome.answer.candidates if outcome.answer else ():
        p = c.parts
        values = (p.semantic, p.label_match, p.historical) if p is not None else None
        parts = [f"{v:.2f}" for v in values] if values is not None else ["-"] * 3
        rows.append([c.id, c.version, f"{c.confidence:.2f}", *parts])
        if wide:
            runs = "-" if c.executions is None else str(c.executions)
            rows[-1] += [runs, " ".join(c.description.split())]
    lines = []
    if rows:
        headers = ["PLAYBOOK", "VERSION", "CONFIDENCE", "SEMANTIC", "LABELS", "HISTORICAL"]
        if wide:
            headers += ["EXECUTIONS", "DESCRIPTION"]
        lines.append(format_table(headers, rows))
    decision = outcome.decision
    if decision.selection is not None:
        lines.append(f"{outcome.method}: {decision.selection.rationale}")
    elif decision.recommendation is not None:
        rec = decision.recommendation
        lines.append(f"{outcome.method}: manual_investigation: {rec.reason}")
        lines.extend(f"  - {step}" for step in rec.suggested_actions)
    return "\n".join(lines)


@catalog.command()
@click.argument("description")
@click.option("-l", "--label", "labels", multiple=True, metavar="KEY:VALUE", help="Repeatable.")
@click.option(
    "--catalog",
    "location",
    metavar="PATH|URL",
    help="YAML file or directory, or a Context API URL. Default: $PRECEDENT_CATALOG or "
    "data/playbooks.",
)
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=None)
@click.option("--max-results", type=click.IntRange(1, 100), default=None)
@output_option(
    help_text="table; wide: with executions and descriptions; json/yaml: the selection and every "
    "candidate; name: playbook.precedent.dev/ID of each candidate, best first."
)
def query(
    description: str,
    labels: tuple[str, ...],
    location: str | None,
    min_confidence: float | None,
    max_results: int | None,
    output: str,
) -> None:
    """Rank the catalog's playbooks for DESCRIPTION and show the selection."""
    settings = settings_or_fail()
    try:
        pairs = [parse_label(label) for label in labels]
        source = settings.catalog.source(location)
        if source.url is None and source.path is None:
            raise PrecedentError(
                f"no catalog: pass --catalog, set PRECEDENT_CATALOG or add {DEFAULT_CATALOG_PATH}/"
            )
        selector, _ = build_selector(
            settings.catalog, build_embedder(settings.retrieval), location=location
        )
        q = PlaybookQuery.create(
            description,
            pairs,
            min_confidence=(
                settings.catalog.min_confidence if min_confidence is None else min_confidence
            ),
            max_results=settings.catalog.max_playbooks if max_results is None else max_results,
        )
    except (PrecedentError, ValueError) as exc:
        fail(str(exc))
        return

    async def ask(s: PlaybookSelector) -> PlaybookChoice:
        async with s:
            return await s.select_query(q)

    outcome = asyncio.run(ask(selector))
    if output in ("json", "yaml"):
        click.echo(render_documents([_outcome_document(outcome)], output))
    elif output == "name":
        for c in outcome.answer.candidates if outcome.answer else ():
            click.echo(f"playbook.precedent.dev/{c.id}")
    else:
        click.echo(_outcome_table(outcome, wide=output == "wide"))
