"""Test doubles for the fleet memory: openmock's async client, and recorded HTTP answers.

``FakeMemoryClient`` is openmock's ``AsyncFakeOpenSearch`` (the maintained OpenSearch mock for
opensearch-py) plus ``indices.get_mapping``, which openmock does not implement: it answers with a
text-only mapping, so the adapter's vector detection finds no ``knn_vector`` field (openmock
cannot run knn queries).

``RecordedConnection`` replaces opensearch-py's HTTP connection under a real ``AsyncOpenSearch``:
it records each request and answers from a queue of (status, body) pairs in OpenSearch's
documented response format; error statuses go through opensearch-py's own error mapping.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from openmock import AsyncFakeOpenSearch
from openmock.fake_asyncindices import FakeAsyncIndicesClient
from opensearchpy import AsyncConnection


class _Indices(FakeAsyncIndicesClient):  # type: ignore[misc]
    async def get_mapping(self, index: str, **_: Any) -> dict[str, Any]:
        return {index: {"mappings": {"properties": {"investigation_id": {"type": "keyword"}}}}}


class FakeMemoryClient(AsyncFakeOpenSearch):  # type: ignore[misc]
    """openmock's async client with a text-only ``get_mapping``."""

    @property
    def indices(self) -> _Indices:
        return _Indices(self)

    def documents(self, index: str) -> list[dict[str, Any]]:
        """Stored ``_source`` documents of ``index``."""
        store = self._FakeAsyncIndicesClient__documents_dict
        return [d["_source"] for d in store.get(index, [])]


class RecordedConnection(AsyncConnection):  # type: ignore[misc]
    """Answers from ``RecordedConnection.answers``; records into ``RecordedConnection.sent``."""

    answers: ClassVar[list[tuple[int, Any] | BaseException]] = []
    sent: ClassVar[list[dict[str, Any]]] = []
    options: ClassVar[dict[str, Any]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # What the client configured its connection with (auth, TLS, timeout).
        RecordedConnection.options = kwargs
        super().__init__(*args, **kwargs)

    async def perform_request(
        self,
        method: str,
        url: str,
        params: Any = None,
        body: bytes | None = None,
        timeout: Any = None,
        ignore: Any = (),
        headers: Any = None,
    ) -> tuple[int, dict[str, str], str]:
        merged = {**dict(self.headers), **dict(headers or {})}
        decoded: Any = None
        if body:
            text = body.decode()
            try:
                decoded = json.loads(text)
            except ValueError:  # bulk: newline-delimited JSON
                decoded = [json.loads(line) for line in text.splitlines() if line.strip()]
        RecordedConnection.sent.append(
            {"method": method, "url": url, "body": decoded, "headers": merged}
        )
        answer = RecordedConnection.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        status, payload = answer
        raw = json.dumps(payload)
        if not 200 <= status < 300 and status not in (ignore or ()):
            self._raise_error(status, raw, "application/json")
        return status, {"content-type": "application/json"}, raw

    async def close(self) -> None:
        return None
