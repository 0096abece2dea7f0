"""ObjectMirror: a full list brings memory to the API's contents without undoing newer watch
events that raced with the list."""

from __future__ import annotations

import contextlib
from typing import Any

from precedent.errors import InputError
from precedent.services.mirror import ObjectMirror


def obj(name: str, rv: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": spec}


class Memory:
    """What the history would hold: name → spec."""

    def __init__(self) -> None:
        self.held: dict[str, dict[str, Any]] = {}

    def upsert(self, body: Any) -> None:
        name = body["metadata"]["name"]
        self.held.pop(name, None)
        if body["spec"].get("invalid"):
            raise InputError(f"{name}: invalid")
        self.held[name] = body["spec"]

    def delete(self, name: str) -> None:
        self.held.pop(name, None)


def watch(mirror: ObjectMirror, memory: Memory, body: dict[str, Any]) -> None:
    mirror.apply(
        body["metadata"]["name"], body["metadata"]["resourceVersion"], lambda: memory.upsert(body)
    )


def test_a_list_drops_what_it_lacks_and_takes_what_changed() -> None:
    mirror, memory = ObjectMirror("incidents"), Memory()
    for body in (obj("a", "1", v=1), obj("b", "2", v=1), obj("c", "3", v=1)):
        watch(mirror, memory, body)
    mark = mirror.mark()
    listed = {"a": obj("a", "1", v=1), "b": obj("b", "9", v=2), "d": obj("d", "10", v=1)}
    plan = mirror.resync(listed, mark, upsert=memory.upsert, delete=memory.delete)
    assert plan.applied == ("b", "d")
    assert plan.removed == ("c",)
    assert memory.held == {"a": {"v": 1}, "b": {"v": 2}, "d": {"v": 1}}
    assert mirror.names() == {"a", "b", "d"}
    # The same list again changes nothing.
    assert not mirror.resync(listed, mirror.mark(), upsert=memory.upsert, delete=memory.delete)


def test_watch_events_newer_than_the_list_are_kept() -> None:
    mirror, memory = ObjectMirror("incidents"), Memory()
    watch(mirror, memory, obj("a", "1", v=1))
    watch(mirror, memory, obj("gone", "2", v=1))
    mark = mirror.mark()  # the list is requested here …
    watch(mirror, memory, obj("a", "5", v=3))  # … the watch brings a newer version,
    watch(mirror, memory, obj("new", "6", v=1))  # an object created after the list,
    mirror.remove("gone", lambda: memory.delete("gone"))  # and a deletion after it.
    listed = {"a": obj("a", "1", v=1), "gone": obj("gone", "2", v=1)}
    plan = mirror.resync(listed, mark, upsert=memory.upsert, delete=memory.delete)
    assert not plan
    assert memory.held == {"a": {"v": 3}, "new": {"v": 1}}


def test_an_invalid_listed_object_is_dropped_and_not_taken_again() -> None:
    mirror, memory = ObjectMirror("incidents"), Memory()
    watch(mirror, memory, obj("a", "1", v=1))
    listed = {"a": obj("a", "4", invalid=True)}
    plan = mirror.resync(listed, mirror.mark(), upsert=memory.upsert, delete=memory.delete)
    assert plan.applied == ("a",)
    assert memory.held == {}
    assert not mirror.resync(listed, mirror.mark(), upsert=memory.upsert, delete=memory.delete)


def test_an_invalid_object_from_the_watch_counts_as_applied() -> None:
    mirror, memory = ObjectMirror("incidents"), Memory()
    body = obj("a", "1", invalid=True)
    with contextlib.suppress(InputError):
        watch(mirror, memory, body)
    assert mirror.names() == {"a"}
    assert not mirror.resync({"a": body}, mirror.mark(), upsert=memory.upsert, delete=memory.delete)
