"""The OpenSearch adapter: a real ``AsyncOpenSearch`` over recorded answers (exact request
bodies, OpenSearch's documented errors) and over openmock (writes and searches round-trip)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import certifi
import pytest
from opensearchpy.exceptions import ConnectionError, ConnectionTimeout

from precedent.adapters.memory_opensearch import OpenSearchMemory, build_client
from precedent.core.memory_query import MemoryQuery, VectorField, incident_document
from precedent.core.ports import MemoryFailure
from precedent.models import Incident
from tests.core.test_memory_query import SEED_REQUEST, SEED_RESPONSE
from tests.memory_double import FakeMemoryClient, RecordedConnection

SECRET = "s3cr3t-api-key"
QUERY = MemoryQuery("Lambda timeout error", "lambda", size=20)


@pytest.fixture
def recorded() -> Iterator[type[RecordedConnection]]:
    RecordedConnection.answers = []
    RecordedConnection.sent = []
    yield RecordedConnection
    assert RecordedConnection.answers == [], "an answer was not asked for"


def memory(detect_vector: bool = False, **auth: Any) -> OpenSearchMemory:
    client = build_client("http://memory.test:9200", connection_class=RecordedConnection, **auth)
    return OpenSearchMemory(
        client, index="investigations", url="http://memory.test:9200", detect_vector=detect_vector
    )


async def test_the_search_sends_seed_001s_request_and_parses_its_response(
    recorded: type[RecordedConnection],
) -> None:
    recorded.answers = [(200, SEED_RESPONSE)]
    store = memory(auth="api_key", api_key=SECRET)
    parsed = await store.search(QUERY)
    [sent] = recorded.sent
    assert (sent["method"], sent["url"]) == ("POST", "/investigations/_search")
    assert sent["body"] == SEED_REQUEST
    assert sent["headers"]["authorization"] == f"ApiKey {SECRET}"
    assert [h.incident.id for h in parsed.hits] == ["inv-123"]


async def test_basic_auth_sends_the_user_and_password(recorded: type[RecordedConnection]) -> None:
    recorded.answers = [(200, {"hits": {"hits": []}})]
    await memory(auth="basic", username="precedent", password=SECRET).search(QUERY)
    # The aiohttp connection turns http_auth into its Authorization header.
    assert recorded.options["http_auth"] == ("precedent", SECRET)
    assert "authorization" not in recorded.sent[0]["headers"]


async def test_a_knn_vector_in_the_mapping_makes_the_query_hybrid(
    recorded: type[RecordedConnection],
) -> None:
    mapping = {
        "investigations": {
            "mappings": {"properties": {"embedding": {"type": "knn_vector", "dimension": 2}}}
        }
    }
    recorded.answers = [(200, mapping), (200, {"hits": {"hits": []}})]
    store = memory(detect_vector=True)
    field = await store.vector_field()
    assert field == VectorField("embedding", 2)
    assert await store.vector_field() == field  # detected once: no second request
    await store.search(MemoryQuery("t", "lambda", vector=[0.6, 0.8], vector_field=field))
    assert recorded.sent[0]["url"] == "/investigations/_mapping"
    assert recorded.sent[1]["body"]["query"]["bool"]["should"] == [
        {"knn": {"embedding": {"vector": [0.6, 0.8], "k": 5}}}
    ]


@pytest.mark.parametrize(
    ("answer", "kind", "says"),
    [
        (
            (
                401,
                {
                    "error": {"type": "security_exception", "reason": "missing credentials"},
                    "status": 401,
                },
            ),
            "auth",
            "authentication failed (401)",
        ),
        (
            (
                404,
                {
                    "error": {
                        "type": "index_not_found_exception",
                        "reason": "no such index [investigations]",
                        "index": "investigations",
                    },
                    "status": 404,
                },
            ),
            "not_found",
            "index_not_found_exception: no such index [investigations] (404)",
        ),
        (
            (
                429,
                {
                    "error": {"type": "es_rejected_execution_exception", "reason": "queue full"},
                    "status": 429,
                },
            ),
            "throttled",
            "too many requests (429)",
        ),
        (ConnectionTimeout("TIMEOUT", "read timed out", None), "timeout", "timed out"),
        (ConnectionError("N/A", "Connection refused", None), "unreachable", "unreachable"),
        ((200, ["not", "an", "object"]), "error", "not a JSON object"),
    ],
)
async def test_failures_are_one_line_naming_what_is_wrong(
    recorded: type[RecordedConnection], answer: Any, kind: str, says: str
) -> None:
    recorded.answers = [answer]
    with pytest.raises(MemoryFailure) as caught:
        await memory(auth="api_key", api_key=SECRET).search(QUERY)
    message = str(caught.value)
    assert caught.value.kind == kind
    assert says in message
    assert message.startswith("memory http://memory.test:9200/investigations: ")
    assert "\n" not in message
    assert SECRET not in message


async def test_a_rejected_document_fails_the_bulk_write_naming_it(
    recorded: type[RecordedConnection],
) -> None:
    answer = {
        "errors": True,
        "items": [
            {
                "index": {
                    "_id": "INC-1",
                    "status": 400,
                    "error": {
                        "type": "mapper_parsing_exception",
                        "reason": "failed to parse field [quality_score]",
                    },
                }
            }
        ],
    }
    recorded.answers = [(200, answer)]
    with pytest.raises(MemoryFailure) as caught:
        await memory().upsert([("INC-1", {"quality_score": "high"})])
    assert caught.value.kind == "mapping"
    assert "document INC-1: mapper_parsing_exception" in str(caught.value)
    bulk = recorded.sent[0]
    assert bulk["url"] == "/_bulk"
    assert bulk["body"][0] == {"index": {"_index": "investigations", "_id": "INC-1"}}


def _incident(id_: str, name: str = "payment-processor") -> Incident:
    return Incident.model_validate(
        {
            "id": id_,
            "title": "Lambda timeout after deploy",
            "description": "timeout error on cold start",
            "action": "restart_service",
            "resource": {"type": "lambda", "name": name},
            "outcome": "resolved",
            "rootCause": "cold start",
            "recommendedProcedure": "raise memory",
            "occurredAt": "2025-01-15T10:30:00Z",
            "qualityScore": 0.9,
        }
    )


async def test_writes_are_idempotent_by_id_and_searchable_in_openmock() -> None:
    client = FakeMemoryClient()
    store = OpenSearchMemory(client, index="investigations")
    assert await store.vector_field() is None
    first = _incident("INC-1")
    documents = [("INC-1", incident_document(first, cluster="east"))]
    await store.upsert(documents)
    await store.upsert(documents)  # a replay rewrites the same document
    await store.upsert([("INC-2", incident_document(_incident("INC-2", "orders"), cluster="west"))])
    assert sorted(d["investigation_id"] for d in client.documents("investigations")) == [
        "INC-1",
        "INC-2",
    ]
    parsed = await store.search(MemoryQuery("payment-processor timeout", "lambda"))
    found = {h.incident.id: h.cluster for h in parsed.hits}
    assert found["INC-1"] == "east"
    # The resource-type filter excludes other types.
    assert (await store.search(MemoryQuery("payment-processor timeout", "dynamodb"))).hits == []
    await store.aclose()


async def test_a_refused_query_makes_the_mapping_read_again(
    recorded: type[RecordedConnection],
) -> None:
    def mapping(dimension: int) -> dict[str, Any]:
        properties = {"embedding": {"type": "knn_vector", "dimension": dimension}}
        return {"investigations": {"mappings": {"properties": properties}}}

    # OpenSearch 2.19's answer to a knn clause of another dimension (tests/integration).
    refused = {
        "error": {
            "root_cause": [
                {
                    "type": "query_shard_exception",
                    "reason": "failed to create query: Query vector has invalid dimension: 2. "
                    "Dimension should be: 3",
                }
            ],
            "type": "search_phase_execution_exception",
            "reason": "all shards failed",
        },
        "status": 400,
    }
    recorded.answers = [(200, mapping(2)), (400, refused), (200, mapping(3))]
    store = memory(detect_vector=True)
    assert await store.vector_field() == VectorField("embedding", 2)
    with pytest.raises(MemoryFailure) as caught:
        await store.search(QUERY)
    assert str(caught.value).endswith(
        "HTTP 400: query_shard_exception: failed to create query: Query vector has invalid "
        "dimension: 2. Dimension should be: 3"
    )
    assert await store.vector_field() == VectorField("embedding", 3)
    assert [s["url"] for s in recorded.sent] == [
        "/investigations/_mapping",
        "/investigations/_search",
        "/investigations/_mapping",
    ]


async def test_without_detection_a_refused_query_reads_no_mapping(
    recorded: type[RecordedConnection],
) -> None:
    recorded.answers = [(404, {"error": {"type": "index_not_found_exception"}, "status": 404})]
    store = memory(detect_vector=False)
    with pytest.raises(MemoryFailure):
        await store.search(QUERY)
    assert await store.vector_field() is None
    assert len(recorded.sent) == 1


async def test_a_ca_bundle_alone_says_how_to_verify(recorded: type[RecordedConnection]) -> None:
    # opensearch-py ignores verify_certs when given a context (and warns at each client).
    bundle = Path(certifi.where())
    for verify, mode in ((True, ssl.CERT_REQUIRED), (False, ssl.CERT_NONE)):
        client = build_client(
            "https://memory.test:9200",
            ca_bundle=bundle,
            verify_tls=verify,
            connection_class=RecordedConnection,
        )
        recorded.answers = [(200, {"hits": {"hits": []}})]
        await client.search(index="investigations", body={})  # connections are made lazily
        options = recorded.options
        assert options["ssl_context"].verify_mode == mode
        assert options["ssl_context"].check_hostname is verify
        assert "verify_certs" not in options
        await client.close()
    # The aiohttp connection itself: no warning (the suite turns warnings into errors).
    await build_client("https://memory.test:9200", ca_bundle=bundle, verify_tls=False).close()


async def test_an_untrusted_certificate_is_named_with_the_setting_that_fixes_it(
    recorded: type[RecordedConnection],
) -> None:
    # What aiohttp raises for a self-signed server certificate (OpenSearch's demo one).
    recorded.answers = [
        ConnectionError(
            "N/A",
            "Cannot connect to host 127.0.0.1:9299 ssl:True [SSLCertVerificationError: (1, "
            "'[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local "
            "issuer certificate (_ssl.c:1006)')]",
            None,
        )
    ]
    with pytest.raises(MemoryFailure) as caught:
        await memory().search(QUERY)
    assert caught.value.kind == "unreachable"
    assert str(caught.value) == (
        "memory http://memory.test:9200/investigations: TLS failed: the server's certificate "
        "is not trusted: set PRECEDENT_MEMORY_CA_BUNDLE to the CA that signed it"
    )


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_ca_bundle_setting_means_the_system_cas(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # As a Helm value or a Secret key left empty renders it: not the path ".".
    from precedent.settings import load_settings

    monkeypatch.setenv("PRECEDENT_MEMORY_CA_BUNDLE", value)
    assert load_settings().memory.ca_bundle is None
