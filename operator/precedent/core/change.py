"""A change against its live target: what it does and how much (issue: the change, not the verb).

``spec.change`` says what will be done; the live target (read from the API server by the
operator, from ``-f`` manifests by the CLI) says what that means: 40 → 12 replicas removes 70 %
of the capacity, 3 → 0 on a StatefulSet stops every member of its quorum, deleting a Namespace
that holds PersistentVolumeClaims deletes data. :func:`judge_change` turns both into a
:class:`ChangeFacts`: the effect class, the sizes the danger floors (core.floors) test, and a
sentence for people. Without ``spec.change`` the same facts are worked out from what the verb and
the text say (:func:`facts_without_change`), with the live target where there is one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from precedent.core.effects import CAPACITY_CHANGE, TextReading
from precedent.core.kinds import KIND_PATHS
from precedent.core.normalize import canonical_resource_type
from precedent.models import ObservedTarget, RequestChange

__all__ = [
    "ApplyCall",
    "ChangeFacts",
    "LiveTarget",
    "apply_call",
    "facts_without_change",
    "judge_change",
    "live_target_of",
    "observed_key",
    "target_moved",
]

STATEFUL_KINDS = frozenset({"statefulset"})
DATA_KINDS = frozenset({"persistentvolumeclaim", "persistentvolume"})
BINDING_KINDS = frozenset({"clusterrolebinding", "rolebinding"})
POWERFUL_ROLES = frozenset({"cluster-admin", "admin", "system:masters"})


@dataclass(frozen=True, slots=True)
class LiveTarget:
    """What the cluster says about a request's target (None fields: not known)."""

    kind: str
    """Canonical kind (``deployment``)."""
    name: str
    namespace: str | None
    exists: bool = True
    uid: str | None = None
    replicas: int | None = None
    """spec.replicas (workloads)."""
    images: Mapping[str, str] = field(default_factory=dict)
    """Container name → image."""
    stateful: bool = False
    """A StatefulSet, or a workload mounting PersistentVolumeClaims."""
    hpa_min: int | None = None
    """minReplicas of a HorizontalPodAutoscaler scaling it."""
    pdb_min_available: int | None = None
    """minAvailable (absolute) of a PodDisruptionBudget selecting its pods."""
    volume_claims: int | None = None
    """PersistentVolumeClaims it holds: in a Namespace, or claimed by a StatefulSet's
    templates; None: not known."""
    role: str | None = None
    """roleRef.name of a (Cluster)RoleBinding."""
    broad_subjects: bool = False
    """A binding's subjects include a broad group (system:authenticated, …)."""
    completed: bool = False
    """A Job that finished (succeeded)."""
    source: str = "the API server"


@dataclass(frozen=True, slots=True)
class ChangeFacts:
    """What a change does to its target: the effect and the sizes floors test."""

    effect: str
    """Effect class (core.effects)."""
    summary: str
    """For people: ``replicas 40 → 12 on Deployment checkout (removes 70 % of its capacity)``."""
    facts: Mapping[str, float | bool] = field(default_factory=dict)
    """``capacityRemoved`` (0–1), ``toZero``, ``stateful``, ``belowHpaMin``, ``beyondPdb``,
    ``dataVolumes``, ``clusterAdmin``, ``wholePool``, ``quorum``, ``completed``."""
    observed: ObservedTarget | None = None
    """The live target it was judged against."""


def _capacity(before: int | None, after: int, target: LiveTarget | None, what: str) -> ChangeFacts:
    facts: dict[str, float | bool] = {"toZero": after == 0}
    stateful = bool(target and target.stateful)
    facts["stateful"] = stateful
    if before is None:
        effect = "capacity-down"
        size = f"replicas → {after} on {what} (current replicas unknown: read as a decrease)"
        if after == 0:
            facts["capacityRemoved"] = 1.0
    elif after < before:
        effect = "capacity-down"
        removed = (before - after) / before if before else 0.0
        facts["capacityRemoved"] = round(removed, 4)
        size = f"replicas {before} → {after} on {what} (removes {removed:.0%} of its capacity)"
    elif after > before:
        effect = "capacity-up"
        size = f"replicas {before} → {after} on {what} (adds capacity)"
    else:
        effect = "capacity-up"  # no change in capacity: the safe direction
        size = f"replicas stay {after} on {what} (no change)"
    notes = []
    if target is not None and target.hpa_min is not None and after < target.hpa_min:
        facts["belowHpaMin"] = True
        notes.append(f"below the HPA minimum {target.hpa_min}")
    pdb = target.pdb_min_available if target is not None else None
    if pdb is not None and after < pdb:
        facts["beyondPdb"] = True
        notes.append(f"below the PDB's minAvailable {pdb}")
    if stateful and after == 0 and (before is None or before > 0):
        facts["quorum"] = True
        notes.append("stops every member of a stateful set at once")
    if notes:
        size += "; " + "; ".join(notes)
    return ChangeFacts(effect, size, facts)


def _what(target: LiveTarget | None, kind: str, name: str) -> str:
    return f"{kind} {name}"


def _delete(target: LiveTarget | None, kind: str, name: str) -> ChangeFacts:
    canon = canonical_resource_type(kind)
    what = _what(target, kind, name)
    facts: dict[str, float | bool] = {}
    if canon in DATA_KINDS:
        return ChangeFacts("data-delete", f"deletes {what} and the data on it", {"dataVolumes": 1})
    if canon == "namespace":
        claims = target.volume_claims if target is not None else None
        if claims is None:
            return ChangeFacts(
                "data-delete",
                f"deletes {what} and everything in it (whether it holds volumes is not known)",
                {"dataVolumes": 1},
            )
        if claims:
            return ChangeFacts(
                "data-delete",
                f"deletes {what} with its {claims} PersistentVolumeClaim(s)",
                {"dataVolumes": float(claims)},
            )
        return ChangeFacts("object-delete", f"deletes {what} (it holds no volumes)")
    if canon in BINDING_KINDS:
        role = target.role if target is not None else None
        return ChangeFacts(
            "privilege-change", f"deletes {what} (revokes {role or 'a role'})", {"revoke": True}
        )
    if target is not None and target.completed:
        facts["completed"] = True
        return ChangeFacts("object-delete", f"deletes {what}, which has completed", facts)
    if target.stateful if target is not None else canon in STATEFUL_KINDS:
        facts["stateful"] = True
        facts["quorum"] = True
        return ChangeFacts(
            "object-delete", f"deletes {what}, a stateful workload, with all its members", facts
        )
    if target is not None and target.replicas:
        # A workload deleted with its replicas: all its capacity goes, as scaling it to zero.
        facts["capacityRemoved"] = 1.0
        facts["toZero"] = True
        return ChangeFacts(
            "object-delete",
            f"deletes {what} with its {target.replicas} replica(s): all its capacity",
            facts,
        )
    return ChangeFacts("object-delete", f"deletes {what}", facts)


def _patch(
    patch: Mapping[str, Any], target: LiveTarget | None, kind: str, name: str
) -> ChangeFacts:
    what = _what(target, kind, name)
    canon = canonical_resource_type(kind)
    spec = patch.get("spec") if isinstance(patch.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    if isinstance(spec.get("replicas"), int):
        before = target.replicas if target is not None else None
        return _capacity(before, int(spec["replicas"]), target, what)
    if canon in BINDING_KINDS or "roleRef" in patch or "subjects" in patch:
        return _privilege(patch, target, what)
    ceiling = spec.get("maxReplicas")
    if canon == "horizontalpodautoscaler" and isinstance(ceiling, int):
        return _ceiling(ceiling, target, what)
    template = spec.get("template") if isinstance(spec.get("template"), Mapping) else None
    if template is not None and "image" in repr(template):
        return ChangeFacts("image-change", f"patches {what}'s pod template images")
    if canon == "node" and spec.get("unschedulable") is True:
        return ChangeFacts("node-disruption", f"cordons {what}")
    return ChangeFacts("config-change", f"patches {what} ({', '.join(sorted(patch))})")


def _ceiling(ceiling: int, target: LiveTarget | None, what: str) -> ChangeFacts:
    """A HorizontalPodAutoscaler's maxReplicas set to ``ceiling``: below the replicas it runs
    its workload at, the HPA scales the workload down to it (unknown: read as a decrease)."""
    now = target.replicas if target is not None else None
    if now is not None and ceiling >= now:
        return ChangeFacts(
            "autoscaling-change", f"sets maxReplicas {ceiling} on {what} (it runs {now})"
        )
    return _capacity(now, ceiling, None, f"the workload of {what} (maxReplicas {ceiling})")


def _privilege(patch: Mapping[str, Any], target: LiveTarget | None, what: str) -> ChangeFacts:
    role_ref = patch.get("roleRef")
    role = (
        str(role_ref.get("name"))
        if isinstance(role_ref, Mapping) and role_ref.get("name")
        else (target.role if target is not None else None)
    )
    subjects = patch.get("subjects")
    broad = bool(target and target.broad_subjects)
    if isinstance(subjects, list):
        broad = broad or any(_broad(s) for s in subjects if isinstance(s, Mapping))
    facts: dict[str, float | bool] = {"clusterAdmin": role in POWERFUL_ROLES, "broad": broad}
    return ChangeFacts(
        "privilege-change",
        f"changes who holds {role or 'a role'} through {what}"
        + (" (a broad group)" if broad else ""),
        facts,
    )


_BROAD_GROUPS = frozenset(
    {"system:authenticated", "system:unauthenticated", "system:serviceaccounts"}
)


def _broad(subject: Mapping[str, Any]) -> bool:
    name = str(subject.get("name") or "")
    return subject.get("kind") == "Group" and (
        name in _BROAD_GROUPS or name.startswith("system:serviceaccounts")
    )


def judge_change(
    change: RequestChange, kind: str, name: str, target: LiveTarget | None
) -> ChangeFacts:
    """What ``change`` does to the target ``kind``/``name`` as it is now (``target``; None:
    not known, and every unknown is read the riskier way)."""
    what = _what(target, kind, name)
    if target is not None and not target.exists and change.delete is None:
        return ChangeFacts("config-change", f"{what} does not exist", {}, _observed(target, change))
    if change.replicas is not None:
        before = target.replicas if target is not None else None
        facts = _capacity(before, change.replicas, target, what)
    elif change.image is not None:
        current = target.images.get(change.image.container) if target is not None else None
        facts = ChangeFacts(
            "image-change",
            f"image of container {change.image.container} on {what}: "
            f"{current or 'unknown'} → {change.image.image}",
        )
    elif change.resources is not None:
        parts = [f"requests {change.resources.requests}"] if change.resources.requests else []
        parts += [f"limits {change.resources.limits}"] if change.resources.limits else []
        facts = ChangeFacts(
            "config-change",
            f"resources of container {change.resources.container} on {what}: "
            + ", ".join(parts or ["cleared"]),
        )
    elif change.delete is not None:
        facts = _delete(target, kind, name)
    else:
        assert change.patch is not None
        facts = _patch(change.patch, target, kind, name)
    return ChangeFacts(facts.effect, facts.summary, facts.facts, _observed(target, change))


def _observed(target: LiveTarget | None, change: RequestChange) -> ObservedTarget | None:
    if target is None:
        return None
    image = None
    if change.image is not None:
        image = target.images.get(change.image.container)
    return ObservedTarget(
        exists=target.exists,
        uid=target.uid,
        replicas=target.replicas,
        image=image,
        source=target.source[:128],
    )


def facts_without_change(
    effect: str,
    kind: str,
    name: str,
    target: LiveTarget | None,
    text: list[TextReading],
    description: str,
) -> ChangeFacts:
    """The facts of a request without ``spec.change``: its effect as read (``effect``), sized
    from the numbers its text gives ("from 40 to 12") and the live target."""
    what = _what(target, kind, name)
    if effect in ("capacity-down", "capacity-up", CAPACITY_CHANGE):
        sized = next((t for t in text if t.after is not None), None)
        if sized is not None and sized.after is not None:
            before = target.replicas if target is not None and target.replicas else sized.before
            return _capacity(before, sized.after, target, what)
        if effect != "capacity-up" and _to_zero(description):
            before = target.replicas if target is not None else None
            return _capacity(before, 0, target, what)
        return ChangeFacts(
            "capacity-down" if effect == CAPACITY_CHANGE else effect,
            f"changes the replicas of {what} (by how much is not said)",
            {"stateful": bool(target and target.stateful)},
        )
    if effect in ("object-delete", "data-delete"):
        facts = _delete(target, kind, name)
        if effect == "data-delete" and facts.effect != "data-delete":
            return ChangeFacts("data-delete", f"deletes data ({what})", {"dataVolumes": 1})
        return facts
    if effect == "privilege-change":
        powerful = any(role in description.lower() for role in POWERFUL_ROLES)
        broad = any(group in description.lower() for group in _BROAD_GROUPS)
        return ChangeFacts(
            effect,
            f"changes privileges through {what}"
            + (" (a cluster-wide admin role)" if powerful else ""),
            {"clusterAdmin": powerful, "broad": broad},
        )
    if effect == "node-disruption":
        whole = _whole_pool(description)
        return ChangeFacts(
            effect,
            f"disrupts {what}" + (" (every node of the pool at once)" if whole else ""),
            {"wholePool": whole},
        )
    return ChangeFacts(effect, f"{effect} on {what}")


def _to_zero(text: str) -> bool:
    lowered = text.lower()
    return any(
        phrase in lowered
        for phrase in ("to zero", "to 0 replicas", "--replicas=0", "--replicas 0", "to 0 ")
    )


def _whole_pool(text: str) -> bool:
    lowered = text.lower()
    return any(
        phrase in lowered
        for phrase in (
            "every node",
            "all nodes",
            "all the nodes",
            "whole pool",
            "entire pool",
            "at once",
        )
    )


def live_target_of(
    obj: Mapping[str, Any] | None,
    kind: str,
    name: str,
    namespace: str | None,
    *,
    related: list[Mapping[str, Any]] | None = None,
    source: str = "the API server",
) -> LiveTarget:
    """A :class:`LiveTarget` from the target object as the API serves it (None: not found)
    and the ``related`` objects in its namespace (HPAs, PDBs, PVCs), as the API serves them.
    Malformed fields are read as unknown."""
    canon = canonical_resource_type(kind)
    if obj is None:
        return LiveTarget(canon, name, namespace, exists=False, source=source)
    meta = _map(obj.get("metadata"))
    spec = _map(obj.get("spec"))
    status = _map(obj.get("status"))
    template = _map(_map(spec.get("template")).get("spec"))
    containers = [c for c in _list(template.get("containers")) if isinstance(c, Mapping)]
    images = {
        str(c.get("name")): str(c.get("image"))
        for c in containers
        if isinstance(c.get("name"), str) and isinstance(c.get("image"), str)
    }
    replicas = spec.get("replicas")
    if canon == "horizontalpodautoscaler":  # what it runs its workload at now
        replicas = status.get("currentReplicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        replicas = 1 if canon in ("deployment", "statefulset", "replicaset") else None
    claims_in_template = any(
        isinstance(v, Mapping) and "persistentVolumeClaim" in v
        for v in _list(template.get("volumes"))
    )
    templates = _list(spec.get("volumeClaimTemplates"))
    stateful = canon in STATEFUL_KINDS or claims_in_template
    others = list(related or [])
    pod_labels = _map(_map(_map(spec.get("template")).get("metadata")).get("labels"))
    hpa_min = None
    pdb_min = None
    claims: int | None = len(templates) if canon in STATEFUL_KINDS else None
    for other in others:
        other_kind = str(other.get("kind") or "")
        other_spec = _map(other.get("spec"))
        if other_kind == "HorizontalPodAutoscaler":
            ref = _map(other_spec.get("scaleTargetRef"))
            if (
                canonical_resource_type(str(ref.get("kind") or "")) == canon
                and ref.get("name") == name
            ):
                low = other_spec.get("minReplicas", 1)
                hpa_min = low if isinstance(low, int) else hpa_min
        elif other_kind == "PodDisruptionBudget" and pod_labels:
            selector = _map(_map(other_spec.get("selector")).get("matchLabels"))
            minimum = other_spec.get("minAvailable")
            if selector and all(pod_labels.get(k) == v for k, v in selector.items()):
                if isinstance(minimum, int):
                    pdb_min = minimum
                elif isinstance(minimum, str) and minimum.endswith("%") and replicas:
                    with contextlib.suppress(ValueError):
                        pdb_min = -(-int(minimum[:-1]) * replicas // 100)
    if canon == "namespace":
        claims = sum(1 for o in others if o.get("kind") == "PersistentVolumeClaim")
    role_ref = _map(obj.get("roleRef"))
    subjects = [s for s in _list(obj.get("subjects")) if isinstance(s, Mapping)]
    completed = canon == "job" and any(
        _map(c).get("type") == "Complete" and _map(c).get("status") == "True"
        for c in _list(status.get("conditions"))
    )
    return LiveTarget(
        kind=canon,
        name=name,
        namespace=namespace,
        exists=True,
        uid=str(meta["uid"]) if isinstance(meta.get("uid"), str) else None,
        replicas=replicas,
        images=images,
        stateful=stateful,
        hpa_min=hpa_min,
        pdb_min_available=pdb_min,
        volume_claims=claims,
        role=str(role_ref["name"]) if isinstance(role_ref.get("name"), str) else None,
        broad_subjects=any(_broad(s) for s in subjects),
        completed=completed,
        source=source,
    )


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def observed_key(target: LiveTarget | None) -> str:
    """What of the live target an answer depends on, as a string for the input hash."""
    if target is None:
        return ""
    return "|".join(
        str(x)
        for x in (
            target.exists,
            target.uid,
            target.replicas,
            sorted(target.images.items()),
            target.stateful,
            target.hpa_min,
            target.pdb_min_available,
            target.volume_claims,
            target.role,
            target.broad_subjects,
            target.completed,
        )
    )


@dataclass(frozen=True, slots=True)
class ApplyCall:
    """One API call that applies a change: method, path under the server, body, content type."""

    method: str
    path: str
    body: Mapping[str, Any] | None
    content_type: str
    what: str
    """For people: ``scale deployment/checkout to 12``."""


def apply_call(change: RequestChange, kind: str, name: str, namespace: str | None) -> ApplyCall:
    """The one call that applies ``change`` to the target (ValueError: a kind it cannot
    change, named in the message)."""
    canon = canonical_resource_type(kind)
    where = KIND_PATHS.get(canon)
    if where is None:
        raise ValueError(
            f"spec.target.kind {kind}: kubectl precedent apply changes "
            f"{', '.join(sorted(KIND_PATHS))}"
        )
    prefix, plural, namespaced = where
    if namespaced and not namespace:
        raise ValueError(f"spec.target.namespace: a {kind} lives in a namespace; name it")
    base = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
    path = f"{base}/{name}"
    label = f"{canon}/{name}"
    if change.replicas is not None:
        return ApplyCall(
            "PATCH",
            f"{path}/scale",
            {"spec": {"replicas": change.replicas}},
            "application/merge-patch+json",
            f"scale {label} to {change.replicas}",
        )
    if change.image is not None or change.resources is not None:
        if canon not in ("deployment", "statefulset", "daemonset", "replicaset"):
            raise ValueError(f"spec.change: a container change needs a workload, not a {kind}")
        if change.image is not None:
            container: dict[str, Any] = {
                "name": change.image.container,
                "image": change.image.image,
            }
            what = f"set image of {change.image.container} on {label} to {change.image.image}"
        else:
            assert change.resources is not None
            container = {
                "name": change.resources.container,
                "resources": {
                    k: v
                    for k, v in (
                        ("requests", dict(change.resources.requests)),
                        ("limits", dict(change.resources.limits)),
                    )
                    if v
                },
            }
            what = f"set resources of {change.resources.container} on {label}"
        return ApplyCall(
            "PATCH",
            path,
            {"spec": {"template": {"spec": {"containers": [container]}}}},
            "application/strategic-merge-patch+json",
            what,
        )
    if change.delete is not None:
        return ApplyCall(
            "DELETE",
            path,
            {
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "propagationPolicy": change.delete.propagation_policy,
            },
            "application/json",
            f"delete {label} ({change.delete.propagation_policy})",
        )
    assert change.patch is not None
    return ApplyCall(
        "PATCH", path, dict(change.patch), "application/merge-patch+json", f"patch {label}"
    )


def target_moved(
    observed: ObservedTarget | None, now: LiveTarget, change: RequestChange
) -> str | None:
    """Why the target is no longer the one the change was judged against (None: it is)."""
    if observed is None:
        return "the answer recorded no live target (it was judged without reading it)"
    if observed.exists != now.exists:
        return "the target was created since the answer" if now.exists else "the target is gone"
    if observed.uid and now.uid and observed.uid != now.uid:
        return f"the target was replaced (uid {observed.uid} → {now.uid})"
    replicas = change.replicas
    if replicas is None and change.patch is not None:
        spec = change.patch.get("spec")
        if isinstance(spec, Mapping) and isinstance(spec.get("replicas"), int):
            replicas = int(spec["replicas"])
    if replicas is not None and observed.replicas != now.replicas:
        return f"its replicas changed from {observed.replicas} to {now.replicas}"
    if change.image is not None:
        image = now.images.get(change.image.container)
        if observed.image != image:
            return f"the image of {change.image.container} changed from {observed.image} to {image}"
    return None
