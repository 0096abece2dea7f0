"""The ``precedent`` command line: score requests, and (later) search, evaluate, serve."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import click

from precedent import retrieval_cli
from precedent.adapters.loader import NamedRequest, load_requests
from precedent.adapters.manifest_changes import load_manifest_changes
from precedent.catalog_cli import catalog, serve_command
from precedent.core.printable import printable
from precedent.demo import demo_command
from precedent.errors import InputError, PrecedentError
from precedent.gate import EXIT_GATE, gate_fails, write_junit
from precedent.graph_cli import graph_command
from precedent.memory_cli import memory
from precedent.models import Assessment, parse_timestamp
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
from precedent.wiring import (
    build_facts,
    build_manifest_targets,
    build_offline_blast_radius,
    build_service,
)

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="precedent")
def main() -> None:
    """Precedent: has something like this gone wrong before, and what should we run?"""


@main.command()
@click.argument("paths", nargs=-1)
@click.option(
    "--diff",
    "diff",
    nargs=2,
    metavar="BEFORE AFTER",
    default=None,
    help="Score a manifest change instead of requests: the objects as they are (the cluster's "
    "or the target branch's manifests) and as a pull request leaves them (files or "
    "directories). Every change the guard weighs (fewer replicas, a new image, a delete of a "
    "StatefulSet, PVC or Namespace, a RoleBinding to a powerful role) is scored as the "
    "request that would ask for it; BEFORE is the live target.",
)
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
    help="seed: the specification's SRI formula as written (docs/design-origins.md); default: "
    "the discriminating model. Default: "
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
    "--fail-on",
    type=click.Choice(["denied", "escalated"]),
    default=None,
    help="Gate: exit 3 when any request's decision is this or stricter (escalated: Escalated "
    "or Denied). Exit codes: 0 pass, 1 bad input or configuration, 2 usage, 3 gate failed.",
)
@click.option(
    "--junit",
    "junit_path",
    metavar="FILE",
    default=None,
    help="Also write a JUnit XML report (one test case per request; a failure where the "
    "--fail-on gate stops it), for CI systems that show test reports.",
)
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME",
    envvar="PRECEDENT_AS_OF",
    default=None,
    help="Score as of this RFC 3339 time instead of now (incidents age with time: the same "
    "input then gives the same output, in CI and in docs). Default: $PRECEDENT_AS_OF or now.",
)
@click.option(
    "--cluster",
    metavar="NAME",
    help="The target cluster's name (as PRECEDENT_CLUSTER_NAME in the operator), matched by "
    "the mapping's cluster rules. Default: $PRECEDENT_CLUSTER_NAME.",
)
def score(
    paths: tuple[str, ...],
    diff: tuple[str, str] | None,
    history: tuple[str, ...],
    output: str,
    mode: str | None,
    catalog: str | None,
    risk_model: str | None,
    facts: tuple[str, ...],
    fail_on: str | None,
    junit_path: str | None,
    as_of: str | None,
    cluster: str | None,
) -> None:
    """Score RemediationRequest documents in PATHS (files, directories, or - for stdin).

    Given the target cluster's manifests (-f), the answer is the operator's: the environment
    comes from the Namespaces and the environment mapping (a request's labels can only make
    its answer stricter), and the blast radius from the dependency graph of the workloads,
    Services and Ingresses among them. As a GitOps pre-check: --fail-on escalated."""
    settings = settings_or_fail(
        {
            "--mode": ("similarity_mode", mode),
            "--risk-model": ("risk_model", risk_model),
            "--cluster": ("cluster_name", cluster),
        }
    )
    if bool(paths) == bool(diff):
        raise click.UsageError("give request files (PATHS) or --diff BEFORE AFTER, not both")
    try:
        if diff is not None:
            requests = load_manifest_changes([diff[0]], [diff[1]])
            if not requests:
                click.echo(
                    f"no change from {diff[0]} to {diff[1]} is one the guard weighs", err=True
                )
                return
        else:
            requests = load_requests(paths)
            if not requests:
                raise InputError(f"no RemediationRequest documents in {', '.join(paths)}")
        assessor = build_service(
            settings,
            history=history or None,
            catalog=catalog,
            require_history=True,
            facts=build_facts(settings.context, facts)
            if facts or settings.context.environment_mapping is not None
            else None,
            blast=build_offline_blast_radius(settings.graph, facts)
            if facts and settings.graph.enabled
            else None,
            targets=build_manifest_targets([*facts, *([diff[0]] if diff else [])])
            if facts or diff
            else None,
        ).assessor
        assessments = run_async(
            assessor,
            assessor.assess_many(
                [r.spec for r in requests],
                now=_as_of(as_of),
                namespaces=[r.namespace for r in requests],
            ),
        )
        results = list(zip(requests, assessments, strict=True))
    except PrecedentError as exc:
        fail(str(exc))
        return
    for req, a in results:
        for warning in a.warnings:
            where = f"{req.namespace or 'default'}/{req.name}"
            click.echo(f"warning: {where}: {printable(warning.message)}", err=True)
    if output in ("table", "wide"):
        click.echo(_score_table(results, wide=output == "wide"))
        if assessor.facts is None:
            click.echo(
                "context: the requests' environment labels are claims (unverified): "
                "give the cluster's Namespaces and environment mapping with -f",
                err=True,
            )
    elif output == "name":
        for req, _ in results:
            click.echo(f"remediationrequest.precedent.dev/{req.name}")
    else:
        click.echo(render_documents([_full(req, a) for req, a in results], output))
    gated = [(req, a) for req, a in results if fail_on and gate_fails(a, fail_on)]
    if junit_path is not None:
        try:
            write_junit(junit_path, results, fail_on)
        except OSError as exc:
            fail(f"--junit {junit_path}: {exc.strerror or exc}")
    if gated:
        names = ", ".join(
            f"{req.namespace}/{req.name} ({a.risk.decision.value})" for req, a in gated
        )
        click.echo(
            f"gate: {len(gated)} of {len(results)} requests are {fail_on} or stricter: {names}",
            err=True,
        )
        sys.exit(EXIT_GATE)


def _as_of(text: str | None) -> datetime:
    if text is None or not text.strip():
        return datetime.now(UTC)
    try:
        return parse_timestamp(text, "--as-of")
    except ValueError as exc:
        raise InputError(str(exc)) from None


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
