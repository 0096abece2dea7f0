"""The compiled core's one-pass YAML load gives what PyYAML's safe loader gives, or leaves the
stream to it: on the project's own files, YAML's corner cases and generated documents."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from precedent.adapters import bounded
from precedent.adapters.yaml_build import load_native
from tests.adapters.test_yaml_build import CORNERS, LOADER, PROJECT_FILES, REPO, _values, same

pytestmark = pytest.mark.skipif(
    bounded._native_load is None, reason="no compiled core: make native"
)


def native(text: str, depth: int = 64, aliases: int = 10_000) -> tuple[str, Any]:
    assert bounded._native_load is not None
    return load_native(text, depth, aliases, LOADER, bounded._native_load)


@pytest.mark.parametrize("path", PROJECT_FILES)
def test_the_project_s_files_are_built_in_one_pass(path: str) -> None:
    text = (REPO / path).read_text(encoding="utf-8")
    kind, ours = native(text)
    assert kind == "ok"
    assert same(ours, list(yaml.load_all(text, Loader=LOADER)))


# What the one pass leaves to PyYAML: a merge key, tags on collections, a key that is a list,
# a list that holds itself.
LEFT = {"merge", "tagged", "omap", "keys", "recursive"}


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_yaml_corner_cases(name: str) -> None:
    kind, ours = native(CORNERS[name])
    if name in LEFT:
        assert (kind, ours) == ("elsewhere", None)
        return
    assert kind == "ok"
    assert same(ours, list(yaml.load_all(CORNERS[name], Loader=LOADER)))


def test_plain_scalars_a_resolver_looks_at_but_that_stay_strings() -> None:
    # Their first character has a resolver (bool, null, int, float, timestamp); the value
    # matches none, so it is the string itself, as PyYAML gives it.
    text = (
        "a: True story\nb: true\nc: No\nd: Norway\ne: null\nf: nullable\ng: 2024 outage\n"
        "h: 12\ni: on\nj: one\nk: ~\nl: Yes please\nm: .5\nn: .net\no: -1\np: -rf\n"
        "q: 2024-05-01\nr: 2024-05-01 and later\n"
    )
    kind, ours = native(text)
    assert kind == "ok"
    (theirs,) = yaml.load_all(text, Loader=LOADER)
    assert same(ours, [theirs])
    (document,) = ours
    assert [type(document[k]).__name__ for k in "abcdefghijklmnopqr"] == [
        type(theirs[k]).__name__ for k in "abcdefghijklmnopqr"
    ]
    assert document["a"] == "True story"
    assert document["b"] is True
    assert document["e"] is None


def test_an_alias_is_the_anchor_s_object() -> None:
    kind, (document,) = native(CORNERS["anchors"])
    assert kind == "ok"
    assert document["use"] is document["base"]
    assert document["again"] is document["list"]


@pytest.mark.parametrize(
    "text",
    [
        "? {a: 1}\n: x\n",
        "a: !custom 1\n",
        "a: !!int nope\n",
        "a: [1, 2\n",
        "a: *undefined\n",
        "a: 2025-13-45\n",
        "--- !!set {a}\n",
    ],
)
def test_what_pyyaml_refuses_or_builds_otherwise_is_left_to_it(text: str) -> None:
    assert native(text) == ("elsewhere", None)


def test_the_limits_are_the_scan_s() -> None:
    assert native("a: [[[[1]]]]\n", depth=4) == ("depth", 0)
    bomb = "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\n"
    assert native(bomb, aliases=12) == ("aliases", 2)


@settings(max_examples=300, deadline=None)
@given(st.lists(_values, min_size=1, max_size=3), st.booleans())
def test_generated_documents(documents: list[Any], flow: bool) -> None:
    text = yaml.safe_dump_all(documents, default_flow_style=flow, allow_unicode=True)
    kind, ours = native(text)
    assert kind == "ok"
    assert same(ours, list(yaml.load_all(text, Loader=LOADER)))
