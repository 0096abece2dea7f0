"""Configuration: environment variables prefixed ``PRECEDENT_``, read into one settings object."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from precedent.errors import InputError

__all__ = ["DEFAULT_CATALOG_PATH", "Settings", "load_settings"]

DEFAULT_CATALOG_PATH = Path("data/playbooks")


class Settings(BaseSettings):
    """Every setting, with its default; ``PRECEDENT_<NAME>`` overrides it."""

    model_config = SettingsConfigDict(env_prefix="PRECEDENT_", extra="ignore")

    history_path: Path | None = Field(
        default=Path("data/incidents"),
        description="Incident YAML file or directory loaded at start-up; empty: none "
        "(the operator then uses only Incident objects from the cluster).",
    )
    similarity_mode: Literal["rules", "semantic", "hybrid"] = Field(
        default="hybrid",
        description="How similarity is computed: rules, semantic, or hybrid (the larger of the "
        "two per incident).",
    )
    similarity_threshold: float = Field(
        default=0.30, ge=0, le=1, description="Minimum similarity for an incident to count."
    )
    top_similar: int = Field(
        default=5, ge=1, le=50, description="Similar incidents listed in the status."
    )

    @field_validator("history_path", mode="before")
    @classmethod
    def _empty_means_none(cls, value: object) -> object:
        # PRECEDENT_HISTORY_PATH="" must mean "no file history", not the current directory.
        return None if value == "" else value

    metrics_port: int = Field(
        default=9090,
        ge=0,
        le=65535,
        description="Port of the operator's Prometheus /metrics endpoint; 0 turns it off.",
    )
    policy_mode: Literal["enforce", "audit"] = Field(
        default="enforce",
        description="enforce: escalated requests wait for approval; audit: record only.",
    )

    # -- semantic retrieval --------------------------------------------------------------------
    embedder: Literal["lexical", "onnx", "http"] = Field(
        default="lexical",
        description="lexical: hashed n-grams, offline, no download; onnx: a sentence model in "
        "model_dir (extra 'semantic'); http: an OpenAI-compatible embeddings endpoint.",
    )
    embedding_dimension: int = Field(
        default=512, ge=16, le=65536, description="Vector length of the lexical embedder."
    )
    model_dir: Path | None = Field(
        default=None,
        description="Directory with model.onnx and tokenizer.json for the onnx embedder.",
    )
    embedding_url: str = Field(
        default="", description="Base URL of the embeddings endpoint (POST {url}/embeddings)."
    )
    embedding_model: str = Field(default="", description="Model name sent to the endpoint.")
    embedding_api_key: SecretStr | None = Field(
        default=None, description="Bearer token for the endpoint, if it needs one."
    )
    embedding_timeout_seconds: float = Field(
        default=2.0, gt=0, description="Timeout of one embeddings request."
    )
    embedding_retries: int = Field(
        default=3, ge=0, le=10, description="Retries on timeouts, 429 and 5xx, with backoff."
    )
    semantic_floor: float | None = Field(
        default=None,
        ge=-1,
        le=1,
        description="Cosine that maps to semantic similarity 0 (default: the embedder's).",
    )
    semantic_ceiling: float | None = Field(
        default=None,
        ge=-1,
        le=1,
        description="Cosine that maps to semantic similarity 1 (default: the embedder's).",
    )
    semantic_k: int = Field(
        default=50, ge=1, le=1000, description="Nearest neighbours fetched per request."
    )
    title_weight: float = Field(
        default=0.5, ge=0, le=1, description="Share of an incident's vector from its title."
    )
    index_dir: Path | None = Field(
        default=None,
        description="Where the vector index is saved and reloaded; unset keeps it in memory.",
    )
    approximate_threshold: int = Field(
        default=200_000,
        ge=1,
        description="Index size from which the exact index is replaced by an IVF index.",
    )
    ivf_nprobe: int = Field(
        default=48, ge=1, description="Lists the approximate index probes per query."
    )
    domain_overfetch: int = Field(
        default=3, ge=1, le=100, description="Over-fetch factor when filtering by domain."
    )

    # -- ranking of similar incidents for people (seeds 002 and 001) ---------------------------
    ranking_vector_weight: float = Field(
        default=0.7, ge=0, le=1, description="Weight of similarity in the hybrid ranking score."
    )
    ranking_metadata_weight: float = Field(
        default=0.3, ge=0, le=1, description="Weight of metadata in the hybrid ranking score."
    )
    ranking_priority_share: float = Field(
        default=0.6, ge=0, le=1, description="Share of priority in the metadata score."
    )
    ranking_time_share: float = Field(
        default=0.4, ge=0, le=1, description="Share of resolution time in the metadata score."
    )
    ranking_time_normalization_hours: float = Field(
        default=100.0, gt=0, description="Resolution hours at which the time score reaches 0."
    )
    ranking_priority_weights: dict[str, float] = Field(
        default_factory=lambda: {"critical": 1.0, "high": 0.8, "medium": 0.5, "low": 0.3},
        description="Priority weight per priority (JSON object in the environment).",
    )

    # -- playbook catalog (seed 004) ----------------------------------------------------------
    catalog: str | None = Field(
        default=None,
        description="Playbook catalog: a YAML file or directory, or a Context API base URL "
        "(http://…). Unset: data/playbooks if it exists, else no playbook selection.",
    )
    catalog_fallback: Path | None = Field(
        default=None,
        description="In-process catalog used when a remote catalog fails. Unset: "
        "data/playbooks if it exists.",
    )
    catalog_timeout_seconds: float = Field(
        default=2.0, gt=0, le=60, description="Timeout of one request to a remote catalog."
    )
    catalog_retries: int = Field(
        default=3, ge=0, le=10, description="Retries on connect errors, timeouts and 5xx."
    )
    catalog_backoff_base_seconds: float = Field(
        default=0.1, ge=0, le=10, description="Delay before the first retry; doubles each time."
    )
    catalog_backoff_max_seconds: float = Field(
        default=1.0, ge=0, le=60, description="Longest delay between two retries."
    )
    catalog_cache_ttl_seconds: float = Field(
        default=300.0, ge=0, description="How long a remote catalog's answer is reused."
    )
    breaker_failure_threshold: int = Field(
        default=5, ge=1, le=1000, description="Consecutive failed queries that open the circuit."
    )
    breaker_reset_seconds: float = Field(
        default=30.0, ge=0, description="Cool-down before an open circuit lets a trial through."
    )
    min_confidence: float = Field(
        default=0.7, ge=0, le=1, description="Lowest confidence a playbook is listed with."
    )
    max_playbooks: int = Field(
        default=10, ge=1, le=100, description="Most playbooks a catalog query returns."
    )
    confidence_weight_semantic: float = Field(
        default=0.4, ge=0, le=1, description="Weight of semantic similarity in the confidence."
    )
    confidence_weight_labels: float = Field(
        default=0.4, ge=0, le=1, description="Weight of label match in the confidence."
    )
    confidence_weight_historical: float = Field(
        default=0.2, ge=0, le=1, description="Weight of historical success in the confidence."
    )
    success_prior_successes: float = Field(
        default=1.0, gt=0, description="Pseudo-successes added before taking a success rate."
    )
    success_prior_failures: float = Field(
        default=1.0, gt=0, description="Pseudo-failures added before taking a success rate."
    )
    catalog_host: str = Field(
        default="127.0.0.1", description="Address `precedent catalog serve` listens on."
    )
    catalog_port: int = Field(
        default=8081, ge=0, le=65535, description="Port `precedent catalog serve` listens on."
    )

    @field_validator("catalog", "catalog_fallback", mode="before")
    @classmethod
    def _empty_catalog_means_none(cls, value: object) -> object:
        # PRECEDENT_CATALOG="" means "not set", like PRECEDENT_HISTORY_PATH.
        return None if value == "" else value

    @model_validator(mode="after")
    def _weights_sum_to_one(self) -> Settings:
        total = (
            self.confidence_weight_semantic
            + self.confidence_weight_labels
            + self.confidence_weight_historical
        )
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"confidence weights must sum to 1, got {total:g}")
        return self


def load_settings() -> Settings:
    """Settings from the environment; a bad value is an InputError naming the variable."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for item in exc.errors():
            loc = item["loc"]
            message = item["msg"].removeprefix("Value error, ")
            # A rule across several variables (the weights' sum) has no single name to give.
            problems.append(f"PRECEDENT_{str(loc[0]).upper()}: {message}" if loc else message)
        raise InputError("; ".join(problems)) from None
