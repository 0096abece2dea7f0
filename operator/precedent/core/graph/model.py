"""The dependency graph's vocabulary: node and edge types (seed 003), keys, edges, confidences.

An edge always points from the dependent to what it depends on: ``deploy/checkout →
svc/payment-api`` reads "checkout depends on payment-api". The *upstream* of a node is who
depends on it (follow edges backwards), its *downstream* what it depends on.

Every edge carries the evidence that produced it (a sentence a person can check against the
manifests) and a confidence from :class:`Confidence`, one constant per rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

__all__ = [
    "ANNOTATION_DEPENDS_ON",
    "ANNOTATION_SERVICE_TYPE",
    "ANNOTATION_TIER",
    "KIND_PREFIX",
    "WORKLOAD_KINDS",
    "Confidence",
    "Edge",
    "EdgeType",
    "NodeKey",
    "NodeType",
]

ANNOTATION_DEPENDS_ON = "precedent.dev/depends-on"
"""Explicit dependencies of a workload: ``"svc-a, other-ns/svc-b"`` (Service names)."""

ANNOTATION_TIER = "precedent.dev/tier"
"""``critical`` marks a workload or Service as critical (named in every blast radius)."""

ANNOTATION_SERVICE_TYPE = "precedent.dev/service-type"
"""Overrides the inferred node type: one of :class:`NodeType`'s values."""

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
"""The kinds whose pod templates run code (and so can call Services)."""

KIND_PREFIX = {
    "Deployment": "deploy",
    "StatefulSet": "sts",
    "DaemonSet": "ds",
    "Service": "svc",
    "Ingress": "ingress",
}
"""kubectl's short names, used when a node is printed (``deploy/checkout``)."""


class NodeType(StrEnum):
    """What a node is (seed 003's ServiceType)."""

    COMPUTE = "compute"
    DATABASE = "database"
    CACHE = "cache"
    QUEUE = "queue"
    EXTERNAL = "external"
    GATEWAY = "gateway"
    STORAGE = "storage"
    UNKNOWN = "unknown"


class EdgeType(StrEnum):
    """How the source depends on the target (seed 003's EdgeType)."""

    CALLS = "calls"
    READS_FROM = "reads_from"
    WRITES_TO = "writes_to"
    SUBSCRIBES = "subscribes"
    PUBLISHES = "publishes"
    DEPENDS_ON = "depends_on"


class Confidence:
    """How sure each rule is that an edge exists, 0–1. The one place these numbers live."""

    INGRESS_BACKEND = 1.0
    """An Ingress rule names the Service: the API server routes by it."""
    SERVICE_SELECTOR = 1.0
    """A Service's selector matches the pod template's labels: that is how traffic flows."""
    ANNOTATION = 1.0
    """``precedent.dev/depends-on``: a person said so."""
    FQDN = 0.95
    """``svc.ns.svc.cluster.local`` or ``svc.ns.svc``: nothing else has that shape."""
    NAMESPACED = 0.9
    """``svc.ns`` as a host (URL, host:port or the whole value) and that Service exists."""
    HOST = 0.85
    """A bare ``svc`` as the host of a URL or of host:port (``http://svc:8080``, ``svc:5432``)."""
    EXACT_HOST_KEY = 0.8
    """The whole value is ``svc`` and its name says it holds a host (``REDIS_HOST=cache``)."""
    EXACT = 0.6
    """The whole value is ``svc`` under any other name (``MODE=cache`` would also match)."""
    NETWORK_POLICY_BONUS = 0.1
    """Added (up to 1.0) when a NetworkPolicy allows the pair. A policy alone makes no edge:
    allowing traffic is not using it, and broad policies would connect everything."""
    TOPOLOGY_HINT_CAP = 0.7
    """A fleet-memory topology hint keeps its own confidence, capped here: it was observed by
    some past investigation, maybe on another cluster, and is not in the manifests."""


class NodeKey(NamedTuple):
    """A node's identity: kind, namespace, name (a tuple: cheap to hash and to sort)."""

    kind: str
    namespace: str
    name: str

    def short(self, relative_to: str | None = None) -> str:
        """``deploy/checkout``, or ``payments/deploy/ledger`` outside ``relative_to``."""
        prefix = KIND_PREFIX.get(self.kind, self.kind.lower())
        if relative_to is not None and self.namespace != relative_to:
            return f"{self.namespace}/{prefix}/{self.name}"
        return f"{prefix}/{self.name}"


@dataclass(frozen=True, slots=True)
class Edge:
    """One dependency: ``source`` depends on ``target``, with why and how sure."""

    source: NodeKey
    """The dependent."""
    target: NodeKey
    """What it depends on."""
    type: EdgeType
    """How (seed 003)."""
    confidence: float
    """0–1, from :class:`Confidence` (the strongest evidence, plus corroboration)."""
    evidence: tuple[str, ...]
    """Human sentences, strongest first, e.g. ``env PAYMENT_URL=http://payment-api:8080 in
    Deployment checkout``."""
