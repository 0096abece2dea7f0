"""The heap helpers: the history made again after its parse is equal to the one parsed."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import gc
import hashlib
import json
import os
import ssl
import weakref
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel

from precedent.adapters.guard_tls import issue_serving, make_ca
from precedent.adapters.heap import (
    COLLECTOR_THRESHOLDS,
    EqualParts,
    LoadedIncidents,
    collector_paused,
    compacted,
    freeze_startup_heap,
    limit_arenas,
    release_free_memory,
    small_tls_buffers,
)
from precedent.adapters.loader import load_incidents, load_requests
from precedent.errors import InputError
from precedent.models import Incident
from precedent.settings import Settings
from precedent.wiring import build_service, load_history_files

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "incidents"


def test_a_compacted_history_equals_the_parsed_one() -> None:
    calls = []

    def make() -> list[object]:
        calls.append(1)
        return list(load_incidents([DATA]))

    parsed = load_incidents([DATA])
    again = compacted(make)
    assert calls == [1]
    assert again == parsed
    assert len(again) > 100  # the bundled history, not a stub
    assert all(a is not b for a, b in zip(again, parsed, strict=True))


def test_the_loaded_history_is_the_files_history() -> None:
    assert load_history_files([DATA]) == load_incidents([DATA])


def test_a_history_loads_with_the_collector_paused_and_on_again_after(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import precedent.wiring as wiring

    seen: list[bool] = []
    load = wiring.load_incidents_jsonl

    def watched(path: Path, *, pack: bool = False) -> list[Incident]:
        seen.append(gc.isenabled())
        return load(path, pack=pack)

    monkeypatch.setattr(wiring, "load_incidents_jsonl", watched)
    good = tmp_path / "history.jsonl"
    good.write_text(json.dumps({"id": "INC-1", "title": "a title"}) + "\n")
    assert [i.id for i in load_history_files([good])] == ["INC-1"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:1"):
        load_history_files([bad])
    assert seen == [False, False]
    assert gc.isenabled()


def test_a_json_lines_row_with_keys_an_incident_lacks_loads_without_them(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    rows = [
        {"id": "INC-1", "title": "a title", "severity": "high", "ticket": "OPS-1", "x": [1]},
        {"id": "INC-2", "description": "No title. Second sentence.", "rootCause": "a cause"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    loaded = load_history_files([path])
    assert [(i.id, i.title, i.severity.value) for i in loaded] == [
        ("INC-1", "a title", "high"),
        ("INC-2", "No title.", "medium"),
    ]
    assert loaded[1].root_cause == "a cause"


def test_the_collector_stays_off_after_a_pause_when_it_was_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_load_within_a_paused_start_up_still_ends_in_the_oldest_generation() -> None:
    # The operator's start-up keeps the collector off until the heap is frozen; the history
    # loaded inside is moved to the oldest generation as the load ends all the same, so that
    # the start-up's last young collection walks only what came after it.
    with collector_paused():
        with collector_paused():
            kept = [[i] for i in range(1000)]
        assert not gc.isenabled()
        oldest = {id(o) for o in gc.get_objects(2)}
        assert {id(k) for k in kept} <= oldest
        later = [[i] for i in range(10)]
        assert not {id(k) for k in later} & oldest
    assert gc.isenabled()


def test_the_heap_calls_say_whether_they_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    # glibc here: both calls exist; an explicit MALLOC_ARENA_MAX wins over the default.
    assert release_free_memory() is True
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_arenas() is False
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert limit_arenas() is True


def test_tls_connections_read_through_the_small_buffer_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TLS exchange many times the buffer's size arrives whole, both ways, through
    connections made after ``small_tls_buffers`` (on loopback, the guard's certificates)."""
    monkeypatch.setattr(asyncio.sslproto.SSLProtocol, "max_size", 256 * 1024)
    assert small_tls_buffers(16 * 1024) is True
    assert asyncio.sslproto.SSLProtocol.max_size == 16 * 1024
    assert small_tls_buffers(64 * 1024) is False  # never made larger again
    ca_cert, ca_key = make_ca()
    cert, key = issue_serving(ca_cert, ca_key, ["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client_side = ssl.create_default_context(cadata=ca_cert.decode())
    payload = os.urandom(3 * 1024 * 1024 + 17)
    buffers: list[int] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.readexactly(len(payload))
        writer.write(hashlib.sha256(data).digest() + data[::-1])
        await writer.drain()
        writer.close()

    async def exchange() -> bytes:
        server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_side)
        port = server.sockets[0].getsockname()[1]
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_side)
            # asyncio's TLS protocol under the stream: the buffer it reads into.
            protocol = getattr(writer.transport, "_ssl_protocol", None)
            buffers.append(len(getattr(protocol, "_ssl_buffer", b"")))
            writer.write(payload)
            await writer.drain()
            answer = await reader.readexactly(32 + len(payload))
            writer.close()
            return answer

    answer = asyncio.run(exchange())
    assert answer[:32] == hashlib.sha256(payload).digest()
    assert answer[32:] == payload[::-1]
    assert buffers == [16 * 1024]


def test_the_startup_heap_is_frozen_out_of_the_collector() -> None:
    thresholds = gc.get_threshold()
    gc.unfreeze()
    try:
        kept = [[i] for i in range(1000)]  # tracked containers alive at "start-up"
        moved = freeze_startup_heap()
        assert moved >= len(kept)
        assert gc.get_freeze_count() == moved
        # A collection no longer walks them: they are in none of its generations.
        walked = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
        assert not walked & {id(k) for k in kept}
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_a_start_up_leaves_no_garbage_for_a_full_collection() -> None:
    # What freeze_startup_heap relies on when it collects only the young generations: a built
    # service with its index leaves no reference cycle in the oldest one to be frozen with it.
    gc.collect()
    settings = Settings(history_path=DATA, catalog=str(REPO / "data" / "playbooks"))
    service = build_service(settings, require_history=True, follows_cluster=True)
    service.assessor.scorer.prepare_index()
    gc.collect(1)
    assert gc.collect() == 0
    assert len(service.assessor.scorer.history.snapshot) > 100  # the bundled history


def test_a_replaced_history_is_freed_without_the_cyclic_collector() -> None:
    # What freeze_startup_heap relies on: the start-up history, once frozen, is only ever
    # freed by reference counting, so it must hold no reference cycle (with the caches the
    # assessments build on it).
    settings = Settings(history_path=DATA, catalog=str(REPO / "data" / "playbooks"))
    assessor = build_service(settings, require_history=True, follows_cluster=True).assessor
    assessor.scorer.prepare_index()

    async def assess_some() -> None:
        try:
            for request in load_requests([REPO / "data" / "requests"])[:20]:
                await assessor.assess(request.spec, now=datetime.now(UTC), namespace="default")
        finally:
            await assessor.aclose()

    asyncio.run(assess_some())
    store = assessor.scorer.history
    assert len(store.snapshot) > 100  # the bundled history, with what assessing it cached
    first = weakref.ref(store.snapshot)
    gc.collect()
    gc.disable()
    try:
        # An Incident object arrives: the next snapshot replaces the first.
        spec = load_incidents([DATA])[0].model_dump(mode="json", by_alias=True, exclude_none=True)
        store.upsert("inc-new", {**spec, "id": "INC-NEW-1"})
        assert len(store.snapshot) == len(load_incidents([DATA])) + 1
        assert first() is None
    finally:
        gc.enable()


def test_loaded_incidents_share_the_record_of_their_fields_and_stay_the_same(
    tmp_path: Path,
) -> None:
    # YAML (through the compacting copy) and JSON Lines: one set per combination of given
    # fields, the incidents equal to the parsed ones, their dumps (exclude_unset too) the same.
    parsed = load_incidents([DATA])
    jsonl = tmp_path / "history.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps(i.model_dump(mode="json", by_alias=True, exclude_unset=True)) + "\n"
            for i in parsed
        )
    )
    for loaded in (load_history_files([DATA]), load_history_files([jsonl])):
        assert loaded == parsed
        sets = {id(i.__pydantic_fields_set__) for i in loaded}
        combinations = {frozenset(i.model_fields_set) for i in loaded}
        assert len(sets) == len(combinations) < len(loaded) // 4
        resources = [i.resource for i in loaded if i.resource is not None]
        assert len({id(r.__pydantic_fields_set__) for r in resources}) < len(resources) // 4
        for mine, theirs in zip(loaded, parsed, strict=True):
            assert mine.model_dump(exclude_unset=True) == theirs.model_dump(exclude_unset=True)


def test_a_copy_of_a_sharing_incident_has_a_record_of_its_own() -> None:
    kept = LoadedIncidents()
    incidents = load_incidents([DATA], kept=kept)[:20]
    assert kept.sets.replaced > 0
    before = set(incidents[1].model_fields_set)
    copy = incidents[0].model_copy(update={"namespace": "shop"})
    assert copy.model_fields_set is not incidents[0].model_fields_set
    assert "namespace" in copy.model_fields_set
    assert set(incidents[1].model_fields_set) == before


def test_incidents_on_the_same_resource_share_one_and_dump_as_before(tmp_path: Path) -> None:
    parsed = load_incidents([DATA])
    kept = LoadedIncidents()
    shared = load_incidents([DATA], kept=kept)
    parts = kept.parts
    assert shared == parsed
    for mine, theirs in zip(shared, parsed, strict=True):
        assert mine.model_dump(exclude_unset=True) == theirs.model_dump(exclude_unset=True)
    resources = [i.resource for i in shared if i.resource is not None]
    distinct = {(r.type, r.name) for r in resources}
    assert parts.replaced == len(resources) - len(distinct) > 0
    assert len({id(r) for r in resources}) == len(distinct)
    # The operator's loaders share them, YAML (through the compacting copy) and JSON Lines.
    for loaded in (
        load_history_files([DATA]),
        load_history_files([_as_jsonl(parsed, tmp_path / "history.jsonl")]),
    ):
        kept = [i.resource for i in loaded if i.resource is not None]
        assert len({id(r) for r in kept}) == len(distinct)
        assert loaded == parsed


def _as_jsonl(incidents: list[Incident], path: Path) -> Path:
    path.write_text("".join(i.model_dump_json() + "\n" for i in incidents))
    return path


def test_a_nested_model_with_an_unhashable_value_is_left_as_it_is() -> None:
    class Part(BaseModel):
        items: list[str]

    class Whole(BaseModel):
        part: Part

    parts = EqualParts()
    first, second = Whole(part=Part(items=["a"])), Whole(part=Part(items=["a"]))
    parts.share(first)
    parts.share(second)
    assert second.part is not first.part
    assert parts.replaced == 0
