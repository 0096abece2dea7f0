"""Configuration: environment variables prefixed ``PRECEDENT_``, read into one settings object.

The variables stay flat (``PRECEDENT_CATALOG_TIMEOUT_SECONDS``), as people set them in a
Deployment; each concern is read back as the validated core object it configures
(:attr:`Settings.confidence_weights`, :attr:`Settings.ranking_weights`,
:attr:`Settings.catalog_retry`, :meth:`Settings.catalog_source`), so the rules that make a
value valid live once, in the core type, and a bad combination fails when settings load.

File sources follow one rule: a path setting left unset means its bundled default
(``data/incidents``, ``data/playbooks``) when that exists; set to the empty string it means
"none" (the operator then reads only the cluster's objects).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from precedent.core.memory_query import TopologyLimits
from precedent.core.playbooks import (
    SELECTION_MODELS,
    ConfidenceWeights,
    SelectionModel,
    SelectionModelName,
    SuccessPrior,
)
from precedent.core.ranking import RankingOrder, RankingWeights
from precedent.core.resilience import RetryPolicy
from precedent.errors import InputError
from precedent.models import Severity

__all__ = ["DEFAULT_CATALOG_PATH", "CatalogSource", "Settings", "load_settings"]

DEFAULT_CATALOG_PATH = Path("data/playbooks")

RiskModel = Literal["seed", "default"]


@dataclass(frozen=True, slots=True)
class CatalogSource:
    """Where playbooks come from: the one rule every command and the operator follow."""

    url: str | None
    """A Context API base URL (http/https) asked first, or None."""
    path: Path | None
    """The in-process catalog's YAML file or directory (the fallback when ``url`` is set)."""


def is_url(location: str) -> bool:
    """Whether a catalog location is a Context API URL rather than a path."""
    return location.startswith(("http://", "https://"))


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

    max_attempts: int = Field(
        default=5,
        ge=1,
        le=100,
        description="Attempts after an unexpected assessment error before the request is "
        "Stalled with the error named (backoff 1, 2, 4 … 30 s between them).",
    )
    risk_model: RiskModel = Field(
        default="default",
        description="seed: seed 000's SRI formula exactly as written; default: the model that "
        "counts only same-change precedents, with bounded evidence, context and outcomes.",
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
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="The operator's own log lines (one per decision): text, or json with one "
        "object per line (kopf's lines keep kopf's --log-format).",
    )
    metrics_host: str = Field(
        default="0.0.0.0",  # a pod's metrics are scraped from outside it
        min_length=1,
        description="Address the operator's /metrics endpoint listens on (0.0.0.0: every "
        "interface, as a scraped pod needs; 127.0.0.1: this host only).",
    )
    action_registry: Path | None = Field(
        default=None,
        description="YAML file mapping READ_ONLY, WRITE and ADMIN to action names (e.g. mounted "
        "from a ConfigMap); unset: the bundled registry. Unlisted actions are ADMIN.",
    )
    environment_mapping: Path | None = Field(
        default=None,
        description="YAML file (kind: EnvironmentMapping, e.g. mounted from a ConfigMap) of "
        "rules mapping targets outside Kubernetes (resourceId, name, namespace or cluster "
        "patterns) to an environment; see docs/security.md. Unset: no rules.",
    )
    default_environment: str = Field(
        default="production",
        min_length=1,
        max_length=63,
        description="The environment of a target no namespace label and no mapping rule "
        "places (unknown is treated as the riskiest).",
    )
    peering_priority: int | None = Field(
        default=None,
        ge=0,
        le=2**31 - 1,
        description="kopf peering priority of this replica (the highest active one works); "
        "unset: random, so that two replicas never tie (a tie freezes both).",
    )
    peering_lifetime_seconds: int = Field(
        default=60,
        ge=2,
        le=3600,
        description="How long a replica's peering record lives without a heartbeat: the "
        "longest a standby waits before taking over from a replica that died.",
    )
    resync_seconds: float = Field(
        default=60,
        ge=0,
        le=86400,
        description="How often the operator lists Incidents and Playbooks and makes its history "
        "and catalog equal the list (deletions a watch never delivered included); 0: never.",
    )
    status_key: SecretStr | None = Field(
        default=None,
        description="Key of the HMAC that marks statuses the operator wrote (from a Secret); "
        "unset: a random key per process, so answers are re-assessed after a restart.",
    )
    policy_mode: Literal["enforce", "audit"] = Field(
        default="enforce",
        description="enforce: escalated requests wait for approval; audit: record only.",
    )
    break_glass_group: str | None = Field(
        default=None,
        max_length=253,
        description="Group whose members may approve a Denied (high-risk) request through a "
        "RemediationApproval listing it in spec.approverGroups; unset: nobody can.",
    )

    @field_validator("break_glass_group", mode="before")
    @classmethod
    def _blank_group_is_none(cls, value: object) -> object:
        # PRECEDENT_BREAK_GLASS_GROUP="" must mean "off", not a group named "".
        return None if isinstance(value, str) and not value.strip() else value

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
        default=16,
        ge=1,
        description="Lists the approximate index probes per query (recall@10 measured equal at "
        "16 and 48 at 100k and 1M incidents; 16 halves the query time).",
    )
    domain_overfetch: int = Field(
        default=3, ge=1, le=100, description="Over-fetch factor when filtering by domain."
    )

    # -- ranking of similar incidents for people (seeds 002 and 001) ---------------------------
    ranking_order: RankingOrder = Field(
        default="bounded",
        description="How seed 002's hybrid score and seed 001's boosts combine: bounded (the "
        "hybrid score in full; the exact-name boost only for the same action; outcome, quality "
        "and recency raise a score by at most 10 %) or seed (hybrid × boosts, literally). "
        "See docs/retrieval.md.",
    )
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
        "(http://…). Unset: data/playbooks if it exists; empty: none (the operator then "
        "uses only Playbook objects).",
    )
    catalog_fallback: str | None = Field(
        default=None,
        description="In-process catalog asked when a remote catalog fails. Unset: "
        "data/playbooks if it exists; empty: none (the operator still has Playbook objects).",
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
    selection_deadline_seconds: float = Field(
        default=0.5,
        gt=0,
        le=60,
        description="Deadline of one playbook selection from a remote catalog — every attempt, "
        "retry and backoff (seed 004: 500 ms); past it the fallback answers.",
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
    selection_model: SelectionModelName = Field(
        default="default",
        description="seed: seed 004's label match as written (the mean over the request's "
        "labels) and the playbook's description embedded; default: the request's action "
        "counted as a label, each label weighted by how few playbooks accept it, and an unstated "
        "incident type counted as unknown. The "
        "other values are the steps between them, for `precedent eval --selection`.",
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

    # -- fleet memory over OpenSearch (seed 001) ------------------------------------------------
    cluster_name: str | None = Field(
        default=None,
        max_length=253,
        description="This cluster's name, written with every incident it shares with the fleet "
        "memory and shown next to incidents other clusters wrote.",
    )
    memory_enabled: bool = Field(
        default=False, description="Ask (and write to) the fleet memory in OpenSearch."
    )
    memory_url: str = Field(
        default="", description="OpenSearch base URL, e.g. https://opensearch.example:9200."
    )
    memory_index: str = Field(
        default="precedent-incidents", min_length=1, description="Index of shared incidents."
    )
    memory_auth: Literal["none", "api_key", "basic", "aws_sigv4"] = Field(
        default="none",
        description="none, api_key (Authorization: ApiKey …), basic (user and password) or "
        "aws_sigv4 (Amazon OpenSearch Service; credentials from the AWS SDK's chain).",
    )
    memory_api_key: SecretStr | None = Field(
        default=None, description="API key for api_key auth (from a Secret; never logged)."
    )
    memory_username: str = Field(default="", description="User name for basic auth.")
    memory_password: SecretStr | None = Field(
        default=None, description="Password for basic auth (from a Secret; never logged)."
    )
    memory_aws_region: str = Field(default="", description="AWS region for aws_sigv4.")
    memory_aws_service: Literal["es", "aoss"] = Field(
        default="es", description="es (managed domains) or aoss (serverless) for aws_sigv4."
    )
    memory_max_results: int = Field(
        default=5, ge=1, le=100, description="Incidents asked from the memory per request."
    )
    memory_min_quality: float = Field(
        default=0.7, ge=0, le=1, description="Lowest quality_score a shared incident may have."
    )
    memory_timeout_ms: int = Field(
        default=2000, ge=1, le=60_000, description="Longest wait for the memory per request."
    )
    memory_verify_tls: bool = Field(
        default=True, description="Verify the memory's TLS certificate."
    )
    memory_ca_bundle: Path | None = Field(
        default=None, description="CA bundle (PEM) the memory's certificate is checked against."
    )
    memory_min_edge_confidence: float = Field(
        default=0.6, ge=0, le=1, description="Lowest confidence of a topology edge shown."
    )
    memory_edge_max_age: timedelta = Field(
        default=timedelta(hours=48),
        description="Oldest topology edge shown, e.g. 48h, 2d or 90m.",
    )
    memory_write_retries: int = Field(
        default=3, ge=0, le=10, description="Retries of a background write to the memory."
    )

    @field_validator("memory_edge_max_age", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        # Seed 001 writes ages as 48h; accept that (and m, d) besides seconds and ISO 8601.
        if isinstance(value, str):
            found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", value)
            if found:
                unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}[found.group(2)]
                return timedelta(seconds=float(found.group(1)) * unit)
        return value

    blast_radius: Literal["on", "off"] = Field(
        default="on",
        description="Follow the cluster's dependency graph (watches on workloads, Services, "
        "Ingresses, NetworkPolicies, HPAs, PDBs, ConfigMaps) and put each target's blast radius "
        "in its answer; off: no watches, no blastRadius.",
    )
    blast_radius_namespaces: str = Field(
        default="",
        description="Comma-separated namespaces the graph follows; empty: all.",
    )
    blast_radius_resync_seconds: float = Field(
        default=300,
        ge=0,
        description="Seconds between full lists of the graph's kinds, which drop objects a "
        "re-list or a resumed watch never reported deleted; 0: never.",
    )
    blast_radius_max_upstream: int = Field(
        default=5,
        ge=0,
        description="A request that would be Approved is Escalated when more nodes than this "
        "depend on its target.",
    )
    blast_radius_escalate_critical: bool = Field(
        default=True,
        description="A request that would be Approved is Escalated when a critical service "
        "(precedent.dev/tier: critical) depends on its target.",
    )

    @model_validator(mode="after")
    def _concerns_are_valid(self) -> Settings:
        # Each concern is validated by the core type it configures (one rule, one place).
        _ = self.confidence_weights, self.success_prior, self.ranking_weights, self.catalog_retry
        return self

    # -- each concern as the validated core object it configures --------------------------------

    @property
    def blast_radius_enabled(self) -> bool:
        """Whether the dependency graph is followed."""
        return self.blast_radius == "on"

    @property
    def blast_namespaces(self) -> frozenset[str]:
        """The namespaces the graph follows (empty: all)."""
        return frozenset(n.strip() for n in self.blast_radius_namespaces.split(",") if n.strip())

    @property
    def confidence_weights(self) -> ConfidenceWeights:
        """Seed 004's confidence weights (semantic, labels, historical)."""
        return ConfidenceWeights(
            semantic=self.confidence_weight_semantic,
            labels=self.confidence_weight_labels,
            historical=self.confidence_weight_historical,
        )

    @property
    def playbook_model(self) -> SelectionModel:
        """The selection model named by :attr:`selection_model`."""
        return SELECTION_MODELS[self.selection_model]

    @property
    def success_prior(self) -> SuccessPrior:
        """Pseudo-counts of the smoothed success rate."""
        return SuccessPrior(self.success_prior_successes, self.success_prior_failures)

    @property
    def ranking_weights(self) -> RankingWeights:
        """Seed 002's ranking weights (and seed 001's boosts at their defaults), in the
        configured order."""
        weights = {}
        for key, value in self.ranking_priority_weights.items():
            try:
                weights[Severity(key.strip().lower())] = value
            except ValueError:
                raise ValueError(
                    f"ranking_priority_weights: unknown priority {key!r} "
                    "(expected critical, high, medium or low)"
                ) from None
        return RankingWeights(
            vector_weight=self.ranking_vector_weight,
            metadata_weight=self.ranking_metadata_weight,
            priority_share=self.ranking_priority_share,
            time_share=self.ranking_time_share,
            time_normalization_hours=self.ranking_time_normalization_hours,
            priority_weights=weights,
            order=self.ranking_order,
        )

    @property
    def memory_problem(self) -> str | None:
        """Why the enabled memory cannot be used as configured, naming the variable; or None."""
        if not self.memory_enabled:
            return None
        if not is_url(self.memory_url):
            return "PRECEDENT_MEMORY_URL: an http:// or https:// URL is required"
        if self.memory_auth == "api_key" and not self.memory_api_key:
            return "PRECEDENT_MEMORY_API_KEY: required with PRECEDENT_MEMORY_AUTH=api_key"
        if self.memory_auth == "basic" and not (self.memory_username and self.memory_password):
            return (
                "PRECEDENT_MEMORY_USERNAME and PRECEDENT_MEMORY_PASSWORD: required with "
                "PRECEDENT_MEMORY_AUTH=basic"
            )
        if self.memory_auth == "aws_sigv4" and not self.memory_aws_region:
            return "PRECEDENT_MEMORY_AWS_REGION: required with PRECEDENT_MEMORY_AUTH=aws_sigv4"
        return None

    @property
    def topology_limits(self) -> TopologyLimits:
        """Which stored topology edges become hints (seed 001's filters)."""
        return TopologyLimits(
            min_confidence=self.memory_min_edge_confidence, max_age=self.memory_edge_max_age
        )

    @property
    def catalog_retry(self) -> RetryPolicy:
        """Retries and backoff of a remote catalog query."""
        return RetryPolicy(
            retries=self.catalog_retries,
            base_delay=self.catalog_backoff_base_seconds,
            max_delay=self.catalog_backoff_max_seconds,
        )

    def catalog_source(self, location: str | None = None) -> CatalogSource:
        """Where playbooks come from, for ``location`` (e.g. ``--catalog``) or the settings.

        A URL is asked first and the in-process catalog (``catalog_fallback``, else
        ``data/playbooks``) answers when it fails; a path is the in-process catalog itself.
        Unset means ``data/playbooks`` when it exists; the empty string means none.
        """
        chosen = self.catalog if location is None else location
        if chosen is None:
            return CatalogSource(None, _default_path(DEFAULT_CATALOG_PATH))
        if chosen == "":
            return CatalogSource(None, None)
        if is_url(chosen):
            fallback = self.catalog_fallback
            if fallback is None:
                return CatalogSource(chosen, _default_path(DEFAULT_CATALOG_PATH))
            return CatalogSource(chosen, Path(fallback) if fallback else None)
        return CatalogSource(None, Path(chosen))


def _default_path(path: Path) -> Path | None:
    return path if path.exists() else None


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
