"""Terminal-safe text: what a user wrote is shown, never executed by the reader's terminal.

A field such as ``target.name`` may hold ``ESC [2J`` (clear the screen) or a newline followed
by a line that looks like the operator's own ("Approved: True (approved by alice)"). Every
place that shows user-written text — ``kubectl precedent explain``, the CLI's tables, text log
lines and Event messages — passes it through :func:`printable`: control characters (C0, DEL,
C1, and the Unicode line/paragraph separators and bidirectional overrides) become visible
escapes such as ``\\x1b`` and ``\\n``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["printable", "printable_tree"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNICODE_CONTROLS = frozenset(
    chr(c) for c in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F)
)


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


# C0 (below U+0020), DEL and C1 (U+007F-U+009F), and the Unicode controls above: one search
# of the text (a status's texts run through here with every answer; tests/core/test_printable.py
# checks it against those ranges code point by code point).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f" + "".join(sorted(_UNICODE_CONTROLS)) + "]")


def printable(text: str) -> str:
    """``text`` with every control character escaped (a fast path when there is none)."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(lambda found: _escape(found.group()), text)


def printable_tree(value: Any) -> Any:
    """Every string in a JSON-like value (keys included) passed through :func:`printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, Mapping):
        return {printable_tree(k): printable_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable_tree(v) for v in value]
    return value
