"""Selection over the in-memory catalog: thresholds, new playbooks, decisions, mutations.

These tests pin the scoring and listing mechanics against the scalar reference
(``reference.py``), which implements the description-embedding models (``seed`` and
``unstated-unknown``, the default before the profile and the selection vocabulary). Every
index here is built with one of those; the default model's additions (profile, concepts,
inferred incident type, label filters, object rule) are tested in ``test_concepts.py``.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from precedent.adapters.loader import load_playbooks
from precedent.core.playbooks import (
    MAX_ALTERNATIVES,
    SEED_SELECTION_MODEL,
    SELECTION_MODELS,
    CatalogAnswer,
    PlaybookQuery,
    ScoredPlaybook,
    SelectionModel,
    decide,
    unavailable,
)
from precedent.core.playbooks import CatalogIndex as _CatalogIndex
from precedent.models import Playbook, PlaybookHistory
from tests.core.playbooks import reference

UNSTATED_UNKNOWN = SELECTION_MODELS["unstated-unknown"]


def CatalogIndex(*args: object, **kwargs: object) -> _CatalogIndex:
    """The catalog index under the reference's model unless a test names another."""
    kwargs.setdefault("model", UNSTATED_UNKNOWN)
    return _CatalogIndex(*args, **kwargs)  # type: ignore[arg-type]


CATALOG = Path(__file__).resolve().parents[2] / "data" / "playbooks"
OOM_LABELS = {
    "kubernaut.ai/incident-type": "pod-oom-killer",
    "kubernaut.ai/environment": "production",
}


@pytest.fixture(scope="module")
def playbooks() -> list[Playbook]:
    return load_playbooks([CATALOG])


@pytest.fixture
def index(playbooks: list[Playbook]) -> _CatalogIndex:
    return CatalogIndex(playbooks)


def pb(
    id_: str,
    description: str = "restarts the pod",
    labels: dict[str, list[str]] | None = None,
    runs: int = 10,
    ok: int = 9,
) -> Playbook:
    return Playbook(
        id=id_,
        version="v1",
        description=description,
        labels=labels or {},
        history=PlaybookHistory(executions=runs, successes=ok),
    )


# -- thresholds and ordering --------------------------------------------------------------------


@pytest.mark.parametrize("model", [SEED_SELECTION_MODEL, UNSTATED_UNKNOWN])
def test_memory_pressure_ranks_the_oom_playbooks_first(
    playbooks: list[Playbook], model: SelectionModel
) -> None:
    # Seed 004's use cases 1 and 3 hold under the seed's rule and the default one.
    index = CatalogIndex(playbooks, model=model)
    query = PlaybookQuery.create(
        "pod memory pressure", OOM_LABELS, min_confidence=0.0, action="restart_service"
    )
    answer = index.search(query)
    ids = [c.id for c in answer.candidates]
    assert ids[0] == "pod-oom-recovery"
    assert set(ids[:3]) == {
        "pod-oom-recovery",
        "pod-oom-vertical-scaling",
        "pod-force-delete-recovery",
    }
    confidences = [c.confidence for c in answer.candidates]
    assert confidences == sorted(confidences, reverse=True)


def test_every_candidate_reports_its_parts(index: _CatalogIndex) -> None:
    query = PlaybookQuery.create("pod memory pressure", OOM_LABELS, min_confidence=0.0)
    for candidate in index.search(query).candidates:
        assert candidate.parts is not None
        p = candidate.parts
        assert candidate.confidence == pytest.approx(
            0.4 * p.semantic + 0.4 * p.label_match + 0.2 * p.historical
        )


def test_min_confidence_filters(index: _CatalogIndex) -> None:
    everything = index.search(
        PlaybookQuery.create("pod memory pressure", OOM_LABELS, min_confidence=0.0)
    )
    strict = index.search(
        PlaybookQuery.create("pod memory pressure", OOM_LABELS, min_confidence=0.6)
    )
    assert strict.total < everything.total
    assert all(c.confidence >= 0.6 or c.is_new for c in strict.candidates)


def test_max_results_cuts_the_list_but_total_counts_all(index: _CatalogIndex) -> None:
    query = PlaybookQuery.create(
        "pod memory pressure", OOM_LABELS, min_confidence=0.0, max_results=2
    )
    answer = index.search(query)
    assert len(answer.candidates) == 2
    assert answer.total == len(index)


def test_ties_are_broken_by_id() -> None:
    index = CatalogIndex([pb("b-second"), pb("a-first"), pb("c-third")])
    answer = index.search(PlaybookQuery.create("restarts the pod", min_confidence=0.0))
    assert [c.id for c in answer.candidates] == ["a-first", "b-second", "c-third"]


# -- new playbooks ------------------------------------------------------------------------------


def test_new_playbook_labelled_for_the_incident_is_listed_below_threshold(
    index: _CatalogIndex,
) -> None:
    # Seed use case 2: "rare database failure" finds the new database-recovery playbook.
    query = PlaybookQuery.create(
        "rare database failure", {"incident-type": "database-failure"}, min_confidence=0.8
    )
    answer = index.search(query)
    [only] = answer.candidates
    assert only.id == "database-recovery"
    assert only.is_new
    assert only.confidence < query.min_confidence
    assert only.parts is not None
    assert only.parts.historical == 0.5  # low, not zero: smoothed (0 + 1) / (0 + 2)


def test_new_playbook_pinned_to_another_incident_type_is_not_listed(index: _CatalogIndex) -> None:
    query = PlaybookQuery.create("restarts database", {"incident-type": "pod-oom-killer"})
    assert "database-recovery" not in [c.id for c in index.search(query).candidates]


def test_new_unlabelled_playbook_needs_evidence() -> None:
    index = CatalogIndex(
        [
            pb("new-relevant", "Restarts database and validates connections", runs=0, ok=0),
            pb("new-unrelated", "Renews the TLS certificate of an ingress", runs=0, ok=0),
        ]
    )
    query = PlaybookQuery.create("restarts database and validates connections", min_confidence=0.72)
    ids = [c.id for c in index.search(query).candidates]
    # new-relevant: semantic 1.0, labels ½, history ½ → confidence 0.70 < 0.72, but evidence
    # 0.75 ≥ 0.72, so it is listed; new-unrelated: far below.
    assert ids == ["new-relevant"]


def test_new_playbook_does_not_displace_a_better_established_one() -> None:
    labels = {"incident-type": ["bad-rollout"]}
    established = pb("deployment-rollback", "rolls back the deployment", labels, runs=60, ok=57)
    new = pb("db-migration-rollback", "reverts a database schema migration", labels, 0, 0)
    query = PlaybookQuery.create(
        "error rate spike after the release; roll back", {"incident-type": "bad-rollout"}
    )
    index = CatalogIndex([established, new])
    answer = index.search(PlaybookQuery.create(query.text, query.labels, min_confidence=0.0))
    scores = {c.id: c.confidence for c in answer.candidates}
    assert scores["db-migration-rollback"] < scores["deployment-rollback"] < 0.9
    strict = index.search(PlaybookQuery.create(query.text, query.labels, min_confidence=0.9))
    # The established playbook was turned away with a higher score: the new one is not listed.
    assert strict.candidates == ()
    assert strict.best_below is not None
    assert strict.best_below.id == "deployment-rollback"
    index.remove("deployment-rollback")
    [only] = index.search(
        PlaybookQuery.create(query.text, query.labels, min_confidence=0.9)
    ).candidates
    assert only.id == "db-migration-rollback"


def test_new_playbook_pinned_only_to_a_generic_label_is_not_listed() -> None:
    index = CatalogIndex(
        [pb("new-prod-only", "renews a certificate", {"environment": ["production"]}, 0, 0)]
    )
    query = PlaybookQuery.create("database failure", {"environment": "production"})
    assert index.search(query).candidates == ()


def test_established_playbook_below_threshold_is_not_listed() -> None:
    index = CatalogIndex([pb("old", "Renews the TLS certificate of an ingress", runs=50, ok=50)])
    answer = index.search(PlaybookQuery.create("database failure"))
    assert answer.candidates == ()
    assert answer.best_below is not None
    assert answer.best_below.id == "old"


# -- decisions ----------------------------------------------------------------------------------


def test_decision_picks_the_highest_with_a_rationale(index: _CatalogIndex) -> None:
    query = PlaybookQuery.create("pod memory pressure", OOM_LABELS, min_confidence=0.3)
    answer = index.search(query)
    decision = decide(query, answer)
    assert decision.selection is not None
    top = answer.candidates[0]
    assert decision.selection.id == top.id == "pod-oom-recovery"
    assert decision.selection.version == "v1.2"
    assert decision.selection.selection_method == "data_driven"
    assert set(decision.selection.components) == {"semantic", "labelMatch", "historical"}
    rationale = decision.selection.rationale
    assert "pod-oom-recovery v1.2" in rationale
    assert f"confidence {top.confidence:.2f}" in rationale
    assert top.parts is not None
    assert f"strongest on {top.parts.strongest(index.weights)[0]}" in rationale
    assert decision.recommendation is None
    assert 1 <= len(decision.alternatives) <= MAX_ALTERNATIVES
    assert [a.id for a in decision.alternatives] == [c.id for c in answer.candidates[1:4]]


def test_rationale_calls_out_a_new_playbook(index: _CatalogIndex) -> None:
    query = PlaybookQuery.create("rare database failure", {"incident-type": "database-failure"})
    decision = decide(query, index.search(query))
    assert decision.selection is not None
    assert decision.selection.id == "database-recovery"
    assert "new playbook with no execution history" in decision.selection.rationale


def test_alternatives_are_capped_at_three(index: _CatalogIndex) -> None:
    query = PlaybookQuery.create("pod", min_confidence=0.0)
    decision = decide(query, index.search(query))
    assert len(decision.alternatives) == 3


def test_empty_catalog_recommends_manual_investigation() -> None:
    query = PlaybookQuery.create("pod memory pressure", OOM_LABELS, subject="Deployment/api")
    answer = CatalogIndex([]).search(query)
    decision = decide(query, answer)
    assert decision.selection is None
    assert decision.recommendation is not None
    assert decision.recommendation.action == "manual_investigation"
    assert decision.recommendation.reason.startswith("no playbook matched: the catalog")
    assert "empty" in decision.recommendation.reason
    steps = decision.recommendation.suggested_actions
    assert any("Deployment/api" in s for s in steps)
    assert any("pod-oom-killer" in s for s in steps)


def test_all_below_threshold_says_none_was_confident_enough(index: _CatalogIndex) -> None:
    query = PlaybookQuery.create("quarterly budget review", {"team": "finance"}, min_confidence=0.9)
    decision = decide(query, index.search(query))
    assert decision.selection is None
    assert decision.recommendation is not None
    reason = decision.recommendation.reason
    assert reason.startswith("no playbook confident enough")
    assert "below min_confidence 0.90" in reason
    # Far below the bar: not worth suggesting by hand.
    assert not any("closest playbook" in s for s in decision.recommendation.suggested_actions)


@pytest.mark.parametrize("gap", [0.0001, 0.001, 0.004, 0.02])
def test_below_min_confidence_reads_as_a_true_comparison(index: _CatalogIndex, gap: float) -> None:
    # The best's confidence just under the bar: rounded to two digits both would print alike.
    probe = PlaybookQuery.create("pod memory pressure", OOM_LABELS, min_confidence=1.0)
    best = index.search(probe).best_below
    assert best is not None
    query = PlaybookQuery.create(
        "pod memory pressure", OOM_LABELS, min_confidence=best.confidence + gap
    )
    decision = decide(query, index.search(query))
    assert decision.recommendation is not None
    found = re.search(
        r"scored (\d\.\d+) .* below min_confidence (\d\.\d+)", decision.recommendation.reason
    )
    assert found is not None, decision.recommendation.reason
    assert float(found.group(1)) < float(found.group(2)), decision.recommendation.reason


def test_a_near_miss_is_suggested_for_review(index: _CatalogIndex) -> None:
    query = PlaybookQuery.create("pod memory pressure", OOM_LABELS, min_confidence=0.99)
    decision = decide(query, index.search(query))
    assert decision.recommendation is not None
    steps = decision.recommendation.suggested_actions
    assert any("review the closest playbook, pod-oom-recovery v1.2" in s for s in steps)


def test_every_playbook_contradicting_the_labels_says_none_matched() -> None:
    index = CatalogIndex(
        [pb("a", labels={"incident-type": ["x"]}), pb("b", labels={"incident-type": ["y"]})]
    )
    query = PlaybookQuery.create("restarts the pod", {"incident-type": "z"}, min_confidence=0.7)
    decision = decide(query, index.search(query))
    assert decision.recommendation is not None
    assert decision.recommendation.reason.startswith("no playbook matched: all 2 playbooks pin")
    assert "incident-type=z" in decision.recommendation.reason


def test_remote_answers_have_no_parts_and_say_so() -> None:
    query = PlaybookQuery.create("x")
    answer = CatalogAnswer(
        candidates=(ScoredPlaybook("remote-pb", "v2", "desc", 0.81),), total=1, source="http://ctx"
    )
    decision = decide(query, answer, method="fallback", note="Fallback: remote down.")
    assert decision.selection is not None
    assert decision.selection.components == {}
    assert decision.selection.selection_method == "fallback"
    assert decision.selection.rationale.startswith("Fallback: remote down. Selected remote-pb v2")
    assert "reports the total only" in decision.selection.rationale


def test_unavailable_recommends_manual_investigation_with_the_reason() -> None:
    decision = unavailable(PlaybookQuery.create("x"), "http://ctx: timed out")
    assert decision.recommendation is not None
    assert decision.recommendation.reason == "playbook catalog unavailable: http://ctx: timed out"


# -- the vectorised catalog agrees with the reference and follows mutations ---------------------


TYPES = ["pod-oom-killer", "node-pressure", "database-failure", "bad-rollout"]
ACTIONS = ["restart_service", "scale_down", "rollback", "drain_node", "rotate_certificate"]


def random_catalog(n: int, seed: int) -> list[Playbook]:
    rng = random.Random(seed)
    words = [
        "pod",
        "node",
        "memory",
        "disk",
        "restart",
        "drain",
        "scale",
        "certificate",
        "database",
        "rollback",
        "dns",
    ]
    out = []
    for i in range(n):
        labels: dict[str, list[str]] = {}
        if rng.random() < 0.8:
            labels["incident-type"] = rng.sample(TYPES, rng.randint(1, 2))
        if rng.random() < 0.4:
            labels["environment"] = rng.choice([["production"], ["staging"], ["*"]])
        runs = 0 if rng.random() < 0.3 else rng.randint(1, 50)  # new playbooks are common
        out.append(
            Playbook(
                id=f"pb-{i:04d}",
                version="v1",
                description=" ".join(rng.choices(words, k=6)),
                actions=rng.sample(ACTIONS, rng.randint(0, 2)),
                labels=labels,
                history=PlaybookHistory(executions=runs, successes=rng.randint(0, runs)),
            )
        )
    return out


def random_query(rng: random.Random) -> PlaybookQuery:
    words = ["pod", "memory", "restart", "node", "drain", "database", "rollback", "certificate"]
    labels: dict[str, str] = {}
    if rng.random() < 0.7:
        labels["incident-type"] = rng.choice([*TYPES, "unknown-type"])
    if rng.random() < 0.5:
        labels["environment"] = rng.choice(["production", "staging"])
    if rng.random() < 0.3:
        labels["priority"] = "p1"
    return PlaybookQuery.create(
        " ".join(rng.choices(words, k=rng.randint(1, 5))),
        labels,
        min_confidence=rng.choice([0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
        max_results=rng.randint(1, 100),
        # Actions no playbook lists ("reduce_replicas" is scale-down; "flush_cache" is nothing).
        action=rng.choice([None, *ACTIONS, "reduce_replicas", "bounce_pods", "flush_cache"]),
    )


def check_against_reference(
    index: _CatalogIndex, catalog: list[Playbook], query: PlaybookQuery
) -> int:
    """Compare one search with the reference; how many new playbooks it listed below the bar."""
    scored = [
        reference.score(
            p,
            query,
            reference.semantic(index.embedder, index.calibration, query.text, p.description),
            rule=index.model.name,
            catalog=catalog,
        )
        for p in catalog
    ]
    expected = reference.listed(scored, query.min_confidence)
    answer = index.search(query)
    assert answer.total == len(expected)
    assert [c.id for c in answer.candidates] == [s.id for s in expected[: query.max_results]]
    by_id = {s.id: s for s in scored}
    listed_new = 0
    for candidate in answer.candidates:
        want = by_id[candidate.id]
        assert candidate.parts is not None
        got = candidate.parts
        assert got.semantic == pytest.approx(want.semantic, abs=2e-6)
        assert got.label_match == pytest.approx(want.label_match, abs=1e-12)
        assert got.historical == pytest.approx(want.historical, abs=1e-12)
        assert candidate.confidence == pytest.approx(want.confidence, abs=2e-6)
        listed_new += want.new and want.confidence < query.min_confidence
    assert answer.consistent == sum(not s.contradicts for s in scored)
    rest = sorted(
        (s for s in scored if s not in expected), key=lambda s: (-round(s.confidence, 9), s.id)
    )
    assert (answer.best_below.id if answer.best_below else None) == (rest[0].id if rest else None)
    return listed_new


@pytest.mark.parametrize("model", [SEED_SELECTION_MODEL, UNSTATED_UNKNOWN])
def test_search_equals_the_scalar_reference_on_random_catalogs(model: SelectionModel) -> None:
    # Parts, totals, the new-playbook rule, order, the max_results cut and the near miss.
    listed_new = 0
    for seed in range(1, 9):
        rng = random.Random(seed)
        catalog = random_catalog(60, seed)
        index = CatalogIndex(catalog, model=model)
        for _ in range(12):
            listed_new += check_against_reference(index, catalog, random_query(rng))
    # The random queries reach the rule that lists new playbooks below min_confidence.
    assert listed_new > 0


def test_upsert_replaces_and_remove_drops_one_playbook() -> None:
    index = CatalogIndex([pb("a", "restarts the pod"), pb("b", "drains the node")])
    query = PlaybookQuery.create("drains the node", min_confidence=0.0)
    assert index.search(query).candidates[0].id == "b"
    index.upsert(pb("b", "renews a certificate"))
    assert len(index) == 2
    assert index.search(query).candidates[0].id == "a"
    assert index.remove("a") is True
    assert index.remove("a") is False
    assert [c.id for c in index.search(query).candidates] == ["b"]
    index.upsert(pb("c", "drains the node"))  # reuses the freed row
    assert [c.id for c in index.search(query).candidates] == ["c", "b"]
    assert len(index) == 2
    assert "a" not in index


def test_upsert_changes_labels_and_history() -> None:
    # The seed's rule: under the default one a label the only playbook accepts weighs nothing.
    index = CatalogIndex(
        [pb("a", labels={"incident-type": ["x"]}, runs=0, ok=0)], model=SEED_SELECTION_MODEL
    )
    query = PlaybookQuery.create("restarts the pod", {"incident-type": "y"}, min_confidence=0.0)
    [before] = index.search(query).candidates
    assert before.parts is not None
    assert before.parts.label_match == 0.0
    index.upsert(pb("a", labels={"incident-type": ["y"]}, runs=10, ok=10))
    [after] = index.search(query).candidates
    assert after.parts is not None
    assert after.parts.label_match == 1.0
    assert after.parts.historical == pytest.approx(11 / 12)


def test_catalog_grows_past_its_initial_capacity() -> None:
    catalog = random_catalog(100, 7)
    index = CatalogIndex()
    for playbook in catalog:
        index.upsert(playbook)
    bulk = CatalogIndex(catalog)
    query = PlaybookQuery.create(
        "node drain", {"incident-type": "node-pressure"}, min_confidence=0.0, max_results=100
    )
    one_by_one = [(c.id, round(c.confidence, 6)) for c in index.search(query).candidates]
    at_once = [(c.id, round(c.confidence, 6)) for c in bulk.search(query).candidates]
    assert one_by_one == at_once
    assert len(one_by_one) == 100


def test_a_best_playbook_left_out_for_its_labels_says_so_not_below_the_bar() -> None:
    # The bundled ConfigMap playbook scores above the bar for a ConfigMap change in dev, but it
    # is written for production and staging: the answer names that, never "0.72 below 0.70".
    # The product's catalog under the default selection model (objects read, labels as filters).
    bundled = _CatalogIndex(load_playbooks([Path(__file__).parents[3] / "data" / "playbooks"]))
    query = PlaybookQuery.create(
        "update configmap. update configmap checkout-flags to rotate the feature flags",
        {"environment": "dev"},
        action="update_configmap",
        subject="ConfigMap/checkout-flags",
    )
    answer = bundled.search(query)
    best = answer.best_below
    assert best is not None
    assert best.id == "configmap-change-with-rollout"
    assert best.confidence >= query.min_confidence
    assert best.held_back == (
        "it is written for environment production, staging, not the request's dev"
    )
    decision = decide(query, answer)
    assert decision.selection is None
    assert decision.recommendation is not None
    reason = decision.recommendation.reason
    assert "below min_confidence" not in reason
    assert f"scored {best.confidence:.2f}" in reason
    assert "held back: it is written for environment production, staging" in reason
