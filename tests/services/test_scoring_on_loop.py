"""When a request may be scored on the event loop: the history's lock is free, the snapshot
built and the vector index in step with it; otherwise it goes to the scoring thread."""

from __future__ import annotations

import threading

from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import LexicalEmbedder
from precedent.core.snapshot import History
from tests.bench.synthetic import incidents
from tests.helpers import scorer


def test_the_loop_is_used_only_when_nothing_needs_rebuilding_or_waiting() -> None:
    neighbours = VectorNeighbours(LexicalEmbedder())
    store = scorer(History(incidents(50)), mode="hybrid", semantic=neighbours).assessor.scorer
    assert store.hold_if_current() is None  # the vector index was never built

    store.prepare_index()
    release = store.hold_if_current()
    assert release is not None
    release()
    # Released: another thread can take the lock at once.
    assert store.history.lock.acquire(timeout=1)
    store.history.lock.release()

    # A changed incident: the snapshot is rebuilt (and the index updated) on the thread.
    spec = incidents(1)[0].model_dump(mode="json")
    store.history.upsert("changed", {**spec, "id": "INC-NEW-1", "title": "a new incident"})
    assert store.hold_if_current() is None
    store.prepare_index()  # what the thread's first request does: rebuild, bring in line
    release = store.hold_if_current()
    assert release is not None
    release()

    # The lock held elsewhere (a search, an update): no wait on the loop.
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with store.history.lock:
            taken.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(10)
        assert store.hold_if_current() is None
    finally:
        done.set()
        holder.join()


def test_rules_mode_needs_no_index() -> None:
    store = scorer(History(incidents(20)), mode="rules").assessor.scorer
    _ = store.history.snapshot
    release = store.hold_if_current()
    assert release is not None
    release()
