"""The guard: a direct change to a guarded namespace goes through an approved request, or not
at all (the admission webhook of services.guard).

A namespace opts in with the label ``precedent.dev/guard: enforce | warn``. The shipped
ValidatingWebhookConfiguration (manifests/guard/) routes the changes its rules and CEL match
conditions call risky to the operator: replica decreases (the ``scale`` subresource and updates
of the workload), image changes, a HorizontalPodAutoscaler's maxReplicas lowered below what
it runs, deletes of Deployments, StatefulSets, PersistentVolumeClaims and Namespaces, and
RoleBindings to powerful roles. That list is admin-owned: edit the
configuration's rules and conditions. Everything else never reaches the operator.

This module is pure: :func:`change_of` reads an AdmissionReview's objects as the same
``spec.change`` a RemediationRequest would carry, :func:`covers` says whether an answered
request approves exactly that change on exactly that target as it is, and
:func:`request_for` writes the request that would ask for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from precedent.core.change import POWERFUL_ROLES
from precedent.core.kinds import KIND_PATHS
from precedent.core.normalize import canonical_resource_type
from precedent.models import DeleteChange, ImageChange, RequestChange

__all__ = [
    "GUARD_LABEL",
    "GuardMode",
    "GuardedChange",
    "ask_command",
    "change_key",
    "change_of",
    "covers",
    "guard_key",
    "guard_mode",
    "plural_of",
    "request_for",
]

GUARD_LABEL = "precedent.dev/guard"
"""The namespace label that turns the guard on: ``enforce`` or ``warn``."""

GuardMode = Literal["enforce", "warn", "off"]

_KINDS = {
    "deployments": "Deployment",
    "statefulsets": "StatefulSet",
    "replicasets": "ReplicaSet",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "namespaces": "Namespace",
    "rolebindings": "RoleBinding",
    "horizontalpodautoscalers": "HorizontalPodAutoscaler",
}
_ACTIONS = {
    "capacity-down": "scale_down",
    "image-change": "update_image",
    "data-delete": "delete_pvc",
    "object-delete": "delete_resource",
    "privilege-change": "grant_role",
}


def guard_mode(labels: Mapping[str, Any] | None) -> GuardMode:
    """The guard mode a namespace's labels set (anything but enforce or warn is off)."""
    value = str((labels or {}).get(GUARD_LABEL, "")).strip().lower()
    return value if value in ("enforce", "warn") else "off"  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class GuardedChange:
    """A direct change, read as a request's ``spec.change``."""

    kind: str
    """Kind, e.g. Deployment."""
    namespace: str | None
    name: str
    change: RequestChange
    effect: str
    """Its effect class (core.effects)."""
    summary: str
    """For people: ``scale Deployment checkout from 40 to 12``."""

    @property
    def action(self) -> str:
        """The verb a request for it would use."""
        return _ACTIONS.get(self.effect, "update_config")

    @property
    def home(self) -> str:
        """The namespace a request for it lives in: its own, or the Namespace it deletes."""
        if self.namespace:
            return self.namespace
        return self.name if self.kind == "Namespace" else "default"

    @property
    def where(self) -> str:
        """``deployment/checkout in shop``."""
        space = f" in {self.namespace}" if self.namespace else ""
        return f"{self.kind.lower()}/{self.name}{space}"


def _replicas(obj: Mapping[str, Any] | None) -> int | None:
    spec = (obj or {}).get("spec")
    value = spec.get("replicas") if isinstance(spec, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _images(obj: Mapping[str, Any] | None) -> dict[str, str]:
    spec = (obj or {}).get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    pod = template.get("spec") if isinstance(template, Mapping) else None
    containers = pod.get("containers") if isinstance(pod, Mapping) else None
    return {
        str(c.get("name")): str(c.get("image"))
        for c in containers or []
        if isinstance(c, Mapping) and isinstance(c.get("name"), str)
    }


def change_of(
    plural: str,
    subresource: str | None,
    operation: str,
    namespace: str | None,
    name: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
) -> GuardedChange | None:
    """The change an admission request makes, as a ``spec.change`` (None: not one the guard
    weighs, e.g. a scale-up or a label edit that the match conditions let through)."""
    kind = _KINDS.get(plural)
    if kind is None:
        return None
    if operation == "DELETE":
        effect = (
            "data-delete"
            if plural in ("persistentvolumeclaims", "namespaces")
            else ("object-delete")
        )
        return GuardedChange(
            kind,
            namespace,
            name,
            RequestChange(delete=DeleteChange()),
            effect,
            f"delete {kind} {name}",
        )
    if plural == "rolebindings":
        role_ref = (new or {}).get("roleRef")
        if not isinstance(role_ref, Mapping) or role_ref.get("name") not in POWERFUL_ROLES:
            return None
        role = role_ref.get("name")
        patch = {"roleRef": dict(role_ref), "subjects": list((new or {}).get("subjects") or [])}
        return GuardedChange(
            kind,
            namespace,
            name,
            RequestChange(patch=patch),
            "privilege-change",
            f"bind {role} through {kind} {name}",
        )
    if plural == "horizontalpodautoscalers":
        return _ceiling_of(kind, namespace, name, old, new)
    before, after = _replicas(old), _replicas(new)
    if subresource == "scale":
        # A Scale leaves spec.replicas out when it is 0 (omitempty).
        before, after = before or 0, after or 0
        if after >= before:
            return None
    if before is not None and after is not None and after < before:
        return GuardedChange(
            kind,
            namespace,
            name,
            RequestChange(replicas=after),
            "capacity-down",
            f"scale {kind} {name} from {before} to {after}",
        )
    was, now = _images(old), _images(new)
    changed = sorted(c for c in now if c in was and now[c] != was[c])
    if len(changed) == 1:
        container = changed[0]
        return GuardedChange(
            kind,
            namespace,
            name,
            RequestChange(image=ImageChange(container=container, image=now[container])),
            "image-change",
            f"set the image of {container} on {kind} {name} to {now[container]}",
        )
    if changed:
        containers = [{"name": c, "image": now[c]} for c in changed]
        return GuardedChange(
            kind,
            namespace,
            name,
            RequestChange(patch={"spec": {"template": {"spec": {"containers": containers}}}}),
            "image-change",
            f"set the images of {', '.join(changed)} on {kind} {name}",
        )
    return None


def _int_at(obj: Mapping[str, Any] | None, part: str, field: str) -> int | None:
    section = (obj or {}).get(part)
    value = section.get(field) if isinstance(section, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ceiling_of(
    kind: str,
    namespace: str | None,
    name: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
) -> GuardedChange | None:
    """A HorizontalPodAutoscaler's maxReplicas lowered below the replicas it runs: the HPA
    (one of Kubernetes' controllers, not guarded) would scale the workload down to it."""
    before, after = _int_at(old, "spec", "maxReplicas"), _int_at(new, "spec", "maxReplicas")
    running = _int_at(old, "status", "currentReplicas")
    if before is None or after is None or after >= before:
        return None
    if running is not None and after >= running:
        return None
    runs = f" (it runs {running})" if running is not None else ""
    return GuardedChange(
        kind,
        namespace,
        name,
        RequestChange(patch={"spec": {"maxReplicas": after}}),
        "capacity-down",
        f"lower the maxReplicas of {kind} {name} from {before} to {after}{runs}",
    )


def _conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("type")): c for c in status.get("conditions") or [] if isinstance(c, Mapping)}


def covers(
    request: Mapping[str, Any], change: GuardedChange, old: Mapping[str, Any] | None
) -> str | None:
    """Why the answered ``request`` does not approve ``change`` (None: it does): the same
    target, exactly this ``spec.change`` (its hash in the answer), Approved now, not run yet,
    and judged against the target as it is (same uid and replicas). The status mark is the
    caller's to check."""
    spec = request.get("spec") or {}
    status = request.get("status") or {}
    target = spec.get("target") or {}
    if (
        canonical_resource_type(str(target.get("kind", ""))) != canonical_resource_type(change.kind)
        or str(target.get("name", "")) != change.name
    ):
        return "another target"
    space = target.get("namespace") or (request.get("metadata") or {}).get("namespace")
    if change.namespace is not None and space != change.namespace:
        return "another namespace"
    try:
        wanted = RequestChange.model_validate(spec.get("change") or {})
    except ValueError:
        return "no valid spec.change"
    if wanted.digest() != change.change.digest():
        return f"another change ({wanted.canonical()})"
    answer = status.get("change") or {}
    if answer.get("hash") != wanted.digest():
        return "its answer is for another change"
    if spec.get("outcome") or status.get("guard"):
        return "it already ran (an approved change runs once)"
    approved = _conditions(status).get("Approved") or {}
    if approved.get("status") != "True":
        return f"it is not approved ({approved.get('reason') or 'not answered'})"
    observed = answer.get("observed") or {}
    uid = ((old or {}).get("metadata") or {}).get("uid")
    if observed.get("uid") and uid and observed["uid"] != uid:
        return "the target was replaced since its answer"
    if change.change.replicas is not None and observed.get("replicas") != _replicas(old):
        return (
            f"its answer judged {observed.get('replicas')} replicas, the target has "
            f"{_replicas(old)}"
        )
    return None


def request_for(change: GuardedChange, user: str) -> dict[str, Any]:
    """The RemediationRequest that asks for exactly ``change``."""
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {
            "generateName": f"{change.action.replace('_', '-')}-{change.name}-"[:50],
            "namespace": change.home,
        },
        "spec": {
            "action": change.action,
            "target": {
                "kind": change.kind,
                "name": change.name,
                **({"namespace": change.namespace} if change.namespace else {}),
            },
            "description": f"{change.summary} (asked by {user})"[:8192],
            "change": change.change.model_dump(mode="json", by_alias=True, exclude_none=True),
        },
    }


def _flow(value: Any) -> str:
    """A YAML flow rendering that fits on one line of an admission message."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, str):
        plain = value and all(ch.isalnum() or ch in "-_./:" for ch in value)
        return value if plain else '"' + value.replace('"', '\\"') + '"'
    return str(value).lower() if isinstance(value, bool) else str(value)


def ask_command(request: Mapping[str, Any]) -> str:
    """A one-line ``kubectl create`` of ``request``."""
    return f"kubectl create -f - <<< '{_flow(request)}'"


def _key(kind: str, namespace: str | None, name: str) -> tuple[str, str, str]:
    canon = canonical_resource_type(kind)
    namespaced = KIND_PATHS.get(canon, ("", "", True))[2]
    return ((namespace or "") if namespaced else "", canon, name)


def guard_key(request: Mapping[str, Any]) -> tuple[str, str, str]:
    """(target namespace, kind, name) of a RemediationRequest: what the guard looks it up by."""
    target = (request.get("spec") or {}).get("target") or {}
    namespace = target.get("namespace") or (request.get("metadata") or {}).get("namespace")
    return _key(str(target.get("kind") or ""), namespace, str(target.get("name") or ""))


def change_key(change: GuardedChange) -> tuple[str, str, str]:
    """The same key for a direct change."""
    return _key(change.kind, change.namespace, change.name)


def plural_of(kind: str) -> str | None:
    """The resource (plural) of a kind the guard weighs, or None."""
    return next((plural for plural, k in _KINDS.items() if k.lower() == kind.lower()), None)
