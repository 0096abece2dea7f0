"""Where the API serves each kind a request's target may be (read and changed by name)."""

from __future__ import annotations

__all__ = ["KIND_PATHS"]

KIND_PATHS: dict[str, tuple[str, str, bool]] = {
    "deployment": ("/apis/apps/v1", "deployments", True),
    "statefulset": ("/apis/apps/v1", "statefulsets", True),
    "daemonset": ("/apis/apps/v1", "daemonsets", True),
    "replicaset": ("/apis/apps/v1", "replicasets", True),
    "job": ("/apis/batch/v1", "jobs", True),
    "cronjob": ("/apis/batch/v1", "cronjobs", True),
    "persistentvolumeclaim": ("/api/v1", "persistentvolumeclaims", True),
    "service": ("/api/v1", "services", True),
    "configmap": ("/api/v1", "configmaps", True),
    "horizontalpodautoscaler": ("/apis/autoscaling/v2", "horizontalpodautoscalers", True),
    "poddisruptionbudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "rolebinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "namespace": ("/api/v1", "namespaces", False),
    "node": ("/api/v1", "nodes", False),
    "persistentvolume": ("/api/v1", "persistentvolumes", False),
    "clusterrolebinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
}
"""Canonical kind → (API prefix, plural, namespaced): the kinds a target is read for."""
