"""The default risk model's five properties, each as a hypothesis property over random histories.

1. Precedent means the same change; 2. bounded evidence; 3. context; 4. base rate;
5. monotone and explained. Histories are small random ones over a tiny vocabulary, so matches
on every dimension happen often.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precedent.core.historical import (
    DefaultRiskModel,
    HistoricalResult,
    SimilarityMode,
    evaluate_history,
)
from precedent.core.normalize import ACTION_KEYWORDS, ProposedAction
from precedent.core.risk import band_for
from precedent.core.risk_model import OutcomeEvidence, OutcomeRecord
from precedent.core.snapshot import History
from precedent.models import Incident, IncidentOutcome, IncidentResource, Severity

ACTIONS = ["restart_service", "scale_down", "rollback", "drain_node", "frobnicate"]
NAMES = ["payment-api", "checkout", "ledger", "node-1"]
TYPES = ["Deployment", "StatefulSet", "Node"]
TAGS = ["restart", "scale-down", "rollback", "drain", "outage", "latency"]
ENVIRONMENTS = [None, "production", "staging", "dev"]
NAMESPACES = [None, "payments", "shop"]
NOW = datetime(2026, 11, 1, tzinfo=UTC)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def incidents(draw: st.DrawFn, prefix: str = "INC") -> Incident:
    """A random incident over the small vocabulary."""
    number = draw(st.integers(0, 10**6))
    return Incident(
        id=f"{prefix}-{number:07d}",
        title="incident",
        action=draw(st.sampled_from(ACTIONS)),
        resource=IncidentResource(
            type=draw(st.sampled_from(TYPES)), name=draw(st.sampled_from(NAMES))
        ),
        severity=draw(st.sampled_from(list(Severity))),
        tags=draw(st.lists(st.sampled_from(TAGS), max_size=3, unique=True)),
        outcome=draw(st.sampled_from(list(IncidentOutcome))),
        occurred_at=NOW - timedelta(days=draw(st.integers(0, 2000))),
        environment=draw(st.sampled_from(ENVIRONMENTS)),
        namespace=draw(st.sampled_from(NAMESPACES)),
    )


def unique(items: list[Incident]) -> list[Incident]:
    """Drop incidents whose id repeats."""
    seen: dict[str, Incident] = {}
    for item in items:
        seen.setdefault(item.id, item)
    return list(seen.values())


histories = st.lists(incidents(), min_size=0, max_size=12).map(unique)


@st.composite
def actions(draw: st.DrawFn) -> ProposedAction:
    """A random request over the same vocabulary."""
    action = draw(st.sampled_from(ACTIONS))
    return ProposedAction(
        action=action,
        resource_type=draw(st.sampled_from(TYPES)).lower(),
        resource_name=draw(st.sampled_from(NAMES)),
        keywords=ACTION_KEYWORDS.get(action, frozenset()),
        environment=draw(st.sampled_from(ENVIRONMENTS)),
        namespace=draw(st.sampled_from(NAMESPACES)),
    )


def semantics(size: int) -> st.SearchStrategy[dict[int, float]]:
    """Calibrated semantic similarity for some incident positions."""
    if size == 0:
        return st.just({})
    return st.dictionaries(st.integers(0, size - 1), st.floats(0, 1), max_size=size)


def score(
    history: History,
    action: ProposedAction,
    semantic: Mapping[int, float] | None = None,
    *,
    mode: SimilarityMode = "hybrid",
    outcomes: OutcomeEvidence | None = None,
    now: datetime | None = NOW,
) -> HistoricalResult:
    """The default model's answer."""
    return evaluate_history(
        history,
        action,
        mode=mode,
        semantic=semantic or {},
        model=DefaultRiskModel(),
        outcomes=outcomes,
        now=now,
        top_k=1000,
    )


def is_precedent(incident: Incident, action: ProposedAction, semantic: float) -> bool:
    """Property 1's definition, written independently of the model."""
    same_action = incident.action == action.action
    same_name = incident.resource is not None and incident.resource.name == action.resource_name
    return same_action or same_name or semantic >= 0.30


# --- 1. Precedent means the same change -------------------------------------------------------


@SETTINGS
@given(data=st.data(), items=histories, action=actions())
def test_only_precedents_count_and_are_listed(
    data: st.DataObject, items: list[Incident], action: ProposedAction
) -> None:
    history = History(items)
    semantic = data.draw(semantics(len(items)))
    result = score(history, action, semantic)
    precedents = {
        i.id for p, i in enumerate(items) if is_precedent(i, action, semantic.get(p, 0.0))
    }
    # Listed: the precedents, and (ranking is ranking) semantic neighbours that are no
    # precedent — never an incident that matched on resource type or tags alone.
    retrieved = precedents | {i.id for p, i in enumerate(items) if semantic.get(p, 0.0) > 0}
    listed = {s.id for s in result.similar}
    assert listed <= retrieved
    if len(retrieved) <= len(result.similar):
        assert listed == retrieved
    assert result.similar_count == len(precedents)
    if result.risk.most_relevant_incident is not None:
        assert result.risk.most_relevant_incident in precedents
        # The incident the reasoning names is in the list people read.
        assert result.risk.most_relevant_incident in listed
    if not precedents:
        assert result.risk.score == 0.0


@SETTINGS
@given(items=histories, action=actions())
def test_type_and_tags_alone_never_make_a_precedent(
    items: list[Incident], action: ProposedAction
) -> None:
    history = History(items)
    result = score(history, action, mode="rules")
    for item in result.similar:
        assert item.parts.action > 0 or item.parts.resource_name > 0


# --- 2. Bounded evidence ----------------------------------------------------------------------


def type_and_tag_matches(action: ProposedAction, count: int, severity: Severity) -> list[Incident]:
    """``count`` incidents matching ``action`` only on resource type and tags."""
    other = next(a for a in ACTIONS if a != action.action)
    tag = next(iter(sorted(action.keywords)), "outage")
    return [
        Incident.model_construct(
            id=f"NOISE-{n:06d}",
            title="noise",
            action=other,
            resource=IncidentResource(type=action.resource_type, name=f"other-{n}"),
            severity=severity,
            tags=[tag],
            outcome=IncidentOutcome.UNRESOLVED,
            occurred_at=NOW,
            environment=action.environment,
            namespace=action.namespace,
            cluster=None,
            quality_score=1.0,
            description="",
            root_cause="",
            resolution="",
            recommended_procedure="",
            resolution_hours=None,
            priority=None,
            domain=None,
        )
        for n in range(count)
    ]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=histories,
    action=actions(),
    count=st.sampled_from([1, 10, 1000, 10_000]),
    severity=st.sampled_from(list(Severity)),
)
def test_any_number_of_type_or_tag_matches_changes_nothing(
    items: list[Incident], action: ProposedAction, count: int, severity: Severity
) -> None:
    before = score(History(items), action, mode="rules")
    after = score(
        History([*items, *type_and_tag_matches(action, count, severity)]), action, mode="rules"
    )
    assert after.risk.band is before.risk.band
    assert after.risk.score == before.risk.score


@SETTINGS
@given(
    strongest=incidents(),
    weaker=st.lists(incidents(prefix="WEAK"), max_size=30).map(unique),
    action=actions(),
)
def test_a_tail_of_weaker_precedents_adds_a_bounded_amount(
    strongest: Incident, weaker: list[Incident], action: ProposedAction
) -> None:
    alone = score(History([strongest]), action)
    together = score(History([strongest, *weaker]), action)
    top_points = max(alone.risk.score, _strongest_points(together))
    # The tail adds at most 20% of the strongest and at most 15 points (0.2: the factors are
    # differences of totals rounded to 0.1).
    assert together.risk.score <= min(100.0, top_points * 1.2, top_points + 15.0) + 0.2
    assert together.risk.score >= alone.risk.score


def _strongest_points(result: HistoricalResult) -> float:
    """Points of the strongest precedent alone: the score minus the tail's contribution."""
    tail = sum(f.contribution for f in result.risk.factors if f.name == "other precedents")
    return result.risk.score - tail


# --- 3. Context -------------------------------------------------------------------------------


def single(incident: Incident, action: ProposedAction) -> float:
    """Score of a one-incident history."""
    return score(History([incident]), action).risk.score


@SETTINGS
@given(incident=incidents(), action=actions())
def test_same_target_weighs_more_than_elsewhere(incident: Incident, action: ProposedAction) -> None:
    assert incident.resource is not None
    here = incident.model_copy(
        update={
            "resource": IncidentResource(type=incident.resource.type, name=action.resource_name)
        }
    )
    elsewhere = incident.model_copy(
        update={"resource": IncidentResource(type=incident.resource.type, name="somewhere-else")}
    )
    assert single(here, action) >= single(elsewhere, action)
    same_ns = here.model_copy(update={"namespace": action.namespace})
    other_ns = here.model_copy(update={"namespace": "another-namespace"})
    assert single(same_ns, action) >= single(other_ns, action)


@SETTINGS
@given(
    incident=incidents(), action=actions(), env=st.sampled_from(["production", "staging", "dev"])
)
def test_same_environment_weighs_most(incident: Incident, action: ProposedAction, env: str) -> None:
    request = replace(action, environment=env)
    same = single(incident.model_copy(update={"environment": env}), request)
    for other in ("production", "staging", "dev"):
        assert same >= single(incident.model_copy(update={"environment": other}), request)


@SETTINGS
@given(incident=incidents(), action=actions())
def test_unresolved_and_recurring_weigh_more_and_recent_more_than_old(
    incident: Incident, action: ProposedAction
) -> None:
    resolved = incident.model_copy(update={"outcome": IncidentOutcome.RESOLVED})
    for worse in (IncidentOutcome.PARTIAL, IncidentOutcome.UNRESOLVED):
        assert single(incident.model_copy(update={"outcome": worse}), action) >= single(
            resolved, action
        )
    twin = incident.model_copy(update={"id": incident.id + "-again"})
    recurring = score(History([incident, twin]), action).risk.score
    assert recurring >= single(incident, action)
    recent = incident.model_copy(update={"occurred_at": NOW - timedelta(days=3)})
    old = incident.model_copy(update={"occurred_at": NOW - timedelta(days=1500)})
    assert single(recent, action) >= single(old, action)


def test_context_strictly_changes_an_uncapped_precedent() -> None:
    """The inequalities above are strict where nothing is capped."""
    action = ProposedAction(
        "restart_service",
        "deployment",
        "checkout",
        ACTION_KEYWORDS["restart_service"],
        environment="staging",
        namespace="shop",
    )
    base = Incident(
        id="INC-1",
        title="t",
        action="restart_service",
        resource=IncidentResource(type="Deployment", name="checkout"),
        severity=Severity.MEDIUM,
        tags=["restart"],
        outcome=IncidentOutcome.RESOLVED,
        occurred_at=NOW - timedelta(days=400),
        environment="staging",
        namespace="shop",
    )
    s = single(base, action)
    assert single(base.model_copy(update={"environment": "production"}), action) < s
    assert single(base.model_copy(update={"namespace": "payments"}), action) < s
    assert single(base.model_copy(update={"outcome": IncidentOutcome.UNRESOLVED}), action) > s
    assert single(base.model_copy(update={"occurred_at": NOW}), action) > s
    other = base.model_copy(update={"resource": IncidentResource(type="Deployment", name="x")})
    assert single(other, action) < s


# --- 4. Base rate -----------------------------------------------------------------------------


def record(action: ProposedAction, successes: int, failures: int, days: int = 1) -> OutcomeRecord:
    """Past runs of ``action`` on its kind of target."""
    return OutcomeRecord(
        action=action.action,
        resource_kind=action.resource_type,
        successes=successes,
        failure_times=tuple(NOW - timedelta(days=days) for _ in range(failures)),
    )


@SETTINGS
@given(
    items=histories,
    action=actions(),
    successes=st.integers(0, 500),
    failures=st.integers(0, 50),
    more=st.integers(1, 500),
)
def test_successes_lower_failures_raise_and_both_are_bounded(
    items: list[Incident], action: ProposedAction, successes: int, failures: int, more: int
) -> None:
    history = History(items)
    plain = score(history, action).risk.score
    assert score(history, action, outcomes=OutcomeEvidence()).risk.score == plain
    base = OutcomeEvidence((record(action, successes, failures),))
    with_base = score(history, action, outcomes=base).risk.score
    more_successes = OutcomeEvidence((record(action, successes + more, failures),))
    more_failures = OutcomeEvidence((record(action, successes, failures + more),))
    assert score(history, action, outcomes=more_successes).risk.score <= with_base
    assert score(history, action, outcomes=more_failures).risk.score >= with_base
    # Bounded: at most ×1.5 plus 45 points, at least half.
    assert with_base <= min(100.0, plain * 1.5 + 45.0) + 0.1
    assert with_base >= plain * 0.5 - 0.1


def test_many_successes_lower_and_recent_failures_raise_a_real_score() -> None:
    action = ProposedAction(
        "restart_service", "deployment", "checkout", ACTION_KEYWORDS["restart_service"]
    )
    incident = Incident(
        id="INC-1",
        title="t",
        action="restart_service",
        resource=IncidentResource(type="Deployment", name="ledger"),
        severity=Severity.HIGH,
        tags=["restart"],
        outcome=IncidentOutcome.RESOLVED,
    )
    history = History([incident])
    plain = score(history, action).risk.score
    routine = score(history, action, outcomes=OutcomeEvidence((record(action, 200, 0),)))
    assert routine.risk.score < plain
    assert any(f.name == "base rate" and f.contribution < 0 for f in routine.risk.factors)
    recent = OutcomeEvidence((record(action, 5, 3, days=2),))
    old = OutcomeEvidence((record(action, 5, 3, days=400),))
    assert score(history, action, outcomes=recent).risk.score > plain
    assert (
        score(history, action, outcomes=recent).risk.score
        > score(history, action, outcomes=old).risk.score
    )


# --- 5. Monotone and explained ----------------------------------------------------------------

SEVERITY_ORDER = [Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL]


@SETTINGS
@given(data=st.data(), items=histories.filter(bool), action=actions())
def test_more_severe_or_more_similar_never_lowers_the_score(
    data: st.DataObject, items: list[Incident], action: ProposedAction
) -> None:
    history = History(items)
    semantic = data.draw(semantics(len(items)))
    before = score(history, action, semantic).risk.score
    p = data.draw(st.integers(0, len(items) - 1))
    target = items[p]
    rank = SEVERITY_ORDER.index(target.severity)
    severer = target.model_copy(
        update={"severity": SEVERITY_ORDER[data.draw(st.integers(rank, 3))]}
    )
    assert (
        score(History([*items[:p], severer, *items[p + 1 :]]), action, semantic).risk.score
        >= before
    )
    closer = dict(semantic)
    closer[p] = data.draw(st.floats(semantic.get(p, 0.0), 1.0))
    assert score(history, action, closer).risk.score >= before
    assert target.resource is not None
    more_alike = target.model_copy(
        update={
            "resource": IncidentResource(type=action.resource_type, name=target.resource.name),
            "tags": [*target.tags, *sorted(action.keywords)[:1]],
        }
    )
    assert (
        score(History([*items[:p], more_alike, *items[p + 1 :]]), action, semantic).risk.score
        >= before
    )


@SETTINGS
@given(data=st.data(), items=histories, action=actions())
def test_factors_sum_to_the_score_and_the_reasoning_names_them(
    data: st.DataObject, items: list[Incident], action: ProposedAction
) -> None:
    history = History(items)
    semantic = data.draw(semantics(len(items)))
    risk = score(history, action, semantic).risk
    assert risk.factors
    assert abs(sum(f.contribution for f in risk.factors) - risk.score) < 0.05 * len(risk.factors)
    assert band_for(risk.score) is risk.band
    for factor in risk.factors:
        assert factor.detail
    if risk.most_relevant_incident:
        assert risk.most_relevant_incident in risk.reasoning
        biggest = max(risk.factors, key=lambda f: abs(f.contribution))
        assert biggest.name in risk.reasoning
