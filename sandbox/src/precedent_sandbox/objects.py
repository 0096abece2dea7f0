"""A committed object as the store keeps it: the decoded value and its encoded bytes.

Objects are encoded once per version; gets, lists and every watcher reuse those bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["Obj", "Repeated", "Stored", "duplicate_fields", "encode", "loads"]

Obj = dict[str, Any]


class Repeated(dict[str, Any]):
    """A decoded JSON object that repeated keys: the last value wins (as Go's decoder has it);
    ``keys_repeated`` names them, for ``fieldValidation`` (``duplicate field``)."""

    __slots__ = ("keys_repeated",)

    def __init__(self, pairs: Iterable[tuple[str, Any]], repeated: list[str]) -> None:
        super().__init__(pairs)
        self.keys_repeated = repeated


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    repeated: list[str] = []
    for key, _ in pairs:
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    return Repeated(pairs, repeated) if repeated else dict(pairs)


def loads(text: str | bytes) -> Any:
    """A request body as JSON; objects that repeat a key are :class:`Repeated`."""
    return json.loads(text, object_pairs_hook=_object)


def duplicate_fields(value: Any, path: str = "") -> list[str]:
    """The paths (``spec.replicas``, ``spec.containers[0].name``) of repeated keys in ``value``."""
    found: list[str] = []
    if isinstance(value, dict):
        if isinstance(value, Repeated):
            found.extend(f"{path}.{key}" if path else key for key in value.keys_repeated)
        for key, item in value.items():
            found.extend(duplicate_fields(item, f"{path}.{key}" if path else key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(duplicate_fields(item, f"{path}[{index}]"))
    return found


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
