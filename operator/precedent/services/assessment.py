"""The use case: assess one RemediationRequest.

One path for the operator, ``precedent score``, ``search`` and ``eval``::

    spec ─▶ parse ─▶ normalise once (ProposedAction for the history, PlaybookQuery for the catalog)
         ─▶ history: similarity, risk score and band, the similar incidents (core.historical)
         ─▶ policy: access level × band → the decision (the only place a decision is made)
         ─▶ playbook selection (seed 004: cache → catalog → fallback → manual investigation)
         ─▶ Assessment ─▶ StatusUpdate (conditions, observedGeneration, the Event)

Two objects: :class:`IncidentScorer` asks the history (the snapshot, the vector index, the
fleet memory's incidents) and :class:`Assessor` runs the pipeline around it. The history and
the in-process catalog follow the cluster's objects through
:class:`~precedent.services.objects.ClusterObjects`. Scoring runs on one worker thread so that
kopf's event loop keeps serving while the vector index is searched (FAISS releases the GIL);
requests wait for it in one queue per namespace, served in turn (``FairQueue``), so a flood in
one namespace does not hold up another.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from pydantic import ValidationError

from precedent import __version__
from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.core.change import LiveTarget, observed_key
from precedent.core.context import ContextFacts, VerifiedContext, resource_id_scope
from precedent.core.historical import (
    HistoricalResult,
    RiskModel,
    SimilarityMode,
    evaluate_history,
)
from precedent.core.normalize import ProposedAction, TargetMismatch, normalize_request
from precedent.core.playbooks import PlaybookQuery, SuccessPrior
from precedent.core.playbooks.labels import normalize_label_key, normalize_label_value
from precedent.core.policy import BlastImpact, PolicyEngine, PolicyVerdict
from precedent.core.ports import PlaybookDecision, SemanticNeighbours, TargetReader
from precedent.core.ranking import RankingWeights, boost_parts
from precedent.core.readings import Reading, needs_target, read_request
from precedent.core.risk import band_for
from precedent.core.risk_model import OutcomeEvidence, environment_tier
from precedent.core.similarity import SIMILARITY_THRESHOLD
from precedent.core.snapshot import History
from precedent.core.typos import InputWarning, input_warnings
from precedent.errors import DependencyError, InputError, describe_validation
from precedent.models import (
    Assessment,
    BlastNote,
    ChangeNote,
    ChangeStatus,
    ContextNote,
    Decision,
    DecisionNote,
    EngineInfo,
    Incident,
    MemoryNote,
    ReasoningPart,
    Recommendation,
    RemediationRequestSpec,
    RequestContext,
    RiskFactor,
    SimilarIncident,
    SpecWarning,
)
from precedent.services.approvals import no_more_permissive
from precedent.services.blast_radius import BlastRadiusService
from precedent.services.fair_queue import FairQueue
from precedent.services.history import HistoryStore
from precedent.services.integrity import StatusSigner
from precedent.services.memory import FleetMemory, MemoryRecall
from precedent.services.selection import PlaybookSelector
from precedent.services.status import StatusUpdate

__all__ = [
    "AssessmentSettings",
    "Assessor",
    "IncidentScorer",
    "NormalizedRequest",
    "parse_request_spec",
]

logger = logging.getLogger(__name__)


class OutsideIncidentScorer(Protocol):
    """A semantic neighbour source that can also score incidents it does not index."""

    def score_incidents(self, action: ProposedAction, incidents: Sequence[Incident]) -> list[float]:
        """Semantic similarity (0–1) of each of ``incidents`` to the request."""
        ...


def _memory_note(similar: Sequence[SimilarIncident], strongest: str | None) -> MemoryNote | None:
    """What the fleet memory contributed, for the risk reasoning (None when nothing)."""
    shared = tuple((s.id, s.cluster) for s in similar if s.source == "memory")
    if not shared:
        return None
    top = next((s for s in shared if s[0] == strongest), None)
    return MemoryNote(shared, top)


def parse_request_spec(spec: Mapping[str, Any]) -> RemediationRequestSpec:
    """Validate a RemediationRequest spec; errors name the field (``spec.target.name: …``)."""
    if not isinstance(spec, Mapping):  # a fuzzed or hand-made spec may be any JSON value
        raise InputError(f"spec: expected a mapping, got {type(spec).__name__}")
    try:
        return RemediationRequestSpec.model_validate(dict(spec))
    except ValidationError as exc:
        raise InputError(describe_validation(exc, "spec")) from None


@dataclass(frozen=True, slots=True)
class AssessmentSettings:
    """How requests are scored against the history."""

    risk_model: RiskModel
    """The risk model (``core.historical``: seed 000's formula as written, or the default),
    chosen by wiring from the settings."""
    mode: SimilarityMode = "hybrid"
    """rules, semantic, or hybrid (the larger of the two per incident)."""
    threshold: float = SIMILARITY_THRESHOLD
    """Minimum similarity for an incident to count in the risk score."""
    top_k: int = 5
    """Similar incidents listed in the status."""
    semantic_k: int = 50
    """Nearest neighbours fetched from the vector index per request."""
    ranking: RankingWeights = field(default_factory=RankingWeights)
    """Weights of the people-facing ranking of similar incidents."""
    success_prior: SuccessPrior = field(default_factory=SuccessPrior)
    """Pseudo-counts of a playbook's smoothed success rate."""
    max_attempts: int = 5
    """Attempts after an unexpected error before the request is Stalled with the error."""


@dataclass(frozen=True, slots=True)
class NormalizedRequest:
    """A request normalised once: what the history and the catalog are asked."""

    spec: RemediationRequestSpec
    """The validated spec."""
    action: ProposedAction
    """What the history is compared with: the requester's claims where they made some, the
    verified facts elsewhere."""
    query: PlaybookQuery
    """What the playbook catalog is asked."""
    verified: ProposedAction | None = None
    """The same action in the verified context (None: no facts, the claims are unverified)."""
    context: VerifiedContext | None = None
    """The verified context and its source."""


MAX_ENVIRONMENT = 63
"""The longest environment name (``status.context.environment``)."""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _claims_note(claimed: ProposedAction, verified: ProposedAction, source: str) -> str | None:
    """``claimed dev, verified production from namespace label on payments`` (None: no claim
    differs from the facts)."""
    parts = []
    if claimed.environment != verified.environment:
        parts.append(
            f"claimed {claimed.environment}, verified {verified.environment} from {source}"
        )
    if claimed.cluster != verified.cluster:
        known = verified.cluster or "unknown (no cluster name configured)"
        parts.append(f"claimed cluster {claimed.cluster}, verified {known}")
    return "; ".join(parts)[:512] or None


class IncidentScorer:
    """Similarity, risk and the ranked similar incidents of a request against the history
    (with the fleet memory's incidents, when it answered)."""

    def __init__(
        self,
        history: HistoryStore,
        *,
        neighbours: SemanticNeighbours | None,
        config: AssessmentSettings,
        memory: FleetMemory | None = None,
        evidence: Callable[[], OutcomeEvidence] | None = None,
        outside: OutsideIncidentScorer | None = None,
    ) -> None:
        if config.mode != "rules" and neighbours is None:
            raise ValueError(f"similarity mode {config.mode!r} needs a semantic neighbour source")
        self.history = history
        self.neighbours = neighbours
        self.config = config
        # The fleet memory (seed 001), whose incidents join a request's view; None: disabled.
        self.memory = memory
        # Outcomes reported on past requests (base-rate evidence for the default risk model):
        # the operator's outcome ledger; commands have none.
        self.evidence = evidence
        # Scores the memory's incidents, which the vector index does not hold, on meaning
        # (None: they compete on the rules alone).
        self.outside = outside

    def prepare_index(self) -> str:
        """Build or load the vector index for the current history, before any request: the
        operator calls this at start-up and reports ready only after it. Returns what it did,
        for the log (a line naming the incidents embedded and those a saved index held)."""
        neighbours = self.neighbours
        sync = getattr(neighbours, "sync", None)
        if self.config.mode == "rules" or neighbours is None or sync is None:
            return "no vector index (rules mode)"
        with self.history.lock:
            snapshot = self.history.snapshot
            report = sync(snapshot)
        # Requests' one-off words (ids, hashes, numbers) no longer grow the embedder's tables.
        settle = getattr(getattr(neighbours, "embedder", None), "settle", None)
        if callable(settle):
            settle()
        loaded = int(getattr(neighbours, "loaded", 0))
        return (
            f"vector index ready: {len(snapshot)} incidents, {report.embedded} embedded, "
            f"{report.kept} kept, {report.removed} removed ({loaded} read from the saved index)"
        )

    def history_size(self) -> int:
        """Incidents in the current snapshot (rebuilt first if objects changed)."""
        return len(self.history)

    def score(
        self,
        action: ProposedAction,
        *,
        top_k: int | None = None,
        now: datetime | None = None,
        ranking: RankingWeights | None = None,
        recall: MemoryRecall | None = None,
    ) -> tuple[History, HistoricalResult]:
        """Similarity, risk and the ranked similar incidents for one normalised request.

        ``top_k`` lists more incidents than the status does (``precedent search``, ``eval``);
        the ranking is the one the status shows. ``ranking`` replaces the configured ranking
        weights for this call only (the search API's per-request weights); the shared
        configuration is never changed. ``recall`` (the fleet memory's answer) adds
        its incidents to this request's view of the history.
        """
        with self.history.lock:
            snapshot = self.history.snapshot
            neighbours: Mapping[int, float] | None = None
            if self.config.mode != "rules" and self.neighbours is not None and len(snapshot):
                neighbours = self.neighbours.neighbours(action, snapshot, self.config.semantic_k)
            history, writers = self._with_memory(snapshot, recall)
            neighbours = self._memory_neighbours(action, snapshot, history, neighbours)
            result = evaluate_history(
                history,
                action,
                mode=self.config.mode,
                semantic=neighbours,
                threshold=self.config.threshold,
                top_k=top_k or self.config.top_k,
                ranking=ranking or self.config.ranking,
                now=now,
                model=self.config.risk_model,
                outcomes=self.evidence() if self.evidence is not None else None,
            )
            weights = ranking or self.config.ranking
            similar = [
                self._sourced(s, writers, history, action, now, weights) for s in result.similar
            ]
        risk = result.risk
        memory = _memory_note(similar, risk.most_relevant_incident) if writers else None
        if memory is not None:
            risk = risk.noted(memory)
        return history, HistoricalResult(risk, similar, result.similar_count)

    def rank(
        self,
        action: ProposedAction,
        k: int,
        *,
        now: datetime | None = None,
        ranking: RankingWeights | None = None,
    ) -> list[SimilarIncident]:
        """The ``k`` most relevant past incidents, ranked exactly as the status lists them
        (with ``ranking`` in place of the configured weights, for this call only)."""
        return self.score(action, top_k=k, now=now, ranking=ranking)[1].similar

    # -- the fleet memory's part (seed 001) ----------------------------------------------------

    @staticmethod
    def _with_memory(
        history: History, recall: MemoryRecall | None
    ) -> tuple[History, dict[str, str | None]]:
        """This request's history view: the snapshot plus the memory's incidents it lacks.

        Local incidents win over the memory's copy of the same id. The memory's incidents go
        after the snapshot's, so the snapshot's positions (the vector neighbours') still hold.
        The snapshot is extended, not rebuilt: a rebuild costs a pass over every incident on
        every request (``History.extended``).
        """
        if recall is None or not recall.hits:
            return history, {}
        extra = [h for h in recall.hits if history.position(h.incident.id) is None]
        if not extra:
            return history, {}
        writers = {h.incident.id: h.cluster for h in extra}
        return history.extended([h.incident for h in extra]), writers

    def _memory_neighbours(
        self,
        action: ProposedAction,
        snapshot: History,
        history: History,
        neighbours: Mapping[int, float] | None,
    ) -> Mapping[int, float] | None:
        """The vector neighbours plus the memory's incidents' semantic similarity.

        The memory's incidents are not in the vector index (it follows this cluster's history
        only); they are embedded and scored against the request with the same embedder, BM25
        statistics and calibration, so they compete with local incidents on meaning too.
        """
        scorer = self.outside
        if self.config.mode == "rules" or len(history) == len(snapshot) or scorer is None:
            return neighbours
        found = dict(neighbours or {})
        extra = history.incidents[len(snapshot) :]
        scores = scorer.score_incidents(action, extra)
        for pos, similarity in enumerate(scores, start=len(snapshot)):
            if similarity > 0:
                found[pos] = similarity
        return found

    def _sourced(
        self,
        similar: SimilarIncident,
        writers: Mapping[str, str | None],
        history: History,
        action: ProposedAction,
        now: datetime | None,
        ranking: RankingWeights,
    ) -> SimilarIncident:
        """A listed incident with where it came from, which cluster wrote it and, for the
        memory's, the boosts that ranked it (seed 001)."""
        if similar.id in writers:
            incident = history.get(similar.id)
            boosts = (
                {
                    name: round(value, 4)
                    for name, value in boost_parts(
                        incident,
                        resource_name=action.resource_name,
                        now=now,
                        weights=ranking,
                        action=action.action,
                    ).items()
                }
                if incident is not None
                else None
            )
            return similar.model_copy(
                update={"source": "memory", "cluster": writers[similar.id], "boosts": boosts}
            )
        origin = self.history.origin(similar.id)
        if origin == "cluster":
            own = self.memory.cluster_name if self.memory is not None else None
            return similar.model_copy(update={"source": "cluster", "cluster": own})
        return similar.model_copy(update={"source": origin})

    def sources(self, recall: MemoryRecall | None) -> list[str]:
        """Where the history came from (and whether the fleet memory answered)."""
        sources = self.history.sources()
        if self.memory is not None:
            sources.append(recall.source if recall is not None else "memory: not asked")
        return sources

    # -- what produced an answer ----------------------------------------------------------------

    def embedder_name(self) -> str | None:
        """The embedder behind the semantic part (None: rules only)."""
        if self.config.mode == "rules" or self.neighbours is None:
            return None
        return self.neighbours.name


_DECISION_RANK = {Decision.APPROVED: 0, Decision.ESCALATED: 1, Decision.DENIED: 2}


@dataclass(frozen=True, slots=True)
class _Answer:
    """One reading's answer (Assessor._answer)."""

    reading: Reading
    history: History
    result: HistoricalResult
    context: RequestContext
    verdict: PolicyVerdict
    floor: str | None

    @property
    def rank(self) -> tuple[int, float]:
        """Stricter first: the decision, then the score."""
        decision = self.verdict.policy.would_be or self.verdict.decision
        return (_DECISION_RANK[decision], self.result.risk.score)


class Assessor:
    """Assesses requests: normalise → history and risk → policy → playbook selection → blast
    radius → status. Every collaborator is given at construction (see precedent.wiring)."""

    def __init__(
        self,
        scorer: IncidentScorer,
        *,
        selector: PlaybookSelector | None,
        catalog: LocalPlaybookCatalog,
        policy: PolicyEngine,
        signer: StatusSigner | None = None,
        memory: FleetMemory | None = None,
        blast: BlastRadiusService | None = None,
        facts: ContextFacts | None = None,
        queue: FairQueue | None = None,
        targets: TargetReader | None = None,
    ) -> None:
        self.scorer = scorer
        self.config = scorer.config
        self.selector = selector
        self.catalog = catalog
        self.policy = policy
        self.signer = signer or StatusSigner()
        # The fleet memory (seed 001), asked before scoring; None when disabled.
        self.memory = memory
        # The cluster's dependency graph, followed by the operator; None elsewhere.
        self.blast = blast
        # Where things run, from what admins control (namespace labels, the environment
        # mapping); None: no facts (a command without -f), the requester's claims are used.
        self.facts = facts
        # One scoring thread; namespaces take turns for it (services.fair_queue).
        self._queue = queue or FairQueue("precedent-assess")
        # Reads a request's live target (the API server, or the CLI's manifests); None: the
        # target is not read and what it would tell is read the riskier way.
        self.targets = targets

    def with_facts(self, facts: ContextFacts | None) -> Assessor:
        """The same assessor in other facts (another cluster's, or none), sharing everything
        else, the scoring thread included."""
        return Assessor(
            self.scorer,
            selector=self.selector,
            catalog=self.catalog,
            policy=self.policy,
            signer=self.signer,
            memory=self.memory,
            blast=self.blast,
            facts=facts,
            queue=self._queue,
            targets=self.targets,
        )

    # -- one request ---------------------------------------------------------------------------

    def normalise(
        self, spec: Mapping[str, Any] | RemediationRequestSpec, namespace: str | None = None
    ) -> NormalizedRequest:
        """Validate and normalise a spec once; InputError names the bad field. ``namespace``
        is the request's own (where the environment is looked up when the target names none).
        """
        parsed = spec if isinstance(spec, RemediationRequestSpec) else parse_request_spec(spec)
        query = self._query(parsed)
        for key, value in parsed.labels.items():
            # One action: a label naming another action than spec.action would have the
            # selection judge one action while the policy judges another.
            if normalize_label_key(key) == "action" and normalize_label_value(value) != (
                parsed.action
            ):
                raise InputError(
                    f"spec.labels.{key}: names action {value!r} but spec.action is "
                    f"{parsed.action!r}; leave the label out or make it equal spec.action"
                )
        try:
            action = normalize_request(parsed)
        except TargetMismatch as exc:  # the message names spec.target.resourceId
            raise InputError(str(exc)) from None
        try:
            resource_id_scope(parsed.target.resource_id, parsed.target.namespace)
        except ValueError as exc:  # ambiguous about where the target lives
            raise InputError(str(exc)) from None
        claim = parsed.labels.get("environment") or ""
        if len(claim.strip()) > MAX_ENVIRONMENT:
            raise InputError(
                f"spec.labels.environment: at most {MAX_ENVIRONMENT} characters (an "
                "environment's name, such as production, staging or dev)"
            )
        if self.facts is None:
            return NormalizedRequest(parsed, action, query)
        context = self.facts.verify(
            resource_id=parsed.target.resource_id,
            name=parsed.target.name,
            target_namespace=parsed.target.namespace,
            request_namespace=namespace,
            kind=parsed.target.kind,
        )
        verified = replace(action, environment=context.environment, cluster=context.cluster)
        # What the requester did not claim is taken from the facts: only a claim is compared.
        claimed = replace(
            action,
            environment=action.environment or context.environment,
            cluster=action.cluster or context.cluster,
        )
        # The catalog is asked about the riskier of the claimed and the verified environment
        # (the verified one on a tie): a claim cannot fetch a playbook written for dev only
        # for a production namespace, whatever key spells it (Environment, precedent.dev/…).
        environment = context.environment
        if environment_tier(claimed.environment) < environment_tier(environment):
            environment = claimed.environment or environment
        query = self._query(parsed, environment)
        return NormalizedRequest(parsed, claimed, query, verified, context)

    def _query(self, spec: RemediationRequestSpec, environment: str | None = None) -> PlaybookQuery:
        """What the catalog is asked; ``environment`` (from the facts) replaces every label
        naming the environment."""
        selector = self.selector
        if environment is not None:
            labels = {
                k: v for k, v in spec.labels.items() if normalize_label_key(k) != "environment"
            }
            spec = spec.model_copy(update={"labels": {**labels, "environment": environment}})
        try:
            return PlaybookQuery.from_spec(
                spec,
                min_confidence=selector.min_confidence if selector else 0.0,
                max_results=selector.max_results if selector else 10,
            )
        except ValueError as exc:  # e.g. a label given twice after normalisation
            raise InputError(f"spec.labels: {exc}") from None

    def facts_changed(
        self, spec: Mapping[str, Any], namespace: str | None, status: Mapping[str, Any]
    ) -> bool:
        """Whether the facts now say something else about the request's target than when its
        answer was given (``status.context.facts``): e.g. its namespace was relabelled."""
        context = status.get("context") if isinstance(status, Mapping) else None
        written = context.get("facts") if isinstance(context, Mapping) else None
        return self.facts_differ(spec, namespace, written)

    def facts_differ(
        self, spec: Mapping[str, Any], namespace: str | None, written: str | None
    ) -> bool:
        """Whether the facts now say something else about the request's target than
        ``written`` (an answer's ``context.facts``)."""
        if self.facts is None:
            return False
        target = spec.get("target") if isinstance(spec, Mapping) else None
        if not isinstance(target, Mapping):
            return False  # not a valid request: its status says so, nothing to re-answer
        now = self.facts.verify(
            resource_id=_text(target.get("resourceId")),
            name=str(target.get("name") or ""),
            target_namespace=_text(target.get("namespace")),
            request_namespace=namespace,
            kind=_text(target.get("kind")),
        )
        return written != now.describe()

    def assess_normalised(
        self,
        request: NormalizedRequest,
        playbook: PlaybookDecision | None = None,
        now: datetime | None = None,
        recall: MemoryRecall | None = None,
        target: LiveTarget | None = None,
    ) -> Assessment:
        """History, risk and the policy's decision for a normalised request, on this thread,
        with the catalog's answer (``playbook``), the fleet memory's (``recall``) and the live
        target (``target``: None when not read).

        A requester's claims (``labels.environment`` / ``labels.cluster``) can only make the
        answer stricter: when they differ from the verified context, both are scored and the
        riskier answer is kept (the verified one on a tie); the status says which. Likewise
        the verb, the description and ``spec.change`` (core.readings): each reading is scored
        and the strictest decision wins (the higher score on a tie, the verb's on a tie)."""
        readings = read_request(request.spec, self.policy.registry, target)
        blast, impact = None, None
        if self.blast is not None:
            blast, impact = self.blast.report(
                request.spec.target, recall.topology if recall is not None else None
            )
        disagreement = readings.disagreement()
        must_ask = None
        if readings.verb.level == "READ_ONLY" and any(
            r.effect not in (None, "read-only") for r in readings.others
        ):
            must_ask = (
                f"spec.action {request.spec.action} is read-only but the request asks for "
                f"{', '.join(str(r.effect) for r in readings.others)}: a human checks it"
            )
        best: _Answer | None = None
        for reading in readings.all:
            answer = self._answer(request, reading, now, recall, impact, must_ask)
            if best is None or answer.rank > best.rank:
                best = answer
        assert best is not None
        history, result, context, verdict, reading = (
            best.history,
            best.result,
            best.context,
            best.verdict,
            best.reading,
        )
        notes: list[ReasoningPart] = []
        if blast is not None:
            notes.append(BlastNote(blast))
        change_status = None
        if reading.facts is not None or disagreement is not None or readings.change is not None:
            summary = (
                reading.facts.summary
                if reading.facts is not None
                else f"{request.spec.action} on {request.spec.target.kind} "
                f"{request.spec.target.name}"
            )
            notes.append(ChangeNote(summary[:400], disagreement, best.floor))
            observed = readings.change.observed if readings.change is not None else None
            change_status = ChangeStatus(
                effect=reading.effect or "unknown",
                verb_effect=self.policy.registry.effect(request.spec.action),
                readings=[r.effect or "unknown" for r in readings.all][:16],
                summary=summary[:512],
                hash=request.spec.change.digest() if request.spec.change is not None else None,
                observed=observed,
            )
        # The risk part says how risky; the policy alone says what happens (and why, when the
        # access level or the blast radius changed the band's decision).
        notes.append(DecisionNote(verdict.decision, verdict.policy.reason))
        risk = result.risk.decided(verdict.decision, *notes)
        playbook = self._for_this_action(request, playbook or PlaybookDecision())
        warnings = [
            SpecWarning(reason=w.reason, message=w.message[:1024])
            for w in self.warnings(request.spec)
        ]
        if disagreement is not None:
            warnings.append(SpecWarning(reason="VerbDisagrees", message=disagreement[:1024]))
        return Assessment(
            risk=risk,
            similar_incidents=result.similar,
            similar_count=result.similar_count,
            playbook=playbook.selection,
            alternatives=playbook.alternatives,
            recommendation=playbook.recommendation,
            policy=verdict.policy,
            engine=EngineInfo(
                version=__version__,
                history_size=len(history),
                similarity_mode=self.config.mode,
                embedder=self.scorer.embedder_name(),
                risk_model=self.config.risk_model.name,
                sources=self.scorer.sources(recall),
            ),
            topology_hints=recall.topology if recall is not None else None,
            blast_radius=blast,
            context=context,
            change=change_status,
            input_hash=self._input_hash(request.spec, history, context.facts, observed_key(target)),
            warnings=warnings,
        )

    def _answer(
        self,
        request: NormalizedRequest,
        reading: Reading,
        now: datetime | None,
        recall: MemoryRecall | None,
        impact: BlastImpact | None,
        must_ask: str | None,
    ) -> _Answer:
        """One reading scored in the claimed and the verified context, its floor, and the
        policy's decision for it."""
        claimed = request.action
        verified = request.verified
        action, synonyms = reading.action, reading.synonyms
        if self.config.risk_model.name == "seed":
            # Seed 000's formula compares action names exactly: the verb as written, another
            # reading under its canonical name alone.
            action = request.spec.action if reading.source == "spec.action" else reading.action
            synonyms = frozenset()
        if action != claimed.action or synonyms != claimed.synonyms:
            claimed = claimed.reading(action, synonyms)
            if verified is not None:
                verified = verified.reading(action, synonyms)
        history, result = self.scorer.score(claimed, now=now, recall=recall)
        context, note = self._context(request), None
        tier = environment_tier(claimed.environment)
        if verified is not None and verified != claimed:
            tier = min(tier, environment_tier(verified.environment))
            checked = self.scorer.score(verified, now=now, recall=recall)
            if checked[1].risk.score >= result.risk.score:
                history, result = checked
                assert request.context is not None
                note = _claims_note(claimed, verified, request.context.source)
                context = context.model_copy(
                    update={
                        "environment": verified.environment or "",
                        "source": request.context.source,
                        "verified": True,
                        "cluster": verified.cluster,
                        "claim": note,
                    }
                )
                if note is not None:
                    factor = RiskFactor(name="context", contribution=0.0, detail=note[:512])
                    risk_now = replace(
                        result.risk.noted(ContextNote(note)),
                        factors=[*result.risk.factors, factor][-16:],
                    )
                    result = HistoricalResult(risk_now, result.similar, result.similar_count)
        floor_text = None
        if reading.facts is not None and self.config.risk_model.name != "seed":
            result, floor_text = self._floored(result, reading, tier)
        verdict = self.policy.decide_level(
            reading.level, result.risk.band, impact, must_ask=must_ask
        )
        return _Answer(reading, history, result, context, verdict, floor_text)

    def _floored(
        self, result: HistoricalResult, reading: Reading, tier: int
    ) -> tuple[HistoricalResult, str | None]:
        """``result`` raised to the reading's danger floor (core.floors), with a factor."""
        assert reading.facts is not None
        assert reading.effect is not None
        facts = reading.facts
        factors = [*result.risk.factors]
        factors.append(RiskFactor(name="change", contribution=0.0, detail=facts.summary[:512]))
        hit = self.policy.floors.strictest(reading.effect, tier, facts.facts)
        floor_text = None
        score = result.risk.score
        if hit is not None and hit.score > score:
            precedent = (
                "no precedent"
                if result.risk.most_relevant_incident is None
                else f"history says {score:g}"
            )
            floor_text = (
                f"{precedent}; the change itself {hit.floor.reason}: "
                f"at least {hit.floor.band}, {score:g} → {hit.score:g}"
            )
            factors.append(
                RiskFactor(
                    name="floor",
                    contribution=round(hit.score - score, 1),
                    detail=floor_text[:512],
                )
            )
            score = hit.score
        risk = replace(result.risk, score=score, band=band_for(score), factors=factors[-16:])
        return HistoricalResult(risk, result.similar, result.similar_count), floor_text

    def warnings(self, spec: RemediationRequestSpec) -> list[InputWarning]:
        """An action the policy's registry does not list, a label key close to a known one."""
        return input_warnings(
            spec.action,
            spec.labels,
            actions=self.policy.registry.levels,
            label_keys=self.catalog.label_keys(),
        )

    def _for_this_action(
        self, request: NormalizedRequest, decision: PlaybookDecision
    ) -> PlaybookDecision:
        """A chosen playbook must list the request's action: Approved never hands out a
        playbook for another (perhaps more dangerous) action than the one the policy judged.
        Otherwise the answer is manual investigation."""
        chosen = decision.selection
        if chosen is None:
            return decision
        playbook = self.catalog.get(chosen.id)
        # The action or another name of its effect class (reduce_replicas for scale_down).
        names = self.policy.registry.synonyms(request.spec.action)
        if playbook is None or names & set(playbook.actions):
            return decision  # unknown here (a remote catalog's own): its answer stands
        reason = (
            f"playbook {chosen.id} was the best match but does not list action "
            f"{request.spec.action} in its actions ({', '.join(playbook.actions) or 'none'})"
        )
        return PlaybookDecision(
            recommendation=Recommendation(
                action="manual_investigation",
                reason=reason[:1024],
                suggested_actions=[f"review playbook {chosen.id} for {request.spec.action}"],
            )
        )

    @staticmethod
    def _context(request: NormalizedRequest) -> RequestContext:
        """The context the claimed action was scored in (facts fill what was not claimed)."""
        action, facts = request.action, request.context
        labels = request.spec.labels
        if facts is None:
            return RequestContext(
                environment=action.environment or "unknown",
                source="claimed in spec.labels (unverified: no facts given)"
                if labels.get("environment")
                else "unknown (no facts given; treated as production)",
                verified=False,
                cluster=action.cluster,
            )
        claimed = bool(labels.get("environment", "").strip())
        same = action.environment == facts.environment
        return RequestContext(
            environment=action.environment or facts.environment,
            source=facts.source if same or not claimed else "claimed in spec.labels.environment",
            verified=same or not claimed,
            cluster=action.cluster,
            facts=facts.describe(),
        )

    async def assess(
        self,
        spec: Mapping[str, Any] | RemediationRequestSpec,
        *,
        now: datetime | None = None,
        namespace: str | None = None,
        fresh_target: bool = False,
    ) -> Assessment:
        """Assess one request: InputError for a bad spec, DependencyError when one is down.

        ``now`` (e.g. the request's creation time) anchors the recency boost of the listed
        incidents; without it none applies, so the answer depends only on the spec and the
        history snapshot. ``namespace`` (the request's own) is the environment's fallback when
        the target names none, and the queue it waits in for the scoring thread: each namespace
        gets its turn, however many requests another one holds. ``fresh_target``: the target
        is read as it is now, not as a read made for an earlier request found it.
        """
        request = self.normalise(spec, namespace)
        decision = None
        if self.selector is not None:
            decision = (await self.selector.select_query(request.query)).decision
        # Asked in the event loop, within its deadline, before the scoring thread runs.
        recall = await self.memory.recall(request.action, now=now) if self.memory else None
        target = await self.read_target(request.spec, namespace, fresh=fresh_target)
        return await self._queue.run(
            namespace or "",
            partial(self.assess_normalised, request, decision, now, recall, target),
        )

    async def read_target(
        self, spec: RemediationRequestSpec, namespace: str | None, *, fresh: bool = False
    ) -> LiveTarget | None:
        """The live target when it can change the answer (core.readings.needs_target);
        ``fresh``: as it is now (:meth:`TargetReader.read`)."""
        if self.targets is None or not needs_target(spec, self.policy.registry):
            return None
        where = spec.target.namespace or (
            namespace
            if spec.target.kind.lower() not in ("namespace", "ns", "node", "clusterrolebinding")
            else None
        )
        return await self.targets.read(
            spec.target.kind, spec.target.name, where, spec.target.api_version, fresh=fresh
        )

    async def assess_many(
        self,
        specs: Sequence[RemediationRequestSpec],
        *,
        now: datetime | None = None,
        namespaces: Sequence[str | None] | None = None,
    ) -> list[Assessment]:
        """Assess requests in order (the CLI); catalog queries go out a few at a time.
        ``namespaces`` are the requests' own (metadata.namespace), when known."""
        spaces = list(namespaces) if namespaces is not None else [None] * len(specs)
        requests = [self.normalise(spec, ns) for spec, ns in zip(specs, spaces, strict=True)]
        decisions: list[PlaybookDecision | None] = [None] * len(requests)
        if self.selector is not None:
            picks = await self.selector.select_many([r.query for r in requests])
            decisions = [p.decision for p in picks]
        recalls: list[MemoryRecall | None] = [None] * len(requests)
        if self.memory is not None:
            recalls = [await self.memory.recall(r.action, now=now) for r in requests]
        targets = [
            await self.read_target(r.spec, ns) for r, ns in zip(requests, spaces, strict=True)
        ]
        return [
            self.assess_normalised(request, decision, now, recall, target)
            for request, decision, recall, target in zip(
                requests, decisions, recalls, targets, strict=True
            )
        ]

    async def reconcile(
        self,
        spec: Mapping[str, Any],
        *,
        uid: str,
        generation: int,
        previous: Sequence[Mapping[str, Any]] | None,
        now: datetime,
        anchor: datetime | None = None,
        attempt: int = 1,
        approve: Callable[[Assessment], tuple[Assessment, str | None]] | None = None,
        prior: Mapping[str, Any] | None = None,
        namespace: str | None = None,
        asked: str | None = None,
    ) -> StatusUpdate:
        """The status a request should have now: assessed (and signed), invalid, waiting for a
        dependency, or — after an unexpected error — retrying (a bounded number of ``attempt``s,
        ``config.max_attempts``) and then failed: never a quiet endless loop.

        ``approve`` re-applies the request's RemediationApprovals to the fresh assessment
        (``ApprovalService.applier``), so an answer assessed again keeps its human decision.
        ``prior`` is the status the request has now: a decision it states is never turned more
        permissive without an approval (``no_more_permissive``). ``namespace`` is the
        request's own (the environment's fallback when the target names none). ``asked``
        is the ``precedent.dev/reassess`` annotation this answer takes into account.
        """
        try:
            # An executor found the target moved since an answer (``asked``): this one reads
            # it as it is now.
            assessment = await self.assess(
                spec, now=anchor or now, namespace=namespace, fresh_target=asked is not None
            )
        except InputError as exc:
            return StatusUpdate.invalid(str(exc), generation=generation, previous=previous, now=now)
        except DependencyError as exc:
            return StatusUpdate.waiting(str(exc), generation=generation, previous=previous, now=now)
        except Exception as exc:
            logger.exception("assessment failed unexpectedly (attempt %d)", attempt)
            error = f"{type(exc).__name__}: {exc}"[:1024]
            attempts = self.config.max_attempts
            if attempt < attempts:
                return StatusUpdate.retrying(
                    error,
                    attempt=attempt,
                    attempts=attempts,
                    generation=generation,
                    previous=previous,
                    now=now,
                )
            return StatusUpdate.failed(
                error, attempts=attempts, generation=generation, previous=previous, now=now
            )
        if asked is not None and assessment.change is not None:
            # The executor's ask for an answer on the target as it is now, answered.
            change = assessment.change.model_copy(update={"asked": asked[:64]})
            assessment = assessment.model_copy(update={"change": change})
        expired = None
        if approve is not None:
            assessment, expired = approve(assessment)
        assessment = no_more_permissive(assessment, prior)
        update = StatusUpdate.assessed(
            assessment, generation=generation, previous=previous, now=now, expired=expired
        )
        return update.signed(self.signer, uid)

    async def aclose(self) -> None:
        """Release the remote catalog's connections and the scoring thread."""
        if self.selector is not None:
            await self.selector.aclose()
        if self.memory is not None:
            await self.memory.aclose()
        self._queue.shutdown()

    # -- what produced an answer ----------------------------------------------------------------

    def _input_hash(
        self,
        spec: RemediationRequestSpec,
        history: History,
        facts: str | None = None,
        observed: str = "",
    ) -> str:
        """sha256 over the canonical spec, the history fingerprint, the engine's settings and
        the verified context (``facts``): relabelling the target's namespace changes it."""
        # The outcome is reported after the answer and is not an input of it: reporting one
        # must not change the hash of an unchanged assessment.
        canonical = json.dumps(
            spec.model_dump(
                mode="json",
                by_alias=True,
                # Left out when absent, so a request without a change keeps its hash.
                exclude={"outcome", "change"} if spec.change is None else {"outcome"},
            ),
            sort_keys=True,
        )
        digest = hashlib.sha256()
        parts = (
            canonical,
            history.fingerprint,
            self.config.mode,
            self.config.risk_model.name,
            self.scorer.embedder_name() or "",
            __version__,
            facts or "",
            *((observed,) if observed else ()),
        )
        for part in parts:
            digest.update(part.encode())
            digest.update(b"\0")
        return f"sha256:{digest.hexdigest()}"
