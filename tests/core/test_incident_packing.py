"""An incident with its long texts compressed (``Incident.packed``) reads, dumps, compares and
pickles as the incident it was made from, and the operator's history is loaded that way."""

from __future__ import annotations

import asyncio
import json
import pickle
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from precedent.adapters.evaluation import load_incidents_jsonl
from precedent.adapters.loader import load_incidents
from precedent.models import PACKED_TEXTS, Incident, Severity
from precedent.settings import Settings
from precedent.wiring import build_service, load_history_files

REPO = Path(__file__).resolve().parents[2]
INCIDENTS = REPO / "data" / "incidents"


@pytest.fixture(scope="module")
def bundled() -> list[Incident]:
    return load_incidents([INCIDENTS])


def test_threads_pack_and_read_incidents_at_once(bundled: list[Incident]) -> None:
    """Each thread packs and unpacks with its own compression contexts: incidents packed and
    read on four threads at once read back as they were given."""
    from concurrent.futures import ThreadPoolExecutor

    def round_trip(offset: int) -> bool:
        ok = True
        for _ in range(20):
            for plain in bundled[offset:] + bundled[:offset]:
                packed = plain.packed()
                ok &= packed.description == plain.description and packed.text() == plain.text()
        return ok

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(round_trip, range(4)))


def test_texts_packed_before_and_after_the_dictionary_read_back_alike(
    bundled: list[Incident], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process's packing dictionary is made from the first texts packed: those packed
    before it and those after read back as given, on this thread and on another one whose
    contexts were made before it; the texts after it take fewer bytes than without it."""
    import threading

    import zstandard

    from precedent import models

    monkeypatch.setattr(models, "_DICTIONARY", models._Dictionary())
    monkeypatch.setattr(models, "_CODECS", threading.local())
    early: list[Incident] = []

    def pack_early() -> None:  # this thread's contexts are made before the dictionary
        early.append(bundled[-1].packed())
        assert early[0].description == bundled[-1].description

    other = threading.Thread(target=pack_early)
    other.start()
    other.join()
    assert models._DICTIONARY.made is None
    packed = [plain.packed() for plain in bundled]
    made = models._DICTIONARY.made
    assert made is not None
    # The first text was packed before the dictionary (it reads without one), the last after.
    bare = zstandard.ZstdDecompressor()
    assert bare.decompress(packed[0].__dict__[models.PACKED_KEY])
    with pytest.raises(zstandard.ZstdError):
        bare.decompress(packed[-1].__dict__[models.PACKED_KEY])
    for plain, again in zip(bundled, packed, strict=True):
        assert again == plain
        assert again.text() == plain.text()
    read: list[bool] = []

    def read_all() -> None:  # contexts made before the dictionary, used after it
        read.append(all(p.text() == q.text() for p, q in zip(packed, bundled, strict=True)))
        read.append(early[0].description == bundled[-1].description)

    other = threading.Thread(target=read_all)
    other.start()
    other.join()
    assert read == [True, True]
    later = ["\x1f".join(getattr(i, n) for n in PACKED_TEXTS) for i in bundled[-40:]]
    plain_zstd = zstandard.ZstdCompressor(level=1)
    with_dictionary = sum(len(models._compressed(t)) for t in later)
    without = sum(len(plain_zstd.compress(t.encode())) for t in later)
    assert with_dictionary < 0.9 * without


def test_packed_texts_hold_the_memory_of_their_bytes_only(bundled: list[Incident]) -> None:
    """What packing allocates for the texts is about their compressed size, not the size of
    the buffer they were compressed into (about the texts' own size)."""
    import tracemalloc

    from precedent.models import _compressed

    texts = ["\x1f".join(getattr(i, name) for name in PACKED_TEXTS) for i in bundled] * 20
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        blobs = [_compressed(text) for text in texts]
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    compressed = sum(sys.getsizeof(b) for b in blobs)
    assert sum(map(len, texts)) > 1.5 * compressed  # the texts do compress
    assert grown < compressed + 16 * len(blobs) + sys.getsizeof(blobs)


def test_a_packed_incident_is_the_incident_it_was_made_from(bundled: list[Incident]) -> None:
    for plain in bundled:
        packed = plain.packed()
        assert packed.is_packed, plain.id
        for name in (*PACKED_TEXTS, "title", "tags", "resource", "occurred_at"):
            assert getattr(packed, name) == getattr(plain, name), (plain.id, name)
        assert packed.text() == plain.text()
        assert packed == plain
        assert plain == packed
        for options in ({}, {"by_alias": True, "exclude_none": True}, {"exclude_defaults": True}):
            assert packed.model_dump(mode="json", **options) == plain.model_dump(
                mode="json", **options
            )
        assert packed.model_dump_json(by_alias=True) == plain.model_dump_json(by_alias=True)
        assert repr(packed) == repr(plain)
        assert packed.model_fields_set == plain.model_fields_set
        assert packed.unpacked() == plain
        assert not packed.unpacked().is_packed


def test_a_packed_incident_inside_another_model_dumps_its_texts(bundled: list[Incident]) -> None:
    class Wrapper(BaseModel):
        incidents: list[Incident]

    plain = Wrapper(incidents=bundled[:3])
    packed = Wrapper(incidents=[i.packed() for i in bundled[:3]])
    assert json.loads(packed.model_dump_json()) == json.loads(plain.model_dump_json())
    assert packed.model_dump()["incidents"][0]["description"] == bundled[0].description


def test_a_text_replaced_after_packing_wins_and_the_others_stay(bundled: list[Incident]) -> None:
    plain = next(i for i in bundled if i.root_cause and i.resolution)
    changed = plain.packed().model_copy(update={"description": "replaced"})
    assert changed.description == "replaced"
    assert changed.root_cause == plain.root_cause
    assert changed.model_dump()["description"] == "replaced"
    assert changed != plain
    assert changed == plain.model_copy(update={"description": "replaced"})


def test_the_content_digest_is_kept_by_packing_and_follows_every_change(
    bundled: list[Incident],
) -> None:
    # Packing works the digest out while the texts are at hand; the packed incident's is the
    # plain one's, and a copy with an update or an assignment has the digest of what it holds.
    plain = next(i for i in bundled if i.root_cause and i.resolution)
    packed = plain.packed()
    assert packed.content_digest() == plain.content_digest()
    assert plain.content_digest() == plain.unpacked().model_copy().content_digest()
    for field, value in (("description", "replaced"), ("title", "another title"), ("tags", [])):
        changed = packed.model_copy(update={field: value})
        fresh = plain.model_copy(update={field: value})
        assert changed.content_digest() == fresh.content_digest() != plain.content_digest()
    assigned = plain.packed()
    assigned.severity = Severity.LOW if plain.severity != Severity.LOW else Severity.HIGH
    assert assigned.content_digest() != plain.content_digest()
    assert pickle.loads(pickle.dumps(packed)).content_digest() == plain.content_digest()
    others = {i.content_digest() for i in bundled}
    assert len(others) == len(bundled)


def test_packing_survives_pickle_and_packs_once(bundled: list[Incident]) -> None:
    packed = bundled[0].packed()
    again = pickle.loads(pickle.dumps(packed))
    assert again.is_packed
    assert again == bundled[0]
    assert packed.packed() is packed


def test_nothing_to_pack_or_a_separator_in_a_text_keeps_the_incident_plain() -> None:
    bare = Incident(id="INC-1", title="only a title")
    assert bare.packed() is bare
    odd = Incident(id="INC-2", title="t", description="a\x1fb")
    assert odd.packed() is odd
    assert odd.description == "a\x1fb"


def test_an_unknown_attribute_is_still_an_attribute_error(bundled: list[Incident]) -> None:
    with pytest.raises(AttributeError):
        _ = bundled[0].packed().no_such_field  # type: ignore[attr-defined]


def test_packing_keeps_less(bundled: list[Incident]) -> None:
    def held(incident: Incident) -> int:
        return sum(sys.getsizeof(v) for v in vars(incident).values())

    plain = sum(held(i) for i in bundled)
    packed = sum(held(i.packed()) for i in bundled)
    # The four texts are about 1.4 KB of an incident; compressed together about 0.6 KB.
    assert packed < 0.75 * plain


def test_the_operators_history_loads_packed_from_yaml_and_json_lines(tmp_path: Path) -> None:
    assert all(i.is_packed for i in load_history_files([INCIDENTS]) if i.description)
    rows = [i.model_dump(mode="json") for i in load_incidents([INCIDENTS])]
    jsonl = tmp_path / "history.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    loaded = load_history_files([jsonl])
    assert all(i.is_packed for i in loaded if i.description)
    assert loaded == load_incidents_jsonl(jsonl)  # the same incidents, unpacked


def test_answering_a_request_unpacks_only_what_the_status_quotes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ranking and scoring read no text; the status quotes the top precedent's procedure."""
    settings = Settings(history_path=INCIDENTS, catalog=str(REPO / "data" / "playbooks"))
    service = build_service(settings, require_history=True)
    service.assessor.scorer.prepare_index()
    unpacked: list[str] = []
    original = Incident._unpacked_texts

    def spy(self: Incident) -> dict[str, str]:
        unpacked.append(self.id)
        return original(self)

    monkeypatch.setattr(Incident, "_unpacked_texts", spy)
    specs = [
        {"action": "restart_service", "target": {"kind": "Deployment", "name": "payment-api"}},
        {"action": "scale_down", "target": {"kind": "Deployment", "name": "checkout"}},
        {"action": "drain_node", "target": {"kind": "Node", "name": "aks-prod-1"}},
    ]

    async def answer() -> None:
        try:
            for spec in specs:
                await service.assessor.assess(spec)
        finally:
            await service.aclose()

    asyncio.run(answer())
    assert 0 < len(unpacked) <= 2 * len(specs)


def test_the_incident_schema_still_describes_its_fields_when_dumped() -> None:
    validation = Incident.model_json_schema(mode="validation")
    serialization = Incident.model_json_schema(mode="serialization")
    assert serialization["properties"].keys() == validation["properties"].keys()
