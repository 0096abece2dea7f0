"""Outcome handling against the sandbox API server with the real API client: counted once
whatever the replays, recounted from the set, an Incident created once, the status written."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from precedent.adapters.kube_api import API_PREFIX, ApiConnection, KubeApi
from precedent.errors import InputError
from precedent.metrics import Metrics
from precedent.models import Playbook
from precedent.services import OutcomeService
from precedent.services.outcomes import RequestRef
from precedent.settings import Settings
from precedent.wiring import build_service
from precedent_sandbox import SandboxThread

CRDS = Path(__file__).resolve().parents[2] / "crds"
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
PLAYBOOK: dict[str, Any] = {
    "apiVersion": "precedent.dev/v1alpha1",
    "kind": "Playbook",
    "metadata": {"name": "rolling-restart"},
    "spec": {
        "version": "v2",
        "description": "Restart a deployment's pods one at a time",
        "actions": ["restart_service"],
        "history": {"executions": 8, "successes": 6},
    },
}
REQUEST: dict[str, Any] = {
    "action": "restart_service",
    "target": {"kind": "Deployment", "name": "payment-api"},
    "labels": {"priority": "P2"},
}


ACCEPTED: dict[str, Any] = {"outcome": {"result": "failed", "handledAt": "2026-03-02T12:00:00Z"}}


def answered(svc: OutcomeService, uid: str, decision: str = "Approved") -> dict[str, Any]:
    """An answer the operator signed at generation 1 (Approved unless told otherwise)."""
    status: dict[str, Any] = {
        "observedGeneration": 1,
        "risk": {"decision": decision, "band": "low", "score": 12.0},
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Assessed",
                "message": "",
                "observedGeneration": 1,
                "lastTransitionTime": "2026-03-02T11:00:00Z",
            },
        ],
    }
    signer = getattr(svc.trusted, "__self__", None)
    assert signer is not None
    status["mark"] = signer.sign(uid, status)
    return status


def with_outcome(result: str, playbook: str | None = "rolling-restart") -> dict[str, Any]:
    outcome: dict[str, Any] = {"result": result, "message": f"the restart {result}"}
    if playbook:
        outcome["playbook"] = {"id": playbook}
    return {**REQUEST, "outcome": outcome}


@pytest.fixture
def sandbox() -> Iterator[SandboxThread]:
    with SandboxThread(CRDS) as server:
        httpx.post(f"{server.url}{API_PREFIX}/playbooks", json=PLAYBOOK).raise_for_status()
        yield server


def outcomes(sandbox: SandboxThread, registry: CollectorRegistry) -> tuple[OutcomeService, KubeApi]:
    settings = Settings(history_path="", catalog="")
    api = KubeApi(ApiConnection(server=sandbox.url))
    engine = build_service(settings, mode="rules", follows_cluster=True, cluster=api)
    svc = engine.outcomes
    assert svc is not None
    svc.metrics = Metrics(registry)
    engine.objects.upsert_playbook("rolling-restart", PLAYBOOK["spec"])
    return svc, api


def playbook_status(sandbox: SandboxThread) -> dict[str, Any]:
    body = httpx.get(f"{sandbox.url}{API_PREFIX}/playbooks/rolling-restart").json()
    return dict(body.get("status") or {})


def test_outcomes_are_recounted_from_the_set_and_counted_once(sandbox: SandboxThread) -> None:
    registry = CollectorRegistry()

    async def run() -> None:
        svc, api = outcomes(sandbox, registry)
        try:
            for _ in range(3):  # replayed events
                svc.observe("uid-1", with_outcome("failed"), ACCEPTED)
                svc.observe("uid-2", with_outcome("succeeded"), ACCEPTED)
                svc.observe("uid-3", REQUEST, {})  # no outcome yet
                # Reported, but not accepted (yet, or ignored): counts nowhere.
                svc.observe("uid-4", with_outcome("failed"), {})
                ignored = {"outcome": {**ACCEPTED["outcome"], "ignored": "NotApproved"}}
                svc.observe("uid-5", with_outcome("failed"), ignored)
            assert len(svc.ledger) == 2
            assert (
                svc.counts("rolling-restart").executions,
                svc.counts("rolling-restart").successes,
            ) == (10, 7)
            live = svc.catalog.get("rolling-restart")
            assert live is not None
            assert (live.history.executions, live.history.successes) == (10, 7)

            await svc.sync_playbook("rolling-restart")
            assert playbook_status(sandbox) == {
                "executions": 10,
                "successes": 7,
                "successRate": round(8 / 12, 4),
            }
            # A deleted request stops counting; the recount follows.
            assert svc.forget("uid-2") == {"rolling-restart"}
            await svc.sync_playbook("rolling-restart")
            assert playbook_status(sandbox)["executions"] == 9
            # A changed prior (spec.history edited) is picked up, outcomes kept.
            edited = Playbook.model_validate(
                {
                    **PLAYBOOK["spec"],
                    "id": "rolling-restart",
                    "history": {"executions": 0, "successes": 0},
                }
            )
            svc.playbook_changed(edited)
            assert svc.playbook_status("rolling-restart") == {
                "executions": 1,
                "successes": 0,
                "successRate": round(1 / 3, 4),
            }
        finally:
            await api.aclose()

    asyncio.run(run())


def test_handling_creates_the_incident_once_and_records_the_handling(
    sandbox: SandboxThread,
) -> None:
    registry = CollectorRegistry()
    request = RequestRef(namespace="shop", name="restart-1", uid="0a1b2c3d-4e5f")

    async def run() -> None:
        svc, api = outcomes(sandbox, registry)
        status = answered(svc, request.uid)
        try:
            first = await svc.handle(
                request, with_outcome("failed"), generation=2, status=status, now=NOW
            )
            again = await svc.handle(
                request, with_outcome("failed"), generation=2, status=status, now=NOW
            )
        finally:
            await api.aclose()
        assert first.incident == again.incident == "rr-shop-restart-1-0a1b2c3d"
        assert first.counts is not None
        assert (first.counts.executions, first.counts.successes) == (
            9,
            6,
        )
        assert again.counts == first.counts  # handled twice, counted once
        assert first.status["outcome"] == {
            "result": "failed",
            "handledAt": "2026-03-02T12:00:00Z",
            "playbook": "rolling-restart",
            "incident": "rr-shop-restart-1-0a1b2c3d",
        }
        assert first.status["observedGeneration"] == 2
        assert first.status["conditions"][0]["observedGeneration"] == 2
        assert first.status["conditions"][0]["lastTransitionTime"] == "2026-03-02T11:00:00Z"
        assert (first.event.type, first.event.reason) == ("Warning", "OutcomeFailed")
        assert "6/9 successful" in first.event.message

    asyncio.run(run())
    items = httpx.get(f"{sandbox.url}{API_PREFIX}/incidents").json()["items"]
    assert [i["metadata"]["name"] for i in items] == ["rr-shop-restart-1-0a1b2c3d"]
    assert items[0]["spec"]["severity"] == "high"  # labels.priority P2
    assert items[0]["metadata"]["labels"]["precedent.dev/request-uid"] == "0a1b2c3d-4e5f"
    assert registry.get_sample_value("precedent_outcomes_total", {"result": "failed"}) == 2


def test_a_success_creates_no_incident(
    sandbox: SandboxThread,
) -> None:
    async def run() -> None:
        svc, api = outcomes(sandbox, CollectorRegistry())
        try:
            status = answered(svc, "u-1")
            handled = await svc.handle(
                RequestRef("shop", "r", "u-1"),
                with_outcome("succeeded", playbook=None),
                generation=2,
                status=status,
                now=NOW,
            )
            assert handled.incident is None
            assert handled.playbook is None
            assert handled.status["outcome"] == {
                "result": "succeeded",
                "handledAt": "2026-03-02T12:00:00Z",
            }
            assert handled.event.type == "Normal"
            assert OutcomeService.already_handled(handled.status)
            with pytest.raises(InputError, match=r"spec\.outcome"):
                await svc.handle(
                    RequestRef("shop", "r", "u-1"), REQUEST, generation=1, status={}, now=NOW
                )
        finally:
            await api.aclose()

    asyncio.run(run())
    assert httpx.get(f"{sandbox.url}{API_PREFIX}/incidents").json()["items"] == []


@pytest.mark.parametrize(
    "status_of",
    [
        pytest.param(lambda svc: {}, id="never-answered"),
        pytest.param(lambda svc: answered(svc, "u-9", decision="Escalated"), id="escalated"),
        pytest.param(lambda svc: answered(svc, "u-9", decision="Denied"), id="denied"),
        pytest.param(
            lambda svc: {**answered(svc, "u-9"), "mark": "hmac-sha256:forged"}, id="forged-mark"
        ),
        pytest.param(
            lambda svc: {**answered(svc, "u-9"), "observedGeneration": 2}, id="same-generation"
        ),
    ],
)
def test_an_outcome_on_a_request_never_approved_is_ignored(
    sandbox: SandboxThread, status_of: Any
) -> None:
    registry = CollectorRegistry()

    async def run() -> None:
        svc, api = outcomes(sandbox, registry)
        try:
            before = svc.counts("rolling-restart")
            handled = await svc.handle(
                RequestRef("shop", "fake", "u-9"),
                with_outcome("failed"),
                generation=2,
                status=status_of(svc),
                now=NOW,
            )
            assert handled.status["outcome"]["ignored"] == "NotApproved"
            assert handled.incident is None
            assert (handled.event.type, handled.event.reason) == ("Warning", "OutcomeIgnored")
            assert svc.counts("rolling-restart") == before
            assert len(svc.ledger) == 0
            # The event that follows the status write does not count it either.
            svc.observe("u-9", with_outcome("failed"), handled.status)
            assert len(svc.ledger) == 0
        finally:
            await api.aclose()

    asyncio.run(run())
    assert httpx.get(f"{sandbox.url}{API_PREFIX}/incidents").json()["items"] == []
    assert registry.get_sample_value("precedent_outcomes_total", {"result": "failed"}) is None


def test_the_client_logs_in_again_once_after_a_401() -> None:
    tokens: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        tokens.append(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != "Bearer fresh":
            return web.json_response({"message": "Unauthorized"}, status=401)
        return web.json_response({"message": "already exists"}, status=409)

    async def run() -> str:
        app = web.Application()
        app.router.add_post(f"{API_PREFIX}/incidents", answer)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        server = f"http://127.0.0.1:{port}"

        async def login() -> ApiConnection:
            return ApiConnection(server=server, headers={"Authorization": "Bearer fresh"})

        api = KubeApi(
            ApiConnection(server=server, headers={"Authorization": "Bearer stale"}), login=login
        )
        try:
            return await api.create_incident({"metadata": {"name": "x"}})
        finally:
            await api.aclose()
            await runner.cleanup()

    assert asyncio.run(run()) == "exists"
    assert tokens == ["Bearer stale", "Bearer fresh"]


def test_a_refused_write_names_the_field(sandbox: SandboxThread) -> None:
    async def run() -> None:
        api = KubeApi(ApiConnection(server=sandbox.url))
        try:
            body = {
                "apiVersion": "precedent.dev/v1alpha1",
                "kind": "Incident",
                "metadata": {"name": "no-title"},
                "spec": {"id": "X-1"},
            }
            with pytest.raises(InputError, match=r"HTTP 422: .*spec\.title"):
                await api.create_incident(body)
            assert await api.patch_playbook_status("no-such-playbook", {"executions": 1}) is False
        finally:
            await api.aclose()

    asyncio.run(run())
