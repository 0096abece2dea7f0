"""Turn a RemediationRequest spec into a ProposedAction the scorers compare against incidents.

Resource IDs resolve to a type and a short name (seed 000: "Full Azure path resolves to short
name"): ARM paths such as
``/subscriptions/…/providers/Microsoft.ContainerService/managedClusters/aks-prod`` and the
Kubernetes forms ``namespace/kind/name`` and ``/apis/group/v1/namespaces/ns/kind/name``.
Resource types are compared case-insensitively after folding common aliases (``AKS`` →
``managedclusters``, ``deploy`` → ``deployment``, plural → singular for Kubernetes kinds).

When a request gives both a resource ID and ``kind``/``name`` they must name the same resource
(:func:`check_target_agrees`): the same canonical type and the same name, case-insensitively; an
ID that is a bare name must match the name. Otherwise the history would be searched for one
resource while the people reading the request see another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from precedent.models import RemediationRequestSpec

__all__ = [
    "ACTION_KEYWORDS",
    "ProposedAction",
    "TargetMismatch",
    "canonical_resource_type",
    "check_target_agrees",
    "normalize_request",
    "resolve_resource_id",
]

# Keywords that count as "tag relevance" for an action (seed 000: "Do action-type keywords
# appear in incident tags?"). Unknown actions have none, so the tag part is 0 for them.
ACTION_KEYWORDS: dict[str, frozenset[str]] = {
    "restart_service": frozenset({"restart", "reboot", "restart-loop"}),
    "restart_pod": frozenset({"restart", "pod-restart"}),
    "scale_down": frozenset({"scale-down", "scaling", "downscale"}),
    "scale_up": frozenset({"scale-up", "scaling", "upscale"}),
    "update_config": frozenset({"config", "configuration", "config-change"}),
    "update_configmap": frozenset({"config", "configmap", "config-change"}),
    "update_secret": frozenset({"secret", "secrets", "credentials"}),
    "modify_nsg": frozenset({"nsg", "firewall", "security-rule"}),
    "apply_network_policy": frozenset({"network-policy", "networkpolicy", "firewall"}),
    "rollback": frozenset({"rollback", "bad-rollout"}),
    "rollout": frozenset({"rollout", "deployment", "bad-rollout"}),
    "patch_deployment": frozenset({"rollout", "deployment", "patch"}),
    "delete_resource": frozenset({"delete", "deletion", "data-loss"}),
    "delete_pod": frozenset({"delete", "pod-deletion", "eviction"}),
    "drain_node": frozenset({"drain", "eviction", "pdb"}),
    "cordon_node": frozenset({"cordon", "drain"}),
    "upgrade_node_pool": frozenset({"upgrade", "node-upgrade"}),
    "rotate_certificate": frozenset({"certificate", "tls", "cert-expiry"}),
    "update_resource_limits": frozenset({"oom", "resources", "limits"}),
    "update_hpa": frozenset({"hpa", "autoscaling", "scaling"}),
    "update_dns": frozenset({"dns", "coredns"}),
    "failover_database": frozenset({"failover", "database", "replication"}),
    "update_ingress": frozenset({"ingress", "routing"}),
    "modify_iam": frozenset({"iam", "rbac", "permissions"}),
}

# Aliases folded before comparing resource types. Keys and values are lower case.
_TYPE_ALIASES: dict[str, str] = {
    "aks": "managedclusters",
    "managedcluster": "managedclusters",
    "vm": "virtualmachines",
    "virtualmachine": "virtualmachines",
    "nsg": "networksecuritygroups",
    "networksecuritygroup": "networksecuritygroups",
    "sqlserver": "servers",
    "deploy": "deployment",
    "deployments": "deployment",
    "sts": "statefulset",
    "statefulsets": "statefulset",
    "ds": "daemonset",
    "daemonsets": "daemonset",
    "no": "node",
    "nodes": "node",
    "svc": "service",
    "services": "service",
    "ing": "ingress",
    "ingresses": "ingress",
    "cm": "configmap",
    "configmaps": "configmap",
    "secrets": "secret",
    "hpa": "horizontalpodautoscaler",
    "horizontalpodautoscalers": "horizontalpodautoscaler",
    "pdb": "poddisruptionbudget",
    "poddisruptionbudgets": "poddisruptionbudget",
    "pvc": "persistentvolumeclaim",
    "persistentvolumeclaims": "persistentvolumeclaim",
    "cronjobs": "cronjob",
    "jobs": "job",
    "pods": "pod",
    "po": "pod",
    "netpol": "networkpolicy",
    "networkpolicies": "networkpolicy",
    "certificates": "certificate",
    "cert": "certificate",
    "ns": "namespace",
    "namespaces": "namespace",
}

_WORD = re.compile(r"[a-z0-9]+")


def canonical_resource_type(kind: str) -> str:
    """Lower-case a resource type and fold its aliases (``Deployments`` → ``deployment``)."""
    key = kind.strip().lower()
    return _TYPE_ALIASES.get(key, key)


def resolve_resource_id(resource_id: str) -> tuple[str | None, str]:
    """Resolve a full resource path to ``(type, short name)``.

    ARM: ``/subscriptions/s/resourceGroups/g/providers/Microsoft.X/<type>/<name>[/<child>/<n>]``
    gives the last type/name pair. Kubernetes: ``/api[s]/…/namespaces/ns/<kind>/<name>``,
    ``namespace/kind/name`` or ``kind/name``. A bare name gives ``(None, name)``.
    """
    parts = [p for p in resource_id.strip().split("/") if p]
    if not parts:
        raise ValueError("resourceId is empty")
    lowered = [p.lower() for p in parts]
    if "providers" in lowered:
        tail = parts[lowered.index("providers") + 1 :]
        # tail = [Namespace.Provider, type, name, (childType, childName)...]
        pairs = tail[1:]
        pairs = pairs[: len(pairs) // 2 * 2]  # a trailing type with no name is ignored
        if pairs:
            return pairs[-2], pairs[-1]
        return None, parts[-1]
    if len(parts) >= 2:
        return parts[-2], parts[-1]
    return None, parts[-1]


class TargetMismatch(ValueError):
    """``spec.target.resourceId`` names another resource than ``kind``/``name``."""


def check_target_agrees(kind: str, name: str, resource_id: str) -> tuple[str, str]:
    """The ``(type, name)`` the resource ID names, if it agrees with ``kind`` and ``name``.

    Types are compared after :func:`canonical_resource_type` (so the ARM type
    ``managedClusters`` agrees with the kind ``AKS``, ``deployments`` with ``Deployment``),
    names case-insensitively. Raises :class:`TargetMismatch` naming the fields that disagree.
    """
    id_type, id_name = resolve_resource_id(resource_id)
    problems = []
    if id_type is not None and canonical_resource_type(id_type) != canonical_resource_type(kind):
        problems.append(f"spec.target.kind is {kind}")
    if id_name.strip().lower() != name.strip().lower():
        problems.append(f"spec.target.name is {name}")
    if problems:
        named = f"{id_type}/{id_name}" if id_type is not None else id_name
        raise TargetMismatch(
            f"spec.target.resourceId: names {named} but {' and '.join(problems)}; "
            "give the resource ID of the target, or leave it out"
        )
    return (id_type if id_type is not None else kind), id_name


@dataclass(frozen=True, slots=True)
class ProposedAction:
    """A request reduced to what the scorers compare."""

    action: str
    resource_type: str
    resource_name: str
    keywords: frozenset[str] = field(default_factory=frozenset)
    text: str = ""
    domain: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    environment: str | None = None
    namespace: str | None = None
    cluster: str | None = None
    synonyms: frozenset[str] = field(default_factory=frozenset)
    """The other actions of its effect class, compared with the history as the same action
    (the registry's, core.effects); empty: the action alone."""

    @property
    def names(self) -> frozenset[str]:
        """Every action name the history is searched under for this action."""
        return self.synonyms | {self.action}

    def reading(self, action: str, synonyms: frozenset[str]) -> ProposedAction:
        """The same request read as ``action`` (with its class's ``synonyms``): the tag
        keywords are those of every name of the class."""
        names = synonyms | {action}
        keywords = frozenset().union(*(ACTION_KEYWORDS.get(a, frozenset()) for a in names))
        return replace(self, action=action, synonyms=frozenset(synonyms), keywords=keywords)

    @property
    def display(self) -> str:
        """``action on type/name`` for messages."""
        return f"{self.action} on {self.resource_type}/{self.resource_name}"


def normalize_request(spec: RemediationRequestSpec) -> ProposedAction:
    """Reduce a validated spec to a ProposedAction.

    A resource ID must agree with kind/name (:class:`TargetMismatch` otherwise); its type and
    name are then the ones compared, since they are the most specific spelling.
    """
    kind, name = spec.target.kind, spec.target.name
    if spec.target.resource_id:
        kind, name = check_target_agrees(kind, name, spec.target.resource_id)
    words = " ".join(
        [spec.action.replace("_", " "), kind, name, spec.description]
        + ([spec.signal.name] if spec.signal else [])
    )
    return ProposedAction(
        action=spec.action,
        resource_type=canonical_resource_type(kind),
        resource_name=name.strip().lower(),
        keywords=ACTION_KEYWORDS.get(spec.action, frozenset()),
        text=" ".join(_WORD.findall(words.lower())),
        domain=spec.domain,
        labels=tuple(sorted(spec.labels.items())),
        # The risk model's context: where the change lands (labels carry what the target lacks).
        environment=_context(spec.labels.get("environment")),
        namespace=_context(spec.target.namespace),
        cluster=_context(spec.labels.get("cluster")),
    )


def _context(value: str | None) -> str | None:
    """A context value compared case-insensitively; blank means unknown."""
    if value is None or not value.strip():
        return None
    return value.strip().lower()
