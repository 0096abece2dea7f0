"""Turn the public post-mortem list (``../shared/eval/danluu-postmortems.jsonl``, not part of
this repository) into ``precedent eval`` files.

History: every entry, its summary as description. Queries: every entry of a section other than
"Uncategorized" whose section has another entry; relevant = the other entries of its section;
the query itself is excluded from its ranking (leave-one-out).

    python -m tests.eval.danluu SOURCE OUT_DIR   # writes OUT_DIR/history.jsonl, queries.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

_NAME = Path("shared") / "eval" / "danluu-postmortems.jsonl"
# Beside the repository checkout, or one level further up for a checkout inside a work tree.
CANDIDATES = tuple(Path(__file__).resolve().parents[n] / _NAME for n in (3, 4))
DEFAULT_SOURCE = CANDIDATES[0]


def find_source() -> Path | None:
    """The post-mortem list, if it is in one of the usual places."""
    return next((p for p in CANDIDATES if p.is_file()), None)


def convert(source: Path, out: Path) -> tuple[Path, Path]:
    """Write ``history.jsonl`` and ``queries.jsonl`` into ``out``."""
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line]
    out.mkdir(parents=True, exist_ok=True)
    history, queries = out / "history.jsonl", out / "queries.jsonl"
    with history.open("w", encoding="utf-8") as h:
        for row in rows:
            h.write(json.dumps({"id": row["id"], "description": row["summary"]}) + "\n")
    with queries.open("w", encoding="utf-8") as q:
        for row in rows:
            if row["section"] == "Uncategorized":
                continue
            relevant = [o["id"] for o in rows if o["section"] == row["section"] and o is not row]
            if relevant:
                line = {"query": row["summary"], "relevant": relevant, "exclude": [row["id"]]}
                q.write(json.dumps(line) + "\n")
    return history, queries


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else (find_source() or DEFAULT_SOURCE)
    dst = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(".cache/danluu")
    for path in convert(src, dst):
        print(path)
