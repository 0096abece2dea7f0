"""Wiring: build the embedder, the vector index and the ranking weights from ``Settings``."""

from __future__ import annotations

from precedent.adapters.faiss_index import FaissIncidentIndex
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.embedding import LexicalEmbedder
from precedent.core.ports import Embedder
from precedent.core.ranking import RankingWeights
from precedent.core.semantic import calibration_for
from precedent.errors import DependencyError, InputError
from precedent.models import Severity
from precedent.settings import Settings

__all__ = ["EMBEDDERS", "build_embedder", "build_neighbours", "ranking_weights"]

EMBEDDERS = ("lexical", "onnx", "http")


def build_embedder(settings: Settings, name: str | None = None) -> Embedder:
    """The embedder ``name`` (default: ``settings.embedder``) configured from settings."""
    choice = name or settings.embedder
    if choice == "lexical":
        return LexicalEmbedder(settings.embedding_dimension)
    if choice == "onnx":
        if settings.model_dir is None:
            raise DependencyError(
                "the onnx embedder needs a model directory: set PRECEDENT_MODEL_DIR "
                "(fill it with `precedent fetch-model DIR`)"
            )
        from precedent.adapters.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder(settings.model_dir)
    if choice == "http":
        from precedent.adapters.http_embedder import HttpEmbedder

        key = settings.embedding_api_key
        return HttpEmbedder(
            settings.embedding_url,
            settings.embedding_model,
            api_key=key.get_secret_value() if key else None,
            timeout=settings.embedding_timeout_seconds,
            retries=settings.embedding_retries,
        )
    raise InputError(f"unknown embedder {choice!r}: expected one of {', '.join(EMBEDDERS)}")


def build_neighbours(settings: Settings, embedder: Embedder | None = None) -> VectorNeighbours:
    """Semantic neighbours over ``embedder`` (default: from settings) and a FAISS index."""
    embedder = embedder or build_embedder(settings)
    index = None
    if settings.index_dir is None:
        index = FaissIncidentIndex(
            embedder.dimension,
            approximate_threshold=settings.approximate_threshold,
            nprobe=settings.ivf_nprobe,
            domain_overfetch=settings.domain_overfetch,
        )
    neighbours = VectorNeighbours(
        embedder,
        index=index,
        calibration=calibration_for(
            embedder.name, settings.semantic_floor, settings.semantic_ceiling
        ),
        index_dir=settings.index_dir,
        approximate_threshold=settings.approximate_threshold,
        title_weight=settings.title_weight,
    )
    neighbours.index.domain_overfetch = settings.domain_overfetch
    neighbours.index.set_nprobe(settings.ivf_nprobe)
    return neighbours


def ranking_weights(settings: Settings) -> RankingWeights:
    """Seed 002's ranking weights as configured."""
    weights = {}
    for key, value in settings.ranking_priority_weights.items():
        try:
            weights[Severity(key.strip().lower())] = value
        except ValueError:
            raise InputError(
                f"PRECEDENT_RANKING_PRIORITY_WEIGHTS: unknown priority {key!r}"
            ) from None
    return RankingWeights(
        vector_weight=settings.ranking_vector_weight,
        metadata_weight=settings.ranking_metadata_weight,
        priority_share=settings.ranking_priority_share,
        time_share=settings.ranking_time_share,
        time_normalization_hours=settings.ranking_time_normalization_hours,
        priority_weights=weights,
    )
