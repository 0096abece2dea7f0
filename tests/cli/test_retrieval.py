"""precedent eval / search / index / score --mode, run through click on files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from precedent.cli import main
from tests.conftest import PARAPHRASE_HISTORY, PARAPHRASE_QUERIES, SEED_INCIDENTS

REQUEST = """\
apiVersion: precedent.dev/v1alpha1
kind: RemediationRequest
metadata: {name: scale-orders}
spec:
  action: scale_down
  target: {kind: Deployment, name: order-processing}
  description: Scaling down the order-processing service
"""


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("mode", ["rules", "semantic", "hybrid"])
def test_eval_prints_the_four_metrics_as_json(mode: str) -> None:
    code, out, _ = _run(
        "eval",
        "retrieval",
        "--history",
        str(PARAPHRASE_HISTORY),
        "--queries",
        str(PARAPHRASE_QUERIES),
        "--mode",
        mode,
        "-o",
        "json",
    )
    assert code == 0
    metrics = json.loads(out)
    assert set(metrics) == {"mrr", "hit@1", "hit@5", "map", "queries"}
    assert metrics["queries"] == 41
    assert all(0 <= metrics[k] <= 1 for k in ("mrr", "hit@1", "hit@5", "map"))


def test_eval_semantic_beats_rules_on_the_paraphrase_set() -> None:
    def mrr(mode: str) -> float:
        _, out, _ = _run(
            "eval",
            "retrieval",
            "--history",
            str(PARAPHRASE_HISTORY),
            "--queries",
            str(PARAPHRASE_QUERIES),
            "--mode",
            mode,
            "-o",
            "json",
        )
        return float(json.loads(out)["mrr"])

    assert mrr("hybrid") > mrr("rules") + 0.2


def test_eval_table_output() -> None:
    code, out, _ = _run(
        "eval",
        "retrieval",
        "--history",
        str(PARAPHRASE_HISTORY),
        "--queries",
        str(PARAPHRASE_QUERIES),
    )
    assert code == 0
    assert out.splitlines()[0].split() == [
        "MODE",
        "EMBEDDER",
        "QUERIES",
        "MRR",
        "HIT@1",
        "HIT@5",
        "MAP@10",
    ]
    assert out.splitlines()[1].startswith("hybrid   lexical-512")


@pytest.mark.parametrize(
    ("history", "queries", "message"),
    [
        (
            '{"id": "A", "title": "x"}\nnot json\n',
            '{"query": "x", "relevant": ["A"]}\n',
            "h:2: not valid JSON",
        ),
        (
            '{"id": "A"}\n',
            '{"query": "x", "relevant": ["A"]}\n',
            "h:1: title or description is required",
        ),
        (
            '{"id": "A", "title": "x", "severity": "huge"}\n',
            '{"query": "x", "relevant": ["A"]}\n',
            "h:1: severity",
        ),
        (
            '{"id": "A", "title": "x"}\n{"id": "A", "title": "y"}\n',
            '{"query": "x", "relevant": ["A"]}\n',
            "h:2: duplicate incident id 'A' (line 1)",
        ),
        (
            '{"id": "A", "title": "x"}\n',
            '\n{"query": "x", "relevant": ["B"]}\n',
            "q:2: unknown incident id 'B'",
        ),
        ('{"id": "A", "title": "x"}\n', '{"query": "x", "relevant": []}\n', "q:1: relevant"),
        ('{"id": "A", "title": "x"}\n', '{"query": 3, "relevant": ["A"]}\n', "q:1: query"),
        (
            '{"id": "A", "title": "x"}\n',
            '{"query": {"action": "x"}, "relevant": ["A"]}\n',
            "q:1: query.target: required",
        ),
        (
            '{"id": "A", "title": "x"}\n',
            '{"query": "x", "relevant": ["A"], "extra": 1}\n',
            "q:1: unknown field 'extra'",
        ),
    ],
)
def test_eval_reports_bad_lines_with_their_number(
    tmp_path: Path, history: str, queries: str, message: str
) -> None:
    h, q = tmp_path / "h", tmp_path / "q"
    h.write_text(history)
    q.write_text(queries)
    code, _, err = _run(
        "eval", "retrieval", "--history", str(h), "--queries", str(q), "--mode", "rules"
    )
    assert code == 1
    assert message in err.replace(str(tmp_path) + "/", "")


def test_eval_description_only_history_and_exclude(tmp_path: Path) -> None:
    h, q = tmp_path / "h.jsonl", tmp_path / "q.jsonl"
    h.write_text(
        '{"id": "A", "description": "Disk full on the database node. Writes failed."}\n'
        '{"id": "B", "description": "Disk full on the log node. Pods evicted."}\n'
        '{"id": "C", "description": "Certificate expired."}\n'
    )
    q.write_text(
        '{"query": "Disk full on the database node", "relevant": ["B"], "exclude": ["A"]}\n'
    )
    code, out, _ = _run("eval", "retrieval", "--history", str(h), "--queries", str(q), "-o", "json")
    assert code == 0
    assert json.loads(out)["hit@1"] == 1.0


def test_search_ranks_the_paraphrase(tmp_path: Path) -> None:
    code, out, _ = _run(
        "search", "payment API scaled down too early", "--history", str(SEED_INCIDENTS), "-k", "2"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["#", "ID", "SCORE", "SIMILARITY", "SEMANTIC"]
    assert lines[1].split()[1] == "INC-2025-1089"
    assert len(lines) == 3


def test_search_json_domain_and_jsonl_history() -> None:
    code, out, _ = _run(
        "search",
        "certificate expired",
        "--history",
        str(PARAPHRASE_HISTORY),
        "--domain",
        "network",
        "-o",
        "json",
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["results"][0]["id"] == "PAR-008"
    assert {r["domain"] for r in payload["results"]} == {"network"}
    assert all(0 <= r["score"] <= 1 for r in payload["results"])


def test_search_errors() -> None:
    assert _run("search", "  ", "--history", str(SEED_INCIDENTS))[0] == 1
    code, _, err = _run("search", "x", "--history", "/nonexistent")
    assert code == 1
    assert "no such file" in err


def test_index_builds_saves_and_reports_stats(tmp_path: Path) -> None:
    code, out, _ = _run("index", "--history", str(PARAPHRASE_HISTORY), "--save", str(tmp_path))
    assert code == 0
    assert "vectors:    28 (exact, dimension 512)" in out
    assert "domains:    compute 16, data 4, network 5, security 3" in out
    assert (tmp_path / "index.faiss").is_file()
    code, out, _ = _run("index", "--history", str(PARAPHRASE_HISTORY), "--save", str(tmp_path))
    assert "embedded:   0 (kept 28, removed 0)" in out


def test_score_defaults_to_hybrid_and_takes_mode(tmp_path: Path) -> None:
    request = tmp_path / "rr.yaml"
    request.write_text(REQUEST)
    code, out, _ = _run("score", str(request), "--history", str(SEED_INCIDENTS), "-o", "json")
    assert code == 0, out
    hybrid = json.loads(out)["assessment"]  # one request: the object, not a List
    assert hybrid["engine"]["similarityMode"] == "hybrid"
    assert hybrid["engine"]["embedder"] == "lexical-512"
    parts = {s["id"]: s["parts"] for s in hybrid["similarIncidents"]}
    assert parts["INC-2025-1089"]["semantic"] > 0.30
    code, out, _ = _run(
        "score", str(request), "--history", str(SEED_INCIDENTS), "--mode", "rules", "-o", "json"
    )
    rules = json.loads(out)["assessment"]
    assert rules["engine"]["similarityMode"] == "rules"
    assert "semantic" not in rules["similarIncidents"][0]["parts"]


def test_index_into_an_unwritable_directory_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    target = blocker / "index"  # under a file: cannot be created, even by root
    code, _, err = _run("index", "--history", str(PARAPHRASE_HISTORY), "--save", str(target))
    assert code == 1
    assert err.startswith(f"error: index directory {target}: cannot write")
    assert "Traceback" not in err
