"""The compiled core (native/) against the Python features it replaces: the same hashes and
counts in the same order, for the words the embedder gives it and for any list of strings.

The pinned vectors (test_embedder_pinned.py) run with each implementation; these tests reach
what the bundled data does not: unusual words, long repetitions, every n-gram range."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precedent.core.embedding import _WORD, STOPWORDS, LexicalEmbedder, native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="no compiled core: make native")


def _both(text: str, vocabulary: bool = True, **kwargs: object) -> tuple[object, object]:
    native = LexicalEmbedder(native=True, **kwargs)  # type: ignore[arg-type]
    python = LexicalEmbedder(native=False, **kwargs)  # type: ignore[arg-type]
    return native._compute_features(text, vocabulary), python._compute_features(text, vocabulary)


def _same(a: object, b: object) -> None:
    for left, right in zip(a, b, strict=True):  # type: ignore[call-overload]
        if isinstance(left, np.ndarray):
            assert left.dtype == right.dtype == np.int64
            assert left.tolist() == right.tolist()
        else:  # the words and concepts kept for BM25, or None
            assert left == right


def _arrays(found: tuple[bytes, tuple[int, int, int]]) -> list[list[int]]:
    """The four arrays of ``Featurizer.features``: word hashes and counts, n-gram hashes and
    counts."""
    raw, (a, b, c) = found
    flat = np.frombuffer(raw, dtype=np.int64).tolist()
    return [flat[:a], flat[a : a + b], flat[a + b : a + b + c], flat[a + b + c :]]


TEXTS = [
    "",
    "the of a",
    "Scale down checkout from 40 to 4 replicas in production",
    "scale down scale down scale down " * 50,
    "Ünïcödé wörds — only ascii [a-z0-9] runs are words: Straße ΣΊΣΥΦΟΣ",
    "x y z 1 22 333 4444 55555 666666 7777777",
    "drain the node pool; cordon aks-prod-system-0 then drain; rotate credentials",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("vocabulary", [True, False])
def test_the_same_features_as_python(text: str, vocabulary: bool) -> None:
    native, python = _both(text, vocabulary)
    _same(native, python)


@pytest.mark.parametrize("grams", [(1, 1), (2, 3), (4, 6), (3, 9)])
@pytest.mark.parametrize("bigram_weight", [0.0, 0.5])
def test_every_setting_gives_the_same_features(
    grams: tuple[int, int], bigram_weight: float
) -> None:
    for text in TEXTS:
        native, python = _both(text, char_ngrams=grams, bigram_weight=bigram_weight)
        _same(native, python)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("abcdeo xyz019 -_.ÄßΣ\n"), max_size=400))
def test_any_text_gives_the_same_vectors(text: str) -> None:
    native, python = LexicalEmbedder(native=True), LexicalEmbedder(native=False)
    for method in ("embed", "embed_documents"):
        assert getattr(native, method)([text, "restart"]).tobytes() == (
            getattr(python, method)([text, "restart"]).tobytes()
        )


def _python_reference(words: list[str], low: int, high: int) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for word in words:
        padded = f"<{word}>"
        for n in range(low, min(high, len(padded)) + 1):
            for i in range(len(padded) - n + 1):
                counts[padded[i : i + n]] = counts.get(padded[i : i + n], 0) + 1
    return list(counts.items())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), max_size=30))
def test_any_words_are_cut_into_characters_not_bytes(words: list[str]) -> None:
    # The embedder only passes [a-z0-9]+ words; called directly with any strings, the n-grams
    # are of characters, as Python slices them.
    import zlib

    from precedent_native import Featurizer

    _, _, hashes, counts = _arrays(Featurizer(sorted(STOPWORDS), 2, 4, True).features(words, []))
    expected = _python_reference(words, 2, 4)
    assert hashes == [zlib.crc32(g.encode()) for g, _ in expected]
    assert counts == [c for _, c in expected]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["ab", "abc", "bcd", "é", "Σσ", "the", "x"]), max_size=8)),
    st.sampled_from([(0, 0), (1, 1000), (3, 1000), (1000, 5), (1000, 40), (2, 12)]),
)
def test_the_numbered_n_grams_and_their_fallback_give_the_same_features(
    texts: list[list[str]], kept: tuple[int, int]
) -> None:
    # One featurizer over many texts keeps each word's n-grams numbered; with its tables
    # small, words past them (and the texts holding them) are counted over the n-grams'
    # bytes. Either way each text's features are those of a fresh featurizer and of Python.
    import zlib

    from precedent_native import Featurizer

    stop = sorted(STOPWORDS)
    small = Featurizer(stop, 2, 4, True, kept_words=kept[0], kept_grams=kept[1])
    for every in texts:
        words = [w for w in every if w not in STOPWORDS]
        ours = small.features(words, [])
        assert ours == Featurizer(stop, 2, 4, True).features(words, [])
        expected = _python_reference(words, 2, 4)
        _, _, hashes, counts = _arrays(ours)
        assert hashes == [zlib.crc32(g.encode()) for g, _ in expected]
        assert counts == [c for _, c in expected]


def _words(text: str) -> tuple[list[str], list[str]]:
    every = _WORD.findall(text.lower())
    return every, [w for w in every if w not in STOPWORDS]


def test_the_words_of_every_character_are_those_of_python() -> None:
    # Each code point between letters and digits, then on its own: the core lower-cases as
    # str.lower does where it matters (an upper-case ASCII letter, the Kelvin sign, U+0130
    # whose lower case is "i" and a combining dot), and any other character ends a word.
    from precedent_native import Featurizer

    featurizer = Featurizer(sorted(STOPWORDS), 4, 6, True)
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for text in ("".join(f"k{p}9 " for p in points), " ".join(points)):
        assert featurizer.words(text) == _words(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("abAB09 -_.ÄßΣσİıKk\u212a\u0307\n\tthe of"), max_size=200))
def test_any_text_gives_the_words_python_finds(text: str) -> None:
    from precedent_native import Featurizer

    assert Featurizer(sorted(STOPWORDS), 4, 6, True).words(text) == _words(text)


def test_bad_input_is_refused_with_a_type_error() -> None:
    from precedent_native import Featurizer

    featurizer = Featurizer([], 4, 6, True)
    with pytest.raises(TypeError):
        featurizer.features(["ok", 3], [])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="low"):
        Featurizer([], 5, 2, True)


def test_the_embedder_words_are_what_the_core_is_given() -> None:
    # What the compiled core assumes of its input: lower-case ASCII runs.
    assert _WORD.findall("Ünïcödé ABC-def_9".lower()) == ["n", "c", "d", "abc", "def", "9"]


def test_make_test_runs_with_the_compiled_core() -> None:
    # `make test` builds the wheel first (make native) and says so: the skips above must not
    # hide a missing build there.
    if os.environ.get("TEST_NATIVE_CORE") == "required":
        assert native_available()
