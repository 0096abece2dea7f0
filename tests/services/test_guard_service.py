"""The guard's use case with a cluster double: covered once, a lost race refused, break-glass
and warn admitted and recorded, the rest refused with how to ask (services.guard)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from precedent.core.guard import GuardedChange, change_of
from precedent.errors import DependencyError
from precedent.models import (
    Assessment,
    Band,
    Decision,
    EngineInfo,
    RequestChange,
    RiskAssessment,
)
from precedent.services.guard import Guard


class FakeCluster:
    def __init__(
        self, listed: list[dict[str, Any]] | None = None, conflict: str | None = None
    ) -> None:
        self.listed = listed or []
        self.conflict = conflict  # the resourceVersion that is out of date
        self.used: list[tuple[str, str, str]] = []
        self.records: list[tuple[Mapping[str, Any], str]] = []

    async def requests_in(self, namespace: str) -> list[dict[str, Any]]:
        return self.listed

    async def mark_used(
        self, namespace: str, name: str, resource_version: str, used: Mapping[str, Any]
    ) -> None:
        if resource_version == self.conflict:
            raise DependencyError("HTTP 409: the object has been modified")
        self.used.append((namespace, name, resource_version))

    async def record(self, change: GuardedChange, body: Mapping[str, Any], event: str) -> None:
        self.records.append((body, event))


async def would_be(spec: Mapping[str, Any], namespace: str) -> Assessment:
    return Assessment(
        risk=RiskAssessment(
            score=89.4,
            band=Band.HIGH,
            decision=Decision.DENIED,
            reasoning="r",
            most_relevant_incident="INC-2024-3671",
        ),
        engine=EngineInfo(version="t", history_size=1, similarity_mode="rules"),
        input_hash="sha256:x",
    )


def change() -> GuardedChange:
    found = change_of(
        "deployments",
        "scale",
        "UPDATE",
        "shop",
        "checkout",
        {"metadata": {"uid": "u1"}, "spec": {"replicas": 10}},
        {"metadata": {"uid": "u1"}, "spec": {"replicas": 8}},
    )
    assert found is not None
    return found


def approved() -> dict[str, Any]:
    return {
        "metadata": {"name": "to-8", "namespace": "shop", "resourceVersion": "9"},
        "spec": {
            "target": {"kind": "Deployment", "name": "checkout", "namespace": "shop"},
            "change": {"replicas": 8},
        },
        "status": {
            "change": {
                "hash": RequestChange(replicas=8).digest(),
                "observed": {"exists": True, "uid": "u1", "replicas": 10},
            },
            "conditions": [{"type": "Approved", "status": "True"}],
        },
    }


def guard(cluster: FakeCluster, *, signed: bool = True) -> Guard:
    return Guard(
        cluster=cluster,
        answered=lambda body: signed,
        would_be=would_be,
        break_glass_group="oncall",
    )


OLD = {"metadata": {"uid": "u1"}, "spec": {"replicas": 10}}


def review(g: Guard, **kwargs: Any) -> Any:
    args: dict[str, Any] = {
        "mode": "enforce",
        "user": "erin",
        "groups": ["dev"],
        "old": OLD,
        "dry_run": False,
        "known": [],
    }
    args.update(kwargs)
    return asyncio.run(g.review(change(), **args))


def test_an_approved_request_admits_its_change_and_records_the_use() -> None:
    cluster = FakeCluster()
    answer = review(guard(cluster), known=[approved()])
    assert (answer.outcome, answer.allowed, answer.request) == ("covered", True, "shop/to-8")
    assert cluster.used == [("shop", "to-8", "9")]


def test_a_dry_run_records_nothing() -> None:
    cluster = FakeCluster()
    assert review(guard(cluster), known=[approved()], dry_run=True).allowed
    assert cluster.used == []


def test_a_miss_in_memory_reads_the_namespace_once() -> None:
    cluster = FakeCluster(listed=[approved()])
    assert review(guard(cluster)).outcome == "covered"


def test_an_unsigned_status_approves_nothing() -> None:
    answer = review(guard(FakeCluster(), signed=False), known=[approved()])
    assert answer.outcome == "refused"


def test_two_replicas_racing_for_one_approval_admit_once() -> None:
    # The other replica recorded the use first: the live request says it already ran.
    used = approved()
    used["metadata"]["resourceVersion"] = "10"
    used["status"]["guard"] = {"admittedAt": "2026-11-28T00:00:00Z", "user": "other"}
    answer = review(guard(FakeCluster(listed=[used], conflict="9")), known=[approved()])
    assert not answer.allowed
    assert "kubectl create" in answer.message  # how to ask for a new one


def test_a_stale_memory_is_read_again_before_refusing() -> None:
    fresh = approved()
    fresh["metadata"]["resourceVersion"] = "10"  # e.g. its answer was written again
    cluster = FakeCluster(listed=[fresh], conflict="9")
    answer = review(guard(cluster), known=[approved()])
    assert (answer.outcome, answer.allowed) == ("covered", True)
    assert cluster.used == [("shop", "to-8", "10")]


def test_the_refusal_says_how_to_ask_and_what_the_answer_would_be() -> None:
    answer = review(guard(FakeCluster()))
    assert not answer.allowed
    assert "would be Denied (risk 89.4 high, INC-2024-3671)" in answer.message
    assert "kubectl create -f -" in answer.message
    assert "change: {replicas: 8}" in answer.message


@pytest.mark.parametrize(
    ("kwargs", "outcome"), [({"groups": ["oncall"]}, "break-glass"), ({"mode": "warn"}, "warned")]
)
def test_break_glass_and_warn_are_admitted_and_recorded(
    kwargs: dict[str, Any], outcome: str
) -> None:
    cluster = FakeCluster()
    g = guard(cluster)

    async def run() -> Any:
        args: dict[str, Any] = {
            "mode": "enforce",
            "user": "alma",
            "groups": [],
            "old": OLD,
            "dry_run": False,
            "known": [],
        }
        args.update(kwargs)
        found = await g.review(change(), **args)
        await asyncio.sleep(0)  # the record is written in the background
        await asyncio.sleep(0)
        return found

    answer = asyncio.run(run())
    assert (answer.outcome, answer.allowed) == (outcome, True)
    assert answer.warnings
    ((body, event),) = cluster.records
    assert body["metadata"]["labels"] == {
        "precedent.dev/guard-record": outcome.replace("warned", "warn")
    }
    assert "change" not in body["spec"]  # a record: nothing to run
    assert "alma" in event
