"""The text-similarity seam of playbook selection, and its default lexical implementation.

``TextEmbedder`` is the port: ``embed(texts)`` returns one L2-normalised float32 row per text,
so the cosine of two texts is a dot product and a catalog embeds its descriptions once, when
a playbook is added, not per query. Any sentence embedder with that shape plugs in.

``LexicalEmbedder`` is the default, pure numpy and offline: feature hashing with a random
sign over two blocks of the vector, word unigrams (light stemming, stop words dropped) in the
first half and character 3- and 4-grams of each word in the second half, each block weighted
with sublinear term frequency (1 + ln tf), L2-normalised and scaled by √½. The cosine of two
texts is therefore half the word-overlap cosine plus half the character-n-gram cosine, and
"restarts" still meets "restart" and "memory" meets "mem".
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "STOP_WORDS",
    "FloatMatrix",
    "FloatVector",
    "LexicalEmbedder",
    "TextEmbedder",
    "cosine_similarity",
    "similarity",
]

FloatMatrix = npt.NDArray[np.float32]
FloatVector = npt.NDArray[np.float32]

STOP_WORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have"),
        *("in", "into", "is", "it", "its", "of", "on", "or", "that", "the", "their", "then"),
        *("this", "to", "was", "were", "when", "which", "while", "with"),
    }
)

_TOKEN = re.compile(r"[a-z0-9]+")
_HASH_CACHE_LIMIT = 200_000


class TextEmbedder(Protocol):
    """Turns texts into L2-normalised vectors whose dot product is their similarity."""

    @property
    def name(self) -> str:
        """Embedder name, recorded with the answers it produced."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """One float32 row of length ``dim`` per text, L2-normalised (a zero row for no text)."""
        ...


def cosine_similarity(query: FloatVector, documents: FloatMatrix) -> FloatVector:
    """Cosine of one normalised query row against normalised document rows, clipped to 0–1."""
    scores: FloatVector = np.clip(documents @ query, 0.0, 1.0)
    return scores


def similarity(embedder: TextEmbedder, query: str, documents: Sequence[str]) -> list[float]:
    """Similarity (0–1) of ``query`` to each document; embeds the documents on every call.

    Convenient for a handful of texts; a catalog keeps its document rows and calls
    :func:`cosine_similarity` instead.
    """
    if not documents:
        return []
    rows = embedder.embed([query, *documents])
    return [float(s) for s in cosine_similarity(rows[0], rows[1:])]


def _stem(word: str) -> str:
    # Plural and verb "s" only: restarts → restart, pods → pod; "ss" words stay (stress).
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


class LexicalEmbedder:
    """Hashed word + character n-gram vectors with sublinear tf; no model, no download."""

    def __init__(self, dim: int = 4096, char_ngrams: Sequence[int] = (3, 4)) -> None:
        if dim < 64 or dim & (dim - 1):
            raise ValueError(f"dim must be a power of two ≥ 64, got {dim}")
        if not char_ngrams or any(n < 1 for n in char_ngrams):
            raise ValueError("char_ngrams must be positive n-gram lengths")
        self._dim = dim
        self._half = dim // 2
        self._ngrams = tuple(sorted(set(char_ngrams)))
        self._hashes: dict[str, int] = {}

    @property
    def name(self) -> str:
        """``lexical-hash-<dim>``."""
        return f"lexical-hash-{self._dim}"

    @property
    def dim(self) -> int:
        """Vector length: the word block and the character block are half each."""
        return self._dim

    def _hash(self, feature: str) -> int:
        value = self._hashes.get(feature)
        if value is None:
            if len(self._hashes) >= _HASH_CACHE_LIMIT:
                self._hashes.clear()
            value = zlib.crc32(feature.encode())
            self._hashes[feature] = value
        return value

    def _block(self, out: FloatVector, offset: int, counts: Counter[str]) -> None:
        if not counts:
            return
        mask = self._half - 1
        block = np.zeros(self._half, dtype=np.float32)
        for feature, tf in counts.items():
            h = self._hash(feature)
            sign = 1.0 if h & 0x8000_0000 else -1.0
            block[h & mask] += sign * (1.0 + math.log(tf))
        norm = float(np.linalg.norm(block))
        if norm > 0:
            out[offset : offset + self._half] = block / norm

    def _vector(self, text: str) -> FloatVector:
        words = [w for w in _TOKEN.findall(text.lower()) if w not in STOP_WORDS]
        word_counts: Counter[str] = Counter(_stem(w) for w in words)
        char_counts: Counter[str] = Counter()
        for word in words:
            padded = f" {word} "
            for n in self._ngrams:
                char_counts.update(padded[i : i + n] for i in range(len(padded) - n + 1))
        vector = np.zeros(self._dim, dtype=np.float32)
        self._block(vector, 0, word_counts)
        self._block(vector, self._half, char_counts)
        norm = float(np.linalg.norm(vector))
        if norm > 0:
            vector /= norm
        return vector

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """One L2-normalised row per text (a zero row when a text has no words)."""
        matrix = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            matrix[row] = self._vector(text)
        return matrix
