"""Output helpers shared by the commands: kubectl-style tables and readable YAML."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
import yaml

from precedent.core.printable import printable
from precedent.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from precedent.services import Assessor

__all__ = [
    "HISTORY_HELP",
    "OUTPUT_FORMATS",
    "as_list",
    "dump_yaml",
    "fail",
    "format_table",
    "one_line",
    "output_option",
    "render_documents",
    "run_async",
    "settings_or_fail",
]

_T = TypeVar("_T")


HISTORY_HELP = (
    "Incident YAML file or directory, or a .jsonl history (repeatable). "
    "Default: $PRECEDENT_HISTORY_PATH or data/incidents."
)
"""The ``--history`` option's help, shared by the commands that take one."""


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """kubectl-style columns: upper-case headers, left-aligned, three spaces apart; control
    characters in a cell are escaped (``core.printable``)."""
    rows = [[printable(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = [
        "   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [headers, *rows]
    ]
    return "\n".join(lines)


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks, the way people write them in YAML."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_representer)


def dump_yaml(docs: Sequence[Any]) -> str:
    """Multi-document YAML with block-style multi-line strings."""
    return yaml.dump_all(docs, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


OUTPUT_FORMATS = ("table", "wide", "json", "yaml", "name")
"""The ``-o`` set every command offers where it makes sense, as kubectl's: table (the default),
wide (more columns), json and yaml (whole objects), name (``kind/name``, one a line)."""


def output_option(
    formats: Sequence[str] = OUTPUT_FORMATS, help_text: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-o/--output`` with ``formats`` (by default :data:`OUTPUT_FORMATS`), table by default."""
    return click.option(
        "-o",
        "--output",
        type=click.Choice(list(formats)),
        default="table",
        show_default=True,
        help=help_text or "table, wide (more columns), json, yaml (whole objects) or name.",
    )


def as_list(items: Sequence[Any]) -> dict[str, Any]:
    """A kubectl-style ``List`` of ``items`` (what ``kubectl get -o json`` prints for several)."""
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {}}


def render_documents(docs: Sequence[Any], output: str) -> str:
    """``docs`` as JSON or YAML, kubectl's way: one object stays itself, several are a ``List``
    (no trailing newline)."""
    body = docs[0] if len(docs) == 1 else as_list(docs)
    if output == "json":
        return json.dumps(body, indent=2)
    return dump_yaml([body]).rstrip("\n")


def one_line(message: str, limit: int = 2000) -> str:
    """``message`` on one printable line: newlines folded, unencodable characters escaped, and
    cut at ``limit`` characters (a message may quote hostile input)."""
    flat = " ".join(message.split("\n")).replace("\r", " ")
    flat = flat.encode("utf-8", "backslashreplace").decode("utf-8")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def fail(message: str) -> NoReturn:
    """Print ``error: message`` to stderr and exit 1: bad input never shows a traceback."""
    click.echo(f"error: {one_line(message)}", err=True)
    sys.exit(1)


def settings_or_fail(flags: Mapping[str, tuple[str, object | None]] | None = None) -> Settings:
    """The settings, with a command's ``flags`` applied; or one ``error:`` line and exit 1.

    ``flags`` maps a flag to the flat setting it overrides and its value (None: not given),
    e.g. ``{"--risk-model": ("risk_model", risk_model)}``: a flag is validated exactly as its
    variable is, and a bad value is named by the flag (``error: --cluster: …``), a bad
    variable by its name (``error: invalid configuration: PRECEDENT_X: …``).
    """
    given = {flat: value for flat, value in (flags or {}).values() if value is not None}
    names = {flat: flag for flag, (flat, _) in (flags or {}).items()}
    try:
        return load_settings(given, names=names)
    except SettingsError as exc:
        by_flag = [f"{names[flat]}: {text}" for flat, text in exc.problems if flat in given]
        if by_flag:
            fail("; ".join(by_flag))
        fail(f"invalid configuration: {exc}")


def run_async(assessor: Assessor, work: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine from a command, then release the assessor's connections."""

    async def run() -> _T:
        try:
            return await work
        finally:
            await assessor.aclose()

    return asyncio.run(run())
