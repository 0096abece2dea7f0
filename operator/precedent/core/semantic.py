"""Semantic similarity: what text is embedded, and how a cosine becomes a similarity (0–1).

A raw cosine is not on the rule similarity's scale: two unrelated incident reports share
enough words (or, for a sentence model, enough "incident report" meaning) that their cosine
is rarely near 0, and a paraphrase rarely reaches 1. Hybrid mode takes the larger of rule and
semantic similarity per incident and seed 000's score adds every incident at or above the
0.30 threshold, so an uncalibrated cosine would let many weakly related incidents push a
request into a higher band. Each embedder therefore has a calibration, a linear map with a
floor and a ceiling::

    semantic = clip((cosine − floor) / (ceiling − floor), 0, 1)

The floor is the cosine of a typical unrelated pair (it maps to 0), the ceiling the cosine of
a near-duplicate (it maps to 1). The defaults were measured on the bundled history and the
labelled paraphrase set (docs/retrieval.md, "Calibration"); ``PRECEDENT_SEMANTIC_FLOOR`` and
``PRECEDENT_SEMANTIC_CEILING`` override them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from precedent.core.embedding import LexicalEmbedder, l2_normalize
from precedent.core.normalize import ProposedAction
from precedent.core.ports import Embedder
from precedent.models import Incident

__all__ = [
    "DEFAULT_CALIBRATIONS",
    "FUSION_WEIGHT",
    "RRF_K",
    "TITLE_WEIGHT",
    "SemanticCalibration",
    "calibration_for",
    "embed_incidents",
    "fuse",
    "incident_text",
    "reciprocal_rank_fusion",
    "request_text",
]


@dataclass(frozen=True, slots=True)
class SemanticCalibration:
    """Linear map from cosine to semantic similarity: floor → 0, ceiling → 1."""

    floor: float
    ceiling: float

    def __post_init__(self) -> None:
        if not -1.0 <= self.floor < self.ceiling <= 1.0:
            raise ValueError("calibration needs -1 <= floor < ceiling <= 1")

    def __call__(self, cosine: float) -> float:
        """Semantic similarity for one cosine, 0–1."""
        value = (cosine - self.floor) / (self.ceiling - self.floor)
        return min(1.0, max(0.0, value))


# Keyed by embedder family (the part of the name before the first '-').
DEFAULT_CALIBRATIONS: Mapping[str, SemanticCalibration] = {
    "lexical": SemanticCalibration(floor=0.10, ceiling=0.55),
    "tfidf": SemanticCalibration(floor=0.15, ceiling=0.55),
    "onnx": SemanticCalibration(floor=0.25, ceiling=0.75),
    "http": SemanticCalibration(floor=0.25, ceiling=0.75),
}


# A request's long description against a playbook's one-line description gives lower cosines
# than request against incident (both long): the playbook map starts and saturates earlier.
PLAYBOOK_CALIBRATIONS: Mapping[str, SemanticCalibration] = {
    "lexical": SemanticCalibration(floor=0.05, ceiling=0.35),
    "tfidf": SemanticCalibration(floor=0.05, ceiling=0.35),
    "onnx": SemanticCalibration(floor=0.15, ceiling=0.65),
    "http": SemanticCalibration(floor=0.15, ceiling=0.65),
}


def playbook_calibration_for(embedder_name: str) -> SemanticCalibration:
    """The cosine → similarity map for request-vs-playbook-description comparisons."""
    family = embedder_name.split("-", 1)[0]
    return PLAYBOOK_CALIBRATIONS.get(family, PLAYBOOK_CALIBRATIONS["http"])


def calibration_for(
    embedder_name: str, floor: float | None = None, ceiling: float | None = None
) -> SemanticCalibration:
    """The default calibration of an embedder family, with optional overrides."""
    family = embedder_name.split("-", 1)[0]
    base = DEFAULT_CALIBRATIONS.get(family, DEFAULT_CALIBRATIONS["http"])
    return SemanticCalibration(
        floor=base.floor if floor is None else floor,
        ceiling=base.ceiling if ceiling is None else ceiling,
    )


def incident_text(incident: Incident) -> str:
    """What is embedded for an incident: action, resource, title, description, cause, tags."""
    head = []
    if incident.action:
        head.append(incident.action.replace("_", " "))
    if incident.resource is not None:
        head.append(f"{incident.resource.type} {incident.resource.name}")
    return "\n".join([*head, incident.text()])


# Share of an incident's vector that comes from its title alone. The title is the incident's
# one-line summary; long descriptions otherwise dilute it (measured in docs/retrieval.md).
TITLE_WEIGHT = 0.5


def embed_incidents(
    embedder: Embedder,
    incidents: Sequence[Incident],
    title_weight: float = TITLE_WEIGHT,
    texts: Sequence[str] | None = None,
) -> npt.NDArray[np.float32]:
    """Unit vectors ``normalise(w · embed(title) + (1 − w) · embed(incident_text))``
    (``texts``: the incidents' ``incident_text``, when the caller has made them)."""
    # The lexical embedder adds its action vocabulary only on the incident/request side.
    embed = embedder.embed_documents if isinstance(embedder, LexicalEmbedder) else embedder.embed
    full = embed(list(texts) if texts is not None else [incident_text(i) for i in incidents])
    if title_weight <= 0 or not incidents:
        return full
    titles = embed([i.title for i in incidents])
    return l2_normalize(title_weight * titles + (1.0 - title_weight) * full)


def request_text(action: ProposedAction) -> str:
    """What is embedded for a request: action words, resource, description, signal."""
    return action.text


FUSION_WEIGHT = 0.3
"""Share of the BM25 match in a neighbour's score (0 turns the fusion off)."""


def fuse(cosines: Sequence[float], lexical: Sequence[float], weight: float) -> list[float]:
    """Dense + sparse: ``max(cosine, (1 − w) · cosine + w · √bm25)`` per candidate.

    ``bm25`` is the candidate's BM25 score over the most the query could score (0–1,
    independent of the other candidates, ``Bm25Match``), so a candidate that shares only
    common words gains little. The square root puts it on a cosine's scale (a document
    sharing a quarter of the query's information scores 0.5, as a cosine of two such texts
    would); the linear sum was measured too (docs/retrieval.md).
    """
    # Never below the cosine: BM25 cannot see the vocabulary's concepts ("lower the replica
    # count" ~ scale-down), so a paraphrase it misses keeps its embedding similarity.
    return [
        max(c, (1.0 - weight) * c + weight * math.sqrt(max(0.0, b)))
        for c, b in zip(cosines, lexical, strict=True)
    ]


RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal-rank fusion: ``Σ 1 / (k + rank)`` over the rankings (rank from 1)."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused
