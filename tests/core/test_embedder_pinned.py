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
from precedent.core.embedding import Bm25Match, DocumentFrequencies, LexicalEmbedder
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


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _texts() -> tuple[list[str], list[str], list[str]]:
    incidents = load_incidents([DATA / "incidents"])
    playbooks = load_playbooks([DATA / "playbooks"])
    requests = [request_text(normalize_request(r.spec)) for r in load_requests([DATA / "requests"])]
    return [incident_text(i) for i in incidents], [p.description for p in playbooks], requests


def current() -> dict[str, str]:
    """Digests of everything the embedder produces for the bundled data, and for the
    benchmark's synthetic incidents (2,000 of them, their titles as queries)."""
    incidents = load_incidents([DATA / "incidents"])
    texts, playbooks, requests = _texts()
    embedder = LexicalEmbedder()
    frequencies = DocumentFrequencies()
    keys = [embedder.feature_keys(t, frequencies) for t in texts]
    for k in keys:
        frequencies.add(k)
    bm25 = Bm25Match()
    terms = [sorted(bm25._terms(t).items()) for t in texts + requests]
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


def test_bundled_data_vectors_are_the_pinned_ones() -> None:
    assert len(load_incidents([DATA / "incidents"])) > 100  # the bundled history, not a stub
    assert current() == PINNED


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


@pytest.mark.parametrize("only", [None, vocabulary.ACTION_CONCEPTS])
def test_concepts_count_as_one_scan_per_concept(only: frozenset[str] | None) -> None:
    texts = [*_fuzz_texts(4000), *_texts()[0], *_texts()[1], *_texts()[2]]
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


def test_an_index_sync_counts_and_embeds_as_one_text_at_a_time() -> None:
    # sync reads each batch's texts once for vectors and counts (``remembering``): the same
    # table and the same vectors as embedding and counting each text on its own.
    from precedent.adapters.vector_neighbours import VectorNeighbours
    from precedent.core.snapshot import History

    incidents = load_incidents([DATA / "incidents"])
    neighbours = VectorNeighbours(LexicalEmbedder(), batch_size=16)
    neighbours.sync(History(incidents))
    embedder, expected = LexicalEmbedder(), DocumentFrequencies()
    for incident in incidents:
        expected.add(embedder.feature_keys(incident_text(incident), expected))
    assert neighbours.frequencies is not None
    assert neighbours.frequencies.documents == expected.documents == len(incidents)
    assert np.array_equal(neighbours.frequencies.counts, expected.counts)
    remembering = LexicalEmbedder()
    with remembering.remembering():
        remembering.embed_documents([incident_text(i) for i in incidents])  # features kept
        vectors = embed_incidents(remembering, incidents)
        keys = [remembering.feature_keys(incident_text(i), expected) for i in incidents]
    assert _digest(vectors) == PINNED["incidents"]
    assert _digest(np.concatenate(keys)) == PINNED["feature-keys"]


def test_a_batch_embeds_each_text_as_it_would_alone() -> None:
    # Rows of one call are computed together; a row must not depend on its neighbours, on
    # the batch's size or on what the embedder saw before.
    texts, playbooks, requests = _texts()
    frequencies = DocumentFrequencies()
    embedder = LexicalEmbedder()
    for text in texts:
        frequencies.add(embedder.feature_keys(text, frequencies))
    mixed = [*texts[:40], "", "the of a", *requests[:20], *playbooks[:20], "scale down " * 300]
    together = LexicalEmbedder()
    for method in ("embed", "embed_documents"):
        batch = getattr(together, method)(mixed)
        alone = np.concatenate([getattr(LexicalEmbedder(), method)([t]) for t in mixed])
        assert batch.tobytes() == alone.tobytes(), method
    batch = together.embed_queries(mixed, frequencies)
    alone = np.concatenate([LexicalEmbedder().embed_queries([t], frequencies) for t in mixed])
    assert batch.tobytes() == alone.tobytes()
    assert not batch[mixed.index("the of a")].any()  # stopwords only: a zero vector
    assert together.embed_one(mixed[0]).tobytes() == together.embed([mixed[0]])[0].tobytes()
