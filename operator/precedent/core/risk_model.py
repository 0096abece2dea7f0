"""The default risk model: seed 000's intent at real scale (docs/risk.md explains every number).

Seed 000 scores ``best.similarity × weight + 0.20 × Σ others`` over every incident at least
0.30 similar. On a history of a hundred incidents that rewards volume (resource type alone
reaches the threshold, and the sum has no bound), which the seed itself says it should not do.
This model keeps the seed's severity weights and bands and changes what counts and how it adds
up:

1. **Precedent.** An incident counts only if it matches the change itself: the same action, the
   same resource (name), or a semantic match of what was done (calibrated similarity ≥ the
   threshold). Resource type and tags only refine a real match.
2. **Evidence per precedent**, 0–1::

       evidence = severity × change × target × type × tags        (the match)
                × environment × location                          (context)
                × outcome × recurrence × recency                  (what the incident says)

   ``change`` is 1 for the same action, the calibrated semantic similarity for a paraphrase,
   ``name_only_change`` for an incident on the same resource under another action; ``target``
   is 1 on the same resource and ``other_target`` elsewhere.
3. **Bounded tail.** ``score = 100 × (strongest + min(tail_ratio × strongest,
   tail_share × noisy_or(others)))``: any number of weaker precedents adds at most a fifth of
   the strongest (seed 000's 0.20, now for the whole tail) and at most 15 points.
4. **Base rate.** Past runs of the same action on the same kind of target (``OutcomeEvidence``)
   scale the score by a smoothed failure rate against a prior, and recent failures add a
   bounded number of points.

Everything here is pure and vectorised over the history (numpy), so 10k incidents score in
about a millisecond.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from precedent.core.carried import carried_columns
from precedent.core.normalize import ACTION_KEYWORDS, ProposedAction, canonical_resource_type
from precedent.models import Incident, IncidentOutcome, RiskFactor

__all__ = [
    "ENVIRONMENT_FACTORS",
    "IncidentContext",
    "OutcomeEvidence",
    "OutcomeRecord",
    "PrecedentMatches",
    "RiskModelResult",
    "RiskModelWeights",
    "environment_tier",
    "score_precedents",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

PRODUCTION, STAGING, DEVELOPMENT = 0, 1, 2
_TIER_NAMES = ("production", "staging", "development")
_TIERS: dict[str, int] = {
    **dict.fromkeys(("production", "prod", "prd", "live"), PRODUCTION),
    **dict.fromkeys(("staging", "stage", "stg", "preprod", "pre-prod", "uat"), STAGING),
    **dict.fromkeys(
        ("development", "dev", "test", "testing", "qa", "ci", "sandbox", "preview", "demo"),
        DEVELOPMENT,
    ),
}

# ENVIRONMENT_FACTORS[request tier][incident tier]. A precedent from the request's own tier
# counts fully; production failures say less about dev (different load, data and blast
# radius), and dev failures say less about production (they were caught there, at low cost).
ENVIRONMENT_FACTORS: tuple[tuple[float, float, float], ...] = (
    (1.0, 0.6, 0.4),  # production request: production / staging / development incident
    (0.4, 1.0, 0.7),  # staging request
    (0.3, 0.6, 1.0),  # development or test request
)


def environment_tier(value: str | None) -> int:
    """0 production, 1 staging, 2 development/test.

    Unknown or unrecognised environments count as production: most incident records come from
    production, and a request that does not say where it runs is treated as the riskier case.
    """
    if not value:
        return PRODUCTION
    return _TIERS.get(value.strip().lower(), PRODUCTION)


@dataclass(frozen=True, slots=True)
class RiskModelWeights:
    """Every number of the default model; the defaults are documented in docs/risk.md."""

    severity: dict[str, float] = field(
        default_factory=lambda: {"critical": 1.0, "high": 0.75, "medium": 0.40, "low": 0.10}
    )
    """Seed 000's severity weights, as fractions of 100."""
    name_only_change: float = 0.25
    """Change match of an incident on the same resource under another action."""
    other_target: float = 0.45
    """Target factor of a precedent on another resource."""
    other_action_semantic: float = 0.5
    """Semantic change match when both actions are known and differ (a story about another
    change on the same topic, e.g. a scale-down for a scale-up)."""
    type_mismatch: float = 0.85
    """Refinement when the resource type differs."""
    no_tag_overlap: float = 0.9
    """Refinement when none of the action's keywords is in the incident's tags."""
    namespace_mismatch: float = 0.85
    """Factor when both sides name a namespace and they differ."""
    cluster_mismatch: float = 0.85
    """Factor when both sides name a cluster and they differ."""
    unresolved: float = 1.3
    """Outcome factor of an unresolved incident (the failure may still be there)."""
    partial: float = 1.15
    """Outcome factor of a partly resolved incident."""
    recurring: float = 1.2
    """Factor of an incident whose action and resource recur in another incident."""
    recency_floor: float = 0.7
    """Recency factor of a very old incident (a fresh one has 1.0)."""
    recency_half_life_days: float = 365.0
    """Days after which the recency factor is half-way to its floor."""
    tail_ratio: float = 0.2
    """The tail of weaker precedents adds at most this share of the strongest."""
    tail_share: float = 0.15
    """… and at most this share of 100 points (noisy-OR of the others, scaled)."""
    prior_failures: float = 1.0
    """Base rate: pseudo-failures of the prior (prior failure rate 1 / (1 + 9) = 10%)."""
    prior_successes: float = 9.0
    """Base rate: pseudo-successes of the prior."""
    base_rate_min: float = 0.5
    """Lowest multiplier many successes can bring."""
    base_rate_max: float = 1.5
    """Highest multiplier failures can bring."""
    failure_points: float = 50.0
    """Points per unit of failure rate above the prior (at most 45 points)."""
    failure_half_life_days: float = 30.0
    """A failure this old counts half-way between full weight and ``old_failure_weight``."""
    old_failure_weight: float = 0.25
    """Weight of a very old failure."""

    def __post_init__(self) -> None:
        numbers = [
            self.name_only_change,
            self.other_target,
            self.type_mismatch,
            self.no_tag_overlap,
            self.namespace_mismatch,
            self.cluster_mismatch,
            self.recency_floor,
            self.tail_ratio,
            self.tail_share,
            self.old_failure_weight,
        ]
        if any(not 0.0 <= x <= 1.0 for x in numbers):
            raise ValueError("match, context and tail factors must be within 0–1")
        if min(self.unresolved, self.partial, self.recurring) < 1.0:
            raise ValueError("outcome and recurrence factors must be at least 1")
        if self.prior_failures <= 0 or self.prior_successes <= 0:
            raise ValueError("the base-rate prior needs positive pseudo-counts")
        if not 0 < self.base_rate_min <= 1.0 <= self.base_rate_max:
            raise ValueError("base_rate_min must be in (0, 1] and base_rate_max at least 1")


# ---------------------------------------------------------------------------------------------
# Past outcomes of requests (the base rate)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OutcomeRecord:
    """How past runs of one action on one kind of target (optionally one target) ended."""

    action: str
    """The action, e.g. restart_service."""
    resource_kind: str
    """The resource kind, e.g. Deployment (aliases folded when compared)."""
    target: str | None = None
    """One resource name, or None for every resource of the kind."""
    successes: int = 0
    """Runs that succeeded."""
    failure_times: tuple[datetime | None, ...] = ()
    """One entry per failed run: when it failed (None if unknown)."""

    def __post_init__(self) -> None:
        if self.successes < 0:
            raise ValueError("successes must not be negative")

    @property
    def failures(self) -> int:
        """Runs that failed."""
        return len(self.failure_times)


@dataclass(frozen=True, slots=True)
class OutcomeEvidence:
    """Outcomes of past requests; the base rate the default model weighs the history with."""

    records: tuple[OutcomeRecord, ...] = ()
    """The records; a target-specific one wins over its kind's record."""

    def lookup(self, action: ProposedAction) -> tuple[OutcomeRecord, ...]:
        """The records that speak for ``action``: its target's, else its kind's."""
        same_kind = [
            r
            for r in self.records
            if r.action == action.action
            and canonical_resource_type(r.resource_kind) == action.resource_type
        ]
        own = tuple(
            r for r in same_kind if r.target and r.target.strip().lower() == action.resource_name
        )
        return own or tuple(r for r in same_kind if r.target is None)


# ---------------------------------------------------------------------------------------------
# Request-independent arrays over a history
# ---------------------------------------------------------------------------------------------


class _Codes:
    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, value: str | None) -> int:
        if not value or not value.strip():
            return -1
        return self._codes.setdefault(value.strip().lower(), len(self._codes))

    def copy(self) -> _Codes:
        out = _Codes()
        out._codes = dict(self._codes)
        return out

    def lookup(self, value: str | None) -> int:
        # -1 means unknown (never compared); -2 is a known value no incident has.
        if not value:
            return -1
        return self._codes.get(value.strip().lower(), -2)


_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("severity", np.float64),
    ("tier", np.int8),
    ("namespace", np.int32),
    ("cluster", np.int32),
    ("outcome", np.float64),
    ("occurred", np.float64),
    ("known_action", np.bool_),
)
"""``IncidentContext``'s per-incident columns carried from the context before, and their
types."""


class IncidentContext:
    """The per-incident numbers the default model needs, computed once per history."""

    severity: FloatArray
    tier: npt.NDArray[np.int8]
    namespace: npt.NDArray[np.int32]
    cluster: npt.NDArray[np.int32]
    outcome: FloatArray
    occurred: FloatArray
    known_action: BoolArray

    def __init__(
        self,
        incidents: Sequence[Incident],
        weights: RiskModelWeights,
        *,
        previous: IncidentContext | None = None,
        source: npt.NDArray[np.int64] | None = None,
    ) -> None:
        """The context of ``incidents``. With ``previous`` (the same weights) and ``source``
        (for each incident, the row ``previous`` holds for that very object, -1 if none), the
        per-incident columns of the rows it holds are copied and only the others worked out;
        equal to the context built afresh (codes are compared for equality only)."""
        n = len(incidents)
        self.weights = weights
        if previous is not None and previous.weights != weights:
            previous = None
        if previous is None:
            source = None
        by_outcome = {
            IncidentOutcome.UNRESOLVED: weights.unresolved,
            IncidentOutcome.PARTIAL: weights.partial,
        }
        self._namespaces: _Codes = previous._namespaces.copy() if previous is not None else _Codes()
        self._clusters: _Codes = previous._clusters.copy() if previous is not None else _Codes()

        namespaces, clusters, severity = self._namespaces, self._clusters, weights.severity

        def values(i: Incident) -> tuple[Any, ...]:  # in the order of _COLUMNS
            return (
                severity[i.severity.value],
                environment_tier(i.environment),
                namespaces.code(i.namespace),
                clusters.code(i.cluster),
                by_outcome.get(i.outcome, 1.0),
                _epoch(i.occurred_at) if i.occurred_at else np.nan,
                i.action in ACTION_KEYWORDS,
            )

        held = [getattr(previous, name) if previous is not None else None for name, _ in _COLUMNS]
        (
            self.severity,
            self.tier,
            self.namespace,
            self.cluster,
            self.outcome,
            self.occurred,
            self.known_action,
        ) = carried_columns(incidents, values, [dtype for _, dtype in _COLUMNS], held, source)
        # Recurring: another incident records the same action on the same resource.
        keys = [_recurrence_key(i) for i in incidents]
        counts: dict[tuple[str, str], int] = {}
        first: dict[tuple[str, str], int] = {}
        for pos, key in enumerate(keys):
            if key is not None:
                counts[key] = counts.get(key, 0) + 1
                first.setdefault(key, pos)
        self._counts, self._first = counts, first
        self.recurring: BoolArray = np.array(
            [key is not None and counts[key] > 1 for key in keys], dtype=np.bool_
        )
        self.size = n
        self.ids: tuple[str, ...] = tuple(i.id for i in incidents)

    def extended(self, extra: Sequence[Incident]) -> IncidentContext:
        """This context with ``extra`` appended, equal to one built over all of them, at the
        cost of the extra incidents (the fleet memory's few joining a large history)."""
        tail = IncidentContext.__new__(IncidentContext)
        tail.weights = self.weights
        tail._namespaces, tail._clusters = self._namespaces.copy(), self._clusters.copy()
        w = self.weights
        by_outcome = {IncidentOutcome.UNRESOLVED: w.unresolved, IncidentOutcome.PARTIAL: w.partial}
        counts, first = dict(self._counts), dict(self._first)
        recurring = self.recurring.copy()
        extra_recurring: list[bool] = []
        keys = [_recurrence_key(i) for i in extra]
        for pos, key in enumerate(keys, start=self.size):
            if key is not None:
                counts[key] = counts.get(key, 0) + 1
                first.setdefault(key, pos)
        for key in keys:
            extra_recurring.append(key is not None and counts[key] > 1)
            if key is not None and counts[key] > 1 and first[key] < self.size:
                recurring[first[key]] = True  # a held incident now has a repeat
        tail._counts, tail._first = counts, first

        def more(values: list[Any], dtype: Any, held: npt.NDArray[Any]) -> npt.NDArray[Any]:
            return np.concatenate([held, np.array(values, dtype=dtype)])

        tail.severity = more(
            [w.severity[i.severity.value] for i in extra], np.float64, self.severity
        )
        tail.tier = more([environment_tier(i.environment) for i in extra], np.int8, self.tier)
        tail.namespace = more(
            [tail._namespaces.code(i.namespace) for i in extra], np.int32, self.namespace
        )
        tail.cluster = more([tail._clusters.code(i.cluster) for i in extra], np.int32, self.cluster)
        tail.outcome = more(
            [by_outcome.get(i.outcome, 1.0) for i in extra], np.float64, self.outcome
        )
        recurring_tail = np.array(extra_recurring, dtype=np.bool_)
        tail.recurring = np.concatenate([recurring, recurring_tail])
        tail.occurred = more(
            [_epoch(i.occurred_at) if i.occurred_at else np.nan for i in extra],
            np.float64,
            self.occurred,
        )
        tail.known_action = more(
            [i.action in ACTION_KEYWORDS for i in extra], np.bool_, self.known_action
        )
        tail.size = self.size + len(extra)
        tail.ids = (*self.ids, *(i.id for i in extra))
        return tail

    def namespace_code(self, value: str | None) -> int:
        """The code of a request's namespace (-1 unknown)."""
        return self._namespaces.lookup(value)

    def cluster_code(self, value: str | None) -> int:
        """The code of a request's cluster (-1 unknown)."""
        return self._clusters.lookup(value)


def _recurrence_key(incident: Incident) -> tuple[str, str] | None:
    if incident.action and incident.resource:
        return (incident.action, incident.resource.name.strip().lower())
    return None


def _epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RiskModelResult:
    """The default model's answer for one request."""

    score: float
    """0–100, one decimal."""
    strongest: int | None
    """Position of the precedent with the most evidence, or None."""
    precedent: BoolArray
    """Which incidents are precedents (listed)."""
    scored: BoolArray
    """Which precedents count in the score (similarity at or above the threshold)."""
    evidence: FloatArray
    """Evidence per incident, 0–1 (0 where not scored)."""
    factors: list[RiskFactor]
    """Each factor's contribution; they sum to the score."""


@dataclass(frozen=True, slots=True)
class PrecedentMatches:
    """How each incident matches one request: arrays aligned with the history."""

    same_action: BoolArray
    """The incident records the request's action."""
    same_name: BoolArray
    """… on the same resource (name)."""
    same_type: BoolArray
    """… on the same resource type."""
    tag_overlap: BoolArray
    """One of the action's keywords is among its tags."""
    semantic: FloatArray | None
    """The calibrated semantic similarity (None in rules mode)."""
    similarity: FloatArray
    """The mode's combined similarity, which the threshold applies to."""
    severity_rank: npt.NDArray[np.int8]
    """The history's severity order (ties between equally strong precedents)."""
    id_rank: npt.NDArray[np.int64]
    """The history's id order (the last tie-break)."""


def score_precedents(
    context: IncidentContext,
    action: ProposedAction,
    matches: PrecedentMatches,
    *,
    threshold: float,
    outcomes: OutcomeEvidence | None = None,
    now: datetime | None = None,
) -> RiskModelResult:
    """Score ``action`` from how each incident matches it (``matches``).

    The threshold applies to ``matches.similarity``; ``now`` anchors recency (no recency
    factor without it, so scoring stays deterministic).
    """
    same_action, same_name = matches.same_action, matches.same_name
    same_type, tag_overlap = matches.same_type, matches.tag_overlap
    semantic, similarity = matches.semantic, matches.similarity
    severity_rank, id_rank = matches.severity_rank, matches.id_rank
    w = context.weights
    # 1. What counts as a precedent: the same change, not the same kind of thing.
    change = np.where(same_action, 1.0, 0.0)
    if semantic is not None:
        meaning = np.where(semantic >= threshold - 1e-9, semantic, 0.0)
        if action.action in ACTION_KEYWORDS:
            # Both actions known and different: the texts share a topic, not the change.
            meaning = np.where(context.known_action, meaning * w.other_action_semantic, meaning)
        change = np.maximum(change, meaning)
    change = np.maximum(change, np.where(same_name, w.name_only_change, 0.0))
    precedent = change > 0
    scored = precedent & (similarity >= threshold - 1e-9)

    # 2. Evidence per precedent: the match, its context, what the incident says — worked out
    # for the scored precedents only (element by element the same values as over the whole
    # history; everything else has no evidence), so a request costs a pass over its
    # precedents, not several over every incident.
    hits = np.flatnonzero(scored)
    evidence = np.zeros(similarity.shape, dtype=np.float64)
    if hits.size == 0:
        factors = [RiskFactor(name="precedent", contribution=0.0, detail=_no_precedent(precedent))]
        score, extra = _base_rate(0.0, action, outcomes, now, w)
        factors.extend(extra)
        return RiskModelResult(score, None, precedent, scored, evidence, factors)
    match = (
        change[hits]
        * np.where(same_name[hits], 1.0, w.other_target)
        * np.where(same_type[hits], 1.0, w.type_mismatch)
        * np.where(tag_overlap[hits], 1.0, w.no_tag_overlap)
    )
    env_row = np.asarray(ENVIRONMENT_FACTORS[environment_tier(action.environment)])
    environment = env_row[context.tier[hits]]
    location = _mismatch(context.namespace[hits], context.namespace_code(action.namespace), w)
    location *= _mismatch(
        context.cluster[hits], context.cluster_code(action.cluster), w, cluster=True
    )
    outcome = context.outcome[hits] * np.where(context.recurring[hits], w.recurring, 1.0)
    recency = _recency(context.occurred[hits], now, w)
    base = context.severity[hits] * match
    found = np.minimum(1.0, base * environment * location * outcome * recency)
    evidence[hits] = found

    # The strongest: most evidence, then the more severe, then by id (deterministic).
    ranked = np.lexsort((id_rank[hits], severity_rank[hits], -found))
    first = int(ranked[0])  # its place among the hits
    top = int(hits[first])
    strongest = float(found[first])
    rest = np.minimum(found[ranked[1:]], 1.0 - 1e-12)
    noisy_or = 1.0 - math.exp(float(np.log1p(-rest).sum())) if rest.size else 0.0
    tail = min(w.tail_ratio * strongest, w.tail_share * noisy_or)

    # Points, stage by stage, so each factor's contribution is what it moved.
    stages: list[tuple[str, float, str]] = []
    p0 = 100.0 * float(base[first])
    stages.append(
        (
            "precedent",
            p0,
            _precedent_detail(
                context.ids[top],
                bool(same_action[top]),
                bool(same_name[top]),
                float(change[top]),
                float(semantic[top]) if semantic is not None else 0.0,
                w,
            )
            + _refinements(bool(same_type[top]), bool(tag_overlap[top])),
        )
    )
    p1 = p0 * float(environment[first])
    stages.append(("environment", p1, _environment_detail(context, action, top)))
    p2 = p1 * float(location[first])
    stages.append(("location", p2, "namespace or cluster differs from the request's"))
    p3 = p2 * float(outcome[first])
    stages.append(("outcome", p3, _outcome_detail(context, top)))
    p4 = p3 * float(recency[first])
    stages.append(("recency", p4, f"occurred {_age_days(context, top, now):.0f} days ago"))
    stages.append(
        (
            "other precedents",
            p4 + 100.0 * tail,
            f"{rest.size} more precedent{'s' if rest.size != 1 else ''} "
            f"(noisy-OR {noisy_or:.2f}; at most {w.tail_ratio:.0%} of the strongest "
            f"and {100 * w.tail_share:g} points)",
        )
    )
    score, extra = _base_rate(100.0 * (strongest + tail), action, outcomes, now, w)
    factors = _contributions(stages)
    if extra:
        factors.extend(extra)
    # Whatever the cap removed (evidence above 1 or a total above 100).
    total = round(sum(f.contribution for f in factors), 1)
    if abs(total - score) >= 0.05:
        factors.append(
            RiskFactor(
                name="cap",
                contribution=round(score - total, 1),
                detail="scores and evidence are capped at 100",
            )
        )
    return RiskModelResult(score, top, precedent, scored, evidence, factors)


def _mismatch(
    codes: npt.NDArray[np.int32], request: int, w: RiskModelWeights, *, cluster: bool = False
) -> FloatArray:
    factor = w.cluster_mismatch if cluster else w.namespace_mismatch
    if request == -1:
        return np.ones(codes.shape, dtype=np.float64)
    # Compared only where both sides are known: an unrecorded namespace is not a different one.
    return np.where((codes >= 0) & (codes != request), factor, 1.0)


def _recency(occurred: FloatArray, now: datetime | None, w: RiskModelWeights) -> FloatArray:
    if now is None:
        return np.ones(occurred.shape, dtype=np.float64)
    age_days = np.clip((_epoch(now) - np.nan_to_num(occurred, nan=_epoch(now))) / 86400.0, 0, None)
    return w.recency_floor + (1.0 - w.recency_floor) * np.exp2(-age_days / w.recency_half_life_days)


def _age_days(context: IncidentContext, top: int, now: datetime | None) -> float:
    occurred = float(context.occurred[top])
    if now is None or math.isnan(occurred):
        return 0.0
    return max(0.0, (_epoch(now) - occurred) / 86400.0)


def _base_rate(
    points: float,
    action: ProposedAction,
    outcomes: OutcomeEvidence | None,
    now: datetime | None,
    w: RiskModelWeights,
) -> tuple[float, list[RiskFactor]]:
    """Apply the past runs' failure rate; returns the final score and its factor, if any."""
    records = outcomes.lookup(action) if outcomes is not None else ()
    successes = sum(r.successes for r in records)
    failures = [t for r in records for t in r.failure_times]
    if successes == 0 and not failures:
        return round(min(100.0, points), 1), []
    weighted = sum(_failure_weight(t, now, w) for t in failures)
    prior = w.prior_failures / (w.prior_failures + w.prior_successes)
    rate = (weighted + w.prior_failures) / (
        successes + weighted + w.prior_failures + w.prior_successes
    )
    multiplier = min(w.base_rate_max, max(w.base_rate_min, math.sqrt(rate / prior)))
    added = w.failure_points * max(0.0, rate - prior)
    final = min(100.0, points * multiplier + added)
    detail = (
        f"{successes} successful and {len(failures)} failed past runs of {action.action} on "
        f"{action.resource_type}: smoothed failure rate {rate:.0%} vs prior {prior:.0%} "
        f"(×{multiplier:.2f}, +{added:.1f})"
    )
    contribution = round(round(points * multiplier + added, 1) - round(points, 1), 1)
    return round(final, 1), [RiskFactor(name="base rate", contribution=contribution, detail=detail)]


def _failure_weight(moment: datetime | None, now: datetime | None, w: RiskModelWeights) -> float:
    if moment is None or now is None:
        return 1.0
    age_days = max(0.0, (_epoch(now) - _epoch(moment)) / 86400.0)
    fresh = math.exp2(-age_days / w.failure_half_life_days)
    return w.old_failure_weight + (1.0 - w.old_failure_weight) * fresh


def _contributions(stages: list[tuple[str, float, str]]) -> list[RiskFactor]:
    """Differences of the rounded running totals, so the contributions sum to the score."""
    factors = []
    previous = 0.0
    for name, total, detail in stages:
        delta = round(round(total, 1) - previous, 1)
        previous = round(total, 1)
        if name == "precedent" or delta != 0.0:
            factors.append(RiskFactor(name=name, contribution=delta, detail=detail[:512]))
    return factors


def _no_precedent(precedent: BoolArray) -> str:
    listed = int(precedent.sum())
    if listed:
        return f"{listed} precedent(s) below the similarity threshold; none counts"
    return "no incident matches the change (same action, same resource or same meaning)"


def _precedent_detail(
    incident_id: str,
    same_action: bool,
    same_name: bool,
    change: float,
    semantic: float,
    w: RiskModelWeights,
) -> str:
    if same_action:
        what = "same action"
    elif same_name and change <= w.name_only_change:
        what = "another action"
    elif change < semantic:
        discount = change / semantic
        what = f"similar text (semantic {semantic:.2f}) about another action (×{discount:.2f})"
    else:
        what = f"similar text (semantic {semantic:.2f})"
    where = "the same resource" if same_name else "another resource"
    return f"{incident_id}: {what} on {where}"


def _refinements(same_type: bool, tag_overlap: bool) -> str:
    refinements = []
    if not same_type:
        refinements.append("another resource type")
    if not tag_overlap:
        refinements.append("no matching tag")
    return f" ({', '.join(refinements)})" if refinements else ""


def _environment_detail(context: IncidentContext, action: ProposedAction, top: int) -> str:
    request = _TIER_NAMES[environment_tier(action.environment)]
    incident = _TIER_NAMES[int(context.tier[top])]
    return f"{incident} incident, {request} request"


def _outcome_detail(context: IncidentContext, top: int) -> str:
    parts = []
    if context.outcome[top] > 1.0:
        parts.append("not fully resolved")
    if context.recurring[top]:
        parts.append("recurring on this resource")
    return ", ".join(parts) or "resolved one-off"
