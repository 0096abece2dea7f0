"""One ``-o`` set across the commands (table, wide, json, yaml, name), kubectl's way: several
objects are a ``List``, one object is itself, ``name`` is kind/name a line, ``wide`` adds
columns to the table. Real processes, the bundled data."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from precedent.cli import main

REPO = Path(__file__).resolve().parents[2]
PRECEDENT = shutil.which("precedent", path=str(Path(sys.executable).parent)) or "precedent"
SEED = "data/requests/seed-000.yaml"  # several requests in one file


@pytest.fixture(autouse=True)
def in_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def run(*args: str) -> str:
    """The command in this process (the commands' own code; one import for the whole file)."""
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, (result.stderr, result.exception)
    return result.stdout


def test_the_console_script_prints_the_same() -> None:
    proc = subprocess.run(
        [PRECEDENT, "score", SEED, "-o", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kind"] == "List"


def header(table: str) -> list[str]:
    return table.splitlines()[0].split("   ")


COMMANDS = {
    "score": ["score", SEED],
    "search": ["search", "payment api restart after memory leak", "-k", "3"],
    "catalog query": [
        "catalog",
        "query",
        "pods OOMKilled after the memory limit was lowered",
        "-l",
        "incident-type:pod-oom-killer",
    ],
    "graph": ["graph", "-f", "data/shop"],
    "graph --target": ["graph", "-f", "data/shop", "--target", "shop/deploy/payment-api"],
}


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_every_command_offers_the_same_set(command: list[str]) -> None:
    outputs = {o: run(*command, "-o", o) for o in ("table", "wide", "json", "yaml", "name")}
    assert outputs["table"] == run(*command)  # table is the default
    # wide: the table's columns and more (kubectl's -o wide).
    table_columns = [c.strip() for c in header(outputs["table"].split("\n\n")[-1]) if c.strip()]
    wide_columns = [c.strip() for c in header(outputs["wide"].split("\n\n")[-1]) if c.strip()]
    if command[0] != "graph":
        assert set(table_columns) < set(wide_columns), (table_columns, wide_columns)
    # json and yaml: the same document.
    assert yaml.safe_load(outputs["yaml"]) == json.loads(outputs["json"])
    # name: kind/name, one a line.
    names = outputs["name"].splitlines()
    assert names
    assert all(n.count("/") == 1 and " " not in n for n in names), names


def test_several_objects_are_a_kubectl_list_and_one_is_itself(tmp_path: Path) -> None:
    several = json.loads(run("score", SEED, "-o", "json"))
    assert several["apiVersion"] == "v1"
    assert several["kind"] == "List"
    assert several["metadata"] == {}
    assert len(several["items"]) > 1
    assert yaml.safe_load(run("score", SEED, "-o", "yaml")) == several
    names = run("score", SEED, "-o", "name").splitlines()
    assert names == [f"remediationrequest.precedent.dev/{i['name']}" for i in several["items"]]
    first = several["items"][0]
    one = tmp_path / "one.yaml"
    docs = list(yaml.safe_load_all((REPO / SEED).read_text()))
    one.write_text(yaml.safe_dump(next(d for d in docs if d["metadata"]["name"] == first["name"])))
    single = json.loads(run("score", str(one), "-o", "json"))
    assert single["name"] == first["name"]
    assert single["assessment"]["risk"] == first["assessment"]["risk"]


def test_wide_graph_shows_every_piece_of_evidence() -> None:
    table = run("graph", "-f", "data/shop")
    wide = run("graph", "-f", "data/shop", "-o", "wide")
    assert "more)" in table
    assert "more)" not in wide
    radius = run("graph", "-f", "data/shop", "--target", "shop/deploy/payment-api", "-o", "wide")
    assert "NAMESPACE" in radius
    assert "digraph" in run("graph", "-f", "data/shop", "-o", "dot")  # kept as an extra


def test_eval_takes_table_wide_json_yaml() -> None:
    args = ["eval", "risk", "tests/data/risk/readonly.yaml"]
    as_json = json.loads(run(*args, "-o", "json"))
    assert yaml.safe_load(run(*args, "-o", "yaml")) == as_json
    assert run(*args, "-o", "wide") == run(*args)
