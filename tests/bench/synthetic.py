"""Synthetic incident titles for the benchmarks: realistic words, many combinations."""

from __future__ import annotations

import random

from precedent.models import Incident

_SERVICES = [
    "payment-api",
    "checkout",
    "cart",
    "auth",
    "ledger",
    "inventory",
    "search-indexer",
    "order-processing",
    "notification",
    "billing",
    "catalog",
    "recommendation",
    "gateway",
    "session-cache",
    "reporting",
    "export-job",
    "fluent-bit",
    "coredns",
    "ingress-nginx",
    "cert-manager",
]
_ACTIONS = [
    "restart",
    "scale-down",
    "scale-up",
    "rollout",
    "rollback",
    "config-change",
    "secret-rotation",
    "node-drain",
    "node-upgrade",
    "certificate-renewal",
    "network-policy",
    "firewall-rule",
    "resize",
    "failover",
]
_SYMPTOMS = [
    "dropped in-flight requests",
    "caused a cascading outage",
    "exhausted the connection pool",
    "left pods in CrashLoopBackOff",
    "doubled p99 latency",
    "lost buffered messages",
    "blocked health probes",
    "broke DNS resolution",
    "evicted critical pods",
    "expired TLS certificates",
    "invalidated user sessions",
    "filled the disk",
    "triggered OOMKilled restarts",
    "stalled the deployment",
    "promoted a lagging replica",
]
_CONTEXT = [
    "during the evening peak",
    "after a config push",
    "in the production cluster",
    "while the autoscaler was capped",
    "with no PodDisruptionBudget",
    "on a Friday release",
    "during a flash sale",
    "in the east region",
    "after the node pool upgrade",
    "on the primary database",
]
_SEVERITIES = ("critical", "high", "medium", "low")
_KINDS = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "managedClusters",
    "Node",
    "Ingress",
    "ConfigMap",
    "Secret",
    "servers",
    "virtualMachines",
    "networkSecurityGroups",
    "Certificate",
    "HorizontalPodAutoscaler",
    "NetworkPolicy",
]


def titles(n: int, seed: int = 0) -> list[str]:
    """``n`` incident-like one-liners."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(_ACTIONS)} of {rng.choice(_SERVICES)} {rng.choice(_SYMPTOMS)} "
        f"{rng.choice(_CONTEXT)} #{i}"
        for i in range(n)
    ]


def incidents(n: int, seed: int = 0) -> list[Incident]:
    """``n`` incidents with titles from :func:`titles` and varied metadata."""
    rng = random.Random(seed)
    out = []
    for i, title in enumerate(titles(n, seed)):
        action = rng.choice(_ACTIONS).replace("-", "_")
        out.append(
            Incident(
                id=f"SYN-{i:07d}",
                title=title,
                action=action,
                resource={"type": rng.choice(_KINDS), "name": f"{rng.choice(_SERVICES)}-{i % 97}"},  # type: ignore[arg-type]
                severity=rng.choice(_SEVERITIES),  # type: ignore[arg-type]
                tags=[action.replace("_", "-")],
                resolution_hours=rng.uniform(0.2, 30),
                domain=rng.choice(("compute", "network", "data")),
            )
        )
    return out
