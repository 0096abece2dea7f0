"""Text embedders that need nothing but numpy: the default lexical embedder and a TF-IDF baseline.

The lexical embedder hashes word unigrams, word bigrams and the 4- to 6-character n-grams of
each word (``<sca``, ``scal``, ``scale`` …) into a fixed number of buckets with a signed hash,
weights each feature by sublinear term frequency (``1 + ln tf``), L2-normalises the word block
and the character block separately, mixes them and L2-normalises the result. Character n-grams make
"scaling" and "scale-down" close without a stemmer; hashing keeps the vector size fixed, so an
incident's vector never changes when the history grows and nothing has to be fitted or
downloaded. ``TfidfEmbedder`` is the plain word TF-IDF baseline the evaluation compares with;
it is fitted on a corpus and is not meant for the operator.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import sys
import threading
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from precedent.core.vocabulary import ACTION_CONCEPTS, settle_words, word_concepts

try:  # the compiled core (native/), when installed: the same features, computed in Rust
    from precedent_native import Featurizer

    _NativeFeaturizer: type[Featurizer] | None = Featurizer
except ImportError:  # pragma: no cover - where the wheel is not installed
    _NativeFeaturizer = None

_ACTION_FEATURES = frozenset(f"~{name}" for name in ACTION_CONCEPTS)
"""The concept features BM25 counts as words (``word_concepts(…, only=ACTION_CONCEPTS)``)."""

__all__ = [
    "STOPWORDS",
    "Bm25",
    "Bm25Match",
    "DocumentFrequencies",
    "FloatMatrix",
    "Frequencies",
    "FrequencyView",
    "LexicalEmbedder",
    "TfidfEmbedder",
    "l2_normalize",
    "tokenize",
]

FloatMatrix = npt.NDArray[np.float32]

_WORD = re.compile(r"[a-z0-9]+")

# Function words carry no topic; dropping them keeps short requests from matching on "the".
_STOPWORDS_TEXT = """
    a about after all also an and any are as at be been before but by can could did do does
    during each for from had has have he her his i if in into is it its more most no not of
    off on only or other our out over same she so some such than that the their them then
    there these they this to too under up very was we were what when where which while who
    will with would you your
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORDS_TEXT.split())


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric words of ``text`` without stopwords."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def l2_normalize(matrix: FloatMatrix) -> FloatMatrix:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: FloatMatrix = (matrix / norms).astype(np.float32, copy=False)
    return out


class DocumentFrequencies:
    """How many history documents contain each (hashed) feature: the idf that weights a query.

    Features are hashed into ``2**20`` counters (4 MiB), so the table's size does not grow
    with the history and collisions between real features are rare. ``add`` and ``remove``
    take one document's distinct feature keys, so keeping the table in step with a history
    that grows one incident at a time costs one document's features per incident.
    """

    def __init__(self, buckets: int = 1 << 20) -> None:
        self.counts = np.zeros(buckets, dtype=np.int32)
        self.documents = 0
        self._mask = buckets - 1
        if buckets & self._mask:
            raise ValueError("buckets must be a power of two")

    @property
    def mask(self) -> int:
        """Bit mask turning a 32-bit feature hash into a counter index."""
        return self._mask

    def add(self, keys: npt.NDArray[np.int64]) -> None:
        """Count one document with these feature keys, each distinct key once (a repeated key
        is not counted twice: numpy's indexed ``+=`` writes each index once)."""
        self.counts[keys] += 1
        self.documents += 1

    def remove(self, keys: npt.NDArray[np.int64]) -> None:
        """Forget one document counted with ``add`` (the same keys, repeated or not)."""
        self.counts[keys] -= 1
        self.documents -= 1

    def clear(self) -> None:
        """Forget every document."""
        self.counts[:] = 0
        self.documents = 0

    def idf(self, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """BM25's ``ln(1 + (N − df + 0.5) / (df + 0.5))``; 0 for features no document has.

        A feature the history never saw cannot match an incident; giving it weight would only
        amplify the hash collisions it lands on.
        """
        return _idf(self.counts[keys].astype(np.float64), float(self.documents))

    def with_documents(self, documents: Sequence[npt.NDArray[np.int64]]) -> FrequencyView:
        """This table as if it also counted ``documents`` (each one's distinct feature keys),
        without changing it: what a query is weighted with when incidents outside the history
        take part in it."""
        return FrequencyView(self, documents)


def _idf(df: npt.NDArray[np.float64], n: float) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = np.log1p((n - df + 0.5) / (df + 0.5))
    out[df <= 0] = 0.0
    return out


class FrequencyView:
    """A :class:`DocumentFrequencies` plus documents it does not hold, read-only: the table
    itself is never written, so requests reading it at the same time see the same counts."""

    def __init__(
        self, base: DocumentFrequencies, documents: Sequence[npt.NDArray[np.int64]]
    ) -> None:
        self._base = base
        merged = np.concatenate(documents) if documents else np.empty(0, dtype=np.int64)
        self._keys, self._counts = np.unique(merged, return_counts=True)
        self.documents = base.documents + len(documents)

    @property
    def mask(self) -> int:
        """The base table's mask."""
        return self._base.mask

    def idf(self, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """:meth:`DocumentFrequencies.idf` over the base counts plus the extra documents."""
        df = self._base.counts[keys].astype(np.float64)
        if self._keys.size:
            at = np.minimum(np.searchsorted(self._keys, keys), self._keys.size - 1)
            df += np.where(self._keys[at] == keys, self._counts[at], 0)
        return _idf(df, float(self.documents))


Frequencies = DocumentFrequencies | FrequencyView
"""A frequency table, or one as if it counted more documents: what a query is weighted with."""


class _Hashes(dict[str, int]):
    """Token → crc32 (stable across processes; ``str.__hash__`` is salted). A token not here
    is hashed on the lookup and kept while there are fewer than ``bound``."""

    bound = 1_000_000

    def __missing__(self, token: str) -> int:
        found = zlib.crc32(token.encode())
        if len(self) < self.bound:
            self[token] = found
        return found


class _Grams(dict[str, tuple[int, ...]]):
    """Word → the numbers of its character n-grams (``<word>`` padded; by length, then
    position). Each distinct n-gram gets its own number, in the order first seen, and its
    crc32 goes to ``hashes`` at that index: a text's n-grams are counted as numbers (one to
    one with the strings, so the same counts in the same order) and hashed by one take. A
    word not here is split on the lookup and kept while there are fewer than 100,000."""

    limit = 500_000

    def __init__(self, low: int, high: int, limit: int | None = None) -> None:
        super().__init__()
        self._low, self._high = low, high
        if limit is not None:
            self.limit = limit
        self.numbers: dict[str, int] = {}
        self.hashes = np.zeros(1024, dtype=np.int64)
        # Numbering is one thread at a time; a word is published (``self[word]``) after its
        # n-grams' hashes are written, so a reader never sees a number without its hash.
        self._lock = threading.Lock()

    def __missing__(self, word: str) -> tuple[int, ...]:
        with self._lock:
            return self._number(word)

    def _number(self, word: str) -> tuple[int, ...]:
        known = self.get(word)
        if known is not None:  # numbered by another thread meanwhile
            return known
        padded = f"<{word}>"
        size = len(padded)
        numbers = self.numbers
        found = []
        for n in range(self._low, min(self._high, size) + 1):
            for i in range(size - n + 1):
                gram = padded[i : i + n]
                number = numbers.get(gram)
                if number is None:
                    number = numbers[gram] = len(numbers)
                    if number >= len(self.hashes):
                        self.hashes = np.concatenate([self.hashes, np.zeros_like(self.hashes)])
                    self.hashes[number] = zlib.crc32(gram.encode())
                found.append(number)
        numbered = tuple(found)
        if len(self) < 100_000:
            self[word] = numbered
        return numbered

    def full(self) -> bool:
        """Whether the tables have grown past their bound (``limit`` n-grams: half a million
        until the history is embedded, see ``LexicalEmbedder.settle``): the caller starts new
        ones between texts, when no number is held."""
        return len(self.numbers) >= self.limit


# Texts embedded together: their blocks are (texts × dimension) float64 arrays.
_BATCH = 256

SETTLED_MARGIN = 50_000
"""Tokens and n-grams the embedder's tables may add once the history is embedded
(``LexicalEmbedder.settle``): about 6 MiB of n-grams, then a new table."""


class _TextFeatures(NamedTuple):
    """A text's features as the vectors use them: its word features' hashes (words, bigrams,
    concepts) and counts, and its character n-grams' hashes and counts, each feature once in
    first-occurrence order. ``words`` and ``concepts``: what BM25 reads of the text (kept
    when the features were computed with the vocabulary, else None)."""

    word_hashes: npt.NDArray[np.int64]
    word_counts: npt.NDArray[np.int64]
    char_hashes: npt.NDArray[np.int64]
    char_counts: npt.NDArray[np.int64]
    words: list[str] | None
    concepts: list[str] | None


def native_available() -> bool:
    """Whether the compiled core (the ``precedent-native`` wheel) is installed."""
    return _NativeFeaturizer is not None


def _norms(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each row's Euclidean norm, bit for bit what ``np.linalg.norm(row)`` gives (its
    ``sqrt(row.dot(row))``): a stacked matmul of vectors takes the same dot product."""
    dots = np.matmul(rows[:, None, :], rows[:, :, None])[:, 0, 0]
    out: npt.NDArray[np.float64] = np.sqrt(dots)
    return out


class LexicalEmbedder:
    """Hashed word, character and concept n-grams with sublinear tf, L2-normalised; offline.

    Documents (incidents) are embedded with ``embed`` and depend on nothing but their text, so
    a stored vector never goes stale. Queries can be embedded with ``embed_queries``, which
    multiplies each query feature by its idf in the history (``DocumentFrequencies``): words
    that every incident shares stop carrying a short request's similarity (the "lnc.ltc"
    weighting of classic vector-space retrieval).
    """

    def __init__(
        self,
        dimension: int = 512,
        *,
        char_ngrams: tuple[int, int] = (4, 6),
        word_weight: float = 0.5,
        bigram_weight: float = 0.5,
        vocabulary: bool = True,
        native: bool = True,
    ) -> None:
        if dimension < 16:
            raise ValueError("dimension must be at least 16")
        lo, hi = char_ngrams
        if not 1 <= lo <= hi:
            raise ValueError("char_ngrams must be (low, high) with 1 <= low <= high")
        self._dimension = dimension
        self._power_of_two = dimension & (dimension - 1) == 0
        self._ngrams = (lo, hi)
        self._word_weight = word_weight
        self._bigram_weight = bigram_weight
        self._vocabulary = vocabulary
        # Token → crc32; the history's vocabulary is small, so this cache stays small.
        self._hashes = _Hashes()
        # Word → its character n-grams' numbers in order: words repeat.
        self._grams = _Grams(lo, hi)
        # Texts' features kept while ``remembering`` (a history being indexed): an incident's
        # vector, its document-frequency keys and its BM25 terms read the same text.
        self._memo: dict[tuple[str, bool], _TextFeatures] | None = None
        # The compiled core, unless asked not to (``native=False``) or not installed: the
        # same features as ``_python_features``, in the same order (tests/core/test_native.py).
        self._native = (
            _NativeFeaturizer(sorted(STOPWORDS), lo, hi, bigram_weight > 0)
            if native and _NativeFeaturizer is not None
            else None
        )

    @property
    def name(self) -> str:
        """``lexical-<dimension>``."""
        return f"lexical-{self._dimension}"

    @property
    def dimension(self) -> int:
        """Vector length."""
        return self._dimension

    @property
    def native(self) -> bool:
        """Whether the compiled core computes the text features."""
        return self._native is not None

    def _hash_all(self, tokens: Sequence[str]) -> npt.NDArray[np.int64]:
        return np.fromiter(map(self._hashes.__getitem__, tokens), dtype=np.int64, count=len(tokens))

    def _blocks(
        self,
        hashes: npt.NDArray[np.int64],
        counts: npt.NDArray[np.int64],
        lengths: list[int],
        frequencies: Frequencies | None,
    ) -> npt.NDArray[np.float64]:
        """One block (words or character n-grams) for each of ``len(lengths)`` texts: row
        ``r`` sums the signed weights of the next ``lengths[r]`` features (their ``hashes``)
        into their buckets."""
        rows, dimension = len(lengths), self._dimension
        weights = 1.0 + np.log(counts.astype(np.float64))
        if frequencies is not None:
            weights *= frequencies.idf(hashes & frequencies.mask)
        # The top bit of the hash gives the sign, so colliding features tend to cancel
        # (hashes are below 2**32: ``hashes >> 31`` is that bit, and 1 − 2·bit is ±1 exactly).
        signs = 1.0 - 2.0 * (hashes >> 31)
        # A power-of-two dimension takes the low bits: the same remainder, cheaper.
        buckets = hashes & (dimension - 1) if self._power_of_two else hashes % dimension
        # Each row's buckets are its own stretch of one flat array; bincount adds in input
        # order into zeros, so every bucket gets its text's features in the text's order.
        bins = np.repeat(np.arange(rows, dtype=np.int64) * dimension, lengths) + buckets
        out: npt.NDArray[np.float64] = (
            np.bincount(bins, weights=signs * weights, minlength=rows * dimension)
            .astype(np.float64, copy=False)
            .reshape(rows, dimension)
        )  # int64 when no features
        return out

    def _gram_hashes(
        self, grams: _Grams, numbers: Iterable[int], count: int
    ) -> npt.NDArray[np.int64]:
        """The crc32 of the n-grams with these numbers in ``grams``."""
        taken: npt.NDArray[np.int64] = grams.hashes[
            np.fromiter(numbers, dtype=np.int64, count=count)
        ]
        return taken

    def _table(self) -> _Grams:
        """The n-gram table a batch uses from its features to its hashes (another thread
        may start a new one meanwhile); a new one when it is full."""
        grams = self._grams
        if grams.full():
            lo, hi = self._ngrams
            grams = self._grams = _Grams(lo, hi, grams.limit)  # the full one's bound
        return grams

    def settle(self, margin: int = SETTLED_MARGIN) -> None:
        """The history is embedded: from now on the token and n-gram tables (and the
        vocabulary's word → concepts table, shared by the process) may grow by ``margin``
        entries each before they are bounded (tokens and words: no longer kept; n-grams: a
        new table, the words numbered again as they come).

        Those tables are kept for embedding a history, where words repeat. Requests bring
        words that never come again (pod hashes, alert ids, numbers): with the bounds set for
        a large history, 20,000 requests each with a new 10-character token and a number
        grew the tables by 84 MiB (478,000 n-grams) before a new table was started. The
        vectors do not change: an n-gram's hash is its crc32, whatever its number."""
        grams = self._grams
        grams.limit = min(grams.limit, len(grams.numbers) + margin)
        if self._native is not None:  # the compiled core's n-gram tables, the same way
            self._native.settle(margin)
        self._hashes.bound = min(self._hashes.bound, len(self._hashes) + margin)
        settle_words(margin)  # the vocabulary's word → concepts table, the same way

    @contextlib.contextmanager
    def remembering(self) -> Iterator[None]:
        """Within the block, a text's features are computed once (an incident's vector, its
        document-frequency keys and its BM25 terms read the same text); forgotten when the
        block ends."""
        self._memo = {}
        try:
            yield
        finally:
            self._memo = None

    def _features(self, text: str, vocabulary: bool) -> _TextFeatures:
        memo = self._memo
        if memo is None:
            return self._compute_features(text, vocabulary)
        found = memo.get((text, vocabulary))
        if found is None:
            found = memo[(text, vocabulary)] = self._compute_features(text, vocabulary)
        return found

    def _compute_features(self, text: str, vocabulary: bool) -> _TextFeatures:
        """A text's features; its words and concepts kept when the vocabulary is read (for
        ``tokens``)."""
        native = self._native
        if native is None:
            every = _WORD.findall(text.lower())
            found = word_concepts(every) if vocabulary and self._vocabulary else None
            return self._python_features(every, found)
        # The core finds the words (``_WORD.findall(text.lower())``) and leaves the stopwords
        # out (``tokenize(text)``); the concepts are the vocabulary's, found in Python.
        every, words = native.words(text)
        found = word_concepts(every) if vocabulary and self._vocabulary else None  # ``concepts``
        raw, (a, b, c) = native.features(words, found if found is not None else [])
        flat = np.frombuffer(raw, dtype=np.int64)
        b += a
        c += b
        return _TextFeatures(
            flat[:a],
            flat[a:b],
            flat[b:c],
            flat[c:],
            words if found is not None else None,
            found,
        )

    def _python_features(self, every: list[str], found: list[str] | None) -> _TextFeatures:
        """``_compute_features`` in Python: the word features (words, bigrams, concepts) and
        the character n-grams (by their numbers in the n-gram table), each counted in
        first-occurrence order, then hashed."""
        words = [w for w in every if w not in STOPWORDS]  # ``tokenize(text)``
        # Words, then bigrams, then concepts, each in first-occurrence order, counted at once.
        parts: list[Iterable[str]] = [words]
        if self._bigram_weight > 0:
            parts.append(map(" ".join, itertools.pairwise(words)))
        if found is not None:
            parts.append(found)
        word_feats: Counter[str] = Counter(itertools.chain.from_iterable(parts))
        # Counted in the order the n-grams occur, word by word, as the vectors were defined.
        grams = self._table()
        chars: Counter[int] = Counter(itertools.chain.from_iterable(map(grams.__getitem__, words)))
        return _TextFeatures(
            self._hash_all(list(word_feats)),
            np.fromiter(word_feats.values(), dtype=np.int64, count=len(word_feats)),
            self._gram_hashes(grams, chars, len(chars)),
            np.fromiter(chars.values(), dtype=np.int64, count=len(chars)),
            words if found is not None else None,
            found,
        )

    def feature_keys(self, text: str, frequencies: DocumentFrequencies) -> npt.NDArray[np.int64]:
        """The distinct counter indices of ``text``'s features, for ``DocumentFrequencies``."""
        return np.unique(self.document_keys(text, frequencies))

    def tokens(self, text: str) -> tuple[list[str], list[str]] | None:
        """Within :meth:`remembering`, for a text embedded there with the vocabulary: its words
        (``tokenize(text)``) and its concept features (``concepts(text)``); else None."""
        memo = self._memo
        found = memo.get((text, True)) if memo is not None else None
        if found is None or found.words is None or found.concepts is None:
            return None
        return found.words, found.concepts

    def document_keys(self, text: str, frequencies: DocumentFrequencies) -> npt.NDArray[np.int64]:
        """The counter indices of ``text``'s features, a key repeated where two features share
        a bucket: what :meth:`DocumentFrequencies.add` counts once each. Within
        :meth:`remembering`, the features its vector was made of are reused."""
        found = self._features(text, True)
        keys: npt.NDArray[np.int64] = (
            np.concatenate([found.word_hashes, found.char_hashes]) & frequencies.mask
        )
        return keys

    def _embed_many(
        self,
        texts: Sequence[str],
        frequencies: Frequencies | None,
        vocabulary: bool = True,
    ) -> FloatMatrix:
        if len(texts) == 1:  # one request's query: no batch arrays to set up
            return self._embed_single(texts[0], frequencies, vocabulary)[None, :]
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            chunk = texts[start : start + _BATCH]
            out[start : start + len(chunk)] = self._embed_batch(chunk, frequencies, vocabulary)
        return out

    def _embed_single(
        self, text: str, frequencies: Frequencies | None, vocabulary: bool
    ) -> npt.NDArray[np.float32]:
        """``_embed_batch`` for one text with one-dimensional arrays: the same operations."""
        found = self._features(text, vocabulary)
        vec = np.zeros(self._dimension, dtype=np.float64)
        for weight, counts, hashes in (
            (self._word_weight, found.word_counts, found.word_hashes),
            (1.0 - self._word_weight, found.char_counts, found.char_hashes),
        ):
            if not len(counts):
                continue
            block = self._block(hashes, counts, frequencies)
            norm = np.sqrt(block.dot(block))  # ``np.linalg.norm(block)``, as it computes it
            if norm > 0:
                vec += weight * block / norm
        norm = np.sqrt(vec.dot(vec))
        if norm > 0:
            vec /= norm
        return vec.astype(np.float32)

    def _block(
        self,
        hashes: npt.NDArray[np.int64],
        counts: npt.NDArray[np.int64],
        frequencies: Frequencies | None,
    ) -> npt.NDArray[np.float64]:
        """``_blocks`` for one text (its row's offset is 0): the same operations."""
        weights = 1.0 + np.log(counts.astype(np.float64))
        if frequencies is not None:
            weights *= frequencies.idf(hashes & frequencies.mask)
        signs = 1.0 - 2.0 * (hashes >> 31)
        dimension = self._dimension
        buckets = hashes & (dimension - 1) if self._power_of_two else hashes % dimension
        out: npt.NDArray[np.float64] = np.bincount(
            buckets, weights=signs * weights, minlength=dimension
        ).astype(np.float64, copy=False)
        return out

    def _embed_batch(
        self, texts: Sequence[str], frequencies: Frequencies | None, vocabulary: bool
    ) -> FloatMatrix:
        """Each text's unit vector: ``normalise(w · words/|words| + (1 − w) · grams/|grams|)``,
        a block left out when it has no features or a zero norm; the rows are computed
        together, each with the same operations in the same order as alone."""
        found = [self._features(text, vocabulary) for text in texts]
        vec = np.zeros((len(texts), self._dimension), dtype=np.float64)
        word_hashes = np.concatenate([f.word_hashes for f in found])
        word_counts = np.concatenate([f.word_counts for f in found])
        word_lengths = [len(f.word_hashes) for f in found]
        char_hashes = np.concatenate([f.char_hashes for f in found])
        char_counts = np.concatenate([f.char_counts for f in found])
        char_lengths = [len(f.char_hashes) for f in found]
        for weight, block in (
            (
                self._word_weight,
                self._blocks(word_hashes, word_counts, word_lengths, frequencies),
            ),
            (
                1.0 - self._word_weight,
                self._blocks(char_hashes, char_counts, char_lengths, frequencies),
            ),
        ):
            norms = _norms(block)
            # ``weight * block / norm``, in place, in that order.
            np.multiply(block, weight, out=block)
            np.divide(block, np.where(norms > 0, norms, 1.0)[:, None], out=block)
            block[norms <= 0] = 0.0  # a block without features (or norm 0) adds nothing
            vec += block
        norms = _norms(vec)
        vec /= np.where(norms > 0, norms, 1.0)[:, None]
        return vec.astype(np.float32)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Unit vectors without concept features, one row per text (the playbook catalog's
        comparison, whose calibration was measured without them)."""
        return self._embed_many(texts, None, vocabulary=False)

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        """Incident unit vectors with concept features; they depend on the text alone."""
        return self._embed_many(texts, None)

    def embed_queries(self, texts: Sequence[str], frequencies: Frequencies) -> FloatMatrix:
        """Query unit vectors whose features are weighted by their idf in ``frequencies``."""
        return self._embed_many(texts, frequencies)


class TfidfEmbedder:
    """Plain word TF-IDF (raw tf × smoothed idf, L2-normalised), fitted on a corpus.

    The evaluation's baseline: vocabulary and idf come from the history it is fitted on, so
    vectors change whenever the history does. Words unseen at fit time are ignored.
    """

    def __init__(self, corpus: Iterable[str]) -> None:
        docs = [tokenize(t) for t in corpus]
        df: Counter[str] = Counter()
        for words in docs:
            df.update(set(words))
        self._vocab = {w: i for i, w in enumerate(sorted(df))}
        n = len(docs)
        self._idf = np.array(
            [math.log((1 + n) / (1 + df[w])) + 1.0 for w in sorted(df)], dtype=np.float32
        )

    @property
    def name(self) -> str:
        """``tfidf``."""
        return "tfidf"

    @property
    def dimension(self) -> int:
        """Vocabulary size."""
        return max(1, len(self._vocab))

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """TF-IDF unit vectors over the fitted vocabulary."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word, tf in Counter(tokenize(text)).items():
                col = self._vocab.get(word)
                if col is not None:
                    out[row, col] = tf * self._idf[col]
        return l2_normalize(out)


class Bm25:
    """Okapi BM25 over word tokens, fitted on a corpus: the textbook baseline (k1 1.2, b 0.75).

    ``score(query)`` is ``Σ idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len / avglen))``
    over the query's distinct words, with ``idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))``.
    It ranks; its scores are not on a 0–1 scale, so it has no calibration and no hybrid mode.
    """

    def __init__(self, corpus: Iterable[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        docs = [Counter(tokenize(t)) for t in corpus]
        self._k1, self._b = k1, b
        n = len(docs)
        lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
        avg = float(lengths.mean()) if n and lengths.mean() > 0 else 1.0
        self._norm = k1 * (1.0 - b + b * lengths / avg)
        df: Counter[str] = Counter()
        for d in docs:
            df.update(d.keys())
        self._idf = {w: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        # Postings: word → (document positions, term frequencies).
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for pos, d in enumerate(docs):
            for word, tf in d.items():
                entry = postings.setdefault(word, ([], []))
                entry[0].append(pos)
                entry[1].append(float(tf))
        self._postings = {
            w: (np.array(p, dtype=np.int64), np.array(t, dtype=np.float64))
            for w, (p, t) in postings.items()
        }
        self._size = n

    @property
    def name(self) -> str:
        """``bm25``."""
        return "bm25"

    def score(self, query: str) -> npt.NDArray[np.float64]:
        """One BM25 score per fitted document (0 where no query word occurs)."""
        out = np.zeros(self._size, dtype=np.float64)
        for word in set(tokenize(query)):
            found = self._postings.get(word)
            if found is None:
                continue
            pos, tf = found
            out[pos] += self._idf[word] * tf * (self._k1 + 1.0) / (tf + self._norm[pos])
        return out


def _segments(begin: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """The positions ``begin[i] … begin[i] + sizes[i] - 1`` of every segment, in order."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.intp)
    first = np.cumsum(sizes) - sizes
    return (np.arange(total) - np.repeat(first - begin, sizes)).astype(np.intp)


_COUNT_MAX = 0xFFFF
"""A term's count in one document, as ``Bm25Match`` keeps it (16 bits). The longest incident
holds about 17,000 characters, so no count reaches it; one that did would score as this many."""

# ``Bm25Match`` keeps its term numbers and counts in the narrowest of these array types that
# holds every value so far, widening (once, in place of the whole array) when one does not fit.
_TERM_TYPES = ("H", "i")  # 16 bits while the vocabulary has at most 65,536 terms, then 32
_COUNT_TYPES = ("B", "H")  # 8 bits while no count passes 255, then 16 (COUNT_MAX)
_BEYOND = {"B": 1 << 8, "H": 1 << 16, "i": 1 << 31}  # the first value each type cannot hold


def _type_for(types: tuple[str, ...], largest: int, at_least: str | None = None) -> str:
    """The first of ``types`` (from ``at_least`` on) that holds ``largest``."""
    for code in types[types.index(at_least or types[0]) :]:
        if largest < _BEYOND[code]:
            return code
    raise OverflowError(f"{largest} does not fit in any of {types}")


def _widened(values: array[int], types: tuple[str, ...], largest: int) -> array[int]:
    """``values``, or the same values in a wider one of ``types`` when ``largest`` does not
    fit theirs."""
    code = _type_for(types, largest, values.typecode)
    if code == values.typecode:
        return values
    return array(code, _view(values).astype(code).tobytes())


def _view(values: array[int]) -> npt.NDArray[Any]:
    """The array's values as numpy sees them (no copy)."""
    return np.frombuffer(values, dtype=values.typecode)


def _narrowest(values: npt.NDArray[np.signedinteger[Any]], types: tuple[str, ...]) -> array[int]:
    """``values`` in the first of ``types`` that holds them all."""
    code = _type_for(types, int(values.max()) if values.size else 0)
    return array(code, values.astype(code).tobytes())


class Bm25Document(NamedTuple):
    """One document for :meth:`Bm25Match.add_many`, as :meth:`Bm25Match.add` takes it."""

    doc_id: str
    text: str
    fingerprint: str = ""
    tokens: tuple[list[str], list[str]] | None = None


class Bm25Match:
    """Okapi BM25 kept in step with a changing set of documents, scoring chosen documents.

    Documents are added, replaced and removed by id (the history's incidents), so the
    document frequencies and the average length follow the history one incident at a time.
    ``match(query, ids)`` scores only the given documents — the vector index's candidates —
    so a query costs (candidates × query words), not a pass over the history.

    Each score is divided by the most the query could score (every query word matched by a
    document of average length with a large tf: ``Σ idf(t) · (k1 + 1)``), giving 0–1 that
    does not depend on the other candidates: a weak match stays weak however few candidates
    there are.

    The documents' terms are kept in three flat arrays, not a ``Counter`` per document (about
    1.5 KB each: 15 MiB at 10k incidents, 150 at 100k): the vocabulary's number of each term,
    sorted within a document, its count, and where each document's row starts. Numbers and
    counts are kept as narrow as the values so far allow (16 bits while the vocabulary has at
    most 65,536 terms, 8 while no count passes 255) and widened when one does not fit: at 100k
    incidents 37 → 19 MiB. A replaced or removed document's row stays until the
    dead rows outweigh the live ones; then the arrays are rewritten. Scores are the same, bit
    for bit, as summing over a ``Counter`` per document (``tests/core/test_bm25_fusion.py``
    keeps that reference).
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, vocabulary: bool = True) -> None:
        self._k1, self._b = k1, b
        # The vocabulary's action concepts (``~scale-down``) count as words on both sides, so
        # the sparse leg also sees "lower the replica count" as a scale-down. Only the verbs:
        # a topic concept (``~dns``) would add a second match for words BM25 already matches
        # ("dns", "coredns"), raising a read-only DNS check's similarity to DNS incidents.
        self._vocabulary = vocabulary
        self._words: list[str] = []  # term number → term
        self._numbers: dict[str, int] = {}  # term → its number
        self._terms = array(_TERM_TYPES[0])  # every row's term numbers, ascending in a row
        self._counts = array(_COUNT_TYPES[0])  # and their counts (at most COUNT_MAX)
        self._starts = array("q", [0])  # row r is [_starts[r], _starts[r + 1])
        self._dead = 0  # entries in rows no document uses any more
        self._docs: dict[str, int] = {}  # id → its row
        # By row (a removed document's until the rewrite): its length and fingerprint. Not a
        # tuple per document: 6 MiB less at 100k incidents.
        self._lengths = array("I")
        self._fingerprints: list[str] = []
        # Documents holding each term: worked out from the rows once a build or a restore is
        # done (``frequencies``: one bincount instead of a Counter update per document added),
        # then kept up to date by each addition and removal. None: not worked out yet.
        self._df: Counter[str] | None = None
        self._total = 0

    def __len__(self) -> int:
        return len(self._docs)

    def fingerprint(self, doc_id: str) -> str | None:
        """The fingerprint the document was added with (None: not here)."""
        row = self._docs.get(doc_id)
        return None if row is None else self._fingerprints[row]

    def ids(self) -> list[str]:
        """The documents' ids."""
        return list(self._docs)

    def _row(self, row: int) -> tuple[list[int], list[int]]:
        start, end = self._starts[row], self._starts[row + 1]
        return self._terms[start:end].tolist(), self._counts[start:end].tolist()

    def export(self) -> dict[str, Any]:
        """Every document's terms as flat arrays (with ``restore``: the saved index's
        companion, so a restart need not read every incident's text again)."""
        ids, fingerprints, lengths, rows = [], [], [], []
        for doc_id, row in self._docs.items():
            ids.append(doc_id)
            fingerprints.append(self._fingerprints[row])
            lengths.append(self._lengths[row])
            rows.append(row)
        starts = np.frombuffer(self._starts, dtype=np.int64)
        picked = np.asarray(rows, dtype=np.intp)
        sizes = starts[picked + 1] - starts[picked]
        flat = _segments(starts[picked], sizes)
        return {
            "ids": ids,
            "fingerprints": fingerprints,
            "vocabulary": list(self._words),
            "lengths": np.array(lengths, dtype=np.int64),
            "offsets": np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
            # As narrow as they are kept (``restore`` reads any integer type): at 100k incidents
            # the saved counts were 48 MiB of 32-bit numbers, 18 MiB this way.
            "terms": _view(self._terms)[flat],
            "counts": _view(self._counts)[flat],
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Replace every document with those of an ``export`` (the caller checked it)."""
        words = [str(w) for w in state["vocabulary"]]
        offsets = np.asarray(state["offsets"], dtype=np.int64)
        terms = np.asarray(state["terms"], dtype=np.int32)
        counts = np.asarray(state["counts"], dtype=np.int32)
        lengths = np.asarray(state["lengths"], dtype=np.int64).tolist()
        owner = np.repeat(np.arange(len(lengths), dtype=np.int64), np.diff(offsets))
        order = np.lexsort((terms, owner))  # ascending term numbers within each row
        self._words = [sys.intern(w) for w in words]
        self._numbers = {w: n for n, w in enumerate(self._words)}
        self._terms = _narrowest(terms[order], _TERM_TYPES)
        self._counts = _narrowest(np.minimum(counts[order], _COUNT_MAX), _COUNT_TYPES)
        self._starts = array("q", offsets.tobytes())
        self._dead = 0
        ids, fingerprints = list(state["ids"]), list(state["fingerprints"])
        if not len(ids) == len(fingerprints) == len(lengths):
            raise ValueError(
                f"{len(ids)} ids, {len(fingerprints)} fingerprints, {len(lengths)} rows"
            )
        self._docs = {str(doc_id): row for row, doc_id in enumerate(ids)}
        self._lengths = array("I", lengths)
        self._fingerprints = [str(f) for f in fingerprints]
        self._df = None  # worked out from the rows at the first read
        self._total = int(sum(lengths))

    def _terms_of(
        self, text: str, tokens: tuple[list[str], list[str]] | None = None
    ) -> Counter[str]:
        if tokens is not None:  # the words and every concept, as the embedder read them
            words, found = tokens
            counts = Counter(words)
            if self._vocabulary:
                counts.update(f for f in found if f in _ACTION_FEATURES)
            return counts
        every = _WORD.findall(text.lower())
        counts = Counter([w for w in every if w not in STOPWORDS])  # ``tokenize(text)``
        if self._vocabulary:
            counts.update(word_concepts(every, only=ACTION_CONCEPTS))
        return counts

    def add(
        self,
        doc_id: str,
        text: str,
        fingerprint: str = "",
        *,
        tokens: tuple[list[str], list[str]] | None = None,
    ) -> None:
        """Add (or replace) one document (``tokens``: its words and concept features, as
        :meth:`LexicalEmbedder.tokens` gives them, when the text was read already)."""
        self.remove(doc_id)
        self._append([Bm25Document(doc_id, text, fingerprint, tokens)])

    def add_many(self, documents: Sequence[Bm25Document]) -> None:
        """:meth:`add` for each document in turn, with the same state. New documents' rows
        are appended together (``_append``): at 100,000 incidents, in batches of 256 as an
        index build adds them, 2.8-2.9 s one by one against 2.3-2.6 s at once (counting the
        terms is most of the rest). A document already here, or twice in ``documents``, goes
        through ``add``."""
        ids = [document.doc_id for document in documents]
        if len(set(ids)) < len(ids) or any(doc_id in self._docs for doc_id in ids):
            for document in documents:
                self.add(*document[:3], tokens=document.tokens)
            return
        self._append(documents)

    def _append(self, documents: Sequence[Bm25Document]) -> None:
        """A row for each document, none of them here yet and no id twice: their terms
        numbered (new terms in the order they first occur), sorted within each row and
        appended in one pass over flat arrays, widened first when a number or count needs it."""
        if not documents:
            return
        known, words = self._numbers, self._words
        numbers: list[int] = []
        counts: list[int] = []
        sizes: list[int] = []
        lengths: list[int] = []
        counted: list[Counter[str]] = []
        for document in documents:
            terms = self._terms_of(document.text, document.tokens)
            if not known.keys() >= terms.keys():  # new terms, numbered as they first occur
                for term in terms:
                    if term not in known:
                        known[term] = len(words)
                        words.append(sys.intern(term))
            numbers.extend(map(known.__getitem__, terms))
            values = terms.values()
            counts.extend(values)
            sizes.append(len(terms))
            lengths.append(sum(values))
            if self._df is not None:
                counted.append(terms)
        flat_numbers = np.array(numbers, dtype=np.int64)
        owner = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        order = np.lexsort((flat_numbers, owner))  # ascending term numbers within each row
        flat_counts = np.minimum(np.array(counts, dtype=np.int64)[order], _COUNT_MAX)
        self._terms = _widened(self._terms, _TERM_TYPES, len(words) - 1)
        if flat_counts.size:
            self._counts = _widened(self._counts, _COUNT_TYPES, int(flat_counts.max()))
        self._terms.frombytes(flat_numbers[order].astype(self._terms.typecode).tobytes())
        self._counts.frombytes(flat_counts.astype(self._counts.typecode).tobytes())
        first = len(self._starts) - 1
        self._starts.extend((np.cumsum(sizes, dtype=np.int64) + self._starts[-1]).tolist())
        self._docs.update(
            zip((d.doc_id for d in documents), range(first, first + len(documents)), strict=True)
        )
        self._lengths.extend(lengths)
        self._fingerprints.extend(document.fingerprint for document in documents)
        if self._df is not None:
            for terms in counted:
                self._df.update(terms.keys())  # each term of the document once
        self._total += sum(lengths)

    def remove(self, doc_id: str) -> bool:
        """Forget one document; False if it was not here."""
        row = self._docs.pop(doc_id, None)
        if row is None:
            return False
        length = self._lengths[row]
        self._fingerprints[row] = ""
        numbers, _ = self._row(row)
        df = self._df
        if df is not None:
            for number in numbers:
                word = self._words[number]
                df[word] -= 1
                if df[word] <= 0:
                    del df[word]
        self._total -= length
        self._dead += len(numbers)
        if self._dead > max(4096, len(self._terms) // 2):
            self._rewrite()
        return True

    def _rewrite(self) -> None:
        """The arrays again, with the rows of the documents here only."""
        state = self.export()
        self.restore(state)

    def frequencies(self) -> Counter[str]:
        """The documents holding each term, worked out from the rows when not known (the
        index asks once it is built, so that what this allocates is freed before the
        operator hands free memory back: asked first by a request, it stayed, 13 MiB at 10k)."""
        df = self._df
        if df is None:
            terms = _view(self._terms)
            if self._dead:  # only the rows of the documents here
                starts = np.frombuffer(self._starts, dtype=np.int64)
                rows = np.fromiter(self._docs.values(), dtype=np.intp, count=len(self._docs))
                terms = terms[_segments(starts[rows], starts[rows + 1] - starts[rows])]
            counts = np.bincount(terms, minlength=len(self._words)).tolist() if terms.size else []
            df = self._df = Counter({self._words[n]: c for n, c in enumerate(counts) if c > 0})
        return df

    def _idf(self, word: str) -> float:
        df = self.frequencies().get(word, 0)
        if df <= 0:
            return 0.0
        n = len(self._docs)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def known_terms(self, query: str) -> tuple[str, ...]:
        """The query's terms that some added document has, sorted: all that ``match`` reads
        of the query (a term no document has weighs nothing), so two queries with the same
        known terms get the same scores."""
        df = self.frequencies()
        return tuple(sorted(w for w in set(self._terms_of(query)) if df.get(w, 0) > 0))

    def match(self, query: str, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """One 0–1 score per id in ``ids`` (0 for ids not added)."""
        return self.match_terms(self.known_terms(query), ids)

    def match_terms(self, terms: Sequence[str], ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """``match`` for a query's ``known_terms``, summed in their (sorted) order."""
        out = np.zeros(len(ids), dtype=np.float64)
        idf = {w: self._idf(w) for w in terms}
        ceiling = sum(idf.values()) * (self._k1 + 1.0)
        if ceiling <= 0 or not self._docs:
            return out
        avg = self._total / len(self._docs) or 1.0
        # A term no document has (weight 0) adds nothing: every term here has a number.
        weights = [(self._numbers[w], weight) for w, weight in idf.items() if weight > 0]
        docs = self._docs
        found = [(place, docs[i]) for place, i in enumerate(ids) if i in docs]
        if not found or not weights:
            return out
        places = [place for place, _ in found]
        picked = np.fromiter((row for _, row in found), dtype=np.intp, count=len(found))
        lengths = np.frombuffer(self._lengths, dtype=np.uint32)[picked].astype(np.float64)
        starts = np.frombuffer(self._starts, dtype=np.int64)
        begin = starts[picked]
        sizes = starts[picked + 1] - begin
        flat = _segments(begin, sizes)
        if flat.size == 0:
            return out
        # Each candidate's terms, keyed (candidate, term number): ascending, so one sorted
        # search finds every (candidate, query term) pair's count.
        span = len(self._words)
        owner = np.repeat(np.arange(len(found), dtype=np.int64) * span, sizes)
        keys = owner + _view(self._terms)[flat]
        numbers = np.fromiter((n for n, _ in weights), dtype=np.int64, count=len(weights))
        wanted = np.arange(len(found), dtype=np.int64)[:, None] * span + numbers
        at = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
        tf = np.where(keys[at] == wanted, _view(self._counts)[flat][at], 0)
        tf = tf.astype(np.float64)
        k1, b = self._k1, self._b
        # The same floating-point operations as one document at a time, summed term by term
        # in the query's order (cumsum adds in order; a term a document lacks adds exactly 0.0).
        norm = k1 * (1.0 - b + b * lengths / avg)
        weight = np.fromiter((w for _, w in weights), dtype=np.float64, count=len(weights))
        parts = weight * tf * (k1 + 1.0) / (tf + norm[:, None])
        out[places] = np.cumsum(parts, axis=1)[:, -1] / ceiling
        return out

    def match_texts(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """One 0–1 score per text that was not added (the fleet memory's incidents), weighed
        by the added documents' frequencies and average length, as ``match`` weighs them."""
        out = np.zeros(len(texts), dtype=np.float64)
        idf = {w: self._idf(w) for w in set(tokenize(query))}
        ceiling = sum(idf.values()) * (self._k1 + 1.0)
        if ceiling <= 0 or not self._docs:
            return out
        avg = self._total / len(self._docs) or 1.0
        for row, text in enumerate(texts):
            counts = Counter(tokenize(text))
            out[row] = self._score(idf, ceiling, avg, counts, sum(counts.values()))
        return out

    def _score(
        self,
        idf: dict[str, float],
        ceiling: float,
        avg: float,
        counts: Counter[str],
        length: int,
    ) -> float:
        k1, b = self._k1, self._b
        norm = k1 * (1.0 - b + b * length / avg)
        score = 0.0
        for word, weight in idf.items():
            tf = counts.get(word)
            if tf:
                score += weight * tf * (k1 + 1.0) / (tf + norm)
        return score / ceiling
