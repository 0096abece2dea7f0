"""BM25 kept in step with the history, and its fusion with the vector cosines."""

from __future__ import annotations

import numpy as np
import pytest

from precedent.core.embedding import Bm25, Bm25Match
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
