"""A playbook learns the words of the requests it served: the texts of its successful outcomes,
handled against the sandbox API server with the real client, become examples the catalog's
semantic part reads — embedded again only when that list changes, never per request or per
count."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from precedent.adapters.kube_api import API_PREFIX, ApiConnection, KubeApi
from precedent.core.embedding import FloatMatrix
from precedent.core.outcomes import MAX_SERVED_EXAMPLES
from precedent.core.playbooks import PlaybookQuery
from precedent.core.ports import Embedder
from precedent.metrics import Metrics
from precedent.services import OutcomeService
from precedent.services.outcomes import RequestRef
from precedent.settings import Settings
from precedent.wiring import build_service
from precedent_sandbox import SandboxThread

CRDS = Path(__file__).resolve().parents[2] / "crds"
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
RESTART: dict[str, Any] = {
    "version": "v2",
    "description": "Restart a deployment's pods one at a time",
    "actions": ["restart_service"],
    "examples": ["payment-api answers slowly after a day up"],
    "history": {"executions": 8, "successes": 7},
}
SCALE: dict[str, Any] = {
    "version": "v1",
    "description": "Scale a deployment out by adding replicas",
    "actions": ["scale_up"],
    "history": {"executions": 8, "successes": 7},
}
SERVED = "LedgerGrpcDeadlineStorm on ledger-api: grpc deadline exceeded storm, bounce it"
ASKED = "LedgerGrpcDeadlineStorm firing again on ledger-api, grpc deadline exceeded storm"


class CountingEmbedder:
    """The catalog's embedder, counting the texts it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def sandbox() -> Iterator[SandboxThread]:
    with SandboxThread(CRDS) as server:
        for name, spec in (("rolling-restart", RESTART), ("scale-out", SCALE)):
            body = {
                "apiVersion": "precedent.dev/v1alpha1",
                "kind": "Playbook",
                "metadata": {"name": name},
                "spec": spec,
            }
            httpx.post(f"{server.url}{API_PREFIX}/playbooks", json=body).raise_for_status()
        yield server


def answered(svc: OutcomeService, uid: str) -> dict[str, Any]:
    """An Approved answer the operator signed at generation 1."""
    status: dict[str, Any] = {
        "observedGeneration": 1,
        "risk": {"decision": "Approved", "band": "low", "score": 12.0},
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Assessed",
                "message": "",
                "observedGeneration": 1,
                "lastTransitionTime": "2026-03-02T11:00:00Z",
            }
        ],
    }
    signer = getattr(svc.trusted, "__self__", None)
    assert signer is not None
    status["mark"] = signer.sign(uid, status)
    return status


def request(description: str, result: str, finished: datetime) -> dict[str, Any]:
    return {
        "action": "restart_service",
        "target": {"kind": "Deployment", "name": "ledger-api", "namespace": "ledger"},
        "description": description,
        "labels": {"environment": "production"},
        "outcome": {
            "result": result,
            "playbook": {"id": "rolling-restart"},
            "finishedAt": finished.isoformat(),
        },
    }


def test_successful_outcomes_become_examples_of_the_playbook_embedded_once(
    sandbox: SandboxThread,
) -> None:
    settings = Settings(history_path="", catalog="")
    api = KubeApi(ApiConnection(server=sandbox.url))
    engine = build_service(settings, mode="rules", follows_cluster=True, cluster=api)
    catalog = engine.assessor.catalog
    assert catalog is not None
    embedder = CountingEmbedder(catalog._index.embedder)
    catalog._index.embedder = embedder
    svc = engine.outcomes
    assert svc is not None
    svc.metrics = Metrics(CollectorRegistry())
    for name, spec in (("rolling-restart", RESTART), ("scale-out", SCALE)):
        engine.objects.upsert_playbook(name, spec)  # the ledger hears of it
    query = engine.assessor.normalise(request(ASKED, "succeeded", NOW)).query

    def restart_semantic() -> float:
        answer = catalog.search_sync(PlaybookQuery.create(query.text, min_confidence=0.0))
        found = next(c for c in answer.candidates if c.id == "rolling-restart")
        assert found.parts is not None
        return found.parts.semantic

    before = restart_semantic()
    embedded = len(embedder.texts)

    async def handle(uid: str, description: str, result: str, minutes: int) -> None:
        await svc.handle(
            RequestRef("ledger", uid, uid),
            request(description, result, NOW + timedelta(minutes=minutes)),
            generation=2,
            status=answered(svc, uid),
            now=NOW,
        )

    async def run() -> None:
        try:
            # A failure is no example of what the playbook is for.
            await handle("u-0", "ledger-api wedged, bounce it", "failed", 0)
            assert catalog.get("rolling-restart").examples == RESTART["examples"]  # type: ignore[union-attr]
            assert len(embedder.texts) == embedded  # only its counts moved: nothing embedded

            await handle("u-1", SERVED, "succeeded", 1)
            playbook = catalog.get("rolling-restart")
            assert playbook is not None
            # Its own examples first, then the request it served.
            assert playbook.examples == [*RESTART["examples"], SERVED]
            assert playbook.history.executions == 10  # prior 8, one failure, one success
            assert len(embedder.texts) == embedded + 1  # embedded again, once

            # The same request served again: the examples do not change, nothing is embedded.
            await handle("u-2", SERVED, "succeeded", 2)
            assert len(embedder.texts) == embedded + 1
            assert catalog.get("rolling-restart").history.executions == 11  # type: ignore[union-attr]
        finally:
            await api.aclose()

    asyncio.run(run())
    after = restart_semantic()
    assert after > before  # the request it served is read with its description
    # Scoring embeds the request, never the playbooks again.
    count = len(embedder.texts)
    restart_semantic()
    assert len(embedder.texts) == count + 1
    # The Playbook's status says what was counted.
    body = httpx.get(f"{sandbox.url}{API_PREFIX}/playbooks/rolling-restart").json()
    assert body["status"]["executions"] == 11


def test_examples_are_bounded_and_the_most_recent_are_kept(sandbox: SandboxThread) -> None:
    settings = Settings(history_path="", catalog="")
    engine = build_service(settings, mode="rules", follows_cluster=True)
    svc = engine.outcomes
    assert svc is not None
    engine.objects.upsert_playbook("rolling-restart", RESTART)
    service = engine.assessor
    for i in range(MAX_SERVED_EXAMPLES + 4):
        spec = request(f"ledger-api request {i}", "succeeded", NOW + timedelta(minutes=i))
        status = {"outcome": {"result": "succeeded", "handledAt": "2026-03-02T12:00:00Z"}}
        svc.observe(f"u-{i}", spec, status)
    playbook = service.catalog.get("rolling-restart")  # type: ignore[union-attr]
    assert playbook is not None
    served = playbook.examples[len(RESTART["examples"]) :]
    assert len(served) == MAX_SERVED_EXAMPLES
    newest = MAX_SERVED_EXAMPLES + 3
    assert served == [f"ledger-api request {newest - i}" for i in range(MAX_SERVED_EXAMPLES)]
    # A request deleted: its outcome no longer counts, and it is no longer an example.
    svc.forget(f"u-{newest}")
    playbook = service.catalog.get("rolling-restart")  # type: ignore[union-attr]
    assert playbook is not None
    assert f"ledger-api request {newest}" not in playbook.examples
    assert len(playbook.examples) == len(RESTART["examples"]) + MAX_SERVED_EXAMPLES
