"""The limits of a YAML stream, in the compiled core and in Python: the same refusals on the
same lines, and the same documents or errors (the core's one-pass load, and the Python scan
and loader).

The compiled core walks unsafe-libyaml's events (a translation of the libyaml PyYAML parses
with) without a Python object per event; the Python scan walks PyYAML's. A stream the core
leaves to Python (not valid YAML, a merge key, …) is scanned and read by Python, so that PyYAML
names the error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precedent.adapters import bounded
from precedent.adapters.bounded import InputLimits, parse_yaml_documents
from precedent.errors import LoadError
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(
    bounded._native_load is None, reason="no compiled core: make native"
)

SMALL = InputLimits(max_depth=4, max_alias_nodes=12)


@contextmanager
def _python_scan() -> Iterator[None]:
    saved = bounded._native_load
    bounded._native_load = None
    try:
        yield
    finally:
        bounded._native_load = saved


def _outcome(text: str, limits: InputLimits) -> tuple[str, str]:
    try:
        return "read", repr(parse_yaml_documents(text, "in.yaml", limits=limits))
    except LoadError as error:
        return "refused", str(error)


def _both(text: str, limits: InputLimits = SMALL) -> tuple[tuple[str, str], tuple[str, str]]:
    """The outcome with the compiled core's one-pass load, and in Python."""
    native = _outcome(text, limits)
    with _python_scan():
        python = _outcome(text, limits)
    return native, python


BOMB = "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\nd: [*c, *c, *c]\n"

CASES = [
    "",
    "a: 1\n",
    "[[[[1]]]]\n",  # depth 4: at the limit
    "[[[[[1]]]]]\n",  # depth 5: past it
    "a:\n  b:\n    c:\n      d:\n        e: 1\n",
    "- - - - - x\n",
    BOMB,
    "x: &x 1\ny: [*x, *x, *x, *x, *x, *x, *x, *x, *x, *x, *x, *x, *x]\n",
    "--- [1]\n--- &a [1, 2, 3, 4]\n--- [*a, *a, *a, *a]\n",  # anchors and the count span documents
    "a: [1, 2\nb: 3\n",  # not valid YAML
    "[[[[[[ unclosed\n",  # too deep before it turns invalid
    "a: *missing\n",
    "? [a, b]\n: c\n",
    "<<: {a: 1}\nb: 2\n",
    "a: !!binary aGVsbG8=\n",
    "\ufeffa: é\n",
    "a: \ud800\n",  # a lone surrogate: not UTF-8, the Python scan reads it
    "a: 'it''s'\nb: \"\\u00e9\"\nc: |\n  block\n  text\n",
]


@pytest.mark.parametrize("text", CASES)
def test_the_same_outcome_as_the_python_scan(text: str) -> None:
    native, python = _both(text)
    assert native == python


def test_the_refusals_name_the_line_and_the_limit() -> None:
    native, _ = _both("a: 1\nb: [[[[[1]]]]]\n")
    assert native == ("refused", "in.yaml: line 2: nested deeper than 4 levels")
    native, _ = _both(BOMB)
    assert native == ("refused", "in.yaml: line 3: aliases expand to more than 12 nodes")


def test_every_yaml_file_of_the_project_reads_the_same() -> None:
    files = [
        path
        for top in ("data", "manifests", "crds", "tests/data", "docs")
        for path in sorted((ROOT / top).rglob("*.y*ml"))
    ]
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        native, python = _both(text, bounded.LIMITS)
        assert native == python, path


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("[]{}:,-&*?ab1 \n'\"#!|>"), max_size=80))
def test_any_stream_gets_the_same_outcome(text: str) -> None:
    native, python = _both(text)
    assert native == python


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.one_of(st.integers(), st.text(max_size=5), st.none()),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=3), children, max_size=4)
        ),
        max_leaves=30,
    )
)
def test_any_nesting_is_refused_or_read_the_same(value: object) -> None:
    import yaml

    for flow in (True, False):
        text = yaml.safe_dump(value, default_flow_style=flow)
        native, python = _both(text)
        assert native == python
