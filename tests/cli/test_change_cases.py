"""The change, not the verb: the labelled change cases (tests/data/change), answered with the
cluster's manifests given as -f, as ``precedent score`` and the operator answer them.

Labels were written before the cases were first run. A case the model gets wrong is listed
in KNOWN_MISSES with why, never relabelled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from precedent.cli import main

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "change"
AS_OF = "2026-11-28T00:00:00Z"

KNOWN_MISSES = {
    # Labelled low ("one of six replicas, no precedent"), but the history holds a critical
    # scale-down of another production service (INC-2024-3671): the same effect on another
    # resource scores 41.9, medium, as every production scale-down without its own history.
    "gateway-scale-down-one",
}


def _answers(cases: str = "requests.yaml") -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(
        main,
        [
            "score",
            str(DATA / cases),
            "-f",
            str(DATA / "cluster.yaml"),
            "--as-of",
            AS_OF,
            "-o",
            "yaml",
        ],
    )
    assert result.exit_code == 0, result.output
    listed = yaml.safe_load(result.stdout)["items"]
    return {item["name"]: item["assessment"] for item in listed}


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[str, Any]]:
    return _answers()


def _labels(cases: str = "requests.yaml") -> dict[str, str]:
    return {
        d["metadata"]["name"]: d["metadata"]["annotations"]["test.precedent.dev/expect"]
        for d in yaml.safe_load_all((DATA / cases).read_text())
        if d
    }


def _holds(label: str, risk: dict[str, Any]) -> bool:
    words = label.split()
    if words[0] == "not":
        return words[1] not in (risk["decision"], risk["band"])
    return all(w in (risk["decision"], risk["band"]) for w in words)


@pytest.mark.parametrize("name", sorted(_labels()))
def test_every_case_gets_its_label(name: str, answers: dict[str, dict[str, Any]]) -> None:
    label = _labels()[name]
    risk = answers[name]["risk"]
    if name in KNOWN_MISSES:
        assert not _holds(label, risk), f"{name} now holds its label: take it off KNOWN_MISSES"
        return
    assert _holds(label, risk), f"{name}: expected {label}, got {risk['band']} {risk['decision']}"


def test_the_same_change_gets_the_same_decision_under_every_verb(
    answers: dict[str, dict[str, Any]],
) -> None:
    checkout = {n: a for n, a in answers.items() if n.startswith("checkout-")}
    assert len(checkout) == 10
    assert {a["risk"]["decision"] for a in checkout.values()} == {"Denied"}
    assert {a["risk"]["mostRelevantIncident"] for a in checkout.values()} == {"INC-2024-3671"}


def test_a_verb_that_disagrees_is_warned_about_naming_both(
    answers: dict[str, dict[str, Any]],
) -> None:
    warned = answers["checkout-update-config"]["warnings"]
    (warning,) = [w for w in warned if w["reason"] == "VerbDisagrees"]
    assert "update_config" in warning["message"]
    assert "capacity-down" in warning["message"]
    assert answers["checkout-scale-down"]["warnings"] == []


def test_the_status_records_the_change_and_the_target_it_was_judged_on(
    answers: dict[str, dict[str, Any]],
) -> None:
    change = answers["ledger-scale-down-change"]["change"]
    assert change["effect"] == "capacity-down"
    assert change["hash"].startswith("sha256:")
    assert change["observed"]["replicas"] == 8
    assert "removes 62%" in change["summary"]
    gateway = answers["gateway-config-to-two"]
    assert "below the HPA minimum 4" in gateway["change"]["summary"]
    assert "change" in {f["name"] for f in gateway["risk"]["factors"]}
    factors = {f["name"] for f in answers["delete-payments-namespace"]["risk"]["factors"]}
    assert {"change", "floor"} <= factors


def test_a_completed_job_is_judged_on_its_own_facts(answers: dict[str, dict[str, Any]]) -> None:
    job = answers["delete-completed-job"]
    assert job["change"]["effect"] == "object-delete"
    assert "completed" in job["change"]["summary"]
    assert "floor" not in {f["name"] for f in job["risk"]["factors"]}
    namespace = answers["delete-payments-namespace"]
    assert namespace["change"]["effect"] == "data-delete"
    assert namespace["risk"]["band"] == "high"


@pytest.mark.parametrize("name", sorted(_labels("requester.yaml")))
def test_what_a_requester_tried_does_not_get_through(name: str) -> None:
    risk = _tried()[name]["risk"]
    label = _labels("requester.yaml")[name]
    assert _holds(label, risk), f"{name}: expected {label}, got {risk['band']} {risk['decision']}"


_TRIED: dict[str, dict[str, Any]] = {}


def _tried() -> dict[str, dict[str, Any]]:
    if not _TRIED:
        _TRIED.update(_answers("requester.yaml"))
    return _TRIED


@pytest.fixture(scope="module")
def found_answers() -> dict[str, dict[str, Any]]:
    return _answers("found.yaml")


@pytest.mark.parametrize("name", sorted(_labels("found.yaml")))
def test_every_case_found_by_trying_gets_its_label(
    name: str, found_answers: dict[str, dict[str, Any]]
) -> None:
    label = _labels("found.yaml")[name]
    risk = found_answers[name]["risk"]
    assert _holds(label, risk), f"{name}: expected {label}, got {risk['band']} {risk['decision']}"
