"""Where a command's incident history comes from: YAML files and directories, or one JSONL file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from precedent.adapters.evaluation import load_history_jsonl
from precedent.adapters.loader import load_incidents
from precedent.core.history import History
from precedent.errors import InputError

__all__ = ["load_history"]


def load_history(paths: Sequence[str], default: Path | None) -> History:
    """Incidents from ``paths`` (or ``default`` when none are given); empty is an error."""
    if not paths:
        if default is None or not default.exists():
            raise InputError(
                f"no history at {default}: pass --history PATH or set PRECEDENT_HISTORY_PATH"
            )
        paths = [str(default)]
    if len(paths) == 1 and paths[0].endswith(".jsonl"):
        return load_history_jsonl(paths[0])
    incidents = load_incidents(paths)
    if not incidents:
        raise InputError(f"history is empty: no Incident documents in {', '.join(paths)}")
    return History(incidents)
