"""Input that is valid but probably not what the requester meant: an action no registry lists,
a label key one letter away from one the engine reads.

Both change the answer silently otherwise: an unknown action is ADMIN (the strictest level),
and a misspelt ``enviroment`` is a label nobody reads, so the environment falls back to the
verified or default one. A warning names the field and, where a known name is close (the
standard library's difflib, the same ratio as Python's own "did you mean" suggestions), says
which was probably meant. Label keys the engine does not read and that resemble none it does
(``team``, ``ticket``) are the requester's own and get no warning.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["ENGINE_LABEL_KEYS", "InputWarning", "input_warnings"]

ENGINE_LABEL_KEYS = frozenset({"environment", "cluster", "priority", "incident-type", "action"})
"""Label keys the engine itself reads (the playbooks' own label keys are added by the caller)."""

_CUTOFF = 0.75


@dataclass(frozen=True, slots=True)
class InputWarning:
    """One warning about the input."""

    reason: str
    """``UnknownAction`` or ``UnknownLabelKey``."""
    message: str
    """A sentence naming the field, with a suggestion when there is one."""


def _closest(word: str, known: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, sorted(set(known)), n=1, cutoff=_CUTOFF)
    return found[0] if found else None


def input_warnings(
    action: str,
    labels: Mapping[str, str],
    *,
    actions: Iterable[str],
    label_keys: Iterable[str],
) -> list[InputWarning]:
    """Warnings for ``action`` (not in ``actions``) and for label keys close to a known one."""
    warnings: list[InputWarning] = []
    known_actions = set(actions)
    if action not in known_actions:
        guess = _closest(action, known_actions)
        hint = f"; did you mean {guess}?" if guess else ""
        warnings.append(
            InputWarning(
                "UnknownAction",
                f"spec.action {action} is not in the action registry, so it is treated as "
                f"ADMIN{hint}",
            )
        )
    keys = set(label_keys) | ENGINE_LABEL_KEYS
    for key in sorted(labels):
        if key in keys or key.lower() in keys:
            continue
        guess = _closest(key.lower(), keys)
        if guess is not None:
            warnings.append(
                InputWarning(
                    "UnknownLabelKey",
                    f"spec.labels.{key} is not a label key Precedent reads; did you mean {guess}?",
                )
            )
    return warnings
