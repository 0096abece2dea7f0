"""A committed object as the store keeps it: the decoded value and its encoded bytes.

Objects are encoded once per version; gets, lists and every watcher reuse those bytes.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Obj", "Stored", "encode"]

Obj = dict[str, Any]


def encode(obj: Any) -> bytes:
    """Compact JSON, as the API server writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class Stored:
    """One committed object and its encoded form."""

    __slots__ = ("obj", "raw", "rv")

    def __init__(self, obj: Obj, rv: int) -> None:
        self.obj = obj
        self.rv = rv
        self.raw = encode(obj)

    def copy(self) -> Obj:
        """A private deep copy to build the next version from."""
        result: Obj = json.loads(self.raw)
        return result
