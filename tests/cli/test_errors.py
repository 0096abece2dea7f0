"""Every CLI error path is one ``error:`` line and exit 1, never a traceback — checked on
the known hostile inputs and, with hypothesis, on random bytes and random nested documents."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precedent.cli import main
from precedent.output import one_line

DATA = Path(__file__).resolve().parents[1] / "data"
HISTORY = str(DATA / "incidents.yaml")
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def assert_clean(result: Result) -> None:
    """Exit 0, or exit 1 with exactly one ``error:`` line; never an exception."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"uncaught {result.exception!r}") from result.exception
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        lines = result.stderr.splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("error: "), lines


def test_catalog_serve_on_a_taken_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "precedent.cli", "catalog", "serve"]
        command += ["--catalog", str(DATA / "playbooks"), "--host", "127.0.0.1"]
        done = subprocess.run(
            [*command, "--port", str(port)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: serve: cannot listen on 127.0.0.1:{port}: Address already in use"], (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def test_a_bad_flag_value_is_one_line_naming_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    # --cluster sets PRECEDENT_CLUSTER_NAME's setting and is validated as the variable is.
    monkeypatch.delenv("PRECEDENT_CLUSTER_NAME", raising=False)
    long = "c" * 300
    for args in (
        ["score", "--history", HISTORY, "--cluster", long, str(DATA / "risk")],
        ["eval", "risk", str(DATA / "risk" / "readonly.yaml"), "--cluster", long],
    ):
        result = CliRunner().invoke(main, args)
        assert_clean(result)
        assert result.exit_code == 1
        assert result.stderr.startswith("error: --cluster: "), result.stderr
        assert "253" in result.stderr


def test_a_bad_variable_is_named_and_a_flag_beside_it_is_not_blamed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRECEDENT_TOP_SIMILAR", "0")
    result = CliRunner().invoke(
        main, ["score", "--history", HISTORY, "--risk-model", "seed", str(DATA / "risk")]
    )
    assert_clean(result)
    assert result.stderr.startswith("error: invalid configuration: PRECEDENT_TOP_SIMILAR: ")


def test_eval_takes_one_subcommand_per_evaluation() -> None:
    for name in ("retrieval", "risk", "selection"):
        assert CliRunner().invoke(main, ["eval", name, "--help"]).exit_code == 0
    # The former form is a usage error (exit 2), not a silent choice of one evaluation.
    assert CliRunner().invoke(main, ["eval", "--risk", str(DATA / "risk")]).exit_code == 2


def test_one_line_folds_newlines_and_escapes_what_a_terminal_cannot_print() -> None:
    assert one_line("a\nb\r\nc") == "a b  c"
    assert one_line("bad \udcff byte") == "bad \\udcff byte"
    assert len(one_line("x" * 5000)) == 2000


def test_a_message_quoting_undecodable_input_still_prints() -> None:
    # A file name with a byte that is not UTF-8 comes back from the OS as a surrogate escape.
    result = CliRunner().invoke(main, ["score", "/nonexistent/\udcff.yaml", "--catalog", ""])
    assert_clean(result)
    assert result.exit_code == 1


@FUZZ
@given(data=st.binary(max_size=2048))
def test_score_on_random_stdin_bytes(data: bytes) -> None:
    result = CliRunner().invoke(
        main, ["score", "-", "--history", HISTORY, "--catalog", ""], input=data
    )
    assert_clean(result)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)
_KEYS = st.sampled_from(["apiVersion", "kind", "metadata", "spec", "items", "action", "target"])
_DOC = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["precedent.dev/v1alpha1", "v1"]),
        "kind": st.sampled_from(["RemediationRequest", "Incident", "List"]),
    },
    optional={"spec": st.dictionaries(_KEYS, _JSON, max_size=4), "metadata": _JSON},
)


@FUZZ
@given(doc=_DOC | _JSON, depth=st.integers(min_value=0, max_value=200), as_json=st.booleans())
def test_score_on_random_nested_documents(
    tmp_path: Path, doc: object, depth: int, as_json: bool
) -> None:
    for _ in range(depth // 4):  # wrap it, sometimes deeper than the limit
        doc = {"spec": [doc]}
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc)
    file = tmp_path / ("fuzz.json" if as_json else "fuzz.yaml")
    file.write_text(text)
    result = CliRunner().invoke(main, ["score", str(file), "--history", HISTORY, "--catalog", ""])
    assert_clean(result)


@FUZZ
@given(lines=st.lists(_JSON | st.binary(max_size=64).map(repr), max_size=4))
def test_eval_on_random_jsonl(tmp_path: Path, lines: list[object]) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "restart", "relevant": ["A"]}\n')
    args = [
        "eval",
        "retrieval",
        "--history",
        str(history),
        "--queries",
        str(queries),
        "--mode",
        "rules",
    ]
    result = CliRunner().invoke(main, args)
    assert_clean(result)
