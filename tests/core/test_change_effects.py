"""Effect classes, readings of the text, a change against its live target, danger floors, and
the call that applies a change (core.effects, core.change, core.floors, core.readings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedent.adapters.action_registry import load_action_registry, load_danger_floors
from precedent.core.change import LiveTarget, apply_call, judge_change, target_moved
from precedent.core.effects import read_text
from precedent.core.floors import FLOOR_SCORES, DangerFloors
from precedent.core.policy import ActionRegistry
from precedent.core.readings import read_request
from precedent.errors import InputError
from precedent.models import Band, ObservedTarget, RemediationRequestSpec, RequestChange


@pytest.mark.parametrize(
    ("text", "effects"),
    [
        ("Reduce checkout from 40 replicas to 12 to free capacity", ["capacity-down"]),
        ("Scale web up from 2 to 4 replicas", ["capacity-up"]),
        ("Scale checkout down to 12 replicas for the batch window", ["capacity-down"]),
        ("Delete the PVC postgres-data to reclaim the disk", ["data-delete"]),
        ("Bind cluster-admin to the developers group", ["privilege-change"]),
        ("Drain every node of the system pool at once", ["node-disruption"]),
        ("grab logs and events for the ticket, do not restart", []),
        ("Pods crashlooping since the deploy was rolled back", []),
        ("Raise the CPU target of the inventory HPA from 60% to 75%", []),
    ],
)
def test_the_text_is_read_for_what_it_asks(text: str, effects: list[str]) -> None:
    assert [r.effect for r in read_text(text)] == effects


@pytest.mark.parametrize(
    ("text", "after"),
    [
        ("Set checkout replicas to 0 for the maintenance window", 0),
        ("set replicas: 0 on checkout", 0),
        ("replica count to zero for checkout", 0),
        ("Scale checkout to 0 tonight", 0),
        ("Set checkout to 3 replicas", 3),
        ("kubectl scale deploy/checkout --replicas=0", 0),
        ("Take ledger to 1 replica overnight", 1),
    ],
)
def test_a_replica_count_however_it_is_phrased_is_read(text: str, after: int) -> None:
    # Found by asking for an outage in words the reader did not know: each was read as a
    # config change. With no direction said, a count is read as a decrease (the live target
    # gives the direction where there is one).
    (reading,) = read_text(text)
    assert (reading.effect, reading.after) == ("capacity-down", after)


@pytest.mark.parametrize(
    "text", ["Scale out the gateway to 10 pods, CPU at 85%.", "Scale up checkout to 50"]
)
def test_a_count_after_a_direction_word_keeps_the_direction(text: str) -> None:
    assert [r.effect for r in read_text(text)] == ["capacity-up"]


def test_a_count_beside_another_ask_is_read_as_well() -> None:
    # Found by trying: read as a restart only, for a production Deployment at 40 replicas.
    readings = read_text("Restart checkout and bring it to two pods")
    assert [(r.effect, r.after) for r in readings] == [("capacity-down", 2), ("restart", None)]


@pytest.mark.parametrize(
    "text", ["Clean up unused volume", "cleanup the old reports database", "Clean up the PVC"]
)
def test_cleaning_up_data_is_deleting_it(text: str) -> None:
    assert [r.effect for r in read_text(text)] == ["data-delete"]


@pytest.mark.parametrize(
    ("text", "effect"),
    [
        ("Decommission the postgres-data volume", "data-delete"),
        ("Retire the legacy reports database", "data-delete"),
        ("Erase the disk of the old node", "data-delete"),
        ("Nuke the staging namespace", "data-delete"),
        ("Decommission the v1 api service", "object-delete"),
        ("Retire the old checkout deployment", "object-delete"),
    ],
)
def test_retiring_or_decommissioning_is_deleting(text: str, effect: str) -> None:
    assert [r.effect for r in read_text(text)] == [effect]


@pytest.mark.parametrize(
    "text",
    [
        "Retire the feature flag",
        "Erase the cache entries for user 7",
        "Enable erasure coding for the backup bucket",
        "Plan the retirement of the old database",
    ],
)
def test_retiring_what_is_neither_data_nor_an_object_deletes_nothing(text: str) -> None:
    assert read_text(text) == []


@pytest.mark.parametrize("text", ["Clean up the logs", "Clean up old pods after the rollout"])
def test_cleaning_up_without_data_named_is_not_a_data_delete(text: str) -> None:
    assert "data-delete" not in [r.effect for r in read_text(text)]


def test_numbers_give_the_size() -> None:
    (reading,) = read_text("Reduce checkout from 40 replicas to 12")
    assert (reading.before, reading.after) == (40, 12)


def test_synonyms_share_a_class_and_a_canonical_action() -> None:
    registry = ActionRegistry()
    assert registry.effect("reduce_replicas") == registry.effect("scale_down") == "capacity-down"
    assert registry.canonical_action("reduce_replicas") == "scale_down"
    assert "reduce_replicas" in registry.synonyms("scale_down")
    assert registry.effect("made_up_action") is None
    assert registry.level("delete_namespace") == "ADMIN"


def _spec(action: str, description: str = "", **change: object) -> RemediationRequestSpec:
    body: dict[str, object] = {
        "action": action,
        "target": {"kind": "Deployment", "name": "checkout", "namespace": "shop"},
        "description": description,
    }
    if change:
        body["change"] = change
    return RemediationRequestSpec.model_validate(body)


def test_a_read_only_verb_asking_for_a_write_is_read_as_the_write() -> None:
    readings = read_request(
        _spec("collect_diagnostics", "Reduce checkout from 40 replicas to 12"),
        ActionRegistry(),
        None,
    )
    assert readings.verb.effect == "read-only"
    (other,) = readings.others
    assert (other.effect, other.action, other.level) == ("capacity-down", "scale_down", "WRITE")
    assert "collect_diagnostics is read-only" in (readings.disagreement() or "")


def test_a_direction_less_verb_takes_its_direction_from_the_change() -> None:
    live = LiveTarget("deployment", "checkout", "shop", replicas=4)
    readings = read_request(_spec("scale_deployment", replicas=8), ActionRegistry(), live)
    assert readings.verb.effect == "capacity-up"
    assert readings.disagreement() is None


def test_a_change_against_its_live_target() -> None:
    live = LiveTarget("deployment", "api", "shop", uid="u1", replicas=6, hpa_min=4)
    facts = judge_change(RequestChange(replicas=2), "Deployment", "api", live)
    assert facts.effect == "capacity-down"
    assert facts.facts["capacityRemoved"] == pytest.approx(4 / 6, abs=1e-4)
    assert facts.facts["belowHpaMin"] is True
    assert facts.observed is not None
    assert facts.observed.replicas == 6
    sts = LiveTarget("statefulset", "db", "data", replicas=3, stateful=True)
    assert judge_change(RequestChange(replicas=0), "StatefulSet", "db", sts).facts["quorum"]
    empty = LiveTarget("namespace", "tmp", None, volume_claims=0)
    assert (
        judge_change(RequestChange.model_validate({"delete": {}}), "Namespace", "tmp", empty).effect
        == "object-delete"
    )
    assert (
        judge_change(RequestChange.model_validate({"delete": {}}), "Namespace", "tmp", None).effect
        == "data-delete"
    )  # not known whether it holds volumes: the riskier reading


def test_deleting_a_workload_removes_all_its_capacity() -> None:
    # A production Deployment deleted with its replicas is high whatever the history says, as
    # scaling it to zero is (an outage by construction); a completed Job deleted is not held.
    delete = RequestChange.model_validate({"delete": {}})
    live = LiveTarget("deployment", "ledger", "payments", replicas=8)
    facts = judge_change(delete, "Deployment", "ledger", live)
    assert facts.effect == "object-delete"
    assert facts.facts["capacityRemoved"] == 1.0
    assert facts.facts["toZero"] is True
    hit = DangerFloors().strictest(facts.effect, 0, facts.facts)
    assert hit is not None
    assert hit.score == FLOOR_SCORES[Band.HIGH]
    job = LiveTarget("job", "report", "payments", completed=True)
    done = judge_change(delete, "Job", "report", job)
    assert "capacityRemoved" not in done.facts
    assert DangerFloors().strictest(done.effect, 0, done.facts) is None


@pytest.mark.parametrize(
    ("after", "tier", "band"),
    [
        (0, 0, Band.HIGH),  # every replica of a production workload: an outage
        (1, 0, Band.MEDIUM),  # most of it: at least half
        (3, 0, Band.MEDIUM),
        (6, 0, None),  # a quarter: history decides
        (0, 1, None),  # staging to zero: history decides
    ],
)
def test_scaling_a_workload_to_zero_is_an_outage(after: int, tier: int, band: Band | None) -> None:
    live = LiveTarget("deployment", "ledger", "payments", replicas=8)
    facts = judge_change(RequestChange(replicas=after), "Deployment", "ledger", live)
    hit = DangerFloors().strictest(facts.effect, tier, facts.facts)
    assert (hit.floor.band if hit is not None else None) == band


def test_floors_raise_and_never_lower() -> None:
    floors = DangerFloors()
    hit = floors.strictest("data-delete", 0, {"dataVolumes": 1})
    assert hit is not None
    assert hit.score == FLOOR_SCORES[Band.HIGH]
    assert floors.strictest("data-delete", 2, {"dataVolumes": 1}) is None  # development
    assert floors.strictest("capacity-down", 0, {"capacityRemoved": 0.2}) is None


def test_floor_and_registry_files_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "floors.yaml"
    bad.write_text(
        "floors:\n- effect: capacity-down\n  band: high\n  reason: x\n  when: {toZro: true}\n"
    )
    with pytest.raises(InputError, match=r"floors\[0\]\.when\.toZro: unknown fact"):
        load_danger_floors(bad)
    bad.write_text("floors:\n- effect: nope\n  band: high\n  reason: x\n")
    with pytest.raises(InputError, match=r"floors\[0\]\.effect: unknown effect class 'nope'"):
        load_danger_floors(bad)
    good = tmp_path / "floors-ok.yaml"
    good.write_text(
        "floors:\n- effect: capacity-down\n  band: high\n  reason: any scale-down\n"
        "  environments: [production, staging]\n"
    )
    assert load_danger_floors(good).strictest("capacity-down", 1, {}) is not None
    registry = tmp_path / "actions.yaml"
    registry.write_text("WRITE: [shrink]\neffects:\n  capacity-down: [shrink, grow]\n")
    with pytest.raises(InputError, match=r"effects\.capacity-down: action 'grow' is in no access"):
        load_action_registry(registry)
    registry.write_text("WRITE: [shrink]\neffects:\n  capacity-down: [shrink]\n")
    assert load_action_registry(registry).effect("shrink") == "capacity-down"


def test_the_apply_call_and_a_moved_target() -> None:
    change = RequestChange(replicas=8)
    call = apply_call(change, "Deployment", "checkout", "shop")
    assert (call.method, call.path) == (
        "PATCH",
        "/apis/apps/v1/namespaces/shop/deployments/checkout/scale",
    )
    observed = ObservedTarget(exists=True, uid="u1", replicas=10)
    same = LiveTarget("deployment", "checkout", "shop", uid="u1", replicas=10)
    assert target_moved(observed, same, change) is None
    scaled = LiveTarget("deployment", "checkout", "shop", uid="u1", replicas=9)
    assert target_moved(observed, scaled, change) == "its replicas changed from 10 to 9"
    replaced = LiveTarget("deployment", "checkout", "shop", uid="u2", replicas=10)
    assert "replaced" in (target_moved(observed, replaced, change) or "")
    with pytest.raises(ValueError, match=r"spec\.target\.kind Widget"):
        apply_call(change, "Widget", "w", "shop")


def test_a_change_is_one_of_a_kind_and_bounded() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        RequestChange.model_validate({"replicas": 2, "delete": {}})
    with pytest.raises(ValueError, match="may not patch status"):
        RequestChange.model_validate({"patch": {"status": {"x": 1}}})
    one = RequestChange(replicas=3)
    assert one.digest() == RequestChange.model_validate({"replicas": 3}).digest()
    assert one.digest() != RequestChange(replicas=4).digest()
