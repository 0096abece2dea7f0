"""The guard's pure part: an admission request read as a spec.change, whether an answered
request covers it, and the request that would ask for it (core.guard)."""

from __future__ import annotations

from typing import Any

import yaml

from precedent.core.guard import (
    ask_command,
    change_key,
    change_of,
    covers,
    guard_key,
    guard_mode,
    request_for,
)
from precedent.models import RequestChange


def scale(replicas: int | None, uid: str = "u1") -> dict[str, Any]:
    spec = {} if replicas is None else {"replicas": replicas}
    return {"kind": "Scale", "metadata": {"name": "checkout", "uid": uid}, "spec": spec}


def workload(replicas: int, image: str = "app:1", uid: str = "u1") -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "checkout", "namespace": "shop", "uid": uid},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
        },
    }


def test_the_mode_comes_from_the_namespace_label() -> None:
    assert guard_mode({"precedent.dev/guard": "enforce"}) == "enforce"
    assert guard_mode({"precedent.dev/guard": "Warn"}) == "warn"
    assert guard_mode({"precedent.dev/guard": "yes"}) == "off"
    assert guard_mode(None) == "off"


def test_what_a_change_is() -> None:
    down = change_of("deployments", "scale", "UPDATE", "shop", "checkout", scale(10), scale(2))
    assert down is not None
    assert down.change == RequestChange(replicas=2)
    assert down.summary == "scale Deployment checkout from 10 to 2"
    # Scaling to zero: the Scale object leaves replicas out.
    zero = change_of("deployments", "scale", "UPDATE", "shop", "checkout", scale(3), scale(None))
    assert zero is not None
    assert zero.change.replicas == 0
    assert (
        change_of("deployments", "scale", "UPDATE", "shop", "checkout", scale(2), scale(4)) is None
    )
    image = change_of(
        "deployments", None, "UPDATE", "shop", "checkout", workload(3), workload(3, "app:2")
    )
    assert image is not None
    assert image.effect == "image-change"
    assert image.change.image is not None
    assert image.change.image.image == "app:2"
    labels_only = change_of(
        "deployments", None, "UPDATE", "shop", "checkout", workload(3), workload(3)
    )
    assert labels_only is None
    pvc = change_of("persistentvolumeclaims", None, "DELETE", "data", "pg", {"metadata": {}}, None)
    assert pvc is not None
    assert pvc.effect == "data-delete"
    binding = {"roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}, "subjects": []}
    granted = change_of("rolebindings", None, "CREATE", "shop", "b", None, binding)
    assert granted is not None
    assert granted.effect == "privilege-change"
    view = {"roleRef": {"kind": "ClusterRole", "name": "view"}}
    assert change_of("rolebindings", None, "CREATE", "shop", "b", None, view) is None


def autoscaler(ceiling: int, running: int | None) -> dict[str, Any]:
    status = {} if running is None else {"currentReplicas": running}
    return {
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "checkout", "namespace": "shop", "uid": "h1"},
        "spec": {"minReplicas": 2, "maxReplicas": ceiling},
        "status": status,
    }


def test_an_autoscaler_s_ceiling_below_what_it_runs_is_a_scale_down() -> None:
    # The HPA would scale the workload down to it: the same change as scaling it by hand.
    hpa = "horizontalpodautoscalers"
    lowered = change_of(
        hpa, None, "UPDATE", "shop", "checkout", autoscaler(20, 12), autoscaler(3, 12)
    )
    assert lowered is not None
    assert lowered.effect == "capacity-down"
    assert lowered.kind == "HorizontalPodAutoscaler"
    assert lowered.change == RequestChange(patch={"spec": {"maxReplicas": 3}})
    assert lowered.summary == (
        "lower the maxReplicas of HorizontalPodAutoscaler checkout from 20 to 3 (it runs 12)"
    )
    unknown = change_of(
        hpa, None, "UPDATE", "shop", "checkout", autoscaler(20, None), autoscaler(3, None)
    )
    assert unknown is not None
    # Still above what it runs, or raised: nothing is scaled down.
    assert (
        change_of(hpa, None, "UPDATE", "shop", "checkout", autoscaler(20, 12), autoscaler(15, 12))
        is None
    )
    assert (
        change_of(hpa, None, "UPDATE", "shop", "checkout", autoscaler(20, 12), autoscaler(30, 12))
        is None
    )


def test_a_lowered_ceiling_is_judged_by_what_the_autoscaler_runs() -> None:
    from precedent.core.change import judge_change, live_target_of

    def judged(ceiling: int, running: int | None) -> Any:
        target = live_target_of(
            autoscaler(20, running), "HorizontalPodAutoscaler", "checkout", "shop"
        )
        change = RequestChange(patch={"spec": {"maxReplicas": ceiling}})
        return judge_change(change, "HorizontalPodAutoscaler", "checkout", target)

    down = judged(3, 12)
    assert down.effect == "capacity-down"
    assert down.facts["capacityRemoved"] == 0.75
    assert "12 → 3" in down.summary
    assert judged(3, None).effect == "capacity-down"  # not known: the riskier reading
    assert judged(15, 12).effect == "autoscaling-change"


def request(
    change: dict[str, Any], *, replicas: int = 10, approved: bool = True, **status: Any
) -> dict[str, Any]:
    spec_change = RequestChange.model_validate(change)
    return {
        "metadata": {"name": "r", "namespace": "shop", "resourceVersion": "7"},
        "spec": {
            "action": "scale_down",
            "target": {"kind": "Deployment", "name": "checkout", "namespace": "shop"},
            "change": change,
        },
        "status": {
            "change": {
                "effect": "capacity-down",
                "hash": spec_change.digest(),
                "observed": {"exists": True, "uid": "u1", "replicas": replicas},
            },
            "conditions": [
                {"type": "Approved", "status": "True" if approved else "Unknown", "reason": "x"}
            ],
            **status,
        },
    }


def test_a_request_covers_exactly_its_change_once() -> None:
    down = change_of("deployments", "scale", "UPDATE", "shop", "checkout", scale(10), scale(8))
    assert down is not None
    assert covers(request({"replicas": 8}), down, scale(10)) is None
    assert "another change" in (covers(request({"replicas": 7}), down, scale(10)) or "")
    assert "not approved" in (
        covers(request({"replicas": 8}, approved=False), down, scale(10)) or ""
    )
    used = request({"replicas": 8}, guard={"admittedAt": "2026-11-28T00:00:00Z", "user": "e"})
    assert "already ran" in (covers(used, down, scale(10)) or "")
    assert "judged 9 replicas" in (
        covers(request({"replicas": 8}, replicas=9), down, scale(10)) or ""
    )
    replaced = scale(10, uid="u2")
    assert "replaced" in (covers(request({"replicas": 8}), down, replaced) or "")
    assert guard_key(request({"replicas": 8})) == change_key(down)


def test_the_request_to_ask_with_is_valid_yaml() -> None:
    down = change_of("deployments", "scale", "UPDATE", "shop", "checkout", scale(10), scale(2))
    assert down is not None
    body = request_for(down, "erin")
    command = ask_command(body)
    text = command.split("<<< '", 1)[1].rstrip("'")
    assert yaml.safe_load(text) == body
