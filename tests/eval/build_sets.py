"""Build the labelled sets in tests/data/eval from the bundled history and the hand-written
query lists (``alerts.txt``, ``changes.txt``).

    python -m tests.eval.build_sets      # rewrites tests/data/eval/*.jsonl

``history.jsonl`` is ``data/incidents`` in the ``precedent eval`` history format. Each query
list line is ``relevant ids | text`` (alerts) or ``relevant ids | T | text`` /
``relevant ids | R | action | kind | name | description`` (changes: free text or a request).
The labels are the lists' own; nothing here looks at a ranking.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from precedent.adapters.loader import load_incidents

ROOT = Path(__file__).resolve().parents[2]
EVAL_DIR = ROOT / "tests" / "data" / "eval"
HISTORY = EVAL_DIR / "history.jsonl"
ALERTS = EVAL_DIR / "alerts.jsonl"
CHANGES = EVAL_DIR / "changes.jsonl"


def _rows(path: Path) -> list[tuple[list[str], list[str]]]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        ids, *rest = (part.strip() for part in line.split(" | "))
        if not rest:
            raise SystemExit(f"{path}:{number}: expected 'ids | …'")
        out.append(([i.strip() for i in ids.split(",")], rest))
    return out


def _query(fields: list[str], where: str) -> str | dict[str, Any]:
    if len(fields) == 1:
        return fields[0]
    if fields[0] == "T" and len(fields) == 2:
        return fields[1]
    if fields[0] == "R" and len(fields) == 5:
        action, kind, name, description = fields[1:]
        return {
            "action": action,
            "target": {"kind": kind, "name": name},
            "description": description,
        }
    raise SystemExit(f"{where}: expected 'T | text' or 'R | action | kind | name | description'")


def build() -> list[Path]:
    """Write history.jsonl, alerts.jsonl and changes.jsonl; return their paths."""
    incidents = load_incidents([ROOT / "data" / "incidents"])
    known = {i.id for i in incidents}
    with HISTORY.open("w", encoding="utf-8") as out:
        for incident in incidents:
            row = incident.model_dump(mode="json", by_alias=True, exclude_none=True)
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    for source, target in ((EVAL_DIR / "alerts.txt", ALERTS), (EVAL_DIR / "changes.txt", CHANGES)):
        with target.open("w", encoding="utf-8") as out:
            for n, (ids, fields) in enumerate(_rows(source), start=1):
                missing = [i for i in ids if i not in known]
                if missing:
                    raise SystemExit(f"{source}: query {n}: unknown incident id {missing[0]}")
                line = {"query": _query(fields, f"{source}: query {n}"), "relevant": ids}
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return [HISTORY, ALERTS, CHANGES]


if __name__ == "__main__":
    for path in build():
        print(path.relative_to(ROOT))
