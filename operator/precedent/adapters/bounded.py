"""Bounded reading and parsing: the one reader every input of Precedent goes through.

Hostile or broken input — a file of gigabytes, binary data on stdin, YAML nested 30,000 levels
deep (which crashes libyaml's composer), an alias bomb, a JSON line nested past the interpreter's
recursion limit, a 5,000-digit integer — gets one :class:`~precedent.errors.LoadError` naming
the file, the line and the problem, never a crash, a traceback or unbounded memory.

The limits (:data:`LIMITS`) are checked before or while parsing:

* size: a file or stdin is read up to ``max_bytes`` and refused beyond it, without reading
  the rest; a JSON Lines line up to ``max_line_bytes``;
* nesting depth of mappings and sequences: ``max_depth``, checked on YAML's event stream
  (libyaml's parser is iterative, its composer is not) before any deeper object is built — by
  the compiled core as it builds the documents in one pass, or before PyYAML composes them —
  and on JSON as it is decoded;
* YAML aliases: at most ``max_alias_nodes`` nodes may be reached through aliases, so an alias
  bomb ("billion laughs") is refused before it is expanded;
* text: UTF-8 only; integers longer than Python's limit (4,300 digits) are refused by name.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from precedent.adapters.yaml_build import NativeLoad, load_all, load_native
from precedent.errors import LoadError

try:  # the compiled core (native/), when installed: the same limits and objects, in one pass
    from precedent_native import load_yaml

    _native_load: NativeLoad | None = load_yaml
except ImportError:  # pragma: no cover - where the wheel is not installed
    _native_load = None

__all__ = [
    "LIMITS",
    "STDIN",
    "InputLimits",
    "TooLarge",
    "check_depth",
    "iter_lines",
    "parse_json",
    "parse_yaml_documents",
    "read_bytes",
    "read_text",
]

STDIN = "-"
"""The path that means standard input."""

# libyaml's safe loader when PyYAML was built with it (about 10× faster on big histories).
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class InputLimits:
    """How much input Precedent reads before refusing it."""

    max_bytes: int = 64 * 1024 * 1024
    """Largest file, or stdin, read: 64 MiB (a history of about 100,000 incidents)."""
    max_line_bytes: int = 1024 * 1024
    """Longest JSON Lines line: 1 MiB."""
    max_depth: int = 64
    """Deepest nesting of mappings and sequences (a Kubernetes object needs about 10)."""
    max_alias_nodes: int = 10_000
    """Most YAML nodes reachable through aliases (``*name``) in one stream."""


LIMITS = InputLimits()
"""The limits every reader applies unless told otherwise."""


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LoadError(
            f"{source}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


class TooLarge(LoadError):
    """An input larger than ``max_bytes``; callers may add the way that reads it."""


def _too_big(source: str, limits: InputLimits) -> LoadError:
    return TooLarge(
        f"{source}: larger than the {limits.max_bytes // (1024 * 1024)} MiB input limit"
        if limits.max_bytes >= 1024 * 1024
        else f"{source}: larger than the {limits.max_bytes}-byte input limit"
    )


def _read_stream(stream: IO[bytes], source: str, limits: InputLimits) -> bytes:
    data = stream.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise _too_big(source, limits)
    return data


def read_bytes(path: str | Path, *, limits: InputLimits = LIMITS) -> tuple[bytes, str]:
    """The bytes of a file, or of stdin for ``-``, and the name to report them under."""
    if str(path) == STDIN:
        stream: Any = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream without bytes underneath (some test harnesses)
            return sys.stdin.read(limits.max_bytes + 1).encode("utf-8", "replace"), "<stdin>"
        return _read_stream(stream, "<stdin>", limits), "<stdin>"
    file = Path(path)
    source = str(file)
    try:
        if file.stat().st_size > limits.max_bytes:
            raise _too_big(source, limits)
        with file.open("rb") as handle:  # read at most the limit: /dev/zero has no size
            return _read_stream(handle, source, limits), source
    except OSError as exc:
        raise LoadError(f"{source}: cannot read: {exc.strerror or exc}") from None


def iter_lines(path: str | Path, *, limits: InputLimits = LIMITS) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a UTF-8 file, numbered from 1, read one at a time: the file may
    be of any size, each line at most ``max_line_bytes`` (a JSON Lines history)."""
    file = Path(path)
    source = str(file)
    try:
        with file.open("rb") as handle:
            number = 0
            while True:
                raw = handle.readline(limits.max_line_bytes + 1)
                if not raw:
                    return
                number += 1
                if len(raw) > limits.max_line_bytes and not raw.endswith(b"\n"):
                    raise LoadError(
                        f"{source}:{number}: longer than the {limits.max_line_bytes}-byte "
                        "line limit"
                    )
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise LoadError(
                        f"{source}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x})"
                    ) from None
                if line.strip():
                    yield number, line
    except OSError as exc:
        raise LoadError(f"{source}: cannot read: {exc.strerror or exc}") from None


def read_text(path: str | Path, *, limits: InputLimits = LIMITS) -> tuple[str, str]:
    """The UTF-8 text of a file, or of stdin for ``-``, and the name to report it under."""
    data, source = read_bytes(path, limits=limits)
    return _decode(data, source), source


def _yaml_error(exc: yaml.YAMLError, source: str) -> LoadError:
    mark = getattr(exc, "problem_mark", None)
    where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["?"])[0]
    return LoadError(f"{source}:{where}: not valid YAML: {problem}")


def _line(mark: Any) -> str:
    return f"line {mark.line + 1}" if mark is not None else "somewhere"


def _beyond_limit(what: str, line: int, source: str, limits: InputLimits) -> LoadError:
    """The compiled core's refusal of a stream past the depth (``what`` "depth") or alias
    limit, at the 0-based ``line``, in the words of :func:`_scan_yaml`."""
    if what == "depth":
        return LoadError(f"{source}: line {line + 1}: nested deeper than {limits.max_depth} levels")
    return LoadError(
        f"{source}: line {line + 1}: aliases expand to more than {limits.max_alias_nodes} nodes"
    )


def _scan_yaml(text: str, source: str, limits: InputLimits) -> None:
    """Walk YAML's event stream: refuse deep nesting and alias bombs before composing (the
    compiled core's ``load_yaml`` counts the same way: tests/adapters/test_bounded_scan.py)."""
    # One frame per open collection: [nodes inside so far, its anchor].
    frames: list[list[Any]] = []
    anchored: dict[str, int] = {}  # anchor → nodes in its subtree, aliases expanded
    through_aliases = 0
    for event in yaml.parse(text, Loader=_SAFE_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(frames) >= limits.max_depth:
                raise LoadError(
                    f"{source}: {_line(event.start_mark)}: nested deeper than "
                    f"{limits.max_depth} levels"
                )
            frames.append([0, event.anchor])
        elif isinstance(event, yaml.CollectionEndEvent):
            count, anchor = frames.pop()
            size = count + 1
            if anchor is not None:
                anchored[anchor] = size
            if frames:
                frames[-1][0] += size
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                anchored[event.anchor] = 1
            if frames:
                frames[-1][0] += 1
        elif isinstance(event, yaml.AliasEvent):
            size = anchored.get(event.anchor or "", 1)
            through_aliases += size
            if through_aliases > limits.max_alias_nodes:
                raise LoadError(
                    f"{source}: {_line(event.start_mark)}: aliases expand to more than "
                    f"{limits.max_alias_nodes} nodes"
                )
            if frames:
                frames[-1][0] += size


def parse_yaml_documents(text: str, source: str, *, limits: InputLimits = LIMITS) -> list[Any]:
    """Every document of a YAML stream (safe types only), within the limits.

    With the compiled core, the limits are checked and the documents built in one pass over
    libyaml's events (``yaml_build.load_native``); a stream it leaves to Python (not valid YAML,
    a merge key, a tag on a collection, …) is read below, as without it."""
    if _native_load is not None:
        try:
            kind, found = load_native(
                text, limits.max_depth, limits.max_alias_nodes, _SAFE_LOADER, _native_load
            )
        except (RuntimeError, UnicodeEncodeError):  # no parser, or a lone surrogate
            kind, found = "elsewhere", None
        if kind == "ok":
            documents: list[Any] = found
            return documents
        if kind in ("depth", "aliases"):
            raise _beyond_limit(kind, found, source, limits)
    try:
        _scan_yaml(text, source, limits)
        # What yaml.load_all(text, Loader=_SAFE_LOADER) returns, built with fewer calls.
        return load_all(text, _SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source) from None
    except (ValueError, OverflowError) as exc:
        # A scalar the resolver took for an int or a date that Python cannot build
        # (5,000 digits, 2025-13-45): YAML itself reports no line for these.
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise LoadError(f"{source}: a value cannot be read: {reason}") from None


def check_depth(value: Any, where: str, *, limits: InputLimits = LIMITS) -> None:
    """Refuse a parsed value nested deeper than ``max_depth`` (iteratively: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limits.max_depth:
            raise LoadError(f"{where}: nested deeper than {limits.max_depth} levels")
        stack.extend((child, depth + 1) for child in children)


def parse_json(text: str, where: str, *, limits: InputLimits = LIMITS) -> Any:
    """One JSON value (a JSON Lines line), within the limits; ``where`` starts every error."""
    if len(text) > limits.max_line_bytes:
        raise LoadError(f"{where}: longer than the {limits.max_line_bytes}-byte line limit")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LoadError(f"{where}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise LoadError(f"{where}: nested deeper than {limits.max_depth} levels") from None
    except ValueError as exc:  # an integer longer than Python's 4,300-digit limit
        reason = (str(exc).splitlines() or ["?"])[0]
        raise LoadError(f"{where}: not valid JSON: {reason}") from None
    # A value is nested no deeper than the brackets its text opens: with no more of them than
    # the limit (an incident line has a few), the walk cannot refuse it.
    if text.count("[") + text.count("{") > limits.max_depth:
        check_depth(value, where, limits=limits)
    return value
