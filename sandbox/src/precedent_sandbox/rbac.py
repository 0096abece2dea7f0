"""RBAC authorization: Roles, ClusterRoles and their bindings, evaluated as the RBAC
authorizer of kube-apiserver does (``--authorization-mode RBAC``).

A request is described by :class:`Attributes` (verb, API group, resource, subresource,
namespace, name; or a non-resource path). It is allowed when the user is in
``system:masters`` (the bootstrap superuser group, checked before RBAC as the real server
does), or when a rule of a role bound to the user, one of its groups or its ServiceAccount
allows it: ClusterRoleBindings everywhere, RoleBindings in their own namespace. Nothing is
ever denied explicitly; no rule means no.

Also here: the ClusterRole aggregation controller (``aggregationRule`` label selectors fill
``rules``), the escalation checks on writes of roles and bindings, the bootstrap policy
(``cluster-admin``, ``system:discovery``, ``system:basic-user``, ``system:public-info-viewer``,
``admin``/``edit``/``view``) and the Forbidden message.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from precedent_sandbox import errors as api_errors
from precedent_sandbox.auth import MASTERS, UserInfo
from precedent_sandbox.errors import ApiError

if TYPE_CHECKING:
    from precedent_sandbox.store import Store

__all__ = [
    "GROUP",
    "Attributes",
    "RbacAuthorizer",
    "aggregate_cluster_roles",
    "bootstrap_policy",
    "forbidden",
    "selector_matches",
]

GROUP = "rbac.authorization.k8s.io"
_SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request does, as ``authorizer.Attributes``: a resource or a non-resource path."""

    verb: str
    """``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``, ``delete``, …"""
    resource_request: bool = True
    """False for non-resource paths (discovery, ``/version``, ``/healthz``)."""
    group: str = ""
    """The API group; ``""`` for the core group."""
    version: str = ""
    """The API version (only carried, never matched)."""
    resource: str = ""
    """The plural resource."""
    subresource: str = ""
    """``status`` …"""
    namespace: str = ""
    """The namespace; ``""`` for cluster-scoped requests."""
    name: str = ""
    """The object's name; ``""`` for create, list, watch of a collection."""
    path: str = ""
    """The request path (non-resource requests)."""


def _verb_matches(rule: Mapping[str, Any], verb: str) -> bool:
    verbs = rule.get("verbs") or ()
    return "*" in verbs or verb in verbs


def _resource_matches(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for resource in rule.get("resources") or ():
        if resource == "*" or resource == combined:
            return True
        if attrs.subresource and resource == f"*/{attrs.subresource}":
            return True
    return False


def _url_matches(rule: Mapping[str, Any], path: str) -> bool:
    for url in rule.get("nonResourceURLs") or ():
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """Whether one PolicyRule allows the request (``RuleAllows`` in the RBAC authorizer)."""
    if not isinstance(rule, Mapping) or not _verb_matches(rule, attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and attrs.group not in groups:
        return False
    if not _resource_matches(rule, attrs):
        return False
    names = rule.get("resourceNames") or ()
    return not names or attrs.name in names


def _subject_matches(subject: Mapping[str, Any], user: UserInfo, namespace: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "User":
        return name == user.name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return user.name == f"{_SA_PREFIX}{sa_namespace}:{name}"
    return False


def _describe_subject(subject: Mapping[str, Any], namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        where = subject.get("namespace") or namespace
        return f'ServiceAccount "{subject.get("name")}/{where}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


class RbacAuthorizer:
    """Authorizes requests against the RBAC objects in a store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _objects(self, plural: str, namespace: str | None = None) -> Iterable[dict[str, Any]]:
        rtype = self.store.types.get((GROUP, plural))
        if rtype is None:
            return ()
        objects = self.store.bucket(rtype).objects
        if namespace is None:
            return (s.obj for space in objects.values() for s in space.values())
        return (s.obj for s in objects.get(namespace, {}).values())

    def _role_rules(self, ref: Mapping[str, Any], namespace: str) -> list[Any]:
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        plural, space = ("clusterroles", "") if kind == "ClusterRole" else ("roles", namespace)
        if kind not in ("ClusterRole", "Role"):
            return []
        rtype = self.store.types.get((GROUP, plural))
        if rtype is None:
            return []
        found = self.store.bucket(rtype).objects.get(space, {}).get(name)
        rules = found.obj.get("rules") if found is not None else None
        return rules if isinstance(rules, list) else []

    def authorize(self, user: UserInfo, attrs: Attributes) -> tuple[bool, str]:
        """``(allowed, reason)``; the reason names the binding that allowed it."""
        if MASTERS in user.groups:
            return True, ""
        for binding in self._objects("clusterrolebindings"):
            reason = self._visit(binding, user, attrs, "", cluster=True)
            if reason:
                return True, reason
        if attrs.namespace:
            for binding in self._objects("rolebindings", attrs.namespace):
                reason = self._visit(binding, user, attrs, attrs.namespace, cluster=False)
                if reason:
                    return True, reason
        return False, ""

    def _visit(
        self,
        binding: Mapping[str, Any],
        user: UserInfo,
        attrs: Attributes,
        namespace: str,
        *,
        cluster: bool,
    ) -> str:
        subject = next(
            (
                s
                for s in binding.get("subjects") or ()
                if isinstance(s, Mapping) and _subject_matches(s, user, namespace)
            ),
            None,
        )
        if subject is None:
            return ""
        ref = binding.get("roleRef") or {}
        if not any(rule_allows(r, attrs) for r in self._role_rules(ref, namespace)):
            return ""
        name = binding["metadata"]["name"]
        described = (
            f'ClusterRoleBinding "{name}"' if cluster else f'RoleBinding "{name}/{namespace}"'
        )
        return (
            f'RBAC: allowed by {described} of {ref.get("kind")} "{ref.get("name")}" to '
            f"{_describe_subject(subject, namespace)}"
        )

    def check_escalation(
        self, user: UserInfo, plural: str, obj: Mapping[str, Any], namespace: str
    ) -> None:
        """Refuse a role or binding granting more than ``user`` holds (403), unless the user
        may ``escalate`` the role (or ``bind`` the role a binding refers to), as RBAC does."""
        if MASTERS in user.groups:
            return
        name = str((obj.get("metadata") or {}).get("name", ""))
        if plural in ("roles", "clusterroles"):
            rules = obj.get("rules") if not obj.get("aggregationRule") else []
            special = Attributes(
                "escalate", group=GROUP, resource=plural, namespace=namespace, name=name
            )
        else:
            ref = obj.get("roleRef") or {}
            rules = self._role_rules(ref, namespace)
            ref_plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
            special = Attributes(
                "bind",
                group=GROUP,
                resource=ref_plural,
                namespace=namespace if ref_plural == "roles" else "",
                name=str(ref.get("name", "")),
            )
        if self.authorize(user, special)[0]:
            return
        missing = [r for r in rules or () if not self._covers(user, r, namespace)]
        if missing:
            raise ApiError(
                403,
                "Forbidden",
                f'{plural}.{GROUP} "{name}" is forbidden: user "{user.name}" (groups='
                f"{_go_list(user.groups)}) is attempting to grant RBAC permissions not "
                f"currently held: {_describe_rules(missing)}",
                {"group": GROUP, "kind": plural, "name": name},
            )

    def _covers(self, user: UserInfo, rule: Any, namespace: str) -> bool:
        # A rule is held when each of its expanded (verb, group, resource, name) is allowed;
        # wildcards are matched literally, so only a wildcard holds a wildcard (RBAC Covers).
        if not isinstance(rule, Mapping):
            return True
        verbs = rule.get("verbs") or ()
        if rule.get("nonResourceURLs"):
            return all(
                self.authorize(user, Attributes(v, resource_request=False, path=u))[0]
                for v in verbs
                for u in rule["nonResourceURLs"]
            )
        for verb in verbs:
            for group in rule.get("apiGroups") or ():
                for resource in rule.get("resources") or ():
                    base, _, sub = str(resource).partition("/")
                    for name in rule.get("resourceNames") or ("",):
                        attrs = Attributes(
                            verb,
                            group=group,
                            resource=base,
                            subresource=sub,
                            namespace=namespace,
                            name=name,
                        )
                        if not self.authorize(user, attrs)[0]:
                            return False
        return True


def _go_list(values: Iterable[str]) -> str:
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


def _describe_rules(rules: list[Any]) -> str:
    parts = []
    for rule in rules:
        fields = []
        for key in ("apiGroups", "resources", "resourceNames", "nonResourceURLs", "verbs"):
            if rule.get(key):
                fields.append(f"{key}:[{' '.join(repr(str(v)) for v in rule[key])}]")
        parts.append("{" + ", ".join(fields) + "}")
    return "[" + "\n".join(parts) + "]"


def forbidden(user: UserInfo, attrs: Attributes) -> ApiError:
    """403 with the RBAC message the real server writes (``responsewriters.Forbidden``)."""
    if not attrs.resource_request:
        return ApiError(
            403,
            "Forbidden",
            f'forbidden: User "{user.name}" cannot {attrs.verb} path "{attrs.path}"',
            {},
        )
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    why = (
        f'User "{user.name}" cannot {attrs.verb} resource "{resource}" in API group '
        f'"{attrs.group}" {where}'
    )
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    details: dict[str, Any] = {"kind": attrs.resource}
    if attrs.group:
        details["group"] = attrs.group
    if attrs.name:
        details["name"] = attrs.name
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {why}", details)


# -- label selectors ---------------------------------------------------------------------------


def selector_matches(selector: Any, labels: Mapping[str, Any] | None) -> bool:
    """Whether a ``LabelSelector`` object (matchLabels, matchExpressions) selects ``labels``."""
    if not isinstance(selector, Mapping):
        return True
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key = expression.get("key")
        operator = expression.get("operator")
        values = expression.get("values") or ()
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


# -- the ClusterRole aggregation controller -----------------------------------------------------


def aggregate_cluster_roles(store: Store) -> None:
    """Fill the ``rules`` of every ClusterRole with an ``aggregationRule`` from the
    ClusterRoles its selectors pick (union, by name, without duplicates)."""
    rtype = store.types.get((GROUP, "clusterroles"))
    if rtype is None:
        return
    roles = store.bucket(rtype).objects.get("", {})
    for name in sorted(roles):
        current = roles.get(name)
        if current is None:
            continue
        rule = current.obj.get("aggregationRule")
        if not isinstance(rule, Mapping):
            continue
        selectors = [s for s in rule.get("clusterRoleSelectors") or () if isinstance(s, Mapping)]
        collected: list[Any] = []
        for other_name in sorted(roles):
            if other_name == name:
                continue
            other = roles[other_name].obj
            labels = (other.get("metadata") or {}).get("labels")
            if any(selector_matches(s, labels) for s in selectors):
                for item in other.get("rules") or ():
                    if item not in collected:
                        collected.append(copy.deepcopy(item))
        if (current.obj.get("rules") or []) != collected:
            updated = current.copy()
            updated["rules"] = collected
            store.commit(rtype, "", name, updated, current)


# -- bootstrap policy ----------------------------------------------------------------------------


def _cluster_role(name: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
        **extra,
    }


def _cluster_binding(name: str, role: str, groups: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups],
    }


def _aggregated(name: str, to: str) -> dict[str, Any]:
    label = f"rbac.authorization.k8s.io/aggregate-to-{to}"
    return _cluster_role(
        name, [], aggregationRule={"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]}
    )


def bootstrap_policy() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The default ClusterRoles and ClusterRoleBindings a new cluster has (a subset)."""
    health = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
    roles = [
        _cluster_role(
            "cluster-admin",
            [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        ),
        _cluster_role(
            "system:discovery",
            [
                {
                    "nonResourceURLs": [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                    "verbs": ["get"],
                }
            ],
        ),
        _cluster_role(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"],
                },
            ],
        ),
        _cluster_role("system:public-info-viewer", [{"nonResourceURLs": health, "verbs": ["get"]}]),
        _aggregated("admin", "admin"),
        _aggregated("edit", "edit"),
        _aggregated("view", "view"),
    ]
    bindings = [
        _cluster_binding("cluster-admin", "cluster-admin", [MASTERS]),
        _cluster_binding("system:discovery", "system:discovery", ["system:authenticated"]),
        _cluster_binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
        _cluster_binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            ["system:authenticated", "system:unauthenticated"],
        ),
    ]
    return roles, bindings


def unauthorized() -> ApiError:
    """401 for an unknown or malformed bearer token."""
    return api_errors.ApiError(401, "Unauthorized", "Unauthorized")
