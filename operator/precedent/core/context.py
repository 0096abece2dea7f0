"""Where a change lands, learned from what admins control rather than from what the requester
wrote (docs/security.md, "What the operator trusts").

The environment of a request is a fact about its target, found in this order of sources and
taking the riskiest environment any of them gives:

1. the label ``precedent.dev/environment`` on the target's namespace (the namespace a
   Kubernetes path in its ``resourceId`` names, or the request's own namespace when the
   target names none and is of a namespaced Kubernetes kind: a Node, a ClusterRole or an
   Azure resource does not live in the namespace its request was written in);
2. the admin's environment mapping, for targets outside Kubernetes: rules matching the
   target's ``resourceId``, ``name``, ``namespace`` or the (verified) ``cluster`` with
   shell-style patterns;
3. when neither says anything: the default environment (``PRECEDENT_DEFAULT_ENVIRONMENT``,
   ``production`` unless set: unknown is treated as the riskiest).

The cluster is the operator's own (``PRECEDENT_CLUSTER_NAME``) when one is configured.

A requester's ``labels.environment`` / ``labels.cluster`` are claims. They may make the answer
stricter, never looser: the assessment scores the claimed and the verified context and keeps
the riskier answer (:func:`claims_differ` says when there is anything to compare).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from precedent.core.normalize import canonical_resource_type
from precedent.core.risk_model import environment_tier

__all__ = [
    "ENVIRONMENT_LABEL",
    "NAMESPACED_KINDS",
    "ContextFacts",
    "EnvironmentRule",
    "VerifiedContext",
    "namespaced",
    "parse_rules",
    "resource_id_scope",
]

ENVIRONMENT_LABEL = "precedent.dev/environment"
"""The Namespace label that says which environment the namespace's objects belong to."""

_RULE_KEYS = ("resourceId", "name", "namespace", "cluster")

NAMESPACED_KINDS = frozenset(
    {
        "deployment",
        "statefulset",
        "daemonset",
        "replicaset",
        "pod",
        "service",
        "ingress",
        "configmap",
        "secret",
        "job",
        "cronjob",
        "horizontalpodautoscaler",
        "poddisruptionbudget",
        "persistentvolumeclaim",
        "networkpolicy",
        "serviceaccount",
        "role",
        "rolebinding",
        "certificate",
        "endpoints",
        "lease",
        "limitrange",
        "resourcequota",
    }
)
"""Kubernetes kinds whose objects live in a namespace (canonical, as
:func:`~precedent.core.normalize.canonical_resource_type` spells them): a target of one of
these that names no namespace is in its request's namespace. Any other kind is not."""


def _plural(kind: str) -> str:
    return kind[:-1] if kind.endswith("s") and not kind.endswith("ss") else kind


def namespaced(kind: str | None) -> bool:
    """Whether ``kind`` is a namespaced Kubernetes kind (``Deployment``, ``svc``, ``Roles``)."""
    if not kind:
        return False
    canonical = canonical_resource_type(kind)
    return canonical in NAMESPACED_KINDS or _plural(canonical) in NAMESPACED_KINDS


@dataclass(frozen=True, slots=True)
class EnvironmentRule:
    """One line of the environment mapping: every pattern given must match."""

    environment: str
    resource_id: str | None = None
    name: str | None = None
    namespace: str | None = None
    cluster: str | None = None
    index: int = 0
    """Its position in the mapping (1-based), for the source it is named by."""

    def matches(
        self, *, resource_id: str | None, name: str, namespace: str | None, cluster: str | None
    ) -> bool:
        """Whether the target matches every pattern of this rule (case-insensitively)."""
        pairs = (
            (self.resource_id, resource_id),
            (self.name, name),
            (self.namespace, namespace),
            (self.cluster, cluster),
        )
        for pattern, value in pairs:
            if pattern is None:
                continue
            if value is None or not fnmatch.fnmatchcase(value.lower(), pattern.lower()):
                return False
        return True

    def describe(self) -> str:
        """``environment mapping rule 2 (resourceId */rg-prod/*)``."""
        given = [
            f"{key} {value}"
            for key, value in zip(
                _RULE_KEYS, (self.resource_id, self.name, self.namespace, self.cluster), strict=True
            )
            if value is not None
        ]
        text = f"environment mapping rule {self.index} ({', '.join(given)})"
        return text if len(text) <= 200 else f"{text[:199]}…"


def parse_rules(document: Any, where: str) -> list[EnvironmentRule]:
    """The mapping's rules from ``{"rules": [{"resourceId": "…", "environment": "…"}, …]}``
    (or the bare list); ValueError names the entry and field that is wrong."""
    items = document.get("rules") if isinstance(document, Mapping) else document
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError(f"{where}: rules: expected a list of rules")
    rules = []
    for number, item in enumerate(items, start=1):
        at = f"{where}: rules[{number - 1}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{at}: expected a mapping")
        unknown = sorted(set(item) - {"environment", *_RULE_KEYS})
        if unknown:
            raise ValueError(f"{at}: unknown field {unknown[0]} (use {', '.join(_RULE_KEYS)})")
        environment = item.get("environment")
        if not isinstance(environment, str) or not environment.strip():
            raise ValueError(f"{at}.environment: a non-empty string is required")
        patterns: dict[str, str | None] = {}
        for key in _RULE_KEYS:
            value = item.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{at}.{key}: a non-empty pattern string is required")
            patterns[key] = value
        if all(v is None for v in patterns.values()):
            raise ValueError(f"{at}: give at least one of {', '.join(_RULE_KEYS)}")
        rules.append(
            EnvironmentRule(
                environment=environment.strip().lower(),
                resource_id=patterns["resourceId"],
                name=patterns["name"],
                namespace=patterns["namespace"],
                cluster=patterns["cluster"],
                index=number,
            )
        )
    return rules


def _environment(labels: Mapping[str, Any] | None) -> str | None:
    value = (labels or {}).get(ENVIRONMENT_LABEL)
    return str(value).strip().lower() or None if value else None


_SCOPES = ("subscriptions", "resourcegroups", "namespaces")


def resource_id_scope(resource_id: str | None, target_namespace: str | None) -> str | None:
    """The namespace a resource ID places its target in (``…/namespaces/NS/…``), checked
    against ``spec.target.namespace``; ValueError when the ID is ambiguous about where the
    target lives, so that no mapping rule or namespace label is matched on a part of it that
    does not say where the target is.

    Refused: a ``.`` or ``..`` segment, and a subscription, resource group or namespace
    named twice (``/resourceGroups/rg-prod/…/resourceGroups/rg-dev-1/…`` would match a dev
    rule for a production resource)."""
    if not resource_id:
        return None
    segments = resource_id.strip("/").split("/")
    if any(part in (".", "..") for part in segments):
        raise ValueError("spec.target.resourceId: '.' and '..' segments are not allowed")
    found: dict[str, str] = {}
    for position, part in enumerate(segments[:-1]):
        scope = part.lower()
        if scope not in _SCOPES:
            continue
        if scope in found:
            raise ValueError(
                f"spec.target.resourceId: names {part} twice; give the resource ID of the target"
            )
        found[scope] = segments[position + 1]
    namespace = found.get("namespaces")
    if (
        namespace is None
        and not found
        and len(segments) == 3
        and "providers" not in (part.lower() for part in segments)
    ):
        namespace = segments[0]  # namespace/kind/name
    if namespace is not None and target_namespace and namespace != target_namespace:
        raise ValueError(
            f"spec.target.resourceId: names namespace {namespace} but spec.target.namespace is "
            f"{target_namespace}; give the resource ID of the target, or leave it out"
        )
    return namespace


@dataclass(frozen=True, slots=True)
class VerifiedContext:
    """The context a request is answered in, and where each part came from."""

    environment: str
    """The environment (lower case)."""
    source: str
    """Where it came from: ``namespace label on shop``, a mapping rule, or ``default``."""
    cluster: str | None
    """The verified cluster, or None when the operator does not know its name."""

    def describe(self) -> str:
        """``production from namespace label on payments`` (``, cluster NAME`` when known):
        what the facts said, stored with the answer so that a change in them is seen."""
        text = f"{self.environment} from {self.source}"
        return (f"{text}, cluster {self.cluster}" if self.cluster else text)[:512]


@dataclass(slots=True)
class ContextFacts:
    """What admins said about where things run: Namespace labels, the environment mapping,
    the default environment and the cluster's name.

    The operator keeps ``namespaces`` current from a watch on Namespaces (a cached view: no
    API call per request); ``precedent score -f`` reads the same facts from manifests.
    ``known`` is False when no facts were given at all (the CLI without ``-f``): claims are
    then used as written and marked unverified.
    """

    namespaces: dict[str, str | None] = field(default_factory=dict)
    """Namespace name → its environment label (None: the namespace exists, unlabelled)."""
    rules: list[EnvironmentRule] = field(default_factory=list)
    default: str = "production"
    cluster: str | None = None
    known: bool = True

    def observe_namespace(self, name: str, labels: Mapping[str, Any] | None) -> bool:
        """A Namespace was listed, added or changed (its labels); whether what it says about
        the environment changed (a new namespace with a label counts)."""
        before = self.namespaces.get(name)
        self.namespaces[name] = _environment(labels)
        return self.namespaces[name] != before

    def forget_namespace(self, name: str) -> bool:
        """A Namespace was deleted; whether it had said something about the environment."""
        return self.namespaces.pop(name, None) is not None

    def replace_namespaces(
        self, listed: Iterable[tuple[str, Mapping[str, Any] | None]]
    ) -> list[str]:
        """Make the namespaces equal a full list (the periodic resync); the names whose
        environment changed (relabelled, or labelled and gone) since the last look."""
        fresh = {name: _environment(labels) for name, labels in listed}
        changed = [
            name
            for name in sorted(set(fresh) | set(self.namespaces))
            if fresh.get(name) != self.namespaces.get(name)
        ]
        self.namespaces = fresh
        return changed

    def verify(
        self,
        *,
        resource_id: str | None,
        name: str,
        target_namespace: str | None,
        request_namespace: str | None,
        kind: str | None = None,
    ) -> VerifiedContext:
        """The environment of a target of ``kind`` (see the module docstring), with its
        source."""
        found: list[tuple[str, str]] = []
        try:
            placed = resource_id_scope(resource_id, target_namespace)
        except ValueError:  # normalise refuses it first; never less risky here
            return VerifiedContext(self.default, "default environment", self.cluster)
        fallback = request_namespace if namespaced(kind) else None
        namespace = target_namespace or placed or fallback or None
        if namespace is not None:
            label = self.namespaces.get(namespace)
            if label:
                found.append((label, f"namespace label on {namespace}"))
        for rule in self.rules:
            if rule.matches(
                resource_id=resource_id, name=name, namespace=namespace, cluster=self.cluster
            ):
                found.append((rule.environment, rule.describe()))
        if not found:
            return VerifiedContext(self.default, "default environment", self.cluster)
        # The riskiest environment any source gives (production is tier 0); the first source
        # giving it is named.
        environment, source = min(found, key=lambda item: environment_tier(item[0]))
        return VerifiedContext(environment, source, self.cluster)
