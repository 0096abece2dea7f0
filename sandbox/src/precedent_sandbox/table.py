"""Server-side printing: ``meta.k8s.io/v1 Table`` responses for ``kubectl get``.

Custom resources get ``Name`` plus the CRD's ``additionalPrinterColumns`` (whose JSONPaths are
evaluated here, including ``[?(@.type=="Ready")]`` filters); ``date`` columns are rendered as
ages the way the real server renders them (``5s``, ``3m2s``, ``4d``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from precedent_sandbox.meta import human_duration, parse_time

__all__ = [
    "Column",
    "JsonPath",
    "age",
    "make_row_object",
    "make_table",
    "printer_columns",
]

NAME_COLUMN: dict[str, Any] = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}

_TOKEN = re.compile(
    r"""
    \.\.?(?P<field>(?:\\.|[^.\[\]\\])+)      # .field (dots inside escaped as \.)
    | \[\s*\?\(\s*@(?P<fpath>(?:\.[^=!<>\s)]+)+)\s*(?P<op>==|!=)\s*  # [?(@.type=="Ready")]
      (?P<fval>"[^"]*"|'[^']*'|[^)\s]+)\s*\)\s*\]
    | \[\s*(?P<quoted>"[^"]*"|'[^']*')\s*\]  # ['key']
    | \[\s*(?P<index>-?\d+|\*)\s*\]          # [0] or [*]
    """,
    re.VERBOSE,
)


class JsonPath:
    """The simple JSONPath subset printer columns use: fields, indexes, ``[*]``, filters."""

    def __init__(self, text: str) -> None:
        self.text = text
        body = text.strip()
        if body.startswith("{") and body.endswith("}"):
            body = body[1:-1]
        body = body.removeprefix("$")
        self.steps: list[Callable[[list[Any]], list[Any]]] = []
        position = 0
        while position < len(body):
            found = _TOKEN.match(body, position)
            if not found:
                raise ValueError(f"unsupported JSONPath {text!r} at {body[position:]!r}")
            self.steps.append(self._step(found))
            position = found.end()

    @staticmethod
    def _step(found: re.Match[str]) -> Callable[[list[Any]], list[Any]]:
        if found.group("field") is not None:
            key = found.group("field").replace("\\.", ".")
            return lambda values: [v[key] for v in values if isinstance(v, dict) and key in v]
        if found.group("quoted") is not None:
            key = found.group("quoted")[1:-1]
            return lambda values: [v[key] for v in values if isinstance(v, dict) and key in v]
        if found.group("index") is not None:
            index = found.group("index")
            if index == "*":
                return lambda values: [
                    item
                    for v in values
                    for item in (
                        v if isinstance(v, list) else v.values() if isinstance(v, dict) else []
                    )
                ]
            position = int(index)
            return lambda values: [
                v[position] for v in values if isinstance(v, list) and -len(v) <= position < len(v)
            ]
        path = found.group("fpath")[1:].split(".")
        equal = found.group("op") == "=="
        raw = found.group("fval")
        wanted: Any = raw[1:-1] if raw[0] in "\"'" else _literal(raw)

        def keep(item: Any) -> bool:
            current = item
            for part in path:
                if not isinstance(current, dict) or part not in current:
                    return False
                current = current[part]
            return bool(current == wanted) == equal

        return lambda values: [
            item for v in values if isinstance(v, list) for item in v if keep(item)
        ]

    def find(self, obj: Any) -> list[Any]:
        """Every value the path selects in ``obj``."""
        values = [obj]
        for step in self.steps:
            values = step(values)
            if not values:
                break
        return values


def _literal(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def age(timestamp: Any, now: datetime | None = None) -> str:
    """``creationTimestamp`` → ``5s`` / ``3m2s`` / ``<unknown>``."""
    moment = parse_time(timestamp)
    if moment is None:
        return "<unknown>"
    now = now or datetime.now(UTC)
    return human_duration((now - moment).total_seconds())


def go_text(value: Any) -> str:
    """What Go's fmt.Fprint prints for a decoded JSON value (kubectl's cells, JSONPath text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_text(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    return str(value)


class Column:
    """One printer column: its definition and how to compute its cell."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.name = str(spec["name"])
        self.type = str(spec.get("type", "string"))
        self.path = JsonPath(str(spec["jsonPath"]))
        self.definition: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "format": str(spec.get("format", "")),
            "description": str(spec.get("description", "")),
            "priority": int(spec.get("priority", 0)),
        }

    def cell(self, obj: dict[str, Any], now: datetime) -> Any:
        """The cell for ``obj``, typed like the apiextensions table convertor's."""
        found = self.path.find(obj)
        if not found:
            return None
        value = found[0]
        if value is None:
            return None
        if self.type == "string":
            return go_text(value)
        if self.type == "integer":
            return (
                int(value)
                if isinstance(value, int | float) and not isinstance(value, bool)
                else None
            )
        if self.type == "number":
            return (
                float(value)
                if isinstance(value, int | float) and not isinstance(value, bool)
                else None
            )
        if self.type == "boolean":
            return value if isinstance(value, bool) else None
        if self.type == "date":
            return age(value, now) if isinstance(value, str) else None
        return None


def printer_columns(specs: Sequence[dict[str, Any]] | None) -> list[Column]:
    """The CRD's columns; without any, the real server's default is a single Age column."""
    if not specs:
        specs = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return [Column(s) for s in specs]


def make_row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    """The row's ``object``: PartialObjectMetadata (default), the full object, or none."""
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def make_table(
    definitions: list[dict[str, Any]],
    rows: list[tuple[list[Any], dict[str, Any]]],
    include: str,
    metadata: dict[str, Any],
    *,
    headers: bool = True,
) -> dict[str, Any]:
    """A ``Table`` from column definitions and (cells, object) pairs."""
    table_rows = []
    for cells, obj in rows:
        row: dict[str, Any] = {"cells": cells}
        embedded = make_row_object(obj, include)
        if embedded is not None:
            row["object"] = embedded
        table_rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions if headers else [],
        "rows": table_rows,
    }
