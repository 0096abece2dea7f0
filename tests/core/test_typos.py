"""Typos caught: an unknown action or a label key close to a known one is a warning with a
suggestion; the requester's own label keys are left alone."""

from __future__ import annotations

from precedent.core.policy import ActionRegistry
from precedent.core.typos import input_warnings

ACTIONS = ActionRegistry().levels


def test_an_unknown_action_names_the_field_and_the_likely_action() -> None:
    [warning] = input_warnings("restart_servcie", {}, actions=ACTIONS, label_keys=())
    assert warning.reason == "UnknownAction"
    assert warning.message.startswith("spec.action restart_servcie ")
    assert "ADMIN" in warning.message
    assert warning.message.endswith("did you mean restart_service?")


def test_an_unknown_action_with_nothing_close_still_warns_without_a_guess() -> None:
    [warning] = input_warnings("frobnicate_cluster", {}, actions=ACTIONS, label_keys=())
    assert warning.reason == "UnknownAction"
    assert "did you mean" not in warning.message


def test_a_label_key_close_to_a_known_one_warns() -> None:
    labels = {"enviroment": "staging", "incident_type": "oom", "team": "payments"}
    found = input_warnings("restart_service", labels, actions=ACTIONS, label_keys=())
    assert [(w.reason, w.message.split()[0]) for w in found] == [
        ("UnknownLabelKey", "spec.labels.enviroment"),
        ("UnknownLabelKey", "spec.labels.incident_type"),
    ]
    assert found[0].message.endswith("did you mean environment?")
    assert found[1].message.endswith("did you mean incident-type?")


def test_known_keys_and_the_catalogs_own_keys_are_quiet() -> None:
    labels = {"environment": "prod", "cluster": "c", "priority": "p1", "component": "api"}
    assert input_warnings("scale_up", labels, actions=ACTIONS, label_keys={"component"}) == []
    # A key the catalog's playbooks use is known: its misspelling is caught too.
    [warning] = input_warnings(
        "scale_up", {"componnet": "api"}, actions=ACTIONS, label_keys={"component"}
    )
    assert warning.message.endswith("did you mean component?")
