"""``precedent eval``: read a history and labelled queries as JSON Lines, rank, and score.

History file: one incident a line, at least ``id`` and ``title`` or ``description``; optional
``action``, ``resource`` {type, name}, ``severity``, ``tags``, ``outcome``, ``occurredAt`` and
the other Incident fields (camelCase or snake_case). Keys that are not Incident fields are
ignored, so a file may carry its own bookkeeping. A line with only a description gets its first
sentence as title.

Queries file: one query a line, ``{"query": "text" | {request fields}, "relevant": [ids],
"exclude": [ids]}``; ``exclude`` drops ids from that query's ranking (leave-one-out when the
query is itself in the history). Every problem is reported as ``FILE:LINE: message``.

The ranking itself is the operator's (``precedent.services.evaluation``); this module only
reads the files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from precedent.adapters.bounded import iter_lines, parse_json
from precedent.adapters.heap import LoadedIncidents
from precedent.core.normalize import ProposedAction
from precedent.core.policy import ActionRegistry
from precedent.core.readings import searched_as
from precedent.core.snapshot import History
from precedent.errors import InputError, describe_validation
from precedent.models import Incident, RemediationRequestSpec

__all__ = [
    "EvalQuery",
    "load_history_jsonl",
    "load_incidents_jsonl",
    "load_queries_jsonl",
    "text_query",
]

_INCIDENT_KEYS = set(Incident.model_fields) | {
    field.alias for field in Incident.model_fields.values() if field.alias
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One labelled query: the request, the relevant ids, the ids to leave out."""

    line: int
    action: ProposedAction
    text: str
    relevant: frozenset[str]
    exclude: frozenset[str]


def text_query(text: str, *, domain: str | None = None) -> ProposedAction:
    """A free-text query as a request with no action or target (only its words count)."""
    words = " ".join(_WORD.findall(text.lower()))
    return ProposedAction(action="", resource_type="", resource_name="", text=words, domain=domain)


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    # Streamed, one line at a time: a history of a million incidents is one line each, with
    # no limit on the file's size; each line's length and nesting stay bounded
    # (precedent.adapters.bounded).
    for number, line in iter_lines(path):
        yield number, parse_json(line, f"{path}:{number}")


def _title_from(description: str) -> str:
    first = _SENTENCE.split(description.strip(), maxsplit=1)[0]
    if len(first) <= 120:
        return first
    return first[:120].rsplit(" ", 1)[0] + "…"


def load_history_jsonl(path: str | Path) -> History:
    """Incidents from a JSON Lines file; errors name the line."""
    return History(load_incidents_jsonl(path))


def load_incidents_jsonl(path: str | Path, *, pack: bool = False) -> list[Incident]:
    """Incidents from a JSON Lines file, read a line at a time; errors name the line. Each is
    made as the history keeps it as it is read (``precedent.adapters.heap.LoadedIncidents``:
    its field record and resource shared; with ``pack`` its long texts compressed)."""
    file = Path(path)
    incidents: list[Incident] = []
    seen: dict[str, int] = {}
    kept = LoadedIncidents(pack=pack)
    for number, row in _lines(file):
        if not isinstance(row, dict):
            raise InputError(f"{file}:{number}: expected a JSON object")
        # Keys an incident does not have are left out (a row may carry more).
        data = (
            row
            if row.keys() <= _INCIDENT_KEYS
            else {k: v for k, v in row.items() if k in _INCIDENT_KEYS}
        )
        if not data.get("title") and isinstance(data.get("description"), str):
            data["title"] = _title_from(data["description"])
        if not data.get("title"):
            raise InputError(f"{file}:{number}: title or description is required")
        try:
            incident = Incident.model_validate(data)
        except ValidationError as exc:
            raise InputError(f"{file}:{number}: {describe_validation(exc)}") from None
        if incident.id in seen:
            raise InputError(
                f"{file}:{number}: duplicate incident id {incident.id!r} (line {seen[incident.id]})"
            )
        seen[incident.id] = number
        incidents.append(kept.keep(incident))
    if not incidents:
        raise InputError(f"{file}: no incidents")
    return incidents


def _id_list(value: Any, key: str, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: {key}: expected a list of incident ids")
    return frozenset(value)


def load_queries_jsonl(path: str | Path, history: History | None = None) -> list[EvalQuery]:
    """Labelled queries from a JSON Lines file; errors name the line (and unknown ids)."""
    file = Path(path)
    queries = []
    for number, row in _lines(file):
        where = f"{file}:{number}"
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a JSON object")
        unknown = set(row) - {"query", "relevant", "exclude"}
        if unknown:
            raise InputError(f"{where}: unknown field {sorted(unknown)[0]!r}")
        query = row.get("query")
        if isinstance(query, str):
            if not query.strip():
                raise InputError(f"{where}: query: empty text")
            action = text_query(query)
            text = query
        elif isinstance(query, dict):
            try:
                spec = RemediationRequestSpec.model_validate(query)
            except ValidationError as exc:
                raise InputError(f"{where}: {describe_validation(exc, 'query')}") from None
            action = searched_as(spec, ActionRegistry())
            text = action.text
        else:
            raise InputError(f"{where}: query: expected text or an object of request fields")
        relevant = _id_list(row.get("relevant"), "relevant", where)
        if not relevant:
            raise InputError(f"{where}: relevant: at least one incident id is required")
        exclude = _id_list(row.get("exclude"), "exclude", where)
        if history is not None:
            missing = sorted(i for i in relevant | exclude if history.position(i) is None)
            if missing:
                raise InputError(f"{where}: unknown incident id {missing[0]!r}")
        queries.append(EvalQuery(number, action, text, relevant, exclude))
    if not queries:
        raise InputError(f"{file}: no queries")
    return queries
