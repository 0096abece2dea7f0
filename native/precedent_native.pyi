from collections.abc import Callable
from typing import Any

class Featurizer:
    """The lexical embedder's text features for one setting of stopwords, n-gram lengths and
    bigrams (see ``precedent.core.embedding``)."""

    def __init__(
        self,
        stopwords: list[str],
        low: int,
        high: int,
        bigrams: bool,
        kept_words: int = ...,
        kept_grams: int = ...,
    ) -> None:
        """``kept_words`` words' n-grams, and ``kept_grams`` distinct n-grams, are kept
        numbered with their hashes (a word seen before is not hashed again); a text with a
        word past them is counted over its n-grams' bytes: the same features."""
    def settle(self, margin: int) -> None:
        """From now on the n-gram tables grow by at most ``margin`` words and n-grams."""
    def tables(self) -> tuple[int, int]:
        """The words whose n-grams are kept numbered, and the n-grams numbered."""
    def features(
        self, words: list[str], concepts: list[str]
    ) -> tuple[bytes, tuple[int, int, int]]:
        """For a text's words without stopwords (``words``' second list) and its concept
        features: ``word_hashes``, ``word_counts``, ``char_hashes`` and ``char_counts`` in one
        bytes object of native int64 values, and the lengths of the first three."""
    def words(self, text: str) -> tuple[list[str], list[str]]:
        """``re.findall("[a-z0-9]+", text.lower())``, and the same words without stopwords."""

def load_yaml(
    text: str,
    max_depth: int,
    max_alias_nodes: int,
    construct: Callable[[str | None, str, bool, bool], Any],
    implicit_first: str,
) -> tuple[str, Any]:
    """``("ok", documents)``, ``("depth" | "aliases", line)`` or ``("elsewhere", None)``."""
