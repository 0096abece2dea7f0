"""Objects for the dependency graph listed from a live cluster (``precedent graph --live``).

The cluster is read with the ``kubernetes`` client and the user's kubeconfig: list calls only,
on the kinds in :data:`precedent.core.graph.KINDS` (get/list/watch is all the RBAC needs). The
client comes with the ``kubectl`` extra; the operator does not need it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from precedent.core.graph import DependencyGraph, GraphInputError
from precedent.errors import DependencyError, InputError

__all__ = ["ClusterRead", "graph_from_cluster"]


@dataclass(slots=True)
class ClusterRead:
    """A graph listed from a cluster, and the kinds the server did not serve."""

    graph: DependencyGraph
    """Every object listed."""
    missing: list[str] = field(default_factory=list)
    """Kinds the API server answered 404 for (an old server, or a test server)."""


def _lists(api: client.ApiClient) -> list[tuple[str, Callable[..., Any]]]:
    apps = client.AppsV1Api(api)
    core = client.CoreV1Api(api)
    net = client.NetworkingV1Api(api)
    return [
        ("Deployment", apps.list_deployment_for_all_namespaces),
        ("StatefulSet", apps.list_stateful_set_for_all_namespaces),
        ("DaemonSet", apps.list_daemon_set_for_all_namespaces),
        ("Service", core.list_service_for_all_namespaces),
        ("ConfigMap", core.list_config_map_for_all_namespaces),
        ("Ingress", net.list_ingress_for_all_namespaces),
        ("NetworkPolicy", net.list_network_policy_for_all_namespaces),
        (
            "HorizontalPodAutoscaler",
            client.AutoscalingV2Api(api).list_horizontal_pod_autoscaler_for_all_namespaces,
        ),
        (
            "PodDisruptionBudget",
            client.PolicyV1Api(api).list_pod_disruption_budget_for_all_namespaces,
        ),
    ]


def graph_from_cluster(kubeconfig: str | None, context: str | None) -> ClusterRead:
    """List every kind the graph reads, in all namespaces, with the kubeconfig's credentials.

    Services are applied before workloads only for tidiness: the graph links in any order.
    """
    try:
        config.load_kube_config(config_file=kubeconfig, context=context)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError) as exc:
        raise InputError(f"cannot load the kubeconfig: {exc}") from None
    read = ClusterRead(DependencyGraph())
    with client.ApiClient() as api:
        for kind, list_call in _lists(api):
            try:
                response = list_call(_preload_content=False, _request_timeout=30)
                body = json.loads(response.data)
            except ApiException as exc:
                if exc.status == 404:
                    read.missing.append(kind)
                    continue
                raise DependencyError(f"listing {kind}s: HTTP {exc.status} {exc.reason}") from None
            except (HTTPError, OSError, ValueError) as exc:
                raise DependencyError(f"listing {kind}s: {exc}") from None
            for item in body.get("items") or []:
                item.setdefault("kind", kind)
                try:
                    read.graph.apply(item)
                except GraphInputError as exc:
                    meta = item.get("metadata") or {}
                    where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
                    raise InputError(f"{kind} {where}: {exc}") from None
    return read
