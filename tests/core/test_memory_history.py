"""A request's history view with the fleet memory's incidents (``History.extended``) scores
exactly as a history rebuilt over all of them, without rebuilding the snapshot."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from precedent.core.historical import evaluate_history, risk_model_named
from precedent.core.normalize import ProposedAction, normalize_request
from precedent.core.snapshot import DuplicateIncidentError, History
from precedent.models import Incident, RemediationRequestSpec
from tests.bench.synthetic import incidents

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def _with(incident: Incident, **update: object) -> Incident:
    """A validated copy (``model_copy`` would keep strings where enums belong)."""
    return Incident.model_validate({**incident.model_dump(), **update})


def _varied(seed: int, n: int) -> list[Incident]:
    """Synthetic incidents with namespaces, clusters, environments, outcomes and times."""
    rng = random.Random(seed)
    out = []
    for incident in incidents(n, seed=seed):
        out.append(
            _with(
                incident,
                namespace=rng.choice([None, "prod", "payments", "kube-system"]),
                cluster=rng.choice([None, "east", "west"]),
                environment=rng.choice([None, "production", "staging"]),
                outcome=rng.choice(["resolved", "partial", "unresolved", "unknown"]),
                occurred_at=NOW - timedelta(days=rng.uniform(0, 60)),
                tags=[*incident.tags, rng.choice(["oom", "dns", "latency", "new-tag"])],
            )
        )
    return out


def _memory(base: list[Incident], seed: int) -> list[Incident]:
    """Incidents a memory would add: new ids, some repeating a held action on a held resource
    (so held incidents become recurring), ids that sort before, between and after held ones."""
    rng = random.Random(seed)
    extra = []
    for j, incident in enumerate(_varied(seed + 1, 6)):
        twin = rng.choice(base)
        update: dict[str, object] = {
            "id": rng.choice(["AAA", "SYN-0000010x", "ZZZ", "SYN-0000003a"]) + f"-{j}"
        }
        if j % 2 == 0:  # the same action on the same resource as a held incident
            update |= {"action": twin.action, "resource": twin.resource}
        if j == 1:
            update |= {"namespace": "never-seen", "cluster": "north", "tags": ["brand-new-tag"]}
        extra.append(_with(incident, **update))
    return extra


def _actions(base: list[Incident]) -> list[ProposedAction]:
    out = []
    for incident in base[:12]:
        assert incident.resource is not None
        spec = RemediationRequestSpec.model_validate(
            {
                "action": incident.action.replace("_", "-"),
                "target": {"kind": incident.resource.type, "name": incident.resource.name},
                "description": incident.title,
                "labels": {"environment": "production"},
            }
        )
        out.append(normalize_request(spec))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("risk_model", ["seed", "default"])
def test_extended_history_scores_as_a_rebuilt_one(seed: int, risk_model: str) -> None:
    base = _varied(seed, 300)
    extra = _memory(base, seed)
    snapshot = History(base)
    view = snapshot.extended(extra)
    rebuilt = History([*base, *extra])

    assert view.incidents == rebuilt.incidents
    assert view.id_rank.tolist() == rebuilt.id_rank.tolist()
    assert view.severity_rank.tolist() == rebuilt.severity_rank.tolist()
    assert [view.position(i.id) for i in rebuilt] == list(range(len(rebuilt)))
    mine, theirs = view.risk_context(), rebuilt.risk_context()
    assert mine.recurring.tolist() == theirs.recurring.tolist()
    assert mine.namespace.tolist() == theirs.namespace.tolist()
    assert mine.cluster.tolist() == theirs.cluster.tolist()
    for action in _actions(base):
        semantic = {len(base) + 1: 0.83, 3: 0.4}  # a memory incident found by meaning too
        got = evaluate_history(
            view,
            action,
            mode="hybrid",
            semantic=semantic,
            now=NOW,
            model=risk_model_named(risk_model),
        )
        want = evaluate_history(
            rebuilt,
            action,
            mode="hybrid",
            semantic=semantic,
            now=NOW,
            model=risk_model_named(risk_model),
        )
        assert got == want


def test_the_snapshot_is_left_as_it_was() -> None:
    base = _varied(5, 50)
    snapshot = History(base)
    before = (snapshot.fingerprint, snapshot.id_rank.tolist(), len(snapshot.rules))
    recurring = snapshot.risk_context().recurring.tolist()
    view = snapshot.extended(_memory(base, 5))
    assert len(view) == len(base) + 6
    assert (snapshot.fingerprint, snapshot.id_rank.tolist(), len(snapshot.rules)) == before
    assert snapshot.risk_context().recurring.tolist() == recurring
    assert snapshot.position("AAA-0") is None
    assert view.fingerprint != snapshot.fingerprint


def test_fingerprint_follows_the_memory_content() -> None:
    base = _varied(6, 20)
    snapshot = History(base)
    extra = _memory(base, 6)
    changed = [_with(extra[0], title="another title"), *extra[1:]]
    assert snapshot.extended(extra).fingerprint == snapshot.extended(extra).fingerprint
    assert snapshot.extended(extra).fingerprint != snapshot.extended(changed).fingerprint
    assert snapshot.extended([]) is snapshot


def test_an_id_the_snapshot_holds_is_refused() -> None:
    base = _varied(7, 10)
    with pytest.raises(DuplicateIncidentError, match=base[0].id):
        History(base).extended([base[0]])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("risk_model", ["seed", "default"])
def test_a_snapshot_built_from_its_predecessor_scores_as_one_built_afresh(
    seed: int, risk_model: str
) -> None:
    # A history that changes (incidents added, replaced, removed) is snapshotted from the
    # snapshot before (History(..., previous=...), as the history store does): every answer
    # is the one a snapshot built afresh gives, and so is the default model's context.
    rng = random.Random(seed)
    base = _varied(seed, 300)
    before = History(sorted(base, key=lambda i: i.id))
    before.risk_context()  # built, as after a first request: the next one starts from it
    current = list(base)
    for step in range(3):
        for incident in _memory(current, seed + 10 * step):  # new ids, some recurring
            current.append(_with(incident, id=f"{incident.id}-{step}"))
        for _ in range(4):
            del current[rng.randrange(len(current))]
        at = rng.randrange(len(current))
        current[at] = _with(current[at], namespace="never-seen", severity="critical")
        ordered = sorted(current, key=lambda i: i.id)
        if step == 1:  # a snapshot no request scored in between: its context never built
            between = History(ordered[1:], previous=before)
            assert between._risk_context is None
            before = between
        after = History(ordered, previous=before)
        afresh = History(ordered)
        assert after.fingerprint == afresh.fingerprint
        mine, theirs = after.risk_context(), afresh.risk_context()
        assert mine.recurring.tolist() == theirs.recurring.tolist()
        assert mine.severity.tolist() == theirs.severity.tolist()
        assert mine.tier.tolist() == theirs.tier.tolist()
        assert mine.outcome.tolist() == theirs.outcome.tolist()
        assert mine.known_action.tolist() == theirs.known_action.tolist()
        assert mine.ids == theirs.ids
        assert str(mine.occurred.tolist()) == str(theirs.occurred.tolist())  # NaN too
        for value in (None, "prod", "payments", "kube-system", "never-seen", "gone"):
            assert (mine.namespace == mine.namespace_code(value)).tolist() == (
                theirs.namespace == theirs.namespace_code(value)
            ).tolist()
        for action in _actions(ordered):
            semantic = {3: 0.4, len(ordered) - 1: 0.83}
            got, want = (
                evaluate_history(
                    snapshot,
                    action,
                    mode="hybrid",
                    semantic=semantic,
                    now=NOW,
                    model=risk_model_named(risk_model),
                )
                for snapshot in (after, afresh)
            )
            assert got == want
        before = after
