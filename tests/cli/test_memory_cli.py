"""``precedent memory init|push|search`` against the memory doubles: openmock's async client
(writes and searches round-trip) and a real ``AsyncOpenSearch`` over recorded answers in
OpenSearch's documented format (the index calls openmock lacks, and the errors). Every failure
is one ``error:`` line and exit 1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from opensearchpy import AsyncOpenSearch
from opensearchpy.exceptions import ConnectionError

from precedent.adapters.loader import load_incidents
from precedent.cli import main
from tests.memory_double import FakeMemoryClient, RecordedConnection

HISTORY = Path(__file__).resolve().parents[1] / "data" / "incidents.yaml"
INDEX = "precedent-incidents"
SECRET = "s3cr3t-api-key"


@pytest.fixture(autouse=True)
def memory_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECEDENT_MEMORY_URL", "http://memory.test:9200")
    monkeypatch.setenv("PRECEDENT_MEMORY_AUTH", "api_key")
    monkeypatch.setenv("PRECEDENT_MEMORY_API_KEY", SECRET)
    monkeypatch.setenv("PRECEDENT_CLUSTER_NAME", "east")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeMemoryClient:
    client = FakeMemoryClient()
    client.close = _noop  # shared by several commands in one test; closing would drop nothing
    monkeypatch.setattr("precedent.adapters.memory_opensearch.AsyncOpenSearch", lambda **_: client)
    return client


async def _noop() -> None:
    return None


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[RecordedConnection]]:
    RecordedConnection.answers = []
    RecordedConnection.sent = []

    def client(**options: Any) -> AsyncOpenSearch:
        return AsyncOpenSearch(**{**options, "connection_class": RecordedConnection})

    monkeypatch.setattr("precedent.adapters.memory_opensearch.AsyncOpenSearch", client)
    yield RecordedConnection
    assert RecordedConnection.answers == [], "an answer was not asked for"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["memory", *args])


def assert_one_line(result: Result, says: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines
    assert says in lines[0], lines
    assert SECRET not in result.output + result.stderr


def test_push_then_search_round_trips_through_openmock(fake: FakeMemoryClient) -> None:
    pushed = run("push", "--history", str(HISTORY))
    assert pushed.exit_code == 0, pushed.output + pushed.stderr
    documents = fake.documents(INDEX)
    assert documents
    assert f"{len(documents)} incidents written to http://memory.test:9200/{INDEX}" in (
        pushed.output
    )
    assert {d["cluster"] for d in documents} == {"east"}
    one = documents[0]
    found = run(
        "search", one["error_message"].split("\n")[0], "--resource-type", one["resource_type"]
    )
    assert found.exit_code == 0, found.output + found.stderr
    assert one["investigation_id"] in found.output
    assert "east" in found.output


def test_push_sends_every_text_as_the_history_gives_it(fake: FakeMemoryClient) -> None:
    """The history is read as the operator reads it (long texts kept compressed)."""
    bundled = Path(__file__).resolve().parents[2] / "data" / "incidents"
    pushed = run("push", "--history", str(bundled))
    assert pushed.exit_code == 0, pushed.output + pushed.stderr
    given = {i.id: i for i in load_incidents([bundled])}
    documents = fake.documents(INDEX)
    assert len(documents) == len(given)
    for document in documents:
        incident = given[document["investigation_id"]]
        assert document["error_message"] == f"{incident.title}\n{incident.description}"
        assert document["root_cause_summary"] == (incident.root_cause or incident.title)
        assert document["advice_summary"] == (
            incident.recommended_procedure or incident.resolution or ""
        )
        assert document.get("resolution") == (incident.resolution or None)


def test_push_twice_rewrites_the_same_documents(fake: FakeMemoryClient) -> None:
    assert run("push", "--history", str(HISTORY)).exit_code == 0
    first = len(fake.documents(INDEX))
    assert run("push", "--history", str(HISTORY)).exit_code == 0
    assert len(fake.documents(INDEX)) == first  # document id = incident id


def test_init_creates_the_template_and_the_index(recorded: type[RecordedConnection]) -> None:
    recorded.answers = [
        (200, {"acknowledged": True}),
        (404, {}),  # HEAD: no such index yet
        (200, {"acknowledged": True, "index": INDEX}),
    ]
    result = run("init")
    assert result.exit_code == 0, result.output + result.stderr
    assert result.output.strip() == f"index http://memory.test:9200/{INDEX}: created"
    put, _, create = recorded.sent
    assert (put["method"], put["url"]) == ("PUT", f"/_index_template/{INDEX}")
    assert put["body"]["index_patterns"] == [f"{INDEX}*"]
    assert (create["method"], create["url"]) == ("PUT", f"/{INDEX}")
    assert create["body"]["settings"]["index"]["knn"] is True
    assert recorded.sent[0]["headers"]["authorization"] == f"ApiKey {SECRET}"


UNAUTHORISED = (401, {"error": {"type": "security_exception", "reason": "bad key"}, "status": 401})
MISSING = (
    404,
    {
        "error": {"type": "index_not_found_exception", "reason": f"no such index [{INDEX}]"},
        "status": 404,
    },
)
THROTTLED = (429, {"error": {"type": "es_rejected_execution_exception", "reason": "queue full"}})
REFUSED = ConnectionError("N/A", "Connection refused", OSError("Connection refused"))


@pytest.mark.parametrize(
    ("args", "answers", "says"),
    [
        (["search", "disk full", "--resource-type", "pod"], [UNAUTHORISED], "(401)"),
        (["search", "disk full", "--resource-type", "pod"], [REFUSED], "unreachable"),
        (
            ["search", "disk full", "--resource-type", "pod"],
            [MISSING],
            "index_not_found_exception: no such index [precedent-incidents] (404): "
            "create it with `precedent memory init`",
        ),
        (["push", "--history", str(HISTORY)], [THROTTLED], "too many requests (429)"),
        (["init"], [UNAUTHORISED], "authentication failed (401)"),
        (
            ["init"],
            [
                (200, {"acknowledged": True}),
                (200, {}),  # HEAD: the index exists
                (
                    200,
                    {INDEX: {"mappings": {"properties": {"embedding": {"type": "float"}}}}},
                ),
            ],
            "mapping mismatch",
        ),
    ],
)
def test_each_failure_is_one_line_naming_it(
    recorded: type[RecordedConnection], args: list[str], answers: list[Any], says: str
) -> None:
    recorded.answers = list(answers)
    assert_one_line(run(*args), says)


def test_no_url_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRECEDENT_MEMORY_URL")
    assert_one_line(run("search", "x", "--resource-type", "pod"), "PRECEDENT_MEMORY_URL")


def test_an_empty_query_is_one_line() -> None:
    assert_one_line(run("search", "  ", "--resource-type", "pod"), "TEXT: the query is empty")
