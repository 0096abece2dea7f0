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

import itertools
import math
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "STOPWORDS",
    "Bm25",
    "FloatMatrix",
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


class LexicalEmbedder:
    """Hashed word and character n-grams with sublinear tf, L2-normalised; offline and fitted on
    nothing."""

    def __init__(
        self,
        dimension: int = 512,
        *,
        char_ngrams: tuple[int, int] = (4, 6),
        word_weight: float = 0.5,
        bigram_weight: float = 0.5,
    ) -> None:
        if dimension < 16:
            raise ValueError("dimension must be at least 16")
        lo, hi = char_ngrams
        if not 1 <= lo <= hi:
            raise ValueError("char_ngrams must be (low, high) with 1 <= low <= high")
        self._dimension = dimension
        self._ngrams = (lo, hi)
        self._word_weight = word_weight
        self._bigram_weight = bigram_weight
        # Token → signed bucket; the history's vocabulary is small, so this cache stays small.
        self._buckets: dict[str, int] = {}

    @property
    def name(self) -> str:
        """``lexical-<dimension>``."""
        return f"lexical-{self._dimension}"

    @property
    def dimension(self) -> int:
        """Vector length."""
        return self._dimension

    def _bucket(self, token: str) -> int:
        # crc32 is stable across processes (str.__hash__ is salted); the top bit gives the sign.
        found = self._buckets.get(token)
        if found is None:
            h = zlib.crc32(token.encode())
            found = (h % self._dimension) + 1
            if h & 0x80000000:
                found = -found
            if len(self._buckets) < 1_000_000:
                self._buckets[token] = found
        return found

    def _block(self, counts: Counter[str], out: npt.NDArray[np.float64]) -> None:
        for token, tf in counts.items():
            b = self._bucket(token)
            weight = 1.0 + math.log(tf)
            if b > 0:
                out[b - 1] += weight
            else:
                out[-b - 1] -= weight

    def _features(self, text: str) -> tuple[Counter[str], Counter[str]]:
        words = tokenize(text)
        word_feats: Counter[str] = Counter(words)
        if self._bigram_weight > 0:
            for a, b in itertools.pairwise(words):
                word_feats[f"{a} {b}"] += 1
        lo, hi = self._ngrams
        chars: Counter[str] = Counter()
        for word in words:
            padded = f"<{word}>"
            size = len(padded)
            for n in range(lo, min(hi, size) + 1):
                for i in range(size - n + 1):
                    chars[padded[i : i + n]] += 1
        return word_feats, chars

    def embed_one(self, text: str) -> npt.NDArray[np.float32]:
        """One text's unit vector (all zeros for a text with no words)."""
        word_feats, chars = self._features(text)
        words = np.zeros(self._dimension, dtype=np.float64)
        grams = np.zeros(self._dimension, dtype=np.float64)
        self._block(word_feats, words)
        self._block(chars, grams)
        wn, gn = np.linalg.norm(words), np.linalg.norm(grams)
        vec = np.zeros(self._dimension, dtype=np.float64)
        if wn > 0:
            vec += self._word_weight * words / wn
        if gn > 0:
            vec += (1.0 - self._word_weight) * grams / gn
        norm = np.linalg.norm(vec)
        if norm > 0:
            vec /= norm
        return vec.astype(np.float32)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Unit vectors, one row per text."""
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self.embed_one(text)
        return out


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
