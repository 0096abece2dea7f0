"""Keep the operator's heap small: few malloc arenas, and the memory freed after start-up
given back to the operating system.

Loading a history (YAML or JSON parsing, pydantic validation) and building the vector index
allocate far more than they keep; glibc's allocator keeps the freed pages in its arenas, so
the operator's RSS stays at the start-up peak. ``malloc_trim(0)`` returns them.

glibc also gives each thread that allocates its own arena (up to eight per core), and pages
freed in one arena are not reused by another: the scoring thread, the event loop and the
executor threads each grew their own, 30–40 MiB of RSS after a few thousand requests.
``limit_arenas`` caps them (``mallopt(M_ARENA_MAX)``, as ``MALLOC_ARENA_MAX`` does) before
those threads start. A C library without these calls (musl, macOS) has nothing to do here:
the calls are skipped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
from collections.abc import Callable

__all__ = ["limit_arenas", "release_free_memory"]

_M_ARENA_MAX = -8  # glibc's malloc.h
ARENAS = 2
"""The arenas the operator's threads share (the event loop's and the others')."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def _function(name: str) -> Callable[..., int] | None:
    libc = _libc()
    found: Callable[..., int] | None = getattr(libc, name, None) if libc is not None else None
    return found


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` (before the threads that would make more
    start); an explicit ``MALLOC_ARENA_MAX`` in the environment wins. False when not done."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    mallopt = _function("mallopt")
    return mallopt is not None and mallopt(_M_ARENA_MAX, arenas) == 1


def release_free_memory() -> bool:
    """Collect garbage, then hand free heap pages back to the OS; False when the C library
    cannot (nothing was returned)."""
    gc.collect()
    trim = _function("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True
