"""The pipeline: spec → normalise → similarity → risk → policy → Assessment."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

from precedent import __version__
from precedent.core.historical import SimilarityMode, evaluate_history
from precedent.core.history import History
from precedent.core.normalize import ProposedAction, normalize_request
from precedent.core.policy import PolicyEngine
from precedent.core.ports import PlaybookDecision, SemanticNeighbours
from precedent.core.ranking import RankingWeights
from precedent.core.similarity import SIMILARITY_THRESHOLD
from precedent.models import Assessment, EngineInfo, RemediationRequestSpec

__all__ = ["Assessor"]


class Assessor:
    """Answers "has something like this gone wrong before?" for one history snapshot."""

    def __init__(
        self,
        history: History,
        *,
        mode: SimilarityMode = "rules",
        semantic: SemanticNeighbours | None = None,
        policy: PolicyEngine | None = None,
        threshold: float = SIMILARITY_THRESHOLD,
        top_k: int = 5,
        semantic_k: int = 50,
        ranking: RankingWeights | None = None,
    ) -> None:
        if mode != "rules" and semantic is None:
            raise ValueError(f"similarity mode {mode!r} needs a semantic neighbour source")
        self.history = history
        self.mode: SimilarityMode = mode
        self.semantic = semantic
        self.policy = policy or PolicyEngine()
        self.threshold = threshold
        self.top_k = top_k
        self.semantic_k = semantic_k
        self.ranking = ranking or RankingWeights()

    def assess(
        self,
        spec: RemediationRequestSpec,
        *,
        playbook: PlaybookDecision | None = None,
        now: datetime | None = None,
    ) -> Assessment:
        """Score one request; ``playbook`` is the catalog's answer, if one was asked.

        ``now`` (e.g. the request's creation time) anchors the recency boost of the listed
        incidents; without it no recency boost applies, so the answer depends only on the spec
        and the history snapshot.
        """
        action = normalize_request(spec)
        return self.assess_action(action, spec, playbook=playbook, now=now)

    def assess_action(
        self,
        action: ProposedAction,
        spec: RemediationRequestSpec,
        *,
        playbook: PlaybookDecision | None = None,
        now: datetime | None = None,
    ) -> Assessment:
        """Score an already-normalised request."""
        neighbours = None
        if self.mode != "rules" and self.semantic is not None and len(self.history):
            neighbours = self.semantic.neighbours(action, self.history, self.semantic_k)
        result = evaluate_history(
            self.history,
            action,
            mode=self.mode,
            semantic=neighbours,
            threshold=self.threshold,
            top_k=self.top_k,
            ranking=self.ranking,
            now=now,
        )
        verdict = self.policy.decide(action.action, result.risk.band)
        risk = result.risk
        if verdict.decision is not risk.decision:
            risk = risk.model_copy(
                update={
                    "decision": verdict.decision,
                    "reasoning": f"{risk.reasoning} Policy: {verdict.policy.reason} → "
                    f"{verdict.decision}.",
                }
            )
        playbook = playbook or PlaybookDecision()
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
                history_size=len(self.history),
                similarity_mode=self.mode,
                embedder=self.semantic.name if self.semantic and self.mode != "rules" else None,
            ),
            input_hash=self.input_hash(spec),
        )

    def input_hash(self, spec: RemediationRequestSpec) -> str:
        """sha256 over the canonical spec, the history fingerprint, the mode and the embedder."""
        canonical = json.dumps(spec.model_dump(mode="json", by_alias=True), sort_keys=True)
        digest = hashlib.sha256()
        embedder = self.semantic.name if self.semantic and self.mode != "rules" else ""
        for part in (canonical, self.history.fingerprint, self.mode, embedder, __version__):
            digest.update(part.encode())
            digest.update(b"\0")
        return f"sha256:{digest.hexdigest()}"
