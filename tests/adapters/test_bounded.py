"""Bounded reading: hostile input gets one LoadError naming the file and line — never a crash,
a traceback or unbounded memory — through every loader the product reads input with."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from precedent.adapters.action_registry import load_action_registry
from precedent.adapters.bounded import (
    LIMITS,
    InputLimits,
    parse_json,
    parse_yaml_documents,
    read_text,
)
from precedent.adapters.evaluation import load_history_jsonl, load_queries_jsonl
from precedent.adapters.loader import load_incidents, load_playbooks, load_requests
from precedent.cli import main
from precedent.errors import InputError, LoadError

DEEP_FLOW = "[" * 30_000 + "]" * 30_000  # 60 KB: libyaml's composer segfaults on it
DEEP_BLOCK = "- " * 30_000 + "1\n"
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
)


# The project's refusal of a YAML file: "<file>: line N[, column M]: <why>", whichever refuses
# first, the project's own limits or PyYAML (whose wording is PyYAML's own, not pinned here).
def _refusal_at_line(name: str, line: int) -> str:
    return rf"{re.escape(name)}: line {line}(, column \d+)?: \S"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    file = tmp_path / name
    file.write_text(text)
    return file


@pytest.mark.parametrize("text", [DEEP_FLOW, DEEP_BLOCK], ids=["flow", "block"])
def test_deep_yaml_is_refused_before_the_composer_sees_it(tmp_path: Path, text: str) -> None:
    file = _write(tmp_path, "deep.yaml", text)
    with pytest.raises(LoadError, match=_refusal_at_line("deep.yaml", 1)) as refused:
        load_incidents([file])
    assert "\n" not in str(refused.value)


def test_the_projects_own_depth_limit_holds_below_pyyamls(tmp_path: Path) -> None:
    # 65 levels: well inside what PyYAML accepts, so the refusal is the project's own limit.
    depth = LIMITS.max_depth + 1
    file = _write(tmp_path, "deep.yaml", "[" * depth + "]" * depth)
    with pytest.raises(LoadError, match=_refusal_at_line("deep.yaml", 1)) as refused:
        load_incidents([file])
    assert str(LIMITS.max_depth) in str(refused.value)
    nested: list[Any] = []
    for _ in range(LIMITS.max_depth - 1):
        nested = [nested]
    shallow = "[" * LIMITS.max_depth + "]" * LIMITS.max_depth
    assert parse_yaml_documents(shallow, "ok.yaml") == [nested]


def test_the_cli_survives_deep_yaml_in_a_real_process(tmp_path: Path) -> None:
    # In a subprocess: before the limit this was a segfault (exit 139) of the whole process.
    file = _write(tmp_path, "deep.yaml", DEEP_FLOW)
    done = subprocess.run(
        [sys.executable, "-m", "precedent.cli", "score", str(file), "--catalog", ""],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert re.match(rf"error: {_refusal_at_line(str(file), 1)}", line), line


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    file = _write(tmp_path, "bomb.yaml", ALIAS_BOMB)
    with pytest.raises(LoadError, match=r"bomb\.yaml: line \d+: aliases expand to more than"):
        load_playbooks([file])


def test_a_few_small_aliases_are_still_fine(tmp_path: Path) -> None:
    file = _write(
        tmp_path,
        "pb.yaml",
        "apiVersion: precedent.dev/v1alpha1\nkind: Playbook\nmetadata: {name: p}\n"
        "spec: {version: v1, description: d, actions: &acts [restart_service], "
        "labels: {incident-type: &t oom}}\n",
    )
    [playbook] = load_playbooks([file])
    assert playbook.actions == ["restart_service"]


@pytest.mark.parametrize(
    ("value", "reason"),
    [("9" * 5000, "big-int"), ("2025-13-45", "bad-date")],
)
def test_a_scalar_python_cannot_build_names_the_file(
    tmp_path: Path, value: str, reason: str
) -> None:
    # The reason after the colon is Python's own wording (it varies between releases): not pinned.
    file = _write(tmp_path, "odd.yaml", f"kind: Incident\nspec: {{id: {value}}}\n")
    with pytest.raises(LoadError, match=r"odd\.yaml: a value cannot be read: \S") as refused:
        load_incidents([file])
    assert "\n" not in str(refused.value), reason


def test_binary_stdin_is_one_error_line() -> None:
    result = CliRunner().invoke(main, ["score", "-", "--catalog", ""], input=b"\xff\xfe\x00\x81")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: <stdin>:1: not UTF-8 text (byte 0xff at offset 0)"
    ]


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    file = _write(tmp_path, "big.yaml", "x" * 2048)
    with pytest.raises(LoadError, match=r"big\.yaml: larger than the 1024-byte input limit"):
        read_text(file, limits=InputLimits(max_bytes=1024))
    assert read_text(file, limits=InputLimits(max_bytes=2048))[0] == "x" * 2048


def test_a_device_without_a_size_is_read_only_up_to_the_limit() -> None:
    with pytest.raises(LoadError, match="larger than the 4096-byte input limit"):
        read_text("/dev/zero", limits=InputLimits(max_bytes=4096))


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match=r"nope\.yaml: no such file"):
        load_requests([tmp_path / "nope.yaml"])


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"a": ' * 100 + "1" + "}" * 100, "nested deeper than"),
        ('{"id": ' + "7" * 5000 + "}", "not valid JSON: "),
        ('{"id": "A", "title": ', "not valid JSON"),
    ],
    ids=["recursion", "depth", "big-int", "truncated"],
)
def test_hostile_jsonl_names_file_and_line(tmp_path: Path, line: str, reason: str) -> None:
    # A valid first line of each kind, then a blank one, then the hostile line (read line by
    # line: the hostile one is refused when it is reached, naming its number).
    history = _write(tmp_path, "history.jsonl", '{"id": "A", "title": "a"}\n\n' + line + "\n")
    with pytest.raises(LoadError, match=rf"history\.jsonl:3: {reason}"):
        load_history_jsonl(history)
    queries = _write(
        tmp_path, "queries.jsonl", '{"query": "q", "relevant": ["A"]}\n\n' + line + "\n"
    )
    with pytest.raises(LoadError, match=rf"queries\.jsonl:3: {reason}"):
        load_queries_jsonl(queries)


def test_the_json_depth_limit_is_exact_and_brackets_in_strings_do_not_count() -> None:
    small = InputLimits(max_depth=4)
    assert parse_json("[[[[1]]]]", "f:1", limits=small) == [[[[1]]]]
    assert parse_json('{"a": [{"b": [1]}]}', "f:1", limits=small) == {"a": [{"b": [1]}]}
    with pytest.raises(LoadError, match="f:1: nested deeper than 4 levels"):
        parse_json("[[[[[1]]]]]", "f:1", limits=small)
    with pytest.raises(LoadError, match="f:1: nested deeper than 4 levels"):
        parse_json('{"a": {"b": {"c": {"d": {}}}}}', "f:1", limits=small)
    brackets = '{"t": "[[[[[{{{{{", "u": [1, [2]]}'
    assert parse_json(brackets, "f:1", limits=small) == {"t": "[[[[[{{{{{", "u": [1, [2]]}
    wide = "[" + ", ".join(["[1]"] * 10) + "]"  # many brackets, two levels
    assert len(parse_json(wide, "f:1", limits=small)) == 10


def test_a_long_jsonl_line_is_refused() -> None:
    with pytest.raises(LoadError, match="f:1: longer than the 16-byte line limit"):
        parse_json('"' + "x" * 20 + '"', "f:1", limits=InputLimits(max_line_bytes=16))


def test_the_action_registry_goes_through_the_same_reader(tmp_path: Path) -> None:
    deep = _write(tmp_path, "registry.yaml", DEEP_FLOW)
    with pytest.raises(InputError, match=_refusal_at_line("registry.yaml", 1)):
        load_action_registry(deep)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"READ_ONLY: [\xc3\x28]\n")
    with pytest.raises(InputError, match=r"action registry .*binary\.yaml:1: not UTF-8"):
        load_action_registry(binary)
