"""The built-in workload and network kinds: how the API server prints, defaults and checks them.

Deployments, StatefulSets, DaemonSets, Services, Ingresses, NetworkPolicies,
HorizontalPodAutoscalers and PodDisruptionBudgets are stored like any other object; what makes
them themselves lives here, one :class:`Strategy` per kind (the name the API server gives the
same idea): the ``kubectl get`` rows of ``pkg/printers/internalversion``, the defaults a reader
relies on (``SetDefaults_*``), the checks that stop nonsense (``ValidateDeployment`` …) worded
like the real server's field errors, the status a new object starts with, and Service address
allocation. There are no controllers: nothing creates pods or ReplicaSets, and status changes
only when a client writes ``/status``.
"""

from __future__ import annotations

import copy
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from precedent_sandbox.errors import FieldError, GoLiteral
from precedent_sandbox.table import age

__all__ = [
    "NODE_PORTS",
    "SERVICE_CIDR",
    "STRATEGIES",
    "Strategy",
    "format_label_selector",
    "selector_matches",
]

Obj = dict[str, Any]

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
"""The fake Service range (kubeadm's default); ``10.96.0.1`` is kept for ``kubernetes``."""
NODE_PORTS = range(30000, 32768)
"""The default ``--service-node-port-range``."""


def _noop_defaults(obj: Obj) -> None:
    del obj


def _no_errors(obj: Obj, old: Obj | None) -> list[FieldError]:
    del obj, old
    return []


@dataclass(frozen=True)
class Strategy:
    """What the API server does with one built-in kind beyond object metadata."""

    row: Callable[[Obj, datetime], list[Any]]
    """The ``kubectl get`` cells, wide columns included (the server always sends them)."""
    defaults: Callable[[Obj], None] = _noop_defaults
    """Defaulting, applied on create and on every update, as decoding does."""
    validate: Callable[[Obj, Obj | None], list[FieldError]] = _no_errors
    """Field errors for a new object (``old`` is None) or an update."""
    initial_status: Mapping[str, Any] = field(default_factory=dict)
    """Status of a new object: create ignores the status a client sends."""
    allocate: Callable[[Obj, Obj | None, Iterable[Obj]], list[FieldError]] | None = None
    """Assign what the server allocates (a Service's cluster IP) given the kind's other objects."""


# -- helpers --------------------------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    current = obj
    for key in path:
        if not isinstance(current, dict):
            return None
        current = current.get(key)
    return current


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _name(obj: Obj) -> str:
    return str(_get(obj, "metadata", "name") or "")


def _age(obj: Obj, now: datetime) -> str:
    return age(_get(obj, "metadata", "creationTimestamp"), now)


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``a=b,c=d`` sorted by key, ``<none>`` when empty."""
    pairs = _dict(labels)
    if not pairs:
        return "<none>"
    return ",".join(f"{k}={pairs[k]}" for k in sorted(pairs))


def format_label_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: ``app=web,tier in (a,b)``; ``<none>`` for an empty one."""
    if not isinstance(selector, dict):
        return "<none>"
    terms: list[tuple[str, str]] = [
        (k, f"{k}={v}") for k, v in _dict(selector.get("matchLabels")).items()
    ]
    for expression in _list(selector.get("matchExpressions")):
        expression = _dict(expression)
        key = str(expression.get("key", ""))
        operator = expression.get("operator")
        values = ",".join(sorted(str(v) for v in _list(expression.get("values"))))
        if operator == "In":
            terms.append((key, f"{key} in ({values})"))
        elif operator == "NotIn":
            terms.append((key, f"{key} notin ({values})"))
        elif operator == "Exists":
            terms.append((key, key))
        elif operator == "DoesNotExist":
            terms.append((key, f"!{key}"))
    text = ",".join(t for _, t in sorted(terms, key=lambda pair: pair[0]))
    return text or "<none>"


def selector_matches(selector: Any, labels: Any) -> bool:
    """Whether a ``LabelSelector`` (matchLabels and matchExpressions) selects ``labels``."""
    have = _dict(labels)
    selector = _dict(selector)
    for key, value in _dict(selector.get("matchLabels")).items():
        if have.get(key) != value:
            return False
    for expression in _list(selector.get("matchExpressions")):
        expression = _dict(expression)
        key = str(expression.get("key", ""))
        values = _list(expression.get("values"))
        operator = expression.get("operator")
        if operator == "In" and have.get(key) not in values:
            return False
        if operator == "NotIn" and key in have and have[key] in values:
            return False
        if operator == "Exists" and key not in have:
            return False
        if operator == "DoesNotExist" and key in have:
            return False
    return True


def _selector_is_empty(selector: Any) -> bool:
    selector = _dict(selector)
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _go_string_map(value: Any) -> GoLiteral:
    """A ``map[string]string`` the way Go's ``%#v`` prints it in a field error."""
    pairs = _dict(value)
    if not pairs:
        return (
            GoLiteral("map[string]string(nil)")
            if value is None
            else GoLiteral("map[string]string{}")
        )
    inner = ", ".join(f'"{k}":"{pairs[k]}"' for k in sorted(pairs))
    return GoLiteral(f"map[string]string{{{inner}}}")


def _containers(template: Any) -> tuple[str, str]:
    containers = [_dict(c) for c in _list(_get(template, "spec", "containers"))]
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return names, images


# -- pod templates --------------------------------------------------------------------------


def _image_pull_policy(image: str) -> str:
    # SetDefaults_Container: Always for :latest or an untagged image, IfNotPresent otherwise.
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_container(container: Any) -> None:
    if not isinstance(container, dict):
        return
    if isinstance(container.get("image"), str):
        container.setdefault("imagePullPolicy", _image_pull_policy(container["image"]))
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in _list(container.get("ports")):
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def _default_pod_template(template: Any) -> None:
    if not isinstance(template, dict):
        return
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("initContainers", "containers"):
        for container in _list(spec.get(key)):
            _default_container(container)


def _validate_pod_template(spec: Obj, errors: list[FieldError]) -> None:
    template = spec.get("template")
    base = "spec.template.spec"
    pod = _dict(_get(template, "spec"))
    containers = _list(pod.get("containers"))
    if not containers:
        errors.append(FieldError("required", f"{base}.containers"))
    seen: set[str] = set()
    for index, container in enumerate(containers):
        container = _dict(container)
        path = f"{base}.containers[{index}]"
        name = container.get("name")
        if not name:
            errors.append(FieldError("required", f"{path}.name"))
        elif name in seen:
            errors.append(FieldError("duplicate", f"{path}.name", name))
        else:
            seen.add(str(name))
        if not container.get("image"):
            errors.append(FieldError("required", f"{path}.image"))
    policy = pod.get("restartPolicy")
    if policy not in (None, "Always"):
        errors.append(
            FieldError("unsupported", f"{base}.restartPolicy", policy, 'supported values: "Always"')
        )


def _validate_replicas(spec: Obj, errors: list[FieldError]) -> None:
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        errors.append(
            FieldError("invalid", "spec.replicas", replicas, "must be greater than or equal to 0")
        )


def _validate_workload_selector(spec: Obj, kind: str, errors: list[FieldError]) -> None:
    """``spec.selector`` required and non-empty, and it must select the template's labels."""
    selector = spec.get("selector")
    labels = _get(spec, "template", "metadata", "labels")
    if not isinstance(selector, dict):
        errors.append(FieldError("required", "spec.selector"))
        # A missing selector selects nothing, so the template's labels cannot match it either.
        errors.append(
            FieldError(
                "invalid",
                "spec.template.metadata.labels",
                _go_string_map(labels),
                "`selector` does not match template `labels`",
            )
        )
    elif _selector_is_empty(selector):
        errors.append(
            FieldError(
                "invalid",
                "spec.selector",
                GoLiteral(_selector_literal(selector)),
                f"empty selector is invalid for {kind}",
            )
        )
    elif not selector_matches(selector, labels):
        errors.append(
            FieldError(
                "invalid",
                "spec.template.metadata.labels",
                _go_string_map(labels),
                "`selector` does not match template `labels`",
            )
        )


def _selector_literal(selector: Obj) -> str:
    labels = selector.get("matchLabels")
    inner = "nil" if labels is None else str(_go_string_map(labels))
    expressions = "[]v1.LabelSelectorRequirement(nil)"
    return f"&v1.LabelSelector{{MatchLabels:{inner}, MatchExpressions:{expressions}}}"


def _immutable_selector(obj: Obj, old: Obj | None, errors: list[FieldError]) -> None:
    if old is None:
        return
    if _get(obj, "spec", "selector") != _get(old, "spec", "selector"):
        errors.append(
            FieldError(
                "invalid",
                "spec.selector",
                GoLiteral(_selector_literal(_dict(_get(obj, "spec", "selector")))),
                "field is immutable",
            )
        )


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    return spec


# -- Deployments ----------------------------------------------------------------------------


def _deployment_defaults(obj: Obj) -> None:
    spec = _spec(obj)
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _default_pod_template(spec.get("template"))


def _deployment_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    errors: list[FieldError] = []
    spec = _dict(obj.get("spec"))
    _validate_replicas(spec, errors)
    _validate_workload_selector(spec, "deployment", errors)
    _validate_pod_template(spec, errors)
    strategy = _dict(spec.get("strategy"))
    kind = strategy.get("type")
    if kind not in (None, "RollingUpdate", "Recreate"):
        errors.append(
            FieldError(
                "unsupported",
                "spec.strategy.type",
                kind,
                'supported values: "Recreate", "RollingUpdate"',
            )
        )
    elif kind == "Recreate" and strategy.get("rollingUpdate") is not None:
        errors.append(
            FieldError(
                "forbidden",
                "spec.strategy.rollingUpdate",
                None,
                "may not be specified when strategy `type` is 'Recreate'",
            )
        )
    _immutable_selector(obj, old, errors)
    return errors


def _deployment_row(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    names, images = _containers(spec.get("template"))
    return [
        _name(obj),
        f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
        _int(status.get("updatedReplicas")),
        _int(status.get("availableReplicas")),
        _age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


# -- StatefulSets ---------------------------------------------------------------------------


def _statefulset_defaults(obj: Obj) -> None:
    spec = _spec(obj)
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    update = spec.setdefault("updateStrategy", {})
    if isinstance(update, dict):
        update.setdefault("type", "RollingUpdate")
        if update["type"] == "RollingUpdate":
            rolling = update.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault(
        "persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"}
    )
    _default_pod_template(spec.get("template"))


def _statefulset_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    errors: list[FieldError] = []
    spec = _dict(obj.get("spec"))
    _validate_replicas(spec, errors)
    policy = spec.get("podManagementPolicy")
    if policy not in (None, "OrderedReady", "Parallel"):
        errors.append(
            FieldError(
                "unsupported",
                "spec.podManagementPolicy",
                policy,
                'supported values: "OrderedReady", "Parallel"',
            )
        )
    _validate_workload_selector(spec, "statefulset", errors)
    _validate_pod_template(spec, errors)
    _immutable_selector(obj, old, errors)
    return errors


def _statefulset_row(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    names, images = _containers(spec.get("template"))
    ready = f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}"
    return [_name(obj), ready, _age(obj, now), names, images]


# -- DaemonSets -----------------------------------------------------------------------------


def _daemonset_defaults(obj: Obj) -> None:
    spec = _spec(obj)
    update = spec.setdefault("updateStrategy", {})
    if isinstance(update, dict):
        update.setdefault("type", "RollingUpdate")
        if update["type"] == "RollingUpdate":
            rolling = update.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _default_pod_template(spec.get("template"))


def _daemonset_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    errors: list[FieldError] = []
    spec = _dict(obj.get("spec"))
    _validate_workload_selector(spec, "daemonset", errors)
    _validate_pod_template(spec, errors)
    _immutable_selector(obj, old, errors)
    return errors


def _daemonset_row(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    names, images = _containers(spec.get("template"))
    return [
        _name(obj),
        _int(status.get("desiredNumberScheduled")),
        _int(status.get("currentNumberScheduled")),
        _int(status.get("numberReady")),
        _int(status.get("updatedNumberScheduled")),
        _int(status.get("numberAvailable")),
        format_labels(_get(spec, "template", "spec", "nodeSelector")),
        _age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


# -- Services -------------------------------------------------------------------------------

_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_PROTOCOLS = ("SCTP", "TCP", "UDP")


def _service_defaults(obj: Obj) -> None:
    spec = _spec(obj)
    kind = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in _list(spec.get("ports")):
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])
    if kind == "ExternalName":
        return
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)


def _service_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    errors: list[FieldError] = []
    spec = _dict(obj.get("spec"))
    kind = spec.get("type")
    if kind not in _SERVICE_TYPES:
        supported = ", ".join(f'"{t}"' for t in _SERVICE_TYPES)
        errors.append(
            FieldError("unsupported", "spec.type", kind, f"supported values: {supported}")
        )
    ports = _list(spec.get("ports"))
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and kind != "ExternalName":
        errors.append(FieldError("required", "spec.ports"))
    if kind == "ExternalName":
        if not spec.get("externalName"):
            errors.append(FieldError("required", "spec.externalName"))
        if spec.get("clusterIP") not in (None, ""):
            errors.append(
                FieldError(
                    "forbidden",
                    "spec.clusterIPs",
                    None,
                    "may not be set for ExternalName services",
                )
            )
    names: set[str] = set()
    for index, raw in enumerate(ports):
        port = _dict(raw)
        path = f"spec.ports[{index}]"
        name = port.get("name")
        if len(ports) > 1 and not name:
            errors.append(FieldError("required", f"{path}.name"))
        elif name and name in names:
            errors.append(FieldError("duplicate", f"{path}.name", name))
        elif name:
            names.add(str(name))
        number = port.get("port")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            errors.append(
                FieldError(
                    "invalid",
                    f"{path}.port",
                    number if number is not None else 0,
                    "must be between 1 and 65535, inclusive",
                )
            )
        protocol = port.get("protocol")
        if protocol not in _PROTOCOLS:
            supported = ", ".join(f'"{p}"' for p in _PROTOCOLS)
            errors.append(
                FieldError(
                    "unsupported", f"{path}.protocol", protocol, f"supported values: {supported}"
                )
            )
        node_port = port.get("nodePort")
        if node_port is not None and kind not in ("NodePort", "LoadBalancer"):
            errors.append(
                FieldError(
                    "forbidden",
                    f"{path}.nodePort",
                    None,
                    "may not be used when `type` is 'ClusterIP'",
                )
            )
    if old is not None:
        before = _get(old, "spec", "clusterIP")
        after = spec.get("clusterIP")
        if before and after != before and kind == _get(old, "spec", "type"):
            errors.append(
                FieldError(
                    "invalid",
                    "spec.clusterIPs[0]",
                    GoLiteral(f'[]string{{"{after}"}}'),
                    "may not change once set",
                )
            )
    return errors


def _load_balancer(status: Obj) -> str:
    found = sorted(
        {
            str(i.get("ip") or i.get("hostname"))
            for i in (_dict(x) for x in _list(_get(status, "loadBalancer", "ingress")))
            if i.get("ip") or i.get("hostname")
        }
    )
    text = ",".join(found)
    # The table shows 16 characters at most; -o wide is a client-side choice of columns here.
    return text if len(text) <= 16 else text[:13] + "..."


def _external_ip(spec: Obj, status: Obj) -> str:
    kind = spec.get("type")
    external = [str(ip) for ip in _list(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        balanced = _load_balancer(status)
        if external:
            return ",".join([*([balanced] if balanced else []), *external])
        return balanced or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _port_string(ports: list[Any]) -> str:
    pieces = []
    for raw in ports:
        port = _dict(raw)
        protocol = port.get("protocol", "")
        if _int(port.get("nodePort")) > 0:
            pieces.append(f"{_int(port.get('port'))}:{port['nodePort']}/{protocol}")
        else:
            pieces.append(f"{_int(port.get('port'))}/{protocol}")
    return ",".join(pieces) or "<none>"


def _service_row(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    cluster_ips = _list(spec.get("clusterIPs"))
    return [
        _name(obj),
        str(spec.get("type", "")),
        str(cluster_ips[0]) if cluster_ips else "<none>",
        _external_ip(spec, status),
        _port_string(_list(spec.get("ports"))),
        _age(obj, now),
        format_labels(spec.get("selector")),
    ]


def allocate_service(obj: Obj, old: Obj | None, others: Iterable[Obj]) -> list[FieldError]:
    """Give a Service its cluster IP and node ports, or keep the ones it had (422 if taken).

    Allocation is sequential from ``10.96.0.2`` and ``30000`` (the real allocator is random);
    an address or port the client asks for must be in range and free.
    """
    spec = _spec(obj)
    errors: list[FieldError] = []
    kind = spec.get("type")
    before = _dict(_get(old, "spec")) if old is not None else {}
    if kind != "ExternalName" and "clusterIP" not in spec and before.get("clusterIP"):
        # An update that leaves the address out keeps it (patchAllocatedValues).
        spec["clusterIP"] = before["clusterIP"]
    used_ips: set[str] = set()
    used_ports: set[int] = set()
    for other in others:
        other_spec = _dict(other.get("spec"))
        if other_spec.get("clusterIP"):
            used_ips.add(str(other_spec["clusterIP"]))
        for port in _list(other_spec.get("ports")):
            if _int(_dict(port).get("nodePort")):
                used_ports.add(_int(_dict(port).get("nodePort")))
    if kind == "ExternalName":
        spec.pop("clusterIPs", None)
        spec.pop("ipFamilies", None)
        spec.pop("ipFamilyPolicy", None)
        return errors
    wanted = spec.get("clusterIP")
    if wanted in (None, ""):
        address = _free_address(used_ips | {"10.96.0.1"})
        spec["clusterIP"] = address
    elif wanted != "None" and wanted != before.get("clusterIP"):
        errors.extend(_check_address(str(wanted), used_ips))
    spec["clusterIPs"] = [spec["clusterIP"]]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if kind in ("NodePort", "LoadBalancer"):
        old_ports = {
            _dict(p).get("port"): _dict(p).get("nodePort")
            for p in _list(before.get("ports"))
            if _dict(p).get("nodePort")
        }
        kept = set(old_ports.values())
        for index, raw in enumerate(_list(spec.get("ports"))):
            port = _dict(raw)
            if not isinstance(raw, dict):
                continue
            if port.get("nodePort") is None and port.get("port") in old_ports:
                raw["nodePort"] = old_ports[port.get("port")]
                continue
            requested = port.get("nodePort")
            if requested is None:
                free = next(p for p in NODE_PORTS if p not in used_ports)
                used_ports.add(free)
                raw["nodePort"] = free
            elif requested not in kept:
                errors.extend(_check_node_port(index, requested, used_ports))
                if isinstance(requested, int):
                    used_ports.add(requested)
    return errors


def _free_address(used: set[str]) -> str:
    for host in SERVICE_CIDR.hosts():
        text = str(host)
        if text not in used:
            return text
    raise RuntimeError("the sandbox Service range is full")


def _check_address(wanted: str, used: set[str]) -> list[FieldError]:
    value = GoLiteral(f'[]string{{"{wanted}"}}')
    try:
        address = ipaddress.ip_address(wanted)
    except ValueError:
        return [FieldError("invalid", "spec.clusterIPs[0]", wanted, "must be a valid IP address")]
    if address not in SERVICE_CIDR:
        return [
            FieldError(
                "invalid",
                "spec.clusterIPs",
                value,
                f"failed to allocate IP {wanted}: provided IP is not in the valid range. "
                f"The range of valid IPs is {SERVICE_CIDR}",
            )
        ]
    if wanted in used:
        return [
            FieldError(
                "invalid",
                "spec.clusterIPs",
                value,
                f"failed to allocate IP {wanted}: provided IP is already allocated",
            )
        ]
    return []


def _check_node_port(index: int, requested: Any, used: set[int]) -> list[FieldError]:
    path = f"spec.ports[{index}].nodePort"
    if not isinstance(requested, int) or requested not in NODE_PORTS:
        return [
            FieldError(
                "invalid",
                path,
                requested,
                "provided port is not in the valid range. The range of valid ports is "
                f"{NODE_PORTS.start}-{NODE_PORTS.stop - 1}",
            )
        ]
    if requested in used:
        return [FieldError("invalid", path, requested, "provided port is already allocated")]
    return []


# -- Ingresses ------------------------------------------------------------------------------

_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")


def _validate_backend(backend: Obj, path: str, errors: list[FieldError]) -> None:
    service = backend.get("service")
    resource = backend.get("resource")
    if service is not None and resource is not None:
        errors.append(
            FieldError("invalid", path, "", "cannot set both resource and service backends")
        )
        return
    if service is None and resource is None:
        errors.append(FieldError("invalid", path, "", "resource or service backend is required"))
        return
    if isinstance(service, dict):
        if not service.get("name"):
            errors.append(FieldError("required", f"{path}.service.name"))
        port = _dict(service.get("port"))
        if port.get("name") and port.get("number") is not None:
            errors.append(
                FieldError(
                    "invalid",
                    f"{path}.service.port",
                    GoLiteral(str(port)),
                    "cannot set both port name & port number",
                )
            )
        elif not port.get("name") and port.get("number") is None:
            errors.append(
                FieldError("invalid", f"{path}.service.port", "", "port name or number is required")
            )


def _ingress_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    del old
    errors: list[FieldError] = []
    spec = _dict(obj.get("spec"))
    rules = _list(spec.get("rules"))
    if not rules and spec.get("defaultBackend") is None:
        errors.append(
            FieldError(
                "invalid",
                "spec",
                GoLiteral("[]networking.IngressRule(nil)"),
                "either `defaultBackend` or `rules` must be specified",
            )
        )
    if isinstance(spec.get("defaultBackend"), dict):
        _validate_backend(spec["defaultBackend"], "spec.defaultBackend", errors)
    for r, raw in enumerate(rules):
        http = _get(raw, "http")
        if http is None:
            continue
        paths = _list(_dict(http).get("paths"))
        if not paths:
            errors.append(FieldError("required", f"spec.rules[{r}].http.paths"))
        for p, entry in enumerate(paths):
            entry = _dict(entry)
            where = f"spec.rules[{r}].http.paths[{p}]"
            kind = entry.get("pathType")
            if kind is None:
                errors.append(
                    FieldError("required", f"{where}.pathType", None, "pathType must be specified")
                )
            elif kind not in _PATH_TYPES:
                supported = ", ".join(f'"{t}"' for t in _PATH_TYPES)
                errors.append(
                    FieldError(
                        "unsupported", f"{where}.pathType", kind, f"supported values: {supported}"
                    )
                )
            text = entry.get("path")
            if kind in ("Exact", "Prefix") and not str(text or "").startswith("/"):
                errors.append(
                    FieldError("invalid", f"{where}.path", text or "", "must be an absolute path")
                )
            _validate_backend(_dict(entry.get("backend")), f"{where}.backend", errors)
    return errors


def _ingress_row(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    rules = _list(spec.get("rules"))
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        host = _dict(rule).get("host")
        if not more and host:
            hosts.append(str(host))
    shown = ",".join(hosts) if hosts else "*"
    if hosts and more:
        shown = f"{shown} + {len(rules) - 3} more..."
    return [
        _name(obj),
        str(spec.get("ingressClassName")) if spec.get("ingressClassName") else "<none>",
        shown,
        _load_balancer(status),
        "80, 443" if _list(spec.get("tls")) else "80",
        _age(obj, now),
    ]


# -- NetworkPolicies ------------------------------------------------------------------------


def _networkpolicy_defaults(obj: Obj) -> None:
    spec = _spec(obj)
    spec.setdefault("podSelector", {})
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", *(["Egress"] if _list(spec.get("egress")) else [])]
    for direction in ("ingress", "egress"):
        for rule in _list(spec.get(direction)):
            for port in _list(_dict(rule).get("ports")):
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def _networkpolicy_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    del old
    errors: list[FieldError] = []
    spec = _dict(obj.get("spec"))
    types = _list(spec.get("policyTypes"))
    for index, kind in enumerate(types):
        if kind not in ("Ingress", "Egress"):
            errors.append(
                FieldError(
                    "unsupported",
                    f"spec.policyTypes[{index}]",
                    kind,
                    'supported values: "Egress", "Ingress"',
                )
            )
    if len(types) > 2:
        errors.append(
            FieldError(
                "invalid",
                "spec.policyTypes",
                GoLiteral(str(types)),
                "may not specify more than two policyTypes",
            )
        )
    return errors


def _networkpolicy_row(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), format_label_selector(_get(obj, "spec", "podSelector")), _age(obj, now)]


# -- HorizontalPodAutoscalers ---------------------------------------------------------------


def _hpa_defaults(obj: Obj) -> None:
    spec = _spec(obj)
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]


def _hpa_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    del old
    errors: list[FieldError] = []
    spec = _dict(obj.get("spec"))
    target = spec.get("scaleTargetRef")
    if not isinstance(target, dict):
        errors.append(FieldError("required", "spec.scaleTargetRef"))
    else:
        for key in ("kind", "name"):
            if not target.get(key):
                errors.append(FieldError("required", f"spec.scaleTargetRef.{key}"))
    minimum = spec.get("minReplicas")
    if isinstance(minimum, int) and minimum < 1:
        errors.append(
            FieldError("invalid", "spec.minReplicas", minimum, "must be greater than or equal to 1")
        )
    maximum = spec.get("maxReplicas")
    if not isinstance(maximum, int) or maximum < 1:
        errors.append(
            FieldError(
                "invalid",
                "spec.maxReplicas",
                maximum if isinstance(maximum, int) else 0,
                "must be greater than or equal to 1",
            )
        )
    elif isinstance(minimum, int) and maximum < minimum:
        errors.append(
            FieldError(
                "invalid",
                "spec.maxReplicas",
                maximum,
                "must be greater than or equal to `minReplicas`",
            )
        )
    return errors


def _quantity(value: Any) -> str:
    return "<unknown>" if value is None else str(value)


def _hpa_metric(spec: Obj, status: Obj | None) -> str:
    """One entry of ``formatHPAMetrics`` (kubectl 1.32: ``cpu: 0%/50%``)."""
    kind = spec.get("type")
    if kind in ("Resource", "ContainerResource"):
        key = "resource" if kind == "Resource" else "containerResource"
        source = _dict(spec.get(key))
        target = _dict(source.get("target"))
        current = _dict(_get(status, key, "current"))
        name = source.get("name", "")
        if target.get("averageValue") is not None:
            now = _quantity(current.get("averageValue") if status else None)
            return f"{name}: {now}/{target['averageValue']}"
        now = (
            f"{current['averageUtilization']}%"
            if status and current.get("averageUtilization") is not None
            else "<unknown>"
        )
        wanted = (
            f"{target['averageUtilization']}%"
            if target.get("averageUtilization") is not None
            else "<auto>"
        )
        return f"{name}: {now}/{wanted}"
    if kind == "Pods":
        target = _dict(_get(spec, "pods", "target"))
        now = _quantity(_get(status, "pods", "current", "averageValue"))
        return f"{now}/{target.get('averageValue')}"
    if kind in ("Object", "External"):
        key = "object" if kind == "Object" else "external"
        target = _dict(_get(spec, key, "target"))
        current = _dict(_get(status, key, "current"))
        if target.get("averageValue") is not None:
            return f"{_quantity(current.get('averageValue'))}/{target['averageValue']} (avg)"
        return f"{_quantity(current.get('value'))}/{target.get('value')}"
    return "<unknown type>"


def _hpa_targets(specs: list[Any], statuses: list[Any]) -> str:
    if not specs:
        return "<none>"
    listed = [
        _hpa_metric(_dict(s), _dict(statuses[i]) if i < len(statuses) else None)
        for i, s in enumerate(specs)
    ]
    if len(listed) > 2:
        return f"{', '.join(listed[:2])} + {len(listed) - 2} more..."
    return ", ".join(listed)


def _hpa_row(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    target = _dict(spec.get("scaleTargetRef"))
    minimum = spec.get("minReplicas")
    return [
        _name(obj),
        f"{target.get('kind', '')}/{target.get('name', '')}",
        _hpa_targets(_list(spec.get("metrics")), _list(status.get("currentMetrics"))),
        str(minimum) if isinstance(minimum, int) else "<unset>",
        _int(spec.get("maxReplicas")),
        _int(status.get("currentReplicas")),
        _age(obj, now),
    ]


# -- PodDisruptionBudgets -------------------------------------------------------------------

_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent(value: Any, path: str, errors: list[FieldError]) -> None:
    if value is None:
        return
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            errors.append(FieldError("invalid", path, value, "must be greater than or equal to 0"))
        return
    if not isinstance(value, str) or not _PERCENT.fullmatch(value):
        errors.append(
            FieldError(
                "invalid",
                path,
                value,
                "a valid percent string must be a numeric string followed by an ending '%' "
                "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            )
        )
    elif int(value[:-1]) > 100:
        errors.append(FieldError("invalid", path, value, "must not be greater than 100%"))


def _pdb_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    del old
    errors: list[FieldError] = []
    spec = _dict(obj.get("spec"))
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errors.append(
            FieldError(
                "invalid",
                "spec",
                GoLiteral("policy.PodDisruptionBudgetSpec{...}"),
                "minAvailable and maxUnavailable cannot be both set",
            )
        )
    _int_or_percent(spec.get("minAvailable"), "spec.minAvailable", errors)
    _int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable", errors)
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy not in (None, "AlwaysAllow", "IfHealthyBudget"):
        errors.append(
            FieldError(
                "unsupported",
                "spec.unhealthyPodEvictionPolicy",
                policy,
                'supported values: "AlwaysAllow", "IfHealthyBudget"',
            )
        )
    return errors


def _pdb_row(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        _name(obj),
        "N/A" if minimum is None else str(minimum),
        "N/A" if maximum is None else str(maximum),
        _int(status.get("disruptionsAllowed")),
        _age(obj, now),
    ]


STRATEGIES: dict[str, Strategy] = {
    "deployments": Strategy(
        row=_deployment_row, defaults=_deployment_defaults, validate=_deployment_validate
    ),
    "statefulsets": Strategy(
        row=_statefulset_row,
        defaults=_statefulset_defaults,
        validate=_statefulset_validate,
        initial_status={"replicas": 0, "availableReplicas": 0},
    ),
    "daemonsets": Strategy(
        row=_daemonset_row,
        defaults=_daemonset_defaults,
        validate=_daemonset_validate,
        initial_status={
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        },
    ),
    "services": Strategy(
        row=_service_row,
        defaults=_service_defaults,
        validate=_service_validate,
        initial_status={"loadBalancer": {}},
        allocate=allocate_service,
    ),
    "ingresses": Strategy(
        row=_ingress_row, validate=_ingress_validate, initial_status={"loadBalancer": {}}
    ),
    "networkpolicies": Strategy(
        row=_networkpolicy_row,
        defaults=_networkpolicy_defaults,
        validate=_networkpolicy_validate,
    ),
    "horizontalpodautoscalers": Strategy(
        row=_hpa_row,
        defaults=_hpa_defaults,
        validate=_hpa_validate,
        initial_status={"desiredReplicas": 0},
    ),
    "poddisruptionbudgets": Strategy(
        row=_pdb_row,
        validate=_pdb_validate,
        initial_status={
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        },
    ),
}
"""Strategies by plural (each plural is served by exactly one group here)."""


def initial_status(strategy: Strategy) -> dict[str, Any]:
    """A fresh copy of the status a new object starts with."""
    return copy.deepcopy(dict(strategy.initial_status))
