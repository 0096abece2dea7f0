"""Label match (seed 004's label part), label parsing and the catalog query."""

from __future__ import annotations

import pytest

from precedent.core.playbooks import (
    LABEL_MATCH,
    LABEL_MISMATCH,
    LABEL_UNPINNED,
    NO_LABELS,
    LabelScores,
    LabelTable,
    PlaybookQuery,
    normalize_label_key,
    parse_label,
    playbook_labels,
)
from precedent.models import Playbook, RemediationRequestSpec, Target

OOM_PLAYBOOK = Playbook(
    id="pod-oom-recovery",
    version="v1.2",
    description="Increases memory limits and restarts pod",
    labels={"kubernaut.ai/incident-type": ["Pod-OOM-Killer"], "environment": ["*"]},
)


def scores(labels: list[tuple[str, str]], playbook: Playbook = OOM_PLAYBOOK) -> LabelScores:
    table = LabelTable()
    table.grow(1)
    table.set(0, playbook_labels(playbook))
    return table.score(labels, 1)


def match(labels: list[tuple[str, str]]) -> float:
    return float(scores(labels).match[0])


def test_playbook_labels_are_normalised() -> None:
    assert playbook_labels(OOM_PLAYBOOK) == {
        "incident-type": frozenset({"pod-oom-killer"}),
        "environment": frozenset({"*"}),
    }


def test_pinned_to_the_same_value_is_a_match() -> None:
    assert match([("incident-type", "pod-oom-killer")]) == LABEL_MATCH == 1.0


def test_pinned_to_another_value_is_a_mismatch() -> None:
    assert match([("incident-type", "database-failure")]) == LABEL_MISMATCH == 0.0


def test_not_pinned_is_half_credit() -> None:
    assert match([("priority", "p1")]) == LABEL_UNPINNED == 0.5


def test_wildcard_accepts_any_value() -> None:
    assert match([("environment", "anything")]) == LABEL_MATCH


def test_label_match_is_the_share_over_the_requests_labels() -> None:
    labels = [
        ("environment", "production"),
        ("incident-type", "pod-oom-killer"),
        ("priority", "p1"),
    ]
    assert match(labels) == pytest.approx((1 + 1 + 0.5) / 3)
    assert match([("incident-type", "database-failure"), ("priority", "p1")]) == 0.25


def test_request_without_labels_is_neutral() -> None:
    assert match([]) == NO_LABELS == 0.5


def test_playbook_labels_the_request_does_not_mention_do_not_count() -> None:
    assert match([("incident-type", "pod-oom-killer")]) == 1.0


def test_contradiction_and_incident_targeting_are_reported() -> None:
    contradicted = scores([("incident-type", "database-failure")])
    assert bool(contradicted.contradicts[0])
    assert not contradicted.targets_incident[0]
    targeted = scores([("incident-type", "pod-oom-killer"), ("priority", "p1")])
    assert bool(targeted.targets_incident[0])
    assert not targeted.contradicts[0]
    # A wildcard on a generic key is a match, not a targeting of the incident type.
    generic = scores([("environment", "production")])
    assert not generic.targets_incident[0]
    assert not generic.contradicts[0]


def test_a_row_set_again_forgets_its_old_labels() -> None:
    table = LabelTable()
    table.grow(2)
    table.set(0, {"incident-type": frozenset({"x"})})
    table.set(1, {"incident-type": frozenset({"y"})})
    table.set(0, {"environment": frozenset({"production"})})
    result = table.score([("incident-type", "x")], 2)
    assert result.match.tolist() == [0.5, 0.0]
    table.clear(1)
    assert table.score([("incident-type", "x")], 2).match.tolist() == [0.5, 0.5]


# -- parsing and the query ----------------------------------------------------------------------


def test_label_keys_compare_without_prefix_and_case() -> None:
    assert normalize_label_key("Kubernaut.ai/Incident-Type") == "incident-type"
    query = PlaybookQuery.create("x", {"kubernaut.ai/incident-type": "Pod-OOM-Killer"})
    assert query.labels == (("incident-type", "pod-oom-killer"),)


def test_same_key_twice_with_two_values_is_rejected() -> None:
    with pytest.raises(ValueError, match="given twice"):
        PlaybookQuery.create("x", [("a.io/env", "prod"), ("b.io/env", "dev")])
    same = PlaybookQuery.create("x", [("a.io/env", "prod"), ("env", "PROD")])
    assert same.labels == (("env", "prod"),)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("incident-type:pod-oom-killer", ("incident-type", "pod-oom-killer")),
        ("kubernaut.ai/environment:production", ("environment", "production")),
        ("Priority:P0", ("priority", "p0")),
    ],
)
def test_parse_label(text: str, expected: tuple[str, str]) -> None:
    assert parse_label(text) == expected


@pytest.mark.parametrize(
    "text", ["no-colon", ":value", "key:", "bad key:v", "k:bad value", "k:a,b", "-k:v"]
)
def test_parse_label_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError, match=r"key:value|not a valid label"):
        parse_label(text)


def test_query_from_spec_uses_action_description_labels_and_target() -> None:
    spec = RemediationRequestSpec(
        action="restart_service",
        target=Target(kind="Deployment", name="payment-api", namespace="shop"),
        description="High memory usage causing pod restarts",
        labels={"incident-type": "pod-oom-killer"},
    )
    query = PlaybookQuery.from_spec(spec, min_confidence=0.5, max_results=3)
    assert query.text == "restart service. High memory usage causing pod restarts"
    assert query.labels == (("incident-type", "pod-oom-killer"),)
    assert query.action == "restart"  # the action's concept, for the implicit action label
    assert query.subject == "Deployment shop/payment-api"
    assert (query.min_confidence, query.max_results) == (0.5, 3)
    assert query.incident_type == "pod-oom-killer"


def test_query_text_is_cut_to_8_kib_on_a_character_boundary() -> None:
    spec = RemediationRequestSpec(
        action="restart_service",
        target=Target(kind="Deployment", name="api"),
        description="é" * 5000,
    )
    text = PlaybookQuery.from_spec(spec).text
    assert len(text.encode()) <= 8192
    assert text.endswith("é")


def test_cache_key_normalises_whitespace_case_and_label_order() -> None:
    a = PlaybookQuery.create("High  memory\nusage", {"b": "2", "a": "1"})
    b = PlaybookQuery.create("high memory usage", [("a", "1"), ("B", "2")])
    assert a.cache_key() == b.cache_key()
    c = PlaybookQuery.create("high memory usage", {"a": "1", "b": "2"}, max_results=3)
    assert c.cache_key() != a.cache_key()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_confidence": 1.5}, "min_confidence"),
        ({"min_confidence": -0.1}, "min_confidence"),
        ({"max_results": 0}, "max_results"),
        ({"max_results": 101}, "max_results"),
    ],
)
def test_query_parameters_are_bounded(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PlaybookQuery.create("x", **kwargs)  # type: ignore[arg-type]
