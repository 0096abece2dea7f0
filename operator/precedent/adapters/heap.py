"""Keep the operator's heap small: few malloc arenas, and the memory freed after start-up
given back to the operating system.

Loading a history (YAML or JSON parsing, pydantic validation) and building the vector index
allocate far more than they keep; glibc's allocator keeps the freed pages in its arenas, so
the operator's RSS stays at the start-up peak. ``malloc_trim(0)`` returns them.

glibc also gives each thread that allocates its own arena (up to eight per core), and pages
freed in one arena are not reused by another. ``limit_arenas`` makes the event loop, the
scoring thread and the executor threads share one (``mallopt(M_ARENA_MAX)``, as
``MALLOC_ARENA_MAX`` does), before those threads start: RSS after 3,000 requests at 10k
incidents 302–330 MiB with two arenas and with glibc's default, 294–296 MiB with one, and the
same CPU per request (``bench_operator``, one round each). A C library without these calls
(musl, macOS) has nothing to do here: the calls are skipped.

Each TLS connection asyncio opens keeps a read buffer of its own, 256 KiB, written full of
zeros when the connection is made, for as long as the connection lives. The operator keeps
one connection per watch stream (a stream per namespace and kind: about 80 on a small
cluster) and its API clients keep one per request in flight at a burst's peak: 175 TLS
connections, 43 MiB, after 3,000 requests. ``small_tls_buffers`` makes the buffer 32 KiB
(two TLS records; a read takes what the buffer holds and the rest on the next turn).
"""

from __future__ import annotations

import asyncio.sslproto
import contextlib
import ctypes
import ctypes.util
import functools
import gc
import os
import pickle
from collections.abc import Callable, Iterator
from typing import TypeVar

from pydantic import BaseModel

from precedent.models import Incident

__all__ = [
    "EqualParts",
    "FieldSets",
    "LoadedIncidents",
    "collector_paused",
    "compacted",
    "freeze_startup_heap",
    "limit_arenas",
    "release_free_memory",
    "small_tls_buffers",
]

_M_ARENA_MAX = -8  # glibc's malloc.h
ARENAS = 1
"""The malloc arenas the operator's threads share."""

T = TypeVar("T")


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


TLS_READ_BUFFER = 32 * 1024
"""Bytes of the read buffer of each TLS connection asyncio makes (its own default: 256 KiB)."""


def small_tls_buffers(size: int = TLS_READ_BUFFER) -> bool:
    """Make each TLS connection's read buffer ``size`` bytes, for connections made from now
    on; False when asyncio has no such buffer or its own is no larger (nothing done)."""
    protocol = getattr(asyncio.sslproto, "SSLProtocol", None)
    current = getattr(protocol, "max_size", None)
    if protocol is None or not isinstance(current, int) or current <= size:
        return False
    protocol.max_size = size
    return True


def release_free_memory() -> bool:
    """Collect garbage, then hand free heap pages back to the OS; False when the C library
    cannot (nothing was returned)."""
    gc.collect()
    trim = _function("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True


COLLECTOR_THRESHOLDS = (2_000, 20, 20)
"""The cyclic garbage collector's thresholds once start-up is done (Python's default: 700,
10, 10). The young generation's bound decides the longest pauses: kopf leaves a few reference
cycles per request (its bodies and patches and their views), which only a collection frees,
and with 10,000 a young collection after a burst of requests found 83,000 unreachable objects
and took 187 ms, stalling the requests behind it (p99 at 20 requests/s 68-125 ms; with 2,000:
15-17 ms, the same CPU per request; docs/performance.md)."""


def freeze_startup_heap() -> int:
    """Collect the young generations' garbage, move every object alive now out of the cyclic
    collector's reach (``gc.freeze``) and collect less often from now on; returns how many
    objects were moved.

    What start-up built (the history's incidents, the vector index's tables, the catalog, the
    imported modules) lives as long as the process, yet every full collection walked all of
    it: at 10k incidents each took 0.14-0.25 s, and the collector cost about 0.5 ms of the CPU
    time of each request. Frozen objects are still freed when nothing refers to them (a
    replaced incident, a rebuilt index); only a reference cycle among them would stay, and the
    history's objects make none.

    What is left for the collector is kopf's and the API clients' per-request garbage (a
    handful of reference cycles per request) among what kopf keeps per object. With Python's
    default thresholds it still took 0.4 ms per request (1.2 s of collections over 3,000
    requests at 10k incidents); with a young generation of 10,000 0.2 ms, for about 5 MiB
    more RSS, but pauses of up to 187 ms; ``COLLECTOR_THRESHOLDS`` keeps the pauses short at
    the same CPU (``tests/bench/bench_operator``; docs/performance.md).

    No full collection first: at 100k incidents it walked the history's 410,000 objects for
    0.30-0.36 s and found nothing, at 10k (YAML) 0.1 s for nothing, both in the operator's
    start-up. The load makes no cycle and collects its young garbage when it ends
    (``collector_paused``); garbage in the oldest generation would be a cycle that outlived two
    younger collections and was then dropped during start-up, and a test checks that a start-up
    leaves none.
    """
    gc.collect(1)
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    return gc.get_freeze_count()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off within the block (back on after it, as it was).

    For loading a history: each full collection walks every object made so far, and a load
    of 100,000 incidents from JSON Lines set off five of them (0.56 s) and 727 younger ones
    (0.22 s), while a load makes no reference cycle to collect (parsed rows, models and their
    compressed texts only refer down). What it throws away is freed by reference counting as
    ever. Once the block ends, one collection of the two younger generations moves what it
    made into the oldest, which only full collections walk: left young, the history was walked
    by every collection of the middle generation while the index was built. That collection
    runs even when the collector was already off (a load within the operator's start-up, which
    keeps it off until the heap is frozen): the start-up's last young collection then walks
    only what came after the load."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        gc.collect(1)


def compacted(make: Callable[[], T]) -> T:
    """What ``make`` returns, made again, packed together, once the garbage made alongside
    it is freed (``make`` is called here so that nothing else holds the first copy).

    A parse (YAML, JSON) allocates its temporary objects among the ones it keeps, so when the
    temporaries go, every page of the heap still holds a few kept objects and none can be
    given back. Made again (a pickle round trip, in this process: nothing from outside is
    unpickled) after the temporaries are gone, the kept objects fill pages of their own and
    the freed ones go back to the system: a YAML history of 10,000 incidents, 233 → 200 MiB
    after start-up, for 0.3 s. A JSON Lines history, parsed one line at a time, leaves less
    garbage among what it keeps, and gains nothing measurable.
    """
    kept = make()
    data = pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)
    del kept
    gc.collect()
    copy: T = pickle.loads(data)
    return copy


class FieldSets:
    """Give pydantic models that were given the same fields one shared record of them, as
    each model is made (``share``); ``replaced`` counts the records given up.

    pydantic keeps, in every model, the set of the fields its input gave
    (``__pydantic_fields_set__``): about 700 bytes per incident and as much again per nested
    model (its resource), alike across the history — 1.4 KB of an incident's 3.4 KB, 14 MiB at
    10k incidents. One set per distinct combination is kept instead (nested models, and models
    in lists and tuples, too). Only ``model_fields_set`` and ``exclude_unset`` dumps read the
    set, and nothing here does; ``model_copy`` gives the copy a set of its own. Assigning to a
    field of a shared model would add the field to every model sharing the set: the history's
    incidents are never assigned to (a change replaces the incident).

    A loader shares each incident as it makes it: the record given up is freed among the next
    incident's temporaries, which reuse its memory. Shared once the whole history was loaded,
    the records left holes between the incidents that no later allocation filled: with a JSON
    Lines history of 100,000 incidents the service took 466 → 365 MiB once built (90 MiB of the
    interpreter's small-object heap had been free and could not be given back;
    docs/performance.md).
    """

    __slots__ = ("_canonical", "replaced")

    def __init__(self) -> None:
        self._canonical: dict[frozenset[str], set[str]] = {}
        self.replaced = 0

    def share(self, model: object) -> None:
        """Share ``model``'s record, its nested models' and those in its lists and tuples."""
        fields = getattr(model, "__pydantic_fields_set__", None)
        if not isinstance(fields, set):
            return
        shared = self._canonical.setdefault(frozenset(fields), fields)
        if shared is not fields:
            object.__setattr__(model, "__pydantic_fields_set__", shared)
            self.replaced += 1
        for value in vars(model).values():
            if isinstance(value, list | tuple):
                for item in value:
                    if isinstance(item, BaseModel):
                        self.share(item)
            elif isinstance(value, BaseModel):
                self.share(value)


class EqualParts:
    """Give models whose nested models are equal one shared instance of them, as each model
    is made (``share``); ``replaced`` counts the instances given up.

    An incident's resource (its type and name) is a model of its own: about 260 bytes with
    its field dict, 26 MiB at 100k incidents, while the same resources recur across a
    history (the same services fail again: the bench's synthetic 100k incidents name 8,329
    resources). Equal means the same class, the same values and the same fields given, so
    every dump is the same; only nested models whose values are all hashable (strings,
    numbers) are shared. As with ``FieldSets``, the history's incidents are never assigned
    to (a change replaces the incident), so sharing is invisible.
    """

    __slots__ = ("_canonical", "replaced")

    def __init__(self) -> None:
        self._canonical: dict[tuple[object, ...], object] = {}
        self.replaced = 0

    def share(self, model: object) -> None:
        """Replace ``model``'s nested models by the first equal ones seen."""
        state = getattr(model, "__dict__", None)
        if not isinstance(state, dict):
            return
        for name, value in list(state.items()):
            if not isinstance(value, BaseModel):
                continue
            fields = getattr(value, "__pydantic_fields_set__", None)
            if not isinstance(fields, set):
                continue
            values = tuple(vars(value).items())
            try:
                key = (type(value), frozenset(fields), values)
                shared = self._canonical.setdefault(key, value)
            except TypeError:  # an unhashable value (a list, a dict): not shared
                continue
            if shared is not value:
                state[name] = shared
                self.replaced += 1


class LoadedIncidents:
    """What a history loader does to each incident as it makes it (``keep``), so that the
    history the operator holds for its lifetime stays small: with ``pack`` the incident keeps
    its long texts compressed (``Incident.packed``); it shares its record of the fields it was
    given (``FieldSets``) and its resource is the equal one of an incident before it
    (``EqualParts``). One instance per history load; the YAML and the JSON Lines loaders
    take one."""

    __slots__ = ("pack", "parts", "sets")

    def __init__(self, *, pack: bool = False) -> None:
        self.pack = pack
        self.sets = FieldSets()
        self.parts = EqualParts()

    def keep(self, incident: Incident) -> Incident:
        """``incident`` as the history keeps it."""
        if self.pack:
            incident = incident.packed()
        self.sets.share(incident)
        self.parts.share(incident)
        return incident
