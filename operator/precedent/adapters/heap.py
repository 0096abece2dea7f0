"""Give the memory freed after start-up back to the operating system.

Loading a history (YAML or JSON parsing, pydantic validation) and building the vector index
allocate far more than they keep; glibc's allocator keeps the freed pages in its arenas, so
the operator's RSS stays at the start-up peak. ``malloc_trim(0)`` returns them. A C library
without it (musl, macOS) has nothing to do here: the call is skipped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable

__all__ = ["release_free_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_free_memory() -> bool:
    """Collect garbage, then hand free heap pages back to the OS; False when the C library
    cannot (nothing was returned)."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
