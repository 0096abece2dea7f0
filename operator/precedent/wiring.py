"""The composition root: every component is built here, once, from ``Settings``.

Each builder takes the settings group of its concern (``settings.catalog``,
``settings.retrieval`` …), not the whole settings; :func:`build_service` composes them.

The operator's start-up, every CLI command, the benchmarks and the test fixtures get their
components from :func:`build_service` (or the smaller builders below), so ``precedent score``
and the operator answer the same for the same settings: one embedder shared by the incident
index and the playbook catalog, one rule for where playbooks come from
(:meth:`CatalogSettings.source`), one rule for where the history comes from.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from precedent.adapters.action_registry import load_action_registry, load_danger_floors
from precedent.adapters.bounded import TooLarge
from precedent.adapters.cache import CachingCatalog
from precedent.adapters.catalog_http import HttpPlaybookCatalog
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.adapters.context_facts import load_facts, load_mapping
from precedent.adapters.evaluation import load_incidents_jsonl
from precedent.adapters.faiss_index import FaissIncidentIndex
from precedent.adapters.graph_source import graph_from_files
from precedent.adapters.guard_cluster import ApiGuardCluster
from precedent.adapters.guard_tls import (
    GuardTls,
    issue_serving,
    make_ca,
    point_configuration,
    shared_ca,
)
from precedent.adapters.heap import LoadedIncidents, collector_paused, compacted
from precedent.adapters.kube_api import KubeApi
from precedent.adapters.live_target import ApiTargets, ManifestTargets
from precedent.adapters.loader import load_incidents, load_playbooks
from precedent.adapters.vector_neighbours import VectorNeighbours
from precedent.core.context import ContextFacts
from precedent.core.embedding import LexicalEmbedder, TfidfEmbedder
from precedent.core.historical import SimilarityMode, risk_model_named
from precedent.core.playbooks import PlaybookCatalog
from precedent.core.policy import BlastLimits, PolicyEngine
from precedent.core.ports import Embedder, IncidentMemory, MemoryFailure, TargetReader
from precedent.core.resilience import RetryPolicy
from precedent.core.semantic import calibration_for, incident_text
from precedent.errors import DependencyError, InputError, LoadError, PrecedentError
from precedent.metrics import METRICS, Metrics
from precedent.models import Assessment, Incident, Playbook, RemediationRequestSpec
from precedent.services.approvals import ApprovalPolicy, ApprovalService, RequestStore
from precedent.services.assessment import AssessmentSettings, Assessor, IncidentScorer
from precedent.services.blast_radius import BlastRadiusService
from precedent.services.events import EventPoster
from precedent.services.fair_queue import FairQueue, FairSlots
from precedent.services.guard import Guard
from precedent.services.history import HistoryStore
from precedent.services.integrity import StatusSigner
from precedent.services.memory import FleetMemory
from precedent.services.mirror import ObjectMirror
from precedent.services.objects import ClusterObjects
from precedent.services.observability import DecisionRecorder
from precedent.services.outcomes import ClusterWriter, OutcomeService
from precedent.services.selection import PlaybookSelector
from precedent.settings import (
    BreakerLimits,
    CatalogSettings,
    ContextSettings,
    GraphSettings,
    GuardSettings,
    MemorySettings,
    PolicySettings,
    RankingSettings,
    RetrievalSettings,
    Settings,
)

logger = logging.getLogger(__name__)

__all__ = [
    "EMBEDDERS",
    "Engine",
    "OperatorRuntime",
    "build_approvals",
    "build_blast_radius",
    "build_embedder",
    "build_guard",
    "build_manifest_targets",
    "build_memory",
    "build_neighbours",
    "build_recorder",
    "build_runtime",
    "build_selector",
    "build_service",
    "load_history_files",
    "prepare_guard",
]

EMBEDDERS = ("lexical", "onnx", "http", "tfidf")


def build_embedder(
    settings: RetrievalSettings, name: str | None = None, *, corpus: Sequence[Incident] = ()
) -> Embedder:
    """The embedder ``name`` (default: ``settings.embedder``) configured from settings.

    ``tfidf`` is the evaluation baseline, fitted on ``corpus`` (the history it ranks).
    """
    choice = name or settings.embedder
    if choice == "lexical":
        return LexicalEmbedder(settings.dimension, native=settings.native_core)
    if choice == "tfidf":
        return TfidfEmbedder(incident_text(i) for i in corpus)
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

        key = settings.api_key
        return HttpEmbedder(
            settings.url,
            settings.model,
            api_key=key.get_secret_value() if key else None,
            timeout=settings.timeout_seconds,
            retries=settings.retries,
        )
    raise InputError(f"unknown embedder {choice!r}: expected one of {', '.join(EMBEDDERS)}")


def build_neighbours(settings: RetrievalSettings, embedder: Embedder) -> VectorNeighbours:
    """Semantic neighbours over ``embedder`` and a FAISS index configured by settings."""
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


def build_memory(
    settings: MemorySettings,
    embedder: Embedder | None = None,
    *,
    cluster_name: str | None,
    ranking: RankingSettings,
    breaker: BreakerLimits,
    store: IncidentMemory | None = None,
    metrics: Metrics = METRICS,
) -> FleetMemory | None:
    """The fleet memory over OpenSearch (seed 001), or None when it is disabled.

    ``cluster_name`` is this cluster's (``settings.context``), ``ranking`` orders what the
    memory returns, and ``breaker`` is the catalog's circuit breaker (``settings.catalog``),
    which the memory reuses.

    ``store`` replaces the OpenSearch adapter (tests: a double over openmock). A memory that
    is enabled but misconfigured is an InputError naming the variable; one that is down is not
    an error here (requests are scored without it and say so).
    """
    if not settings.enabled:
        return None
    if store is None:
        problem = settings.problem
        if problem is not None:
            raise InputError(problem)
        from precedent.adapters.memory_opensearch import OpenSearchMemory, build_client

        try:
            client = build_client(
                settings.url,
                auth=settings.auth,
                api_key=_secret(settings.api_key),
                username=settings.username,
                password=_secret(settings.password),
                aws_region=settings.aws_region,
                aws_service=settings.aws_service,
                timeout_seconds=settings.timeout_ms / 1000.0,
                verify_tls=settings.verify_tls,
                ca_bundle=settings.ca_bundle,
            )
        except MemoryFailure as exc:
            raise InputError(str(exc)) from None
        store = OpenSearchMemory(client, index=settings.index, url=settings.url)
    return FleetMemory(
        store,
        cluster_name=cluster_name,
        max_results=settings.max_results,
        min_quality=settings.min_quality,
        timeout_ms=settings.timeout_ms,
        topology=settings.topology_limits,
        ranking=ranking.weights,
        embedder=embedder,
        failure_threshold=breaker.failure_threshold,
        reset_seconds=breaker.reset_seconds,
        write_retry=RetryPolicy(retries=settings.write_retries, base_delay=0.5, max_delay=5.0),
        metrics=metrics,
    )


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def load_history_files(paths: Sequence[str | Path]) -> list[Incident]:
    """Incidents from YAML files and directories, or from one ``.jsonl`` history.

    A YAML file is read whole, within the input limit (64 MiB, about 35,000 incidents); a
    directory holds any number of such files, and a JSON Lines history is read one line at a
    time, whatever its size. A YAML file over the limit is refused naming both ways. Incidents
    from YAML are made again once the parse's garbage is gone (``compacted``): the operator
    keeps them for its lifetime. A JSON Lines history, parsed a line at a time, gained nothing
    from it (and would pay its copy's peak, gigabytes at a million incidents). Either way the
    incidents share pydantic's record of the fields they were given, each incident's shared as
    it is made (``FieldSets``): shared after the whole history was made, the records given up
    left holes among the incidents (10k incidents from YAML, in-process: 42.5 → 33.5 MiB).
    Incidents on the same resource share it (``EqualParts``), and each keeps its long texts
    compressed (``Incident.packed``): at 100k incidents from JSON Lines, 350 → 256 MiB.
    """
    with collector_paused():  # a load makes no reference cycle (collector_paused)
        return _load_history_files(paths)


def _load_history_files(paths: Sequence[str | Path]) -> list[Incident]:
    if len(paths) == 1 and str(paths[0]).endswith(".jsonl"):
        return load_incidents_jsonl(paths[0], pack=True)

    def load() -> list[Incident]:
        # Shared as each incident is made, before the copy: the pickle keeps one set per
        # combination, as it was (and the parse reuses the memory of the sets given up).
        return load_incidents(paths, kept=LoadedIncidents(pack=True))

    try:
        return compacted(load)
    except TooLarge as exc:
        raise LoadError(
            f"{exc}; a larger history loads as a directory of YAML files under the limit, or "
            "as one JSON Lines file (.jsonl, one incident per line, read line by line)"
        ) from None


def _local_catalog(
    settings: CatalogSettings, embedder: Embedder, path: Path | None
) -> LocalPlaybookCatalog:
    playbooks: list[Playbook] = []
    if path is not None:
        if not path.exists():
            raise InputError(f"catalog {path}: no such file or directory")
        playbooks = load_playbooks([path])
    return LocalPlaybookCatalog(
        playbooks,
        embedder=embedder,
        weights=settings.confidence_weights,
        prior=settings.success_prior,
        name="in-process catalog" if path is None else f"catalog {path}",
        model=settings.playbook_model,
    )


def build_selector(
    settings: CatalogSettings,
    embedder: Embedder,
    *,
    location: str | None = None,
) -> tuple[PlaybookSelector, LocalPlaybookCatalog]:
    """The playbook selector and its in-process catalog, by :meth:`CatalogSettings.source`.

    With a URL the remote catalog is asked first and the in-process catalog answers when it
    fails; otherwise the in-process catalog is the catalog. The in-process catalog is returned
    so that the operator can add Playbook objects to it.
    """
    source = settings.source(location)
    local = _local_catalog(settings, embedder, source.path)
    primary: PlaybookCatalog = local
    if source.url is not None:
        # Only a remote answer is worth caching; the in-process catalog is faster than a lookup.
        primary = CachingCatalog(
            HttpPlaybookCatalog(
                source.url,
                timeout=settings.timeout_seconds,
                retry=settings.retry,
                failure_threshold=settings.breaker_failure_threshold,
                reset_seconds=settings.breaker_reset_seconds,
            ),
            ttl_seconds=settings.cache_ttl_seconds,
        )
    selector = PlaybookSelector(
        primary,
        fallback=local if source.url is not None else None,
        min_confidence=settings.min_confidence,
        max_results=settings.max_playbooks,
        weights=settings.confidence_weights,
        deadline_seconds=settings.selection_deadline_seconds,
        declares=local.declares_incident_type,
    )
    return selector, local


@dataclass(frozen=True, slots=True)
class Engine:
    """What :func:`build_service` builds over one history and one in-process catalog."""

    assessor: Assessor
    """Answers requests (normalise → history and risk → policy → selection → blast radius)."""
    objects: ClusterObjects
    """Keeps the history, the catalog and the outcome ledger equal to the cluster's objects."""
    outcomes: OutcomeService | None = None
    """The operator's outcome handling (``follows_cluster``); its ledger is the assessor's
    base-rate evidence."""

    async def assess(
        self,
        spec: Mapping[str, Any] | RemediationRequestSpec,
        *,
        now: datetime | None = None,
        namespace: str | None = None,
    ) -> Assessment:
        """:meth:`Assessor.assess`."""
        return await self.assessor.assess(spec, now=now, namespace=namespace)

    async def assess_many(
        self,
        specs: Sequence[RemediationRequestSpec],
        *,
        now: datetime | None = None,
        namespaces: Sequence[str | None] | None = None,
    ) -> list[Assessment]:
        """:meth:`Assessor.assess_many`."""
        return await self.assessor.assess_many(specs, now=now, namespaces=namespaces)

    async def aclose(self) -> None:
        """:meth:`Assessor.aclose`: the catalog's and the memory's connections."""
        await self.assessor.aclose()


def build_service(
    settings: Settings,
    *,
    history: Sequence[str | Path] | None = None,
    incidents: Sequence[Incident] | None = None,
    catalog: str | None = None,
    mode: SimilarityMode | None = None,
    embedder: str | None = None,
    require_history: bool = False,
    follows_cluster: bool = False,
    facts: ContextFacts | None = None,
    blast: BlastRadiusService | None = None,
    memory: FleetMemory | None = None,
    cluster: ClusterWriter | None = None,
    targets: TargetReader | None = None,
) -> Engine:
    """The assessor and the object mirror with every dependency, as the operator and the CLI
    use them.

    ``history`` overrides ``settings.history.path`` (files, directories or one ``.jsonl``),
    and ``incidents`` (already read, e.g. a JSON Lines history) overrides both;
    ``catalog``, ``mode`` and ``embedder`` override their settings (the CLI's options).
    ``require_history`` makes a missing or empty history an error (the CLI), where the
    operator starts empty and fills up from Incident objects. ``follows_cluster`` (the
    operator) selects playbooks even when no catalog file is configured, since Playbook
    objects fill the in-process catalog; elsewhere no catalog means no playbook selection.
    It also builds the operator's facts, dependency graph and outcome handling (writing
    through ``cluster``). ``facts``, ``blast`` and ``memory`` replace what the settings would
    build (the CLI's ``-f`` manifests; a memory over a test double).
    """
    configured = settings.history.path
    paths: Sequence[str | Path] = history or (
        [configured] if configured is not None and configured.exists() else []
    )
    if require_history and not paths:
        raise InputError(
            f"no history at {configured}: pass --history PATH or set PRECEDENT_HISTORY_PATH"
        )
    if incidents is not None:
        paths = ["(given)"]
    base = list(incidents) if incidents is not None else load_history_files(paths) if paths else []
    if require_history and not base:
        raise InputError(f"history is empty: no Incident documents in {', '.join(map(str, paths))}")
    chosen: SimilarityMode = mode or settings.history.similarity_mode
    # One embedder for incidents and playbooks, as configured (PRECEDENT_EMBEDDER…).
    shared = build_embedder(settings.retrieval, embedder, corpus=base)
    selector, local = build_selector(settings.catalog, shared, location=catalog)
    source = settings.catalog.source(catalog)
    selects = follows_cluster or source.url is not None or source.path is not None
    store = HistoryStore(base)
    fleet = (
        memory
        if memory is not None
        else build_memory(
            settings.memory,
            shared,
            cluster_name=settings.context.cluster_name,
            ranking=settings.ranking,
            breaker=settings.catalog.breaker,
        )
    )
    signer = _signer(settings.policy)
    outcomes = None
    if follows_cluster:
        # The ledger of reported outcomes: playbook counts, and the risk model's base rate.
        outcomes = OutcomeService(
            local,
            prior=settings.catalog.success_prior,
            cluster=cluster,
            memory=fleet,
            trusted=signer.answered,
        )
        facts = facts if facts is not None else build_facts(settings.context)
        blast = blast if blast is not None else build_blast_radius(settings.graph)
    neighbours = None if chosen == "rules" else build_neighbours(settings.retrieval, shared)
    scorer = IncidentScorer(
        store,
        neighbours=neighbours,
        config=AssessmentSettings(
            mode=chosen,
            risk_model=risk_model_named(settings.risk.model),
            threshold=settings.history.similarity_threshold,
            top_k=settings.history.top_similar,
            semantic_k=settings.retrieval.semantic_k,
            ranking=settings.ranking.weights,
            success_prior=settings.catalog.success_prior,
            max_attempts=settings.operator.max_attempts,
        ),
        memory=fleet,
        evidence=outcomes.evidence if outcomes is not None else None,
        # The vector index scores the memory's incidents with the same embedder, statistics
        # and calibration as its own.
        outside=neighbours,
    )
    assessor = Assessor(
        scorer,
        selector=selector if selects else None,
        catalog=local,
        policy=PolicyEngine(
            enforce=settings.policy.mode == "enforce",
            registry=load_action_registry(settings.policy.action_registry),
            floors=load_danger_floors(settings.policy.danger_floors),
            blast=BlastLimits(
                max_upstream=settings.graph.max_upstream,
                escalate_critical=settings.graph.escalate_critical,
            ),
        ),
        signer=signer,
        memory=fleet,
        blast=blast,
        facts=facts,
        queue=FairQueue("precedent-assess"),
        targets=targets,
    )
    objects = ClusterObjects(store, local, memory=fleet, outcomes=outcomes)
    return Engine(assessor, objects, outcomes)


def _signer(settings: PolicySettings) -> StatusSigner:
    key = settings.status_key
    return StatusSigner(key.get_secret_value().encode() if key is not None else None)


def build_facts(settings: ContextSettings, paths: Sequence[str | Path] = ()) -> ContextFacts:
    """Where things run: the environment mapping and default from the settings, the
    cluster's name, and Namespaces (from ``paths``; the operator's watch adds them)."""
    rules = load_mapping(settings.environment_mapping) if settings.environment_mapping else []
    return load_facts(
        paths,
        default=settings.default_environment.strip().lower(),
        cluster=settings.cluster_name,
        rules=rules,
    )


def build_manifest_targets(paths: Sequence[str | Path]) -> TargetReader:
    """The live targets of ``precedent score -f``: the objects in ``paths`` stand for the
    cluster (a target not among them is not known)."""
    return ManifestTargets(paths)


def build_offline_blast_radius(
    settings: GraphSettings, paths: Sequence[str | Path]
) -> BlastRadiusService:
    """The dependency graph of the objects in ``paths`` (a cluster's manifests), for the CLI:
    the graph the operator's watches would hold for the same objects."""
    return BlastRadiusService(graph_from_files(paths), namespaces=settings.followed_namespaces)


def build_blast_radius(settings: GraphSettings) -> BlastRadiusService | None:
    """The dependency graph the operator's watches keep current, or None when it is off."""
    if not settings.enabled:
        return None
    return BlastRadiusService(namespaces=settings.followed_namespaces)


def build_recorder(engine: Engine, metrics: Metrics = METRICS) -> DecisionRecorder:
    """What each reconciliation records: metrics over the engine's history and vector index."""
    neighbours = engine.assessor.scorer.neighbours
    index = neighbours.index if isinstance(neighbours, VectorNeighbours) else None
    return DecisionRecorder(
        history_size=engine.objects.history_size,
        index_kind=(lambda: index.kind) if index is not None else (lambda: "none"),
        metrics=metrics,
    )


def build_approvals(
    settings: PolicySettings, signer: StatusSigner, requests: RequestStore | None = None
) -> ApprovalService:
    """Approval handling with the assessor's status signer and the configured policy mode."""
    policy = ApprovalPolicy(
        enforce=settings.mode == "enforce", break_glass_group=settings.break_glass_group
    )
    return ApprovalService(policy, signer, requests)


@dataclass(slots=True)
class OperatorRuntime:
    """Everything the operator's handlers use, built once at start-up (:func:`build_runtime`)."""

    config: Settings
    """The settings it was built from."""
    assessor: Assessor
    """Answers RemediationRequests."""
    objects: ClusterObjects
    """The history, the catalog and the outcome ledger, kept equal to the cluster."""
    outcomes: OutcomeService
    """Reported outcomes: playbook counts, Incidents on failure, the base rate."""
    approvals: ApprovalService
    """RemediationApprovals and their expiry."""
    recorder: DecisionRecorder
    """Metrics and the decision log line of each reconciliation."""
    signer: StatusSigner
    """The status mark: which answers are this operator's."""
    facts: ContextFacts | None
    """Where things run (the Namespaces' environment labels)."""
    blast: BlastRadiusService | None
    """The dependency graph, when it is followed."""
    api: KubeApi
    """The operator's own API client (Events, Incidents, status patches, lists)."""
    events: EventPoster
    """Posts the answers' Events through ``api``."""
    event_slots: FairSlots
    """Requests answered at once, namespaces in turn."""
    guard: Guard
    """Answers admission requests for direct changes to guarded namespaces."""
    incident_mirror: ObjectMirror[str] = field(
        default_factory=lambda: ObjectMirror[str]("incidents")
    )
    """What the watch applied of Incidents, compared with a full list now and then."""
    playbook_mirror: ObjectMirror[str] = field(
        default_factory=lambda: ObjectMirror[str]("playbooks")
    )
    """The same for Playbooks."""
    relabelled: set[str] = field(default_factory=set)
    """Namespaces whose environment label changed, for the handler that answers again."""
    swept: set[str] = field(default_factory=set)
    """Namespaces whose requests were answered again since the last periodic list of
    Namespaces: that list looks at them once more, for an answer written in the old facts
    while the sweep passed (a request in flight then had no answer to compare)."""
    approval_index: Any = None
    """kopf's live index of RemediationApprovals, once a handler was handed it (the periodic
    list of Namespaces answers again with it)."""
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    """The periodic lists running in the background, by name."""

    async def aclose(self) -> None:
        """Release the catalog's, the memory's and the API client's connections."""
        try:
            await self.assessor.aclose()
        finally:
            await self.api.aclose()


def build_runtime(settings: Settings, api: KubeApi, *, event_posts: int) -> OperatorRuntime:
    """The operator's runtime: the engine that follows the cluster, writing through ``api``,
    with approvals, the decision recorder and the Event poster (``event_posts`` at once)."""
    targets = ApiTargets(api, reuse_seconds=settings.operator.target_reuse_seconds)
    engine = build_service(settings, follows_cluster=True, cluster=api, targets=targets)
    assert engine.outcomes is not None  # follows_cluster builds the outcome handling
    signer = engine.assessor.signer
    return OperatorRuntime(
        config=settings,
        assessor=engine.assessor,
        objects=engine.objects,
        outcomes=engine.outcomes,
        approvals=build_approvals(settings.policy, signer, requests=api),
        recorder=build_recorder(engine),
        signer=signer,
        facts=engine.assessor.facts,
        blast=engine.assessor.blast,
        api=api,
        events=EventPoster(api),
        event_slots=FairSlots(event_posts),
        guard=build_guard(settings, api, engine.assessor),
    )


def build_guard(settings: Settings, api: KubeApi, assessor: Assessor) -> Guard:
    """The guard: answers from the assessor and the status mark, writes through ``api``."""

    async def would_be(spec: Mapping[str, Any], namespace: str) -> Assessment:
        return await assessor.assess(spec, namespace=namespace or None)

    metrics = METRICS
    return Guard(
        cluster=ApiGuardCluster(api),
        answered=assessor.signer.answered,
        would_be=would_be,
        break_glass_group=settings.policy.break_glass_group,
        counted=lambda mode, outcome: metrics.guard_decisions.labels(mode, outcome).inc(),
    )


async def prepare_guard(settings: GuardSettings, api: KubeApi) -> GuardTls:
    """The guard webhook's certificate files and CA (adapters.guard_tls), and the webhook
    configuration pointed at them. Only the configuration step may fail quietly (it is not
    installed, or the operator may not patch it): the webhook is served either way."""
    if settings.cert_dir is not None:
        tls = GuardTls(settings.cert_dir / "tls.crt", settings.cert_dir / "tls.key", None)
        for path in (tls.certfile, tls.keyfile):
            if not path.is_file():
                raise InputError(f"PRECEDENT_GUARD_CERT_DIR: {path} is not a file")
    else:
        try:
            ca_cert, ca_key = await shared_ca(api, settings.namespace, settings.ca_secret)
        except PrecedentError as exc:
            logger.warning(
                "guard: the shared CA secret %s/%s could not be read or made (%s); this "
                "replica uses a CA of its own",
                settings.namespace,
                settings.ca_secret,
                exc,
            )
            ca_cert, ca_key = make_ca()
        names = [settings.service, settings.service.removesuffix(".svc"), "localhost", "127.0.0.1"]
        if settings.url:
            host = urllib.parse.urlsplit(settings.url).hostname
            if host and host not in names:
                names.insert(0, host)
        cert, key = issue_serving(ca_cert, ca_key, names)
        folder = Path(tempfile.mkdtemp(prefix="precedent-guard-"))
        (folder / "tls.crt").write_bytes(cert)
        (folder / "tls.key").write_bytes(key)
        (folder / "tls.key").chmod(0o600)
        tls = GuardTls(folder / "tls.crt", folder / "tls.key", ca_cert)
    try:
        pointed = await point_configuration(
            api, settings.configuration, tls.ca_bundle, settings.url
        )
    except PrecedentError as exc:
        logger.warning(
            "guard: ValidatingWebhookConfiguration %s not updated: %s", settings.configuration, exc
        )
    else:
        if pointed:
            logger.info(
                "guard: %d webhooks of %s point at this operator", pointed, settings.configuration
            )
        else:
            logger.info(
                "guard: ValidatingWebhookConfiguration %s is not installed; no change is guarded",
                settings.configuration,
            )
    return tls
