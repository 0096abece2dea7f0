"""Configuration: environment variables prefixed ``PRECEDENT_``, read into settings grouped by
concern.

The variables stay flat (``PRECEDENT_CATALOG_TIMEOUT_SECONDS``), as people set them in a
Deployment; each one lands in the field of one group (``settings.catalog.timeout_seconds``),
and each group is its own validated model. A group hands out the validated core objects it
configures (:attr:`CatalogSettings.confidence_weights`, :attr:`RankingSettings.weights`,
:attr:`CatalogSettings.retry`, :meth:`CatalogSettings.source`), so the rules that make a value
valid live once, in the core type, and a bad combination fails when settings load.

A field's validation alias is its flat name: the variable without the prefix, lower case
(``catalog_timeout_seconds``). ``Settings`` reads the environment by those names, and takes
them as keyword arguments too (``Settings(history_path="", catalog="")``), so a command's
flags are validated exactly as the variables are (:func:`load_settings` ``overrides``).

File sources follow one rule: a path setting left unset means its bundled default
(``data/incidents``, ``data/playbooks``) when that exists; set to the empty string it means
"none" (the operator then reads only the cluster's objects).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

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

__all__ = [
    "DEFAULT_CATALOG_PATH",
    "ENV_PREFIX",
    "BreakerLimits",
    "CatalogSettings",
    "CatalogSource",
    "ContextSettings",
    "GraphSettings",
    "GuardSettings",
    "HistorySettings",
    "MemorySettings",
    "ObservabilitySettings",
    "OperatorRuntimeSettings",
    "PolicySettings",
    "RankingSettings",
    "RetrievalSettings",
    "RiskSettings",
    "Settings",
    "SettingsError",
    "env_name",
    "flat_names",
    "load_settings",
]

DEFAULT_CATALOG_PATH = Path("data/playbooks")
ENV_PREFIX = "PRECEDENT_"

RiskModelName = Literal["seed", "default"]
SimilarityModeName = Literal["rules", "semantic", "hybrid"]


@dataclass(frozen=True, slots=True)
class CatalogSource:
    """Where playbooks come from: the one rule every command and the operator follow."""

    url: str | None
    """A Context API base URL (http/https) asked first, or None."""
    path: Path | None
    """The in-process catalog's YAML file or directory (the fallback when ``url`` is set)."""


@dataclass(frozen=True, slots=True)
class BreakerLimits:
    """When a circuit breaker opens and how long it stays open."""

    failure_threshold: int
    reset_seconds: float


def is_url(location: str) -> bool:
    """Whether a catalog location is a Context API URL rather than a path."""
    return location.startswith(("http://", "https://"))


def _flat(name: str, default: Any = ..., **kwargs: Any) -> Any:
    """A group field read from ``PRECEDENT_<NAME>`` (``name`` is its flat name)."""
    return Field(default, validation_alias=name, **kwargs)


class _Group(BaseModel):
    """One concern's settings: frozen, validated, built by field name or flat name."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True
    )


def _empty_is_none(value: object) -> object:
    return None if value == "" else value


def _blank_is_none(value: object) -> object:
    return None if isinstance(value, str) and not value.strip() else value


class HistorySettings(_Group):
    """Where past incidents come from and how similar one must be to count."""

    path: Path | None = _flat(
        "history_path",
        Path("data/incidents"),
        description="Incident YAML file or directory loaded at start-up; empty: none "
        "(the operator then uses only Incident objects from the cluster).",
    )
    similarity_mode: SimilarityModeName = _flat(
        "similarity_mode",
        "hybrid",
        description="How similarity is computed: rules, semantic, or hybrid (the larger of the "
        "two per incident).",
    )
    similarity_threshold: float = _flat(
        "similarity_threshold",
        0.30,
        ge=0,
        le=1,
        description="Minimum similarity for an incident to count.",
    )
    top_similar: int = _flat(
        "top_similar", 5, ge=1, le=50, description="Similar incidents listed in the status."
    )

    # PRECEDENT_HISTORY_PATH="" must mean "no file history", not the current directory.
    _path_empty = field_validator("path", mode="before")(_empty_is_none)


class RiskSettings(_Group):
    """Which risk model turns precedents into a score."""

    model: RiskModelName = _flat(
        "risk_model",
        "default",
        description="seed: seed 000's SRI formula exactly as written; default: the model that "
        "counts only same-change precedents, with bounded evidence, context and outcomes.",
    )


class PolicySettings(_Group):
    """How a score becomes a decision, and who may overrule it."""

    mode: Literal["enforce", "audit"] = _flat(
        "policy_mode",
        "enforce",
        description="enforce: escalated requests wait for approval; audit: record only.",
    )
    break_glass_group: str | None = _flat(
        "break_glass_group",
        None,
        max_length=253,
        description="Group whose members may approve a Denied (high-risk) request through a "
        "RemediationApproval listing it in spec.approverGroups; unset: nobody can.",
    )
    action_registry: Path | None = _flat(
        "action_registry",
        None,
        description="YAML file mapping READ_ONLY, WRITE and ADMIN to action names, and effect "
        "classes to actions (e.g. mounted from a ConfigMap); unset: the bundled registry. "
        "Unlisted actions are ADMIN.",
    )
    danger_floors: Path | None = _flat(
        "danger_floors",
        None,
        description="YAML file of danger floors (effect class, environments, facts → the "
        "lowest band), replacing the bundled floors; unset: the bundled floors (docs/risk.md).",
    )
    status_key: SecretStr | None = _flat(
        "status_key",
        None,
        description="Key of the HMAC that marks statuses the operator wrote (from a Secret); "
        "unset: a random key per process, so answers are re-assessed after a restart.",
    )

    # PRECEDENT_BREAK_GLASS_GROUP="" must mean "off", not a group named "".
    _group_blank = field_validator("break_glass_group", mode="before")(_blank_is_none)


class ContextSettings(_Group):
    """Where a target runs: its cluster and environment."""

    cluster_name: str | None = _flat(
        "cluster_name",
        None,
        max_length=253,
        description="This cluster's name, written with every incident it shares with the fleet "
        "memory and shown next to incidents other clusters wrote.",
    )
    environment_mapping: Path | None = _flat(
        "environment_mapping",
        None,
        description="YAML file (kind: EnvironmentMapping, e.g. mounted from a ConfigMap) of "
        "rules mapping targets outside Kubernetes (resourceId, name, namespace or cluster "
        "patterns) to an environment; see docs/security.md. Unset: no rules.",
    )
    default_environment: str = _flat(
        "default_environment",
        "production",
        min_length=1,
        max_length=63,
        description="The environment of a target no namespace label and no mapping rule "
        "places (unknown is treated as the riskiest).",
    )

    def for_cluster(self, name: str | None) -> ContextSettings:
        """These settings for another cluster (e.g. a labelled request's), validated as
        ``PRECEDENT_CLUSTER_NAME`` is."""
        try:
            return ContextSettings.model_validate({**self.model_dump(), "cluster_name": name})
        except ValidationError as exc:
            raise InputError(f"cluster {name!r}: {exc.errors()[0]['msg']}") from None


class RetrievalSettings(_Group):
    """Semantic retrieval: the embedder and the vector index."""

    embedder: Literal["lexical", "onnx", "http"] = _flat(
        "embedder",
        "lexical",
        description="lexical: hashed n-grams, offline, no download; onnx: a sentence model in "
        "model_dir (extra 'semantic'); http: an OpenAI-compatible embeddings endpoint.",
    )
    dimension: int = _flat(
        "embedding_dimension",
        512,
        ge=16,
        le=65536,
        description="Vector length of the lexical embedder.",
    )
    native_core: bool = _flat(
        "native_core",
        True,
        description="Compute the lexical embedder's text features with the compiled core "
        "(the precedent-native wheel) when it is installed; false: in Python. Both give the "
        "same vectors.",
    )
    model_dir: Path | None = _flat(
        "model_dir",
        None,
        description="Directory with model.onnx and tokenizer.json for the onnx embedder.",
    )
    url: str = _flat(
        "embedding_url",
        "",
        description="Base URL of the embeddings endpoint (POST {url}/embeddings).",
    )
    model: str = _flat("embedding_model", "", description="Model name sent to the endpoint.")
    api_key: SecretStr | None = _flat(
        "embedding_api_key", None, description="Bearer token for the endpoint, if it needs one."
    )
    timeout_seconds: float = _flat(
        "embedding_timeout_seconds", 2.0, gt=0, description="Timeout of one embeddings request."
    )
    retries: int = _flat(
        "embedding_retries",
        3,
        ge=0,
        le=10,
        description="Retries on timeouts, 429 and 5xx, with backoff.",
    )
    semantic_floor: float | None = _flat(
        "semantic_floor",
        None,
        ge=-1,
        le=1,
        description="Cosine that maps to semantic similarity 0 (default: the embedder's).",
    )
    semantic_ceiling: float | None = _flat(
        "semantic_ceiling",
        None,
        ge=-1,
        le=1,
        description="Cosine that maps to semantic similarity 1 (default: the embedder's).",
    )
    semantic_k: int = _flat(
        "semantic_k", 50, ge=1, le=1000, description="Nearest neighbours fetched per request."
    )
    title_weight: float = _flat(
        "title_weight",
        0.5,
        ge=0,
        le=1,
        description="Share of an incident's vector from its title.",
    )
    index_dir: Path | None = _flat(
        "index_dir",
        None,
        description="Where the vector index is saved and reloaded; unset keeps it in memory.",
    )
    approximate_threshold: int = _flat(
        "approximate_threshold",
        100_000,
        ge=1,
        description="Index size from which the exact index is replaced by an IVF index (at "
        "100k incidents 617 of 618 answers identical to exact search's, the other one "
        "similarity in the 4th decimal; a quarter of the CPU of a request less).",
    )
    ivf_nprobe: int = _flat(
        "ivf_nprobe",
        16,
        ge=1,
        description="Lists the approximate index probes per query (recall@10 measured equal at "
        "16 and 48 at 100k and 1M incidents; 16 halves the query time).",
    )
    domain_overfetch: int = _flat(
        "domain_overfetch",
        3,
        ge=1,
        le=100,
        description="Over-fetch factor when filtering by domain.",
    )


class RankingSettings(_Group):
    """Ranking of similar incidents for people (seeds 002 and 001)."""

    order: RankingOrder = _flat(
        "ranking_order",
        "bounded",
        description="How seed 002's hybrid score and seed 001's boosts combine: bounded (the "
        "hybrid score in full; the exact-name boost only for the same action; outcome, quality "
        "and recency raise a score by at most 10 %) or seed (hybrid × boosts, literally). "
        "See docs/retrieval.md.",
    )
    vector_weight: float = _flat(
        "ranking_vector_weight",
        0.7,
        ge=0,
        le=1,
        description="Weight of similarity in the hybrid ranking score.",
    )
    metadata_weight: float = _flat(
        "ranking_metadata_weight",
        0.3,
        ge=0,
        le=1,
        description="Weight of metadata in the hybrid ranking score.",
    )
    priority_share: float = _flat(
        "ranking_priority_share",
        0.6,
        ge=0,
        le=1,
        description="Share of priority in the metadata score.",
    )
    time_share: float = _flat(
        "ranking_time_share",
        0.4,
        ge=0,
        le=1,
        description="Share of resolution time in the metadata score.",
    )
    time_normalization_hours: float = _flat(
        "ranking_time_normalization_hours",
        100.0,
        gt=0,
        description="Resolution hours at which the time score reaches 0.",
    )
    priority_weights: dict[str, float] = Field(
        default_factory=lambda: {"critical": 1.0, "high": 0.8, "medium": 0.5, "low": 0.3},
        validation_alias="ranking_priority_weights",
        description="Priority weight per priority (JSON object in the environment).",
    )

    @field_validator("priority_weights", mode="before")
    @classmethod
    def _json_object(cls, value: object) -> object:
        # The environment holds a JSON object; a parse error is named like any other value.
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise ValueError("not a JSON object of priority weights") from None
        return value

    @model_validator(mode="after")
    def _valid(self) -> RankingSettings:
        _ = self.weights
        return self

    @property
    def weights(self) -> RankingWeights:
        """Seed 002's ranking weights (and seed 001's boosts at their defaults), in the
        configured order."""
        weights = {}
        for key, value in self.priority_weights.items():
            try:
                weights[Severity(key.strip().lower())] = value
            except ValueError:
                raise ValueError(
                    f"ranking_priority_weights: unknown priority {key!r} "
                    "(expected critical, high, medium or low)"
                ) from None
        return RankingWeights(
            vector_weight=self.vector_weight,
            metadata_weight=self.metadata_weight,
            priority_share=self.priority_share,
            time_share=self.time_share,
            time_normalization_hours=self.time_normalization_hours,
            priority_weights=weights,
            order=self.order,
        )


class CatalogSettings(_Group):
    """The playbook catalog (seed 004): where it is, how it is asked, how a playbook is chosen."""

    location: str | None = _flat(
        "catalog",
        None,
        description="Playbook catalog: a YAML file or directory, or a Context API base URL "
        "(http://…). Unset: data/playbooks if it exists; empty: none (the operator then "
        "uses only Playbook objects).",
    )
    fallback: str | None = _flat(
        "catalog_fallback",
        None,
        description="In-process catalog asked when a remote catalog fails. Unset: "
        "data/playbooks if it exists; empty: none (the operator still has Playbook objects).",
    )
    timeout_seconds: float = _flat(
        "catalog_timeout_seconds",
        2.0,
        gt=0,
        le=60,
        description="Timeout of one request to a remote catalog.",
    )
    retries: int = _flat(
        "catalog_retries",
        3,
        ge=0,
        le=10,
        description="Retries on connect errors, timeouts and 5xx.",
    )
    backoff_base_seconds: float = _flat(
        "catalog_backoff_base_seconds",
        0.1,
        ge=0,
        le=10,
        description="Delay before the first retry; doubles each time.",
    )
    backoff_max_seconds: float = _flat(
        "catalog_backoff_max_seconds",
        1.0,
        ge=0,
        le=60,
        description="Longest delay between two retries.",
    )
    selection_deadline_seconds: float = _flat(
        "selection_deadline_seconds",
        0.5,
        gt=0,
        le=60,
        description="Deadline of one playbook selection from a remote catalog — every attempt, "
        "retry and backoff (seed 004: 500 ms); past it the fallback answers.",
    )
    cache_ttl_seconds: float = _flat(
        "catalog_cache_ttl_seconds",
        300.0,
        ge=0,
        description="How long a remote catalog's answer is reused.",
    )
    breaker_failure_threshold: int = _flat(
        "breaker_failure_threshold",
        5,
        ge=1,
        le=1000,
        description="Consecutive failed queries that open the circuit (the fleet memory's "
        "breaker too).",
    )
    breaker_reset_seconds: float = _flat(
        "breaker_reset_seconds",
        30.0,
        ge=0,
        description="Cool-down before an open circuit lets a trial through.",
    )
    min_confidence: float = _flat(
        "min_confidence",
        0.7,
        ge=0,
        le=1,
        description="Lowest confidence a playbook is listed with.",
    )
    max_playbooks: int = _flat(
        "max_playbooks",
        10,
        ge=1,
        le=100,
        description="Most playbooks a catalog query returns.",
    )
    selection_model: SelectionModelName = _flat(
        "selection_model",
        "default",
        description="seed: seed 004's label match as written (the mean over the request's "
        "labels) and the playbook's description embedded; default: the request's action "
        "counted as a label, each label weighted by how few playbooks accept it, and an "
        "unstated incident type counted as unknown. The other values are the steps between "
        "them, for `precedent eval selection`.",
    )
    confidence_weight_semantic: float = _flat(
        "confidence_weight_semantic",
        0.4,
        ge=0,
        le=1,
        description="Weight of semantic similarity in the confidence.",
    )
    confidence_weight_labels: float = _flat(
        "confidence_weight_labels",
        0.4,
        ge=0,
        le=1,
        description="Weight of label match in the confidence.",
    )
    confidence_weight_historical: float = _flat(
        "confidence_weight_historical",
        0.2,
        ge=0,
        le=1,
        description="Weight of historical success in the confidence.",
    )
    success_prior_successes: float = _flat(
        "success_prior_successes",
        1.0,
        gt=0,
        description="Pseudo-successes added before taking a success rate.",
    )
    success_prior_failures: float = _flat(
        "success_prior_failures",
        1.0,
        gt=0,
        description="Pseudo-failures added before taking a success rate.",
    )
    host: str = _flat(
        "catalog_host", "127.0.0.1", description="Address `precedent catalog serve` listens on."
    )
    port: int = _flat(
        "catalog_port",
        8081,
        ge=0,
        le=65535,
        description="Port `precedent catalog serve` listens on.",
    )

    @model_validator(mode="after")
    def _valid(self) -> CatalogSettings:
        # Each concern is validated by the core type it configures (one rule, one place).
        _ = self.confidence_weights, self.success_prior, self.retry
        return self

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
    def retry(self) -> RetryPolicy:
        """Retries and backoff of a remote catalog query."""
        return RetryPolicy(
            retries=self.retries,
            base_delay=self.backoff_base_seconds,
            max_delay=self.backoff_max_seconds,
        )

    @property
    def breaker(self) -> BreakerLimits:
        """The circuit breaker of a remote dependency (the catalog's, and the memory's)."""
        return BreakerLimits(self.breaker_failure_threshold, self.breaker_reset_seconds)

    def source(self, location: str | None = None) -> CatalogSource:
        """Where playbooks come from, for ``location`` (e.g. ``--catalog``) or the settings.

        A URL is asked first and the in-process catalog (``fallback``, else
        ``data/playbooks``) answers when it fails; a path is the in-process catalog itself.
        Unset means ``data/playbooks`` when it exists; the empty string means none.
        """
        chosen = self.location if location is None else location
        if chosen is None:
            return CatalogSource(None, _default_path(DEFAULT_CATALOG_PATH))
        if chosen == "":
            return CatalogSource(None, None)
        if is_url(chosen):
            if self.fallback is None:
                return CatalogSource(chosen, _default_path(DEFAULT_CATALOG_PATH))
            return CatalogSource(chosen, Path(self.fallback) if self.fallback else None)
        return CatalogSource(None, Path(chosen))


class MemorySettings(_Group):
    """The fleet memory over OpenSearch (seed 001)."""

    enabled: bool = _flat(
        "memory_enabled", False, description="Ask (and write to) the fleet memory in OpenSearch."
    )
    url: str = _flat(
        "memory_url", "", description="OpenSearch base URL, e.g. https://opensearch.example:9200."
    )
    index: str = _flat(
        "memory_index",
        "precedent-incidents",
        min_length=1,
        description="Index of shared incidents.",
    )
    auth: Literal["none", "api_key", "basic", "aws_sigv4"] = _flat(
        "memory_auth",
        "none",
        description="none, api_key (Authorization: ApiKey …), basic (user and password) or "
        "aws_sigv4 (Amazon OpenSearch Service; credentials from the AWS SDK's chain).",
    )
    api_key: SecretStr | None = _flat(
        "memory_api_key",
        None,
        description="API key for api_key auth (from a Secret; never logged).",
    )
    username: str = _flat("memory_username", "", description="User name for basic auth.")
    password: SecretStr | None = _flat(
        "memory_password",
        None,
        description="Password for basic auth (from a Secret; never logged).",
    )
    aws_region: str = _flat("memory_aws_region", "", description="AWS region for aws_sigv4.")
    aws_service: Literal["es", "aoss"] = _flat(
        "memory_aws_service",
        "es",
        description="es (managed domains) or aoss (serverless) for aws_sigv4.",
    )
    max_results: int = _flat(
        "memory_max_results",
        5,
        ge=1,
        le=100,
        description="Incidents asked from the memory per request.",
    )
    min_quality: float = _flat(
        "memory_min_quality",
        0.7,
        ge=0,
        le=1,
        description="Lowest quality_score a shared incident may have.",
    )
    timeout_ms: int = _flat(
        "memory_timeout_ms",
        2000,
        ge=1,
        le=60_000,
        description="Longest wait for the memory per request.",
    )
    verify_tls: bool = _flat(
        "memory_verify_tls", True, description="Verify the memory's TLS certificate."
    )
    ca_bundle: Path | None = _flat(
        "memory_ca_bundle",
        None,
        description="CA bundle (PEM) the memory's certificate is checked against; empty: the "
        "system's CAs.",
    )
    min_edge_confidence: float = _flat(
        "memory_min_edge_confidence",
        0.6,
        ge=0,
        le=1,
        description="Lowest confidence of a topology edge shown.",
    )
    edge_max_age: timedelta = _flat(
        "memory_edge_max_age",
        timedelta(hours=48),
        description="Oldest topology edge shown, e.g. 48h, 2d or 90m.",
    )
    write_retries: int = _flat(
        "memory_write_retries",
        3,
        ge=0,
        le=10,
        description="Retries of a background write to the memory.",
    )

    _ca_bundle_blank = field_validator("ca_bundle", mode="before")(_blank_is_none)

    @field_validator("edge_max_age", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        # Seed 001 writes ages as 48h; accept that (and m, d) besides seconds and ISO 8601.
        if isinstance(value, str):
            found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", value)
            if found:
                unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}[found.group(2)]
                return timedelta(seconds=float(found.group(1)) * unit)
        return value

    @property
    def problem(self) -> str | None:
        """Why the enabled memory cannot be used as configured, naming the variable; or None."""
        if not self.enabled:
            return None
        if not is_url(self.url):
            return "PRECEDENT_MEMORY_URL: an http:// or https:// URL is required"
        if self.auth == "api_key" and not self.api_key:
            return "PRECEDENT_MEMORY_API_KEY: required with PRECEDENT_MEMORY_AUTH=api_key"
        if self.auth == "basic" and not (self.username and self.password):
            return (
                "PRECEDENT_MEMORY_USERNAME and PRECEDENT_MEMORY_PASSWORD: required with "
                "PRECEDENT_MEMORY_AUTH=basic"
            )
        if self.auth == "aws_sigv4" and not self.aws_region:
            return "PRECEDENT_MEMORY_AWS_REGION: required with PRECEDENT_MEMORY_AUTH=aws_sigv4"
        return None

    @property
    def topology_limits(self) -> TopologyLimits:
        """Which stored topology edges become hints (seed 001's filters)."""
        return TopologyLimits(min_confidence=self.min_edge_confidence, max_age=self.edge_max_age)


class GraphSettings(_Group):
    """The operator's dependency graph and the blast radius it gives each answer."""

    blast_radius: Literal["on", "off"] = _flat(
        "blast_radius",
        "on",
        description="Follow the cluster's dependency graph (watches on workloads, Services, "
        "Ingresses, NetworkPolicies, HPAs, PDBs, ConfigMaps) and put each target's blast radius "
        "in its answer; off: no watches, no blastRadius.",
    )
    namespaces: str = _flat(
        "blast_radius_namespaces",
        "",
        description="Comma-separated namespaces the graph follows; empty: all.",
    )
    resync_seconds: float = _flat(
        "blast_radius_resync_seconds",
        300,
        ge=0,
        description="Seconds between full lists of the graph's kinds, which drop objects a "
        "re-list or a resumed watch never reported deleted; 0: never.",
    )
    max_upstream: int = _flat(
        "blast_radius_max_upstream",
        5,
        ge=0,
        description="A request that would be Approved is Escalated when more nodes than this "
        "depend on its target.",
    )
    escalate_critical: bool = _flat(
        "blast_radius_escalate_critical",
        True,
        description="A request that would be Approved is Escalated when a critical service "
        "(precedent.dev/tier: critical) depends on its target.",
    )

    @property
    def enabled(self) -> bool:
        """Whether the dependency graph is followed."""
        return self.blast_radius == "on"

    @property
    def followed_namespaces(self) -> frozenset[str]:
        """The namespaces the graph follows (empty: all)."""
        return frozenset(n.strip() for n in self.namespaces.split(",") if n.strip())


class OperatorRuntimeSettings(_Group):
    """How the operator process runs: retries, resyncs and peering between replicas."""

    max_attempts: int = _flat(
        "max_attempts",
        5,
        ge=1,
        le=100,
        description="Attempts after an unexpected assessment error before the request is "
        "Stalled with the error named (backoff 1, 2, 4 … 30 s between them).",
    )
    resync_seconds: float = _flat(
        "resync_seconds",
        60,
        ge=0,
        le=86400,
        description="How often the operator lists Incidents and Playbooks and makes its history "
        "and catalog equal the list (deletions a watch never delivered included); 0: never.",
    )
    target_reuse_seconds: float = _flat(
        "target_reuse_seconds",
        1.0,
        ge=0,
        le=60,
        description="How long one read of a request's live target (and of its HPAs and PDBs) "
        "answers the other requests about the same target; requests asking while it is under "
        "way wait for it. An answer an executor asked for because the target moved reads it "
        "again. 0: every request reads it.",
    )
    peering_priority: int | None = _flat(
        "peering_priority",
        None,
        ge=0,
        le=2**31 - 1,
        description="kopf peering priority of this replica (the highest active one works); "
        "unset: random, so that two replicas never tie (a tie freezes both).",
    )
    peering_lifetime_seconds: int = _flat(
        "peering_lifetime_seconds",
        60,
        ge=2,
        le=3600,
        description="How long a replica's peering record lives without a heartbeat: the "
        "longest a standby waits before taking over from a replica that died.",
    )


class GuardSettings(_Group):
    """The guard of direct changes to namespaces labelled ``precedent.dev/guard``."""

    port: int = _flat(
        "guard_port",
        9443,
        ge=0,
        le=65535,
        description="Port the guard's admission webhook listens on (HTTPS; 0: any free port).",
    )
    service: str = _flat(
        "guard_service",
        "precedent-guard.precedent-system.svc",
        min_length=1,
        description="The name the API server reaches the webhook at: the Service's DNS name, "
        "written into the operator's own serving certificate.",
    )
    url: str | None = _flat(
        "guard_url",
        None,
        description="Where the API server calls the webhook when the operator runs outside "
        "the cluster (e.g. https://127.0.0.1:9443); the webhook configuration is pointed "
        "there. Unset: the configuration's Service.",
    )
    cert_dir: Path | None = _flat(
        "guard_cert_dir",
        None,
        description="Directory with tls.crt and tls.key from cert-manager (its CA injector "
        "fills the configuration's caBundle). Unset: the operator keeps its own CA in a "
        "Secret and writes the caBundle.",
    )
    configuration: str = _flat(
        "guard_configuration",
        "precedent-guard",
        min_length=1,
        description="The ValidatingWebhookConfiguration the operator points at itself.",
    )
    namespace: str = _flat(
        "guard_namespace",
        "precedent-system",
        min_length=1,
        description="The operator's namespace: where the guard's CA Secret lives.",
    )
    ca_secret: str = _flat(
        "guard_ca_secret",
        "precedent-guard-ca",
        min_length=1,
        description="Secret holding the guard's CA, shared by the operator's replicas.",
    )


class ObservabilitySettings(_Group):
    """What the operator tells about itself: metrics and its own log lines."""

    metrics_port: int = _flat(
        "metrics_port",
        9090,
        ge=0,
        le=65535,
        description="Port of the operator's Prometheus /metrics endpoint; 0 turns it off.",
    )
    metrics_host: str = _flat(
        "metrics_host",
        "0.0.0.0",  # a pod's metrics are scraped from outside it
        min_length=1,
        description="Address the operator's /metrics endpoint listens on (0.0.0.0: every "
        "interface, as a scraped pod needs; 127.0.0.1: this host only).",
    )
    log_format: Literal["text", "json"] = _flat(
        "log_format",
        "text",
        description="The operator's own log lines (one per decision): text, or json with one "
        "object per line (kopf's lines keep kopf's --log-format).",
    )


_GROUPS: dict[str, type[_Group]] = {
    "history": HistorySettings,
    "risk": RiskSettings,
    "policy": PolicySettings,
    "context": ContextSettings,
    "retrieval": RetrievalSettings,
    "ranking": RankingSettings,
    "catalog": CatalogSettings,
    "memory": MemorySettings,
    "graph": GraphSettings,
    "operator": OperatorRuntimeSettings,
    "guard": GuardSettings,
    "observability": ObservabilitySettings,
}


def _flat_names() -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for group, model in _GROUPS.items():
        for field, info in model.model_fields.items():
            flat = info.validation_alias
            if not isinstance(flat, str):  # pragma: no cover - every field has one
                raise TypeError(f"{model.__name__}.{field} has no flat name")
            if flat in found:  # pragma: no cover - a programming error, caught at import
                raise TypeError(f"flat setting name {flat!r} used twice")
            found[flat] = (group, field)
    return found


_FLAT = _flat_names()


def flat_names() -> dict[str, tuple[str, str]]:
    """Every flat setting name (``catalog_timeout_seconds``) → its (group, field)."""
    return dict(_FLAT)


def env_name(flat: str) -> str:
    """The environment variable of a flat setting name."""
    return ENV_PREFIX + flat.upper()


class _FlatEnvironment(PydanticBaseSettingsSource):
    """``PRECEDENT_<NAME>`` for every flat name, case-insensitive, as plain values."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads by flat name

    def __call__(self) -> dict[str, Any]:
        environ = {key.upper(): value for key, value in os.environ.items()}
        return {flat: environ[env_name(flat)] for flat in _FLAT if env_name(flat) in environ}


class Settings(BaseSettings):
    """Every setting, grouped by concern; ``PRECEDENT_<NAME>`` overrides each one.

    Keyword arguments are flat names (``Settings(history_path="", risk_model="seed")``) or
    whole groups (``Settings(risk=RiskSettings(model="seed"))``); flat keyword arguments win
    over the environment, and a group given whole is taken as it is.
    """

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    history: HistorySettings = Field(default_factory=HistorySettings)
    risk: RiskSettings = Field(default_factory=RiskSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    ranking: RankingSettings = Field(default_factory=RankingSettings)
    catalog: CatalogSettings = Field(default_factory=CatalogSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    operator: OperatorRuntimeSettings = Field(default_factory=OperatorRuntimeSettings)
    guard: GuardSettings = Field(default_factory=GuardSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _FlatEnvironment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _route_flat_names(cls, data: Any) -> Any:
        # Flat names (from the environment or keyword arguments) go to their group's field.
        if not isinstance(data, Mapping):
            return data
        routed: dict[str, Any] = {}
        per_group: dict[str, dict[str, Any]] = {}
        for key, value in data.items():
            whole_group = key in _GROUPS and (
                isinstance(value, Mapping | _Group) or key not in _FLAT
            )
            if key in _FLAT and not whole_group:
                group, field = _FLAT[key]
                per_group.setdefault(group, {})[field] = value
            else:
                routed[key] = value
        for group, values in per_group.items():
            given = routed.get(group)
            if isinstance(given, _Group):
                continue  # a group given whole is taken as it is
            routed[group] = {**values, **(dict(given) if isinstance(given, Mapping) else {})}
        return routed


class SettingsError(InputError):
    """Invalid settings: each problem names its flat setting (or none, for a rule across
    several)."""

    def __init__(self, problems: list[tuple[str | None, str]], *, names: Mapping[str, str]):
        self.problems = problems
        super().__init__(
            "; ".join(
                f"{names.get(flat, env_name(flat))}: {message}" if flat else message
                for flat, message in problems
            )
        )


def load_settings(
    overrides: Mapping[str, object] | None = None, *, names: Mapping[str, str] | None = None
) -> Settings:
    """Settings from the environment and ``overrides`` (flat names: a command's flags), all
    validated alike; a bad value is a :class:`SettingsError` naming the variable, or the
    ``names`` given for an override (``{"risk_model": "--risk-model"}``)."""
    given: dict[str, Any] = dict(overrides or {})
    unknown = sorted(set(given) - set(_FLAT))
    if unknown:
        raise ValueError(f"not settings: {', '.join(unknown)}")
    try:
        return Settings(**given)
    except ValidationError as exc:
        problems: list[tuple[str | None, str]] = []
        for item in exc.errors():
            message = item["msg"].removeprefix("Value error, ")
            problems.append((_flat_of(item["loc"]), message))
        shown = {flat: name for flat, name in (names or {}).items() if flat in given}
        raise SettingsError(problems, names=shown) from None


def _flat_of(loc: tuple[int | str, ...]) -> str | None:
    # (group, field-or-flat-name, …) names one setting; (group,) is a rule across several.
    if len(loc) < 2:
        return None
    group, field = str(loc[0]), str(loc[1])
    model = _GROUPS.get(group)
    if model is None:
        return None
    if field in _FLAT:
        return field
    info = model.model_fields.get(field)
    return str(info.validation_alias) if info is not None else None


def _default_path(path: Path) -> Path | None:
    return path if path.exists() else None
