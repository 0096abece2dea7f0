"""BM25 kept in step with the history, and its fusion with the vector cosines."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from precedent.core.embedding import Bm25, Bm25Document, Bm25Match
from precedent.core.semantic import fuse

DOCS = {
    "a": "pod restart loop after OOM kill",
    "b": "postgres connection pool exhausted after config change",
    "c": "pod evicted under disk pressure",
    "d": "scale down of checkout during the sale",
}
QUERY = "postgres pool exhausted pod"


def test_incremental_equals_fitted_after_adds_replaces_and_removes() -> None:
    grown = Bm25Match()
    for doc_id, text in DOCS.items():
        grown.add(doc_id, text)
    grown.add("a", "unrelated words only")  # replaced
    grown.add("a", DOCS["a"])
    grown.remove("d")
    fresh = Bm25Match()
    for doc_id in ("a", "b", "c"):
        fresh.add(doc_id, DOCS[doc_id])
    ids = ["a", "b", "c", "d"]
    assert grown.match(QUERY, ids).tolist() == fresh.match(QUERY, ids).tolist()
    assert grown.match(QUERY, ["d"]).tolist() == [0.0]


def test_match_orders_as_okapi_bm25_and_stays_in_0_1() -> None:
    # Words only: the textbook BM25 it is compared with has no concept terms.
    match = Bm25Match(vocabulary=False)
    for doc_id, text in DOCS.items():
        match.add(doc_id, text)
    ids = list(DOCS)
    shares = match.match(QUERY, ids)
    reference = Bm25(DOCS.values()).score(QUERY)
    assert (
        np.argsort(-shares, kind="stable").tolist()
        == np.argsort(-reference, kind="stable").tolist()
    )
    assert np.allclose(shares / shares.max(), reference / reference.max())
    assert ((shares >= 0) & (shares <= 1)).all()
    assert match.match("nothing shared here", ids).tolist() == [0.0] * 4


@pytest.mark.parametrize(("cosine", "share"), [(0.4, 0.0), (0.4, 0.01), (0.1, 0.5), (0.9, 1.0)])
def test_fusion_never_lowers_the_cosine(cosine: float, share: float) -> None:
    (fused,) = fuse([cosine], [share], 0.3)
    assert fused >= cosine
    assert fused == pytest.approx(max(cosine, 0.7 * cosine + 0.3 * share**0.5))


class _CounterReference:
    """BM25 with a Counter per document, the storage ``Bm25Match`` had before its arrays (each
    document summed by ``Bm25Match._score``, as before): the reference its scores must equal
    bit for bit."""

    def __init__(self, terms_of: Callable[[str], Counter[str]]) -> None:
        self.terms_of = terms_of
        self.docs: dict[str, tuple[Counter[str], int]] = {}
        self.df: Counter[str] = Counter()
        self.total = 0

    def add(self, doc_id: str, text: str) -> None:
        self.remove(doc_id)
        counts = self.terms_of(text)
        self.docs[doc_id] = (counts, sum(counts.values()))
        self.df.update(counts.keys())
        self.total += sum(counts.values())

    def remove(self, doc_id: str) -> None:
        found = self.docs.pop(doc_id, None)
        if found is not None:
            self.df.subtract(found[0].keys())
            self.df = Counter({w: n for w, n in self.df.items() if n > 0})
            self.total -= found[1]

    def match_terms(self, terms: Sequence[str], ids: Sequence[str]) -> list[float]:
        k1, b = 1.2, 0.75
        n = len(self.docs)
        idf = {
            w: math.log(1.0 + (n - self.df[w] + 0.5) / (self.df[w] + 0.5)) if self.df[w] else 0.0
            for w in terms
        }
        ceiling = sum(idf.values()) * (k1 + 1.0)
        out = [0.0] * len(ids)
        if ceiling <= 0 or not self.docs:
            return out
        avg = self.total / n or 1.0
        scorer = Bm25Match(k1=k1, b=b)  # its one-document sum, the one match_texts uses
        for row, doc_id in enumerate(ids):
            if doc_id not in self.docs:
                continue
            counts, length = self.docs[doc_id]
            out[row] = scorer._score(idf, ceiling, avg, counts, length)
        return out


WORDS = (
    "pod",
    "restart",
    "oom",
    "kill",
    "postgres",
    "pool",
    "exhausted",
    "config",
    "change",
    "evicted",
    "disk",
    "pressure",
    "scale",
    "down",
    "checkout",
    "sale",
    "node",
    "drain",
    "pdb",
    "rollback",
    "deployment",
    "replica",
    "dns",
    "timeout",
    "cert",
    "expired",
    "memory",
    "leak",
    "cpu",
    "throttle",
    "ingress",
    "502",
    "latency",
    "queue",
    "backlog",
    "kafka",
    "lag",
    "redis",
    "failover",
)


def test_the_arrays_score_bit_for_bit_as_a_counter_per_document() -> None:
    # Adds, replacements and removals, enough of them for the arrays to be rewritten (dead
    # rows outweighing live ones), and a saved-then-restored copy: every score equal.
    rng = random.Random(7)
    match = Bm25Match()
    reference = _CounterReference(match._terms_of)

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30)))

    def check(against: Bm25Match) -> None:
        ids = [f"d{i}" for i in range(0, 900, 7)] + ["missing"]
        for _ in range(30):
            query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))
            terms = against.known_terms(query)
            expected = reference.match_terms(terms, ids)
            assert against.match_terms(terms, ids).tolist() == expected

    for i in range(900):
        doc_id = f"d{i}"
        body = text()
        match.add(doc_id, body)
        reference.add(doc_id, body)
    check(match)
    rewritten = match._starts  # the arrays as they are before the removals
    for i in rng.sample(range(900), 600):
        if i % 3 == 0:
            match.add(f"d{i}", text() + " replaced")
            body = text()
            match.add(f"d{i}", body)
            reference.add(f"d{i}", body)
        else:
            match.remove(f"d{i}")
            reference.remove(f"d{i}")
    assert match._starts is not rewritten  # the rows were written again
    assert len(match._terms) < sum(len(c) for c, _ in reference.docs.values()) * 2
    check(match)
    restored = Bm25Match()
    restored.restore(match.export())
    check(restored)
    assert sorted(restored.ids()) == sorted(reference.docs)


def test_a_count_beyond_sixteen_bits_is_kept_as_the_most_it_can_hold() -> None:
    """Counts are kept in 16 bits; a longer document (none of the history's fields allows one)
    counts the word 65,535 times, and survives export and restore."""
    bm25 = Bm25Match()
    bm25.add("long", "kafka " * 70_000 + "broker")
    bm25.add("short", "kafka broker restart")
    state = bm25.export()
    kafka = state["vocabulary"].index("kafka")
    first = slice(int(state["offsets"][0]), int(state["offsets"][1]))
    counts = dict(zip(state["terms"][first].tolist(), state["counts"][first].tolist(), strict=True))
    assert counts[kafka] == 65_535
    scores = bm25.match("kafka broker", ["long", "short"])
    assert all(0 < s <= 1 for s in scores.tolist())
    again = Bm25Match()
    again.restore(state)
    assert again.match("kafka broker", ["long", "short"]).tolist() == scores.tolist()


def test_numbers_and_counts_widen_when_one_does_not_fit_and_score_the_same() -> None:
    """Term numbers start in 16 bits and counts in 8; a vocabulary past 65,536 terms and a
    count past 255 widen them, and every score still equals a Counter per document's, before
    and after a save and restore (which keeps them as narrow as the values allow)."""
    match = Bm25Match()
    reference = _CounterReference(match._terms_of)
    assert (match._terms.typecode, match._counts.typecode) == ("H", "B")

    def add(doc_id: str, body: str) -> None:
        match.add(doc_id, body)
        reference.add(doc_id, body)

    def check(against: Bm25Match, query: str, ids: list[str]) -> None:
        terms = against.known_terms(query)
        assert against.match_terms(terms, ids).tolist() == reference.match_terms(terms, ids)

    add("few", "kafka lag kafka broker")
    add("many", "kafka " * 300 + "broker lag")  # a count of 300: counts widen to 16 bits
    assert (match._terms.typecode, match._counts.typecode) == ("H", "H")
    # 70,000 distinct words over 70 documents: term numbers widen to 32 bits.
    for d in range(70):
        add(f"words-{d}", " ".join(f"w{d * 1000 + k}" for k in range(1000)) + " kafka")
    assert match._terms.typecode == "i"
    ids = ["few", "many", "words-0", "words-69", "missing"]
    for query in ("kafka broker", "w69999 kafka", "w5 w68000 lag"):
        check(match, query, ids)
    state = match.export()
    restored = Bm25Match()
    restored.restore(state)
    assert (restored._terms.typecode, restored._counts.typecode) == ("i", "H")
    for query in ("kafka broker", "w69999 kafka", "w5 w68000 lag"):
        check(restored, query, ids)
    small = Bm25Match()
    small.add("one", "kafka lag")
    again = Bm25Match()
    again.restore(small.export())
    assert (again._terms.typecode, again._counts.typecode) == ("H", "B")


def _state(match: Bm25Match) -> tuple[object, ...]:
    return (
        match._words,
        match._numbers,
        (match._terms.typecode, match._terms.tolist()),
        (match._counts.typecode, match._counts.tolist()),
        match._starts.tolist(),
        match._docs,
        match._lengths.tolist(),
        match._fingerprints,
        match._df,
        match._total,
        match._dead,
    )


def test_adding_many_at_once_leaves_the_state_of_adding_them_one_by_one() -> None:
    """``add_many`` against ``add`` in turn: new documents in batches whose numbers and counts
    widen inside a batch, a batch after the document frequencies are worked out, and batches
    with a document already here or one twice (which go one by one)."""
    rng = random.Random(11)

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30)))

    batches: list[list[Bm25Document]] = [
        [Bm25Document(f"d{i}", text(), f"f{i}") for i in range(40)],
        [Bm25Document("many", "kafka " * 300 + "broker lag", "fm")],  # counts widen to 16 bits
        [
            Bm25Document(f"w{d}", " ".join(f"w{d * 1000 + k}" for k in range(1000)))
            for d in range(70)
        ],
        [],
        [Bm25Document("d3", text(), "again"), Bm25Document("new", text(), "n")],  # d3 is here
        [Bm25Document("twice", text()), Bm25Document("twice", text(), "second")],
        [Bm25Document(f"e{i}", text(), f"g{i}") for i in range(30)],
    ]
    one_by_one, at_once = Bm25Match(), Bm25Match()
    for number, batch in enumerate(batches):
        if number == 4:  # from here on the document frequencies are kept up to date
            one_by_one.frequencies()
            at_once.frequencies()
        for document in batch:
            one_by_one.add(document.doc_id, document.text, document.fingerprint)
        at_once.add_many(batch)
        assert _state(at_once) == _state(one_by_one)
    assert at_once._terms.typecode == "i"
    assert at_once._counts.typecode == "H"
    ids = ["d0", "d3", "many", "w69", "twice", "e29", "missing"]
    for query in ("kafka broker", "w69999 kafka", "redis failover lag"):
        terms = at_once.known_terms(query)
        assert (
            at_once.match_terms(terms, ids).tolist() == one_by_one.match_terms(terms, ids).tolist()
        )
