"""The playbook catalog is asked about the verified environment (or a riskier claim), and the
input hash covers the verified context, so a relabelled namespace gives another answer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from precedent.core.context import ContextFacts
from precedent.services import Assessor
from precedent.settings import Settings
from precedent.wiring import build_service


def spec(**labels: str) -> dict[str, Any]:
    return {
        "action": "restart_service",
        "target": {"kind": "Deployment", "name": "payment-api", "namespace": "payments"},
        "description": "Restart payment-api: its workers are stuck.",
        "labels": labels,
    }


@pytest.fixture
def service() -> Iterator[Assessor]:
    svc = build_service(
        Settings(),
        mode="rules",
        require_history=True,
        facts=ContextFacts(namespaces={"payments": "production", "scratch": "dev"}),
    ).assessor
    yield svc
    asyncio.run(svc.aclose())


@pytest.mark.parametrize(
    "labels",
    [
        {"environment": "dev"},
        {"Environment": "dev"},
        {"ENVIRONMENT": "dev"},
        {"precedent.dev/environment": "dev"},
        {"example.com/environment": "dev", "environment": "dev"},
        {},
    ],
)
def test_the_catalog_is_asked_about_the_verified_environment(
    service: Assessor, labels: dict[str, str]
) -> None:
    query = service.normalise(spec(**labels), "default").query
    assert dict(query.labels)["environment"] == "production"


def test_a_riskier_claim_is_what_the_catalog_is_asked_about(service: Assessor) -> None:
    body = spec(environment="production")
    body["target"]["namespace"] = "scratch"
    assert dict(service.normalise(body, "default").query.labels)["environment"] == "production"
    body["labels"] = {"environment": "staging"}
    assert dict(service.normalise(body, "default").query.labels)["environment"] == "staging"
    body["labels"] = {}
    assert dict(service.normalise(body, "default").query.labels)["environment"] == "dev"


def test_without_facts_the_claim_is_asked_as_written(service: Assessor) -> None:
    query = service.with_facts(None).normalise(spec(Environment="dev"), "default").query
    assert dict(query.labels)["environment"] == "dev"


def test_the_input_hash_covers_the_verified_context(service: Assessor) -> None:
    first = asyncio.run(service.assess(spec(), namespace="default"))
    assert service.facts is not None
    service.facts.observe_namespace("payments", {"precedent.dev/environment": "staging"})
    second = asyncio.run(service.assess(spec(), namespace="default"))
    assert first.context is not None
    assert second.context is not None
    assert first.context.facts == "production from namespace label on payments"
    assert second.context.facts == "staging from namespace label on payments"
    assert first.input_hash != second.input_hash
    assert service.facts_changed(spec(), "default", {"context": {"facts": first.context.facts}})
    assert not service.facts_changed(
        spec(), "default", {"context": {"facts": second.context.facts}}
    )
