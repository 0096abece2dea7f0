"""The cluster's dependency graph and blast-radius queries (seed 003, issue 15).

Pure: objects come in as mappings (manifests or API objects), answers go out as dataclasses.
``DependencyGraph.apply`` / ``delete`` keep it current one object at a time;
``blast_radius`` answers who depends on a target and what it depends on.
"""

from precedent.core.graph.blast import (
    DEFAULT_LIMIT,
    KIND_ALIASES,
    BlastRadius,
    Reached,
    blast_radius,
    resolve_target,
)
from precedent.core.graph.graph import KINDS, DependencyGraph, NodeInfo, TopologyHint
from precedent.core.graph.model import (
    ANNOTATION_DEPENDS_ON,
    ANNOTATION_SERVICE_TYPE,
    ANNOTATION_TIER,
    WORKLOAD_KINDS,
    Confidence,
    Edge,
    EdgeType,
    NodeKey,
    NodeType,
)
from precedent.core.graph.objects import GraphInputError

__all__ = [
    "ANNOTATION_DEPENDS_ON",
    "ANNOTATION_SERVICE_TYPE",
    "ANNOTATION_TIER",
    "DEFAULT_LIMIT",
    "KINDS",
    "KIND_ALIASES",
    "WORKLOAD_KINDS",
    "BlastRadius",
    "Confidence",
    "DependencyGraph",
    "Edge",
    "EdgeType",
    "GraphInputError",
    "NodeInfo",
    "NodeKey",
    "NodeType",
    "Reached",
    "TopologyHint",
    "blast_radius",
    "resolve_target",
]
