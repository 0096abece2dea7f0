"""The direct builder gives what PyYAML's safe loader gives, on the project's own files, on
YAML's corner cases and on generated documents."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from precedent.adapters.yaml_build import load_all

REPO = Path(__file__).resolve().parents[2]
LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN and types compared too (1 is not True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def both(text: str) -> tuple[list[Any], list[Any]]:
    return load_all(text, LOADER), list(yaml.load_all(text, Loader=LOADER))


PROJECT_FILES = sorted(
    str(p.relative_to(REPO))
    for pattern in ("data/**/*.yaml", "tests/data/**/*.yaml", "manifests/**/*.yaml")
    for p in REPO.glob(pattern)
)


@pytest.mark.parametrize("path", PROJECT_FILES)
def test_the_project_s_files(path: str) -> None:
    ours, theirs = both((REPO / path).read_text(encoding="utf-8"))
    assert same(ours, theirs)


CORNERS = {
    "scalars": "a: 1\nb: 0x1F\nc: 1_000\nd: 1.5\ne: .inf\nf: .nan\ng: yes\nh: ~\ni: ''\n",
    "timestamps": "at: 2025-03-01T08:00:00Z\nday: 2025-03-01\nnot: '2025-03-01'\n",
    "tagged": "s: !!str 12\nb: !!binary aGVsbG8=\nset: !!set {a, b}\nf: !!float 3\n",
    "anchors": "base: &b {x: 1, y: [1, 2]}\nuse: *b\nlist: &l [a, b]\nagain: *l\n",
    "merge": "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\n",
    "keys": "1: int\n2.5: float\nnull: none\ntrue: bool\n? [a, b]\n: ignored\n",
    "documents": "---\na: 1\n---\n---\n- x\n...\n---\nplain\n",
    "duplicate keys": "a: 1\na: 2\n",
    "unicode": 'name: "caf\\u00e9 \\U0001F600"\nraw: 日本\n',
    "omap": "o: !!omap [a: 1, b: 2]\np: !!pairs [a: 1, a: 2]\n",
    "empty": "",
    "recursive": "&r [1, *r]\n",
}


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_yaml_corner_cases(name: str) -> None:
    text = CORNERS[name]
    try:
        theirs = list(yaml.load_all(text, Loader=LOADER))
    except yaml.YAMLError as error:
        with pytest.raises(type(error)):
            load_all(text, LOADER)
        return
    ours = load_all(text, LOADER)
    if name == "recursive":  # a list that holds itself, as PyYAML builds it
        assert ours[0][1] is ours[0]
        assert theirs[0][1] is theirs[0]
        return
    assert same(ours, theirs)


def test_an_alias_is_the_anchor_s_object() -> None:
    (document,) = load_all(CORNERS["anchors"], LOADER)
    assert document["use"] is document["base"]
    assert document["again"] is document["list"]


@pytest.mark.parametrize(
    "text", ["? {a: 1}\n: x\n", "a: !custom 1\n"], ids=["unhashable key", "unknown tag"]
)
def test_what_pyyaml_refuses_is_refused_with_its_message(text: str) -> None:
    with pytest.raises(yaml.constructor.ConstructorError) as theirs:
        list(yaml.load_all(text, Loader=LOADER))
    with pytest.raises(yaml.constructor.ConstructorError) as ours:
        load_all(text, LOADER)
    assert str(ours.value) == str(theirs.value)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.dates(),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=5),
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_values, min_size=1, max_size=3), st.booleans())
def test_generated_documents(documents: list[Any], flow: bool) -> None:
    text = yaml.safe_dump_all(documents, default_flow_style=flow, allow_unicode=True)
    ours, theirs = both(text)
    assert same(ours, theirs)
