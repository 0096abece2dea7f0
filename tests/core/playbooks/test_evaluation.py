"""Counting a labelled selection set: the three rates and their bootstrap intervals."""

from __future__ import annotations

from precedent.core.playbooks.evaluation import MANUAL, SelectionResult, evaluate_selection


def r(acceptable: set[str], chosen: str) -> SelectionResult:
    return SelectionResult(name=chosen, acceptable=frozenset(acceptable), chosen=chosen)


def test_rates_count_what_they_say() -> None:
    results = [
        r({"a"}, "a"),  # correct
        r({"a", "b"}, "b"),  # correct
        r({"a"}, "c"),  # wrong confident
        r(set(), "c"),  # wrong confident: a playbook where none fits
        r(set(), MANUAL),  # correct: manual where none fits
        r({"a"}, MANUAL),  # manual although one fits
    ]
    ev = evaluate_selection(results)
    assert (ev.accuracy.hits, ev.accuracy.total) == (3, 6)
    assert (ev.wrong_confident.hits, ev.wrong_confident.total) == (2, 6)
    assert (ev.manual_when_fits.hits, ev.manual_when_fits.total) == (1, 4)
    assert [m.name for m in ev.misses] == ["c", "c", MANUAL]


def test_intervals_contain_the_rate_and_are_reproducible() -> None:
    results = [r({"a"}, "a")] * 30 + [r({"a"}, "b")] * 10
    first, second = evaluate_selection(results), evaluate_selection(results)
    assert first.accuracy == second.accuracy
    assert first.accuracy.low < first.accuracy.value == 0.75 < first.accuracy.high
    assert first.accuracy.low > 0.55
    assert first.accuracy.high < 0.9


def test_a_certain_rate_has_no_width() -> None:
    ev = evaluate_selection([r({"a"}, "a")] * 5)
    assert (ev.accuracy.low, ev.accuracy.high) == (1.0, 1.0)
    assert ev.manual_when_fits.format() == "0.0% [0.0, 0.0] (0/5)"
