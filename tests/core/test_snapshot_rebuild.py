"""A history snapshot built from the one it replaces is the snapshot built afresh.

``History(incidents, previous=...)`` copies what ``previous`` worked out for every incident
object both hold (content digests, rule matrix codes and tag postings, sort keys) and works
out only the others', so a change to a 100,000-incident history costs its new incidents
instead of all of them. The fingerprint, the rule scores and the sort keys are the same
either way.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from precedent.core import snapshot
from precedent.core.normalize import ProposedAction
from precedent.core.snapshot import History
from precedent.models import Incident
from precedent.services import HistoryStore
from tests.helpers import incidents_passed_to

ACTIONS = ("restart_service", "scale_down", "rollback", "drain_node", "")
KINDS = ("Deployment", "StatefulSet", "Node", "")
TAGS = ("network", "restart", "capacity", "dns", "rollout", "scale")


def _incident(n: int, **extra: object) -> Incident:
    fields = {
        "id": f"INC-{n:05d}",
        "title": f"payment-api restart {n} dropped connections",
        "severity": ["low", "medium", "high", "critical"][n % 4],
        "tags": [TAGS[(n * k) % len(TAGS)] for k in range(n % 4)],
        "description": f"the rollout of svc-{n % 7} took {n} minutes",
    }
    if ACTIONS[n % len(ACTIONS)]:  # some incidents record no action, some no resource
        fields["action"] = ACTIONS[n % len(ACTIONS)]
    if n % 5:
        fields["resource"] = {"type": KINDS[n % 3], "name": f"svc-{n % 7}"}
    return Incident.model_validate({**fields, **extra})


@pytest.fixture
def digests_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the incidents whose content digest was worked out."""
    return incidents_passed_to(monkeypatch, snapshot, "content_digest")


@pytest.mark.parametrize("seed", range(5))
def test_a_snapshot_from_its_predecessor_has_the_fingerprint_of_one_built_afresh(
    seed: int,
) -> None:
    rng = random.Random(seed)
    incidents = [_incident(n) for n in range(60)]
    rng.shuffle(incidents)  # the fingerprint follows ids, not positions
    before = History(incidents)
    after = list(incidents)
    del after[rng.randrange(len(after))]  # one removed
    after.append(_incident(1000))  # one added
    at = rng.randrange(len(after))
    after[at] = after[at].model_copy(update={"title": "rewritten"})  # one replaced
    rng.shuffle(after)
    assert History(after, previous=before).fingerprint == History(after).fingerprint
    assert History(after).fingerprint != before.fingerprint
    # Chained: the predecessor itself built from another.
    again = History(incidents, previous=History(after, previous=before))
    assert again.fingerprint == before.fingerprint


def test_only_the_new_and_replaced_incidents_are_digested(digests_made: list[str]) -> None:
    incidents = [_incident(n) for n in range(50)]
    before = History(incidents)
    assert len(digests_made) == 50
    digests_made.clear()
    replaced = _incident(7, severity="critical")
    after = [*incidents[:7], replaced, *incidents[8:], _incident(50)]
    History(after, previous=before)
    assert sorted(digests_made) == ["INC-00007", "INC-00050"]


def test_an_equal_object_that_is_not_the_same_one_is_digested(digests_made: list[str]) -> None:
    # Equal content, another object: the digest is worked out again (and comes out equal).
    incidents = [_incident(n) for n in range(5)]
    before = History(incidents)
    digests_made.clear()
    twin = _incident(3)
    after = History([*incidents[:3], twin, *incidents[4:]], previous=before)
    assert digests_made == ["INC-00003"]
    assert after.fingerprint == before.fingerprint


def test_the_store_builds_each_snapshot_from_the_last(digests_made: list[str]) -> None:
    store = HistoryStore([_incident(n) for n in range(40)])
    first = store.snapshot
    assert len(digests_made) == 40
    digests_made.clear()
    store.upsert("inc-a", _incident(100).model_dump(mode="json"))
    store.upsert("inc-b", _incident(101).model_dump(mode="json"))  # two changes, one rebuild
    second = store.snapshot
    assert sorted(digests_made) == ["INC-00100", "INC-00101"]
    digests_made.clear()
    store.remove("inc-a")
    third = store.snapshot
    assert digests_made == []
    assert third.fingerprint == History([*first.incidents, _incident(101)]).fingerprint
    assert len({first.fingerprint, second.fingerprint, third.fingerprint}) == 3


def test_a_request_view_keeps_its_own_fingerprint() -> None:
    # ``extended`` (a request's view with the fleet memory's incidents) is never the base of
    # another snapshot: a snapshot built from it digests everything again, the same result.
    base = History([_incident(n) for n in range(10)])
    view = base.extended([_incident(99)])
    rebuilt = History(list(view.incidents), previous=view)
    assert rebuilt.fingerprint == History(list(view.incidents)).fingerprint


def _same_snapshot(mine: History, afresh: History) -> None:
    assert mine.fingerprint == afresh.fingerprint
    assert mine.incidents == afresh.incidents
    assert mine.severity_rank.tolist() == afresh.severity_rank.tolist()
    assert mine.severity_rank.dtype == afresh.severity_rank.dtype
    assert mine.severity_weight.tolist() == afresh.severity_weight.tolist()
    assert mine.id_rank.tolist() == afresh.id_rank.tolist()
    assert len(mine.rules) == len(afresh.rules)
    for action in ACTIONS:
        for kind in KINDS:
            for name in ("svc-3", "SVC-4 ", "svc-9", ""):
                proposed = ProposedAction(
                    action=action,
                    resource_type=kind,
                    resource_name=name.strip().lower(),
                    keywords=frozenset(TAGS[: len(name) % len(TAGS) + 1]),
                )
                got, want = mine.rules.score(proposed), afresh.rules.score(proposed)
                for part in ("action", "resource_type", "resource_name", "tags"):
                    assert np.array_equal(getattr(got, part), getattr(want, part)), part


@pytest.mark.parametrize("seed", range(8))
def test_rules_and_sort_keys_from_the_predecessor_are_those_built_afresh(seed: int) -> None:
    rng = random.Random(seed)
    incidents = [_incident(n) for n in range(80)]
    before = History(sorted(incidents, key=lambda i: i.id))
    current = list(incidents)
    for step in range(4):  # a chain of changes, each snapshot built from the last
        for _ in range(rng.randrange(1, 6)):
            move = rng.random()
            if move < 0.35 and len(current) > 1:
                del current[rng.randrange(len(current))]
            elif move < 0.7:
                current.append(_incident(1000 + 10 * step + rng.randrange(10) + 100 * seed))
            else:
                at = rng.randrange(len(current))
                n = int(current[at].id.split("-")[1])
                current[at] = _incident(n, severity="critical", tags=["dns", "brand-new-tag"])
        unique = {i.id: i for i in current}
        current = list(unique.values())
        ordered = sorted(current, key=lambda i: i.id) if step % 2 else current
        after = History(ordered, previous=before)
        _same_snapshot(after, History(ordered))
        before = after
