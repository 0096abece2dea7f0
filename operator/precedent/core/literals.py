"""The literal strings a regular expression's every match must contain.

A text that holds none of a pattern's necessary literals holds no match, so a scan of many
patterns over one short text (the selection concepts over a request) can skip most of them
with a few substring tests, and finds exactly what scanning all of them finds.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["necessary_literals"]


def necessary_literals(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Lower-case strings one of which every match of ``pattern`` contains (matched against
    a lower-case text); None when no such set is known (a match may be empty, or hold only
    characters from classes), and the pattern must always be run."""
    parser = importlib.import_module("re._parser")
    found = _sequence(list(parser.parse(pattern.pattern, pattern.flags)))
    return frozenset(found) if found else None


def _sequence(items: list[tuple[Any, Any]]) -> set[str] | None:
    """The best necessary set of a parsed sequence: every match of the sequence contains a
    match of each element that cannot be empty, so any one element's set will do; the set
    whose shortest string is longest is kept (fewest false candidates)."""
    constants = importlib.import_module("re._constants")
    options: list[set[str]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            options.append({"".join(run)})
            run.clear()

    for op, arg in items:
        if op is constants.LITERAL:
            run.append(chr(arg).lower())
            continue
        flush()
        found: set[str] | None
        if op is constants.SUBPATTERN:
            found = _sequence(list(arg[-1]))
        elif op is constants.BRANCH:
            branches = [_sequence(list(branch)) for branch in arg[1]]
            found = (
                None
                if any(b is None for b in branches)
                else set().union(*(b for b in branches if b is not None))
            )
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT):
            low, _, sub = arg
            found = _sequence(list(sub)) if low >= 1 else None
        else:  # a class, a category, any character, an anchor: no literal known
            found = None
        if found:
            options.append(found)
    flush()
    if not options:
        return None
    return max(options, key=lambda s: (min(len(x) for x in s), -len(s)))
