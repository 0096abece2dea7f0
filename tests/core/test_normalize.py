"""Resource-ID → short-name lookup (seed 000) and request normalisation."""

from __future__ import annotations

import pytest

from precedent.core.normalize import canonical_resource_type, normalize_request, resolve_resource_id
from precedent.models import RemediationRequestSpec

ARM_AKS = (
    "/subscriptions/0f1e2d3c-4b5a-6978-8091-a2b3c4d5e6f7/resourceGroups/rg-prod/providers/"
    "Microsoft.ContainerService/managedClusters/aks-prod"
)


@pytest.mark.parametrize(
    ("resource_id", "expected"),
    [
        (ARM_AKS, ("managedClusters", "aks-prod")),
        (
            "/subscriptions/s/resourceGroups/g/providers/Microsoft.Sql/servers/sql-prod/databases/db1",
            ("databases", "db1"),
        ),
        (
            "/subscriptions/s/resourceGroups/g/providers/Microsoft.Sql/servers/sql-prod/",
            ("servers", "sql-prod"),
        ),
        ("payments/deployment/payment-api", ("deployment", "payment-api")),
        (
            "/apis/apps/v1/namespaces/payments/deployments/payment-api",
            ("deployments", "payment-api"),
        ),
        ("payment-api", (None, "payment-api")),
    ],
)
def test_resource_id_resolves_to_type_and_short_name(
    resource_id: str, expected: tuple[str | None, str]
) -> None:
    assert resolve_resource_id(resource_id) == expected


def test_empty_resource_id_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        resolve_resource_id("///")


def test_full_azure_path_resolves_to_short_name_in_the_request() -> None:
    spec = RemediationRequestSpec.model_validate(
        {
            "action": "SCALE_DOWN",
            "target": {"kind": "AKS", "name": "AKS-Prod", "resourceId": ARM_AKS},
        }
    )
    action = normalize_request(spec)
    assert action.action == "scale_down"
    assert action.resource_type == "managedclusters"
    assert action.resource_name == "aks-prod"
    assert "scale-down" in action.keywords


@pytest.mark.parametrize(
    ("kind", "canonical"),
    [
        ("Deployment", "deployment"),
        ("deploy", "deployment"),
        ("Nodes", "node"),
        ("VM", "virtualmachines"),
    ],
)
def test_type_aliases(kind: str, canonical: str) -> None:
    assert canonical_resource_type(kind) == canonical
