"""Requests written to steer the verified context, answered by the operator's own service
(the bundled history, facts as the operator holds them): each is answered in the riskier
context or refused naming the field, never crashed on."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from precedent.core.context import ContextFacts, EnvironmentRule
from precedent.errors import InputError
from precedent.models import Assessment
from precedent.services import Assessor
from precedent.settings import Settings
from precedent.wiring import build_service

ARM = "/subscriptions/0/resourceGroups/{rg}/providers/Microsoft.ContainerService/managedClusters/aks/deployments/payment-api"  # noqa: E501


@pytest.fixture
def service() -> Iterator[Assessor]:
    svc = build_service(
        Settings(),
        mode="rules",
        require_history=True,
        facts=ContextFacts(
            namespaces={"payments": "production", "scratch": "dev"},
            cluster="aks-prod-weu",
            rules=[
                EnvironmentRule(
                    "dev", resource_id="/subscriptions/*/resourceGroups/rg-dev-*/*", index=1
                )
            ],
        ),
    ).assessor
    yield svc
    asyncio.run(svc.aclose())


def spec(namespace: str | None = "payments", **labels: str) -> dict[str, Any]:
    target: dict[str, Any] = {"kind": "Deployment", "name": "payment-api"}
    if namespace is not None:
        target["namespace"] = namespace
    return {
        "action": "restart_service",
        "target": target,
        "description": "Restart payment-api: its workers are stuck.",
        "labels": labels,
    }


def assess(service: Assessor, body: dict[str, Any], ns: str = "default") -> Assessment:
    return asyncio.run(service.assess(body, namespace=ns))


def test_claims_in_other_spellings_change_nothing(service: Assessor) -> None:
    honest = assess(service, spec())
    for labels in (
        {"Environment": "dev"},
        {"env": "dev"},
        {"precedent.dev/environment": "dev"},
        {"environment": "d\u0435v"},  # a Cyrillic e: an unknown environment is production
        {"environment": "DEV ", "Environment": "dev"},
    ):
        answer = assess(service, spec(**labels))
        assert answer.context is not None
        assert answer.risk.score >= honest.risk.score, labels
        assert answer.risk.decision == honest.risk.decision, labels


def test_a_target_in_another_namespace_than_the_request_is_judged_where_it_lands(
    service: Assessor,
) -> None:
    # The request lives in a dev namespace its author may write to; the target does not.
    answer = assess(service, spec("payments", environment="dev"), ns="scratch")
    assert answer.context is not None
    assert answer.context.environment == "production"


def test_a_resource_id_cannot_place_the_target_elsewhere(service: Assessor) -> None:
    # A dev resource group for a target in a production namespace: the riskier one wins.
    body = spec("payments")
    body["target"]["resourceId"] = ARM.format(rg="rg-dev-1")
    answer = assess(service, body)
    assert answer.context is not None
    assert answer.context.environment == "production"
    # A second resource group tucked into the path to match the dev rule: refused.
    body["target"]["resourceId"] = ARM.format(rg="rg-prod/resourceGroups/rg-dev-1")
    with pytest.raises(InputError, match=r"spec\.target\.resourceId: names resourceGroups twice"):
        service.normalise(body, "default")
    body["target"]["resourceId"] = ARM.format(rg="rg-dev-1/../rg-prod")
    with pytest.raises(InputError, match=r"spec\.target\.resourceId: '\.' and '\.\.'"):
        service.normalise(body, "default")


def test_a_kubernetes_path_names_the_namespace_the_target_is_in(
    service: Assessor,
) -> None:
    path = "/apis/apps/v1/namespaces/payments/deployments/payment-api"
    body = spec("scratch", environment="dev")
    body["target"]["resourceId"] = path
    with pytest.raises(InputError, match=r"names namespace payments but spec\.target\.namespace"):
        service.normalise(body, "default")
    body = spec(None, environment="dev")
    body["target"]["resourceId"] = path
    answer = assess(service, body, ns="scratch")
    assert answer.context is not None
    assert answer.context.environment == "production"
    assert answer.context.source == "namespace label on payments"


def test_very_long_values_are_refused_or_kept_within_the_status_limits(
    service: Assessor,
) -> None:
    with pytest.raises(InputError, match=r"spec\.labels\.environment: at most 63 characters"):
        service.normalise(spec(environment="dev" + "d" * 250), "default")
    assert service.facts is not None
    service.facts.rules.append(
        EnvironmentRule(
            "production", resource_id="/subscriptions/*/resourceGroups/" + "x" * 240 + "/*", index=2
        )
    )
    body = spec("payments", environment="d" * 63, cluster="c" * 253)
    body["target"]["resourceId"] = ARM.format(rg="x" * 240)
    answer = assess(service, body)
    assert answer.context is not None
    assert len(answer.context.claim or "") <= 512
    assert len(answer.context.source) <= 253
    assert len(answer.context.facts or "") <= 512
    Assessment.model_validate(answer.model_dump())  # every field within its limits


def test_a_target_outside_any_namespace_is_not_placed_by_the_requests_namespace(
    service: Assessor,
) -> None:
    # A requester who may write requests in a dev namespace asks for a production node, an
    # Azure NSG and a ClusterRole: none of them lives in that namespace.
    for target in (
        {"kind": "Node", "name": "aks-userpool-1"},
        {"kind": "networkSecurityGroups", "name": "nsg-east"},
        {"kind": "ClusterRole", "name": "admin"},
    ):
        body = {"action": "restart_service", "target": target, "labels": {"environment": "dev"}}
        answer = assess(service, body, ns="scratch")
        assert answer.context is not None
        assert answer.context.environment == "production", target
    # A namespaced kind that names no namespace is in its request's.
    answer = assess(service, spec(None, environment="dev"), ns="scratch")
    assert answer.context is not None
    assert answer.context.environment == "dev"
    # The short Kubernetes path names the namespace too.
    body = spec("scratch")
    body["target"]["resourceId"] = "payments/deployments/payment-api"
    with pytest.raises(InputError, match="names namespace payments"):
        service.normalise(body, "default")
