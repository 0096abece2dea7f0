"""The default lexical embedder's vectors, pinned: a faster embedder must give the same bytes.

Every vector the operator stores or compares is covered: the incidents' index vectors
(title and text, ``embed_incidents``), the documents' vectors with concepts
(``embed_documents``), the playbook catalog's vectors without them (``embed``), the requests'
idf-weighted query vectors (``embed_queries``), the document-frequency keys, BM25's terms and
the concept features — over the bundled incidents, playbooks and requests in ``data/``. The
digests are sha256 of the float32 (or int64) bytes, computed with the embedder as it was before
its concept matching was compiled into one pass; a change to any value, however small, fails.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import random
import re
from typing import Any

import numpy as np
import pytest

from precedent.adapters.evaluation import load_history_jsonl
from precedent.adapters.loader import load_incidents, load_playbooks, load_requests
from precedent.core import vocabulary
from precedent.core.embedding import (
    Bm25Match,
    DocumentFrequencies,
    LexicalEmbedder,
    native_available,
)
from precedent.core.normalize import normalize_request
from precedent.core.semantic import embed_incidents, incident_text, request_text
from tests.bench.synthetic import incidents as bench_incidents
from tests.bench.synthetic import titles as bench_titles
from tests.conftest import PARAPHRASE_HISTORY, ROOT

DATA = ROOT / "data"

# Computed once with the per-concept scan (see the module docstring); never regenerate them to
# make a test pass: a different digest means different vectors, hence different answers.
PINNED = {
    "incidents": "b7edd235402255ae50189f1433eec9eaf11b4db1c6e34d2ee52580cf6658ce57",
    "paraphrase-incidents": "fbe4a350a6013ca5646af7eb97579650ec19a329fa1da8c334bd115c8614b702",
    "documents": "0f4695d8420b377900a07d3f5f259bd44762486fddc42a60dd6d20e1f25abe8f",
    "titles-plain": "bc25d51990af44335e6ce937f30e94e6ef4b96f27e088094e78044d96607c26f",
    "playbooks-plain": "70603734c3aed1e237c7427ed70c25b1b5768d52254fb4cf8f100b2de9367a1c",
    "queries": "33dfe2d52e082ff1089e5d4ac797b11b9f96a696edd2a588775ae722568c8485",
    "feature-keys": "4be22e2d823dc80b04cd93446e4fa955f8e8059e7baa9ae95b748df37a0455e5",
    "bm25-terms": "5fd82228ac48c72a7d7a5c7dc8e0408a12449966765212c4731dab198f3fd00e",
    "concepts": "644e7a04fece227b04f87e536f86857f71dc12158cf3347231285451eba57b96",
    "synthetic-incidents": "80fc3c3b55be6336f264503da251ee95698d6931a55997bc04a0a16da9b9fc81",
    "synthetic-queries": "48eb81da71de9c90540ca586fa8f637c80f684707a296cd026db2206e148d907",
}


# Each implementation of the text features: the compiled core (native/) and Python.
IMPLEMENTATIONS = [
    pytest.param(
        True,
        id="native",
        marks=pytest.mark.skipif(not native_available(), reason="no compiled core: make native"),
    ),
    pytest.param(False, id="python"),
]


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _texts() -> tuple[list[str], list[str], list[str]]:
    incidents = load_incidents([DATA / "incidents"])
    playbooks = load_playbooks([DATA / "playbooks"])
    requests = [request_text(normalize_request(r.spec)) for r in load_requests([DATA / "requests"])]
    return [incident_text(i) for i in incidents], [p.description for p in playbooks], requests


def current(native: bool = True) -> dict[str, str]:
    """Digests of everything the embedder produces for the bundled data, and for the
    benchmark's synthetic incidents (2,000 of them, their titles as queries)."""
    incidents = load_incidents([DATA / "incidents"])
    texts, playbooks, requests = _texts()
    embedder = LexicalEmbedder(native=native)
    frequencies = DocumentFrequencies()
    keys = [embedder.feature_keys(t, frequencies) for t in texts]
    for k in keys:
        frequencies.add(k)
    bm25 = Bm25Match()
    terms = [sorted(bm25._terms_of(t).items()) for t in texts + requests]
    found = [vocabulary.concepts(t) for t in texts + playbooks + requests]
    synthetic = bench_incidents(2_000, seed=7)
    synthetic_frequencies = DocumentFrequencies()
    for incident in synthetic:
        synthetic_frequencies.add(
            embedder.feature_keys(incident_text(incident), synthetic_frequencies)
        )
    return {
        "incidents": _digest(embed_incidents(embedder, incidents)),
        "paraphrase-incidents": _digest(
            embed_incidents(embedder, list(load_history_jsonl(PARAPHRASE_HISTORY).incidents))
        ),
        "documents": _digest(embedder.embed_documents(texts)),
        "titles-plain": _digest(embedder.embed([i.title for i in incidents])),
        "playbooks-plain": _digest(embedder.embed(playbooks)),
        "queries": _digest(embedder.embed_queries(requests, frequencies)),
        "feature-keys": _digest(np.concatenate(keys)),
        "bm25-terms": hashlib.sha256(json.dumps(terms).encode()).hexdigest(),
        "concepts": hashlib.sha256(json.dumps(found).encode()).hexdigest(),
        "synthetic-incidents": _digest(embed_incidents(embedder, synthetic)),
        "synthetic-queries": _digest(
            embedder.embed_queries(bench_titles(500, seed=11), synthetic_frequencies)
        ),
    }


@pytest.mark.parametrize("native", IMPLEMENTATIONS)
def test_bundled_data_vectors_are_the_pinned_ones(native: bool) -> None:
    assert len(load_incidents([DATA / "incidents"])) > 100  # the bundled history, not a stub
    assert LexicalEmbedder(native=native).native is native
    assert current(native) == PINNED


def _reference_concepts(text: str) -> list[str]:
    # One scan per concept, as the vocabulary first matched them: the definition of the counts.
    flat = re.sub(r"[^a-z0-9]+", " ", text.lower())
    found: list[str] = []
    for name, pattern in vocabulary.CONCEPTS.items():
        found.extend([f"~{name}"] * len(pattern.findall(flat)))
    return found


def _fuzz_texts(count: int) -> list[str]:
    # Words of every phrase (the patterns' own literals and their inflections) in random orders,
    # with fillers between them: texts that hit and nearly hit every phrase.
    words = sorted(
        {
            w
            for patterns in vocabulary._PHRASES.values()
            for p in patterns
            for w in re.findall(r"[a-z0-9]+", p)
        }
    )
    words += ["the", "a", "of", "pods", "replicas", "nodes", "ing", "ed", "s", "-", "_", "1", "0"]
    rng = random.Random(22)
    texts = []
    for _ in range(count):
        parts = [rng.choice(words) for _ in range(rng.randint(1, 25))]
        texts.append(
            rng.choice([" ", "", "-", "_"]).join(parts) if rng.random() < 0.2 else " ".join(parts)
        )
    return texts


def _adversarial_texts(count: int) -> list[str]:
    # Texts where the windows around trigger words collide: the same trigger many times over,
    # phrase words separated by exactly the reach (windows touching), one word less or more
    # (overlapping, or a word apart), phrases at a text's first and last word, and long texts
    # of fillers so the windows are many and short.
    rng = random.Random(2022)
    reaches = sorted({r for r in vocabulary._REACH if r is not None})
    phrase_words = sorted(
        {
            w
            for patterns in vocabulary._PHRASES.values()
            for p in patterns
            for w in re.findall(r"[a-z]{2,}|[0-9]", p)
        }
    )
    inflected = [w + rng.choice(["", "s", "ed", "ing", "d"]) for w in phrase_words]
    fillers = ["the", "of", "pods", "x", "7", "web", "api", "to", "up", "down", "in", "out"]
    texts = []
    for _ in range(count):
        reach = rng.choice(reaches)
        parts: list[str] = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.25:  # one trigger repeated
                parts.extend([rng.choice(inflected)] * rng.randint(2, 6))
            else:
                parts.append(rng.choice(inflected))
            gap = rng.choice([0, 1, reach - 1, reach, reach + 1, 2 * reach, 2 * reach + 1])
            parts.extend(rng.choice(fillers) for _ in range(max(gap, 0) + rng.choice([0, 0, 2])))
        if rng.random() < 0.5:  # no filler at the end: a phrase at the last word
            while parts and parts[-1] in fillers:
                parts.pop()
        if rng.random() < 0.3:
            parts = [rng.choice(fillers) for _ in range(rng.randint(20, 120))] + parts
        text = " ".join(parts)
        texts.append(rng.choice(["", "-", "  (", "#"]) + text + rng.choice(["", ".", " -- ", "_"]))
    return texts


@pytest.mark.parametrize("only", [None, vocabulary.ACTION_CONCEPTS])
def test_concepts_count_as_one_scan_per_concept(only: frozenset[str] | None) -> None:
    texts = [*_fuzz_texts(4000), *_adversarial_texts(3000)]
    texts += [*_texts()[0], *_texts()[1], *_texts()[2]]
    # Letters outside a-z are separators, and lower-casing can make some of them a-z.
    texts += ["İnstance \u212aill pods; scale—down ÄPI", "ﬁrewall résolv DNS", "\u212a8s drain", ""]
    for text in texts:
        expected = _reference_concepts(text)
        if only is not None:
            expected = [c for c in expected if c[1:] in only]
        assert vocabulary.concepts(text, only=only) == expected, text


def _covered(items: Any, triggers: tuple[str, ...], prefix: str = "") -> bool:
    """Whether every match of the parsed sequence ``items`` (after the literal ``prefix``)
    contains one of ``triggers``: some run of literal characters, or some group, branch or
    repeated (at least once) part, that every match must pass through contains one. The parser
    moves a prefix the alternatives share in front of them, so a run going into a branch
    carries on in each alternative."""
    constants = importlib.import_module("re._constants")
    run = prefix
    for op, arg in [*items, (None, None)]:
        if op is constants.LITERAL:
            run += chr(arg)
            continue
        if run and any(t in run for t in triggers):
            return True
        if op is constants.BRANCH and all(_covered(b, triggers, run) for b in arg[1]):
            return True
        run = ""
        if op is constants.SUBPATTERN and _covered(arg[-1], triggers):
            return True
        if (
            op in (constants.MAX_REPEAT, constants.MIN_REPEAT)
            and arg[0] >= 1
            and _covered(arg[2], triggers)
        ):
            return True
    return False


@pytest.mark.parametrize("name", list(vocabulary.CONCEPTS))
def test_every_phrase_of_a_concept_contains_one_of_its_triggers(name: str) -> None:
    parser = importlib.import_module("re._parser")
    for phrase in vocabulary._PHRASES[name]:
        parsed = parser.parse(phrase)
        assert _covered(list(parsed), vocabulary.TRIGGERS[name]), (name, phrase)
    # And the check can fail: a phrase whose words are not among the triggers is not covered.
    assert not _covered(list(parser.parse(r"zebra\w*\s+crossing")), vocabulary.TRIGGERS[name])


@pytest.mark.parametrize("native", IMPLEMENTATIONS)
def test_an_index_sync_counts_and_embeds_as_one_text_at_a_time(native: bool) -> None:
    # sync reads each batch's texts once for vectors and counts (``remembering``): the same
    # table and the same vectors as embedding and counting each text on its own.
    from precedent.adapters.vector_neighbours import VectorNeighbours
    from precedent.core.snapshot import History

    incidents = load_incidents([DATA / "incidents"])
    neighbours = VectorNeighbours(LexicalEmbedder(native=native), batch_size=16)
    neighbours.sync(History(incidents))
    embedder, expected = LexicalEmbedder(native=native), DocumentFrequencies()
    for incident in incidents:
        expected.add(embedder.feature_keys(incident_text(incident), expected))
    assert neighbours.frequencies is not None
    assert neighbours.frequencies.documents == expected.documents == len(incidents)
    assert np.array_equal(neighbours.frequencies.counts, expected.counts)
    remembering = LexicalEmbedder(native=native)
    with remembering.remembering():
        remembering.embed_documents([incident_text(i) for i in incidents])  # features kept
        vectors = embed_incidents(remembering, incidents)
        keys = [remembering.feature_keys(incident_text(i), expected) for i in incidents]
    assert _digest(vectors) == PINNED["incidents"]
    assert _digest(np.concatenate(keys)) == PINNED["feature-keys"]


@pytest.mark.parametrize("native", IMPLEMENTATIONS)
def test_a_batch_embeds_each_text_as_it_would_alone(native: bool) -> None:
    # Rows of one call are computed together; a row must not depend on its neighbours, on
    # the batch's size or on what the embedder saw before.
    texts, playbooks, requests = _texts()
    frequencies = DocumentFrequencies()
    embedder = LexicalEmbedder(native=native)
    for text in texts:
        frequencies.add(embedder.feature_keys(text, frequencies))
    mixed = [*texts[:40], "", "the of a", *requests[:20], *playbooks[:20], "scale down " * 300]
    together = LexicalEmbedder(native=native)
    for method in ("embed", "embed_documents"):
        batch = getattr(together, method)(mixed)
        alone = np.concatenate(
            [getattr(LexicalEmbedder(native=native), method)([t]) for t in mixed]
        )
        assert batch.tobytes() == alone.tobytes(), method
    batch = together.embed_queries(mixed, frequencies)
    alone = np.concatenate(
        [LexicalEmbedder(native=native).embed_queries([t], frequencies) for t in mixed]
    )
    assert batch.tobytes() == alone.tobytes()
    assert not batch[mixed.index("the of a")].any()  # stopwords only: a zero vector


def test_a_match_holds_no_more_spaces_than_its_concepts_reach() -> None:
    # The windows are as wide as the most spaces one match can hold, derived from the pattern;
    # every match the scans find over the fuzz texts stays within that bound.
    assert all(r is not None and r >= 0 for r in vocabulary._REACH)
    widest = dict.fromkeys(vocabulary.CONCEPTS, 0)
    for text in [*_fuzz_texts(2000), *_adversarial_texts(2000)]:
        flat = re.sub(r"[^a-z0-9]+", " ", text.lower())
        for name, pattern in vocabulary.CONCEPTS.items():
            for match in pattern.finditer(flat):
                widest[name] = max(widest[name], match.group().count(" "))
    for position, name in enumerate(vocabulary.CONCEPTS):
        assert widest[name] <= vocabulary._REACH[position], name
    assert widest["scale-down"] == 4  # "scaled the web api pods down": the bound is reached


@pytest.mark.parametrize(
    ("pattern", "spaces"),
    [
        (r"scal\w*(?:\s+\w+){0,3}?\s+(?:down|in)\b", 4),
        (r"scale[\s_-]?(?:down|in)\b", 1),
        (r"drain\w*", 0),
        (r"a\s*b|c\s+d\s+e", 2),
        (r"y[^\sx]y", 1),  # a negated set is counted as taking a space
        (r"[^x]y", None),  # one character but any: not known
        (r"a[\sb]{0,3}c", 3),  # a set that takes letters too: spaces apart
        (r"a[\sb]*c", None),
        (r"(?:\s+\w+)+", None),  # no bound: the whole text is scanned
        (r"(a)\s+\1", None),  # a construct the bound does not know
        (r"\s+foo", None),  # may begin with a space: a window would lose it
        (r"\bfoo\w*\s*", None),  # may end with one
        (r"(?:a|\s)?\bfoo", None),
        (r"(?:\s*a)+foo", None),
        (r"\b(?:a\s*)?foo(?:\s*b)?", 2),
    ],
)
def test_the_reach_of_a_pattern(pattern: str, spaces: int | None) -> None:
    assert vocabulary._reach(re.compile(pattern)) == spaces


def test_windows_merge_when_they_overlap_or_touch() -> None:
    words = [f"w{i}" for i in range(40)]

    def spans(at: list[int], reach: int | None) -> list[str]:
        return vocabulary._windows(words, at, reach)

    assert spans([10, 30], 2) == ["w8 w9 w10 w11 w12", "w28 w29 w30 w31 w32"]
    assert spans([10, 15], 2) == [" ".join(words[8:18])]  # touching: one window
    assert spans([10, 16], 2) == [" ".join(words[8:13]), " ".join(words[14:19])]
    assert spans([10, 12, 12, 13], 1) == [" ".join(words[9:15])]  # repeated and overlapping
    assert spans([0, 39], 3) == [" ".join(words[:4]), " ".join(words[36:])]  # the edges
    assert spans([5], None) == [" ".join(words)]
    assert spans([1, 3], 2) == [" ".join(words[:6])]


def test_the_n_gram_tables_start_again_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    # Past their bound the n-gram numbers start again between calls (and the features kept
    # while remembering go with them): the vectors and keys stay the pinned ones.
    from precedent.core import embedding

    monkeypatch.setattr(embedding._Grams, "limit", 300)
    incidents = load_incidents([DATA / "incidents"])
    embedder = LexicalEmbedder(native=False)  # the Python tables
    first = embedder._grams
    frequencies = DocumentFrequencies()
    with embedder.remembering():
        keys = [embedder.feature_keys(incident_text(i), frequencies) for i in incidents]
        vectors = np.concatenate(
            [embed_incidents(embedder, incidents[i : i + 7]) for i in range(0, len(incidents), 7)]
        )
    assert embedder._grams is not first
    assert _digest(vectors) == PINNED["incidents"]
    assert _digest(np.concatenate(keys)) == PINNED["feature-keys"]
    for k in keys:
        frequencies.add(k)
    texts, _, requests = _texts()
    queries = np.concatenate([embedder.embed_queries([r], frequencies) for r in requests])
    assert _digest(queries) == PINNED["queries"]
    # One call of more texts than a batch starts again between its batches.
    before = embedder._grams
    documents = embedder.embed_documents(texts * 3)
    assert embedder._grams is not before
    assert _digest(documents[: len(texts)]) == PINNED["documents"]
    assert (
        documents[len(texts) :].tobytes() == np.concatenate([documents[: len(texts)]] * 2).tobytes()
    )


@pytest.mark.parametrize("native", IMPLEMENTATIONS)
def test_threads_sharing_an_embedder_get_the_vectors_of_one(
    monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    # The n-gram numbers are given one thread at a time, and a batch hashes with the table it
    # counted with, even while another thread starts a new one (a small bound: often).
    import sys
    import threading

    from precedent.core import embedding

    monkeypatch.setattr(embedding._Grams, "limit", 500)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often
    try:
        texts, playbooks, requests = _texts()
        work = [texts[i : i + 9] for i in range(0, len(texts), 9)] + [[r] for r in requests]
        work += [playbooks[i : i + 5] for i in range(0, len(playbooks), 5)]
        expected = [
            LexicalEmbedder(native=native).embed_documents(chunk).tobytes() for chunk in work
        ]
        shared = LexicalEmbedder(native=native)
        wrong: list[int] = []

        def run(offset: int) -> None:
            for round_ in range(3):
                for i in range(len(work)):
                    at = (i + offset * 7 + round_) % len(work)
                    if shared.embed_documents(work[at]).tobytes() != expected[at]:
                        wrong.append(at)

        threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(previous)
    assert not wrong
