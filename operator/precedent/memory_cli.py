"""``precedent memory``: create the fleet memory's index, upload a history, search it.

Each command reads the ``PRECEDENT_MEMORY_*`` settings (the URL, index and auth the operator
uses) and fails with one line naming what is wrong: auth, unreachable, the index missing, or a
mapping that does not match the shipped one (``manifests/opensearch/``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import click

from precedent.adapters.memory_opensearch import MANIFEST_DIR, OpenSearchMemory, build_client
from precedent.core.memory_query import MemoryQuery, incident_document
from precedent.core.normalize import canonical_resource_type
from precedent.core.ports import MemoryFailure
from precedent.errors import PrecedentError
from precedent.output import fail, format_table, settings_or_fail
from precedent.settings import MemorySettings
from precedent.wiring import load_history_files

__all__ = ["memory"]

_T = TypeVar("_T")
_BATCH = 500


def _store(settings: MemorySettings) -> OpenSearchMemory:
    problem = settings.problem if settings.enabled else None
    if not settings.url:
        fail("PRECEDENT_MEMORY_URL: set it to the OpenSearch URL, e.g. https://opensearch:9200")
    if problem is not None:
        fail(problem)
    key, password = settings.api_key, settings.password
    try:
        client = build_client(
            settings.url,
            auth=settings.auth,
            api_key=key.get_secret_value() if key else None,
            username=settings.username,
            password=password.get_secret_value() if password else None,
            aws_region=settings.aws_region,
            aws_service=settings.aws_service,
            timeout_seconds=max(settings.timeout_ms / 1000.0, 10.0),
            verify_tls=settings.verify_tls,
            ca_bundle=settings.ca_bundle,
        )
    except MemoryFailure as exc:
        fail(str(exc))
    return OpenSearchMemory(client, index=settings.index, url=settings.url)


def _run(store: OpenSearchMemory, work: Callable[[OpenSearchMemory], Awaitable[_T]]) -> _T:
    async def run() -> _T:
        try:
            return await work(store)
        finally:
            await store.aclose()

    try:
        return asyncio.run(run())
    except (MemoryFailure, PrecedentError) as exc:
        fail(str(exc))


@click.group()
def memory() -> None:
    """The fleet memory in OpenSearch (PRECEDENT_MEMORY_* settings)."""


@memory.command("init")
@click.option(
    "--manifests",
    type=click.Path(path_type=Path, file_okay=False),
    default=MANIFEST_DIR,
    show_default=True,
    help="Directory with index.json and index-template.json.",
)
def init_command(manifests: Path) -> None:
    """Create the index template and the index (k-NN enabled) from the shipped mapping."""
    store = _store(settings_or_fail().memory)
    result = _run(store, lambda s: s.create_index(manifests))
    click.echo(f"index {store.location}: {result}")


@memory.command("push")
@click.option(
    "--history",
    "history",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="Incident YAML file or directory, or a .jsonl history (default: PRECEDENT_HISTORY_PATH).",
)
def push_command(history: Path | None) -> None:
    """Upload a history to the memory in bulk, document id = incident id (re-runnable)."""
    settings = settings_or_fail()
    path = history or settings.history.path
    if path is None or not path.exists():
        fail(f"no history at {path}: pass --history PATH")
    try:
        incidents = load_history_files([path])
    except PrecedentError as exc:
        fail(str(exc))
    store = _store(settings.memory)
    cluster = settings.context.cluster_name

    async def push(s: OpenSearchMemory) -> int:
        done = 0
        with click.progressbar(length=len(incidents), label="pushing", file=None) as bar:
            for start in range(0, len(incidents), _BATCH):
                batch = incidents[start : start + _BATCH]
                done += await s.upsert(
                    [(i.id, incident_document(i, cluster=cluster)) for i in batch]
                )
                bar.update(len(batch))
        return done

    count = _run(store, push)
    click.echo(f"{count} incidents written to {store.location}")


@memory.command("search")
@click.argument("text")
@click.option("--resource-type", "resource_type", required=True, help="e.g. deployment.")
@click.option("--max-results", type=click.IntRange(1, 100), default=None)
def search_command(text: str, resource_type: str, max_results: int | None) -> None:
    """Run the fleet memory's query for TEXT and print the hits."""
    if not text.strip():
        fail("TEXT: the query is empty")
    settings = settings_or_fail().memory
    store = _store(settings)
    query = MemoryQuery(
        text=text,
        resource_type=canonical_resource_type(resource_type),
        size=max_results or settings.max_results,
        min_quality=settings.min_quality,
    )
    parsed = _run(store, lambda s: s.search(query))
    for line in parsed.skipped:
        click.echo(f"warning: skipped {line}", err=True)
    rows = [
        [
            h.incident.id,
            f"{h.score:.3f}",
            h.cluster or "-",
            h.incident.outcome.value,
            h.incident.title[:60],
        ]
        for h in parsed.hits
    ]
    click.echo(format_table(["id", "score", "cluster", "outcome", "title"], rows))
