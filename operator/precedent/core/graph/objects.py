"""Kubernetes objects as the graph needs them: parsed once, checked field by field.

A malformed object raises :class:`GraphInputError` naming the field
(``spec.template.spec.containers[0].env[2].value: expected a string``); the caller adds the file
or the object's name. Only the fields the graph reads are checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from precedent.core.graph.model import (
    ANNOTATION_DEPENDS_ON,
    ANNOTATION_SERVICE_TYPE,
    ANNOTATION_TIER,
    WORKLOAD_KINDS,
    Confidence,
    EdgeType,
    NodeKey,
    NodeType,
)
from precedent.core.graph.references import (
    HostRef,
    references_in_args,
    references_in_value,
    verb_of_key,
)
from precedent.errors import InputError

__all__ = [
    "ConfigMapUse",
    "GraphInputError",
    "Hpa",
    "Ingress",
    "NetworkPolicy",
    "Pdb",
    "PolicyPeer",
    "Selector",
    "Service",
    "ValueRef",
    "Workload",
    "infer_node_type",
    "parse_configmap",
    "parse_hpa",
    "parse_ingress",
    "parse_network_policy",
    "parse_pdb",
    "parse_service",
    "parse_workload",
]


class GraphInputError(InputError):
    """An object the graph cannot read; the message names the field."""


# Name/image hints for the node type when no annotation says it. Checked against the image's
# repository name and the object's name as whole words ("postgres", "redis-master"), so a
# service called "cachet-ui" is not a cache.
_TYPE_HINTS: tuple[tuple[NodeType, frozenset[str]], ...] = (
    (
        NodeType.DATABASE,
        frozenset(
            [
                "postgres",
                "postgresql",
                "pg",
                "mysql",
                "mariadb",
                "mongo",
                "mongodb",
                "cockroachdb",
                "cockroach",
                "cassandra",
                "scylla",
                "clickhouse",
                "elasticsearch",
                "opensearch",
                "db",
                "database",
            ]
        ),
    ),
    (NodeType.CACHE, frozenset(["redis", "memcached", "valkey", "keydb", "dragonfly", "cache"])),
    (
        NodeType.QUEUE,
        frozenset(
            ["rabbitmq", "kafka", "nats", "activemq", "pulsar", "queue", "mq", "broker", "sqs"]
        ),
    ),
    (NodeType.STORAGE, frozenset(["minio", "ceph", "seaweedfs", "storage", "s3", "nfs"])),
    (
        NodeType.GATEWAY,
        frozenset(
            [
                "nginx",
                "envoy",
                "traefik",
                "haproxy",
                "gateway",
                "ingress",
                "kong",
                "istio-ingressgateway",
            ]
        ),
    ),
)
_WORD = re.compile(r"[a-z0-9]+")


def infer_node_type(name: str, images: Sequence[str] = ()) -> NodeType:
    """The node type an image or name suggests (``postgres:16`` → database), else compute."""
    words: set[str] = set()
    for image in images:
        repository = image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]
        words.update(_WORD.findall(repository.lower()))
    words.update(_WORD.findall(name.lower()))
    for node_type, hints in _TYPE_HINTS:
        if words & hints:
            return node_type
    return NodeType.COMPUTE


# ---------------------------------------------------------------------------------------------
# field access with errors that name the field
# ---------------------------------------------------------------------------------------------


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise GraphInputError(f"{path}: expected a mapping, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> Sequence[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise GraphInputError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _str(value: Any, path: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        kind = "nothing" if value is None else type(value).__name__
        raise GraphInputError(f"{path}: expected a string, got {kind}")
    text = str(value)
    if required and not text:
        raise GraphInputError(f"{path}: must not be empty")
    return text


def _str_map(value: Any, path: str) -> dict[str, str]:
    return {str(k): _str(v, f"{path}.{k}") for k, v in _mapping(value, path).items()}


def _int(value: Any, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise GraphInputError(f"{path}: expected an integer, got {type(value).__name__}")
    return value


def _meta(obj: Mapping[str, Any]) -> tuple[str, str, dict[str, str]]:
    meta = _mapping(obj.get("metadata"), "metadata")
    name = _str(meta.get("name"), "metadata.name", required=True)
    namespace = _str(meta.get("namespace"), "metadata.namespace") or "default"
    return name, namespace, _str_map(meta.get("annotations"), "metadata.annotations")


def _declared_type(annotations: Mapping[str, str], path: str) -> NodeType | None:
    raw = annotations.get(ANNOTATION_SERVICE_TYPE)
    if raw is None:
        return None
    try:
        return NodeType(raw.strip().lower())
    except ValueError:
        allowed = ", ".join(t.value for t in NodeType)
        raise GraphInputError(
            f"{path}.{ANNOTATION_SERVICE_TYPE}: {raw!r} is not one of {allowed}"
        ) from None


def _critical(annotations: Mapping[str, str]) -> bool:
    return annotations.get(ANNOTATION_TIER, "").strip().lower() == "critical"


# ---------------------------------------------------------------------------------------------
# selectors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Selector:
    """A label selector: ``matchLabels`` plus ``matchExpressions`` (In, NotIn, Exists,
    DoesNotExist). A Service's plain ``selector`` is the labels-only case."""

    labels: tuple[tuple[str, str], ...] = ()
    """Key/value pairs that must all be present."""
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()
    """(key, operator, values) clauses that must all hold."""

    @property
    def empty(self) -> bool:
        """True when the selector matches everything (no clause at all)."""
        return not self.labels and not self.expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every clause."""
        if any(labels.get(k) != v for k, v in self.labels):
            return False
        for key, op, values in self.expressions:
            present = key in labels
            if op == "In" and not (present and labels[key] in values):
                return False
            if op == "NotIn" and present and labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True


_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def _label_selector(value: Any, path: str) -> Selector:
    body = _mapping(value, path)
    labels = tuple(sorted(_str_map(body.get("matchLabels"), f"{path}.matchLabels").items()))
    expressions = []
    for i, raw in enumerate(_list(body.get("matchExpressions"), f"{path}.matchExpressions")):
        where = f"{path}.matchExpressions[{i}]"
        expr = _mapping(raw, where)
        op = _str(expr.get("operator"), f"{where}.operator", required=True)
        if op not in _OPERATORS:
            raise GraphInputError(f"{where}.operator: {op!r} is not one of {sorted(_OPERATORS)}")
        values = frozenset(
            _str(v, f"{where}.values[{j}]")
            for j, v in enumerate(_list(expr.get("values"), f"{where}.values"))
        )
        expressions.append((_str(expr.get("key"), f"{where}.key", required=True), op, values))
    return Selector(labels, tuple(expressions))


# ---------------------------------------------------------------------------------------------
# workloads
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValueRef:
    """A Service named by a workload, with where it was said."""

    ref: HostRef
    """The name, namespace (if given) and the form's confidence."""
    evidence: str
    """e.g. ``env PAYMENT_URL=http://payment-api:8080``."""
    verb: EdgeType | None
    """The edge type the variable's name implies, if any."""


@dataclass(frozen=True, slots=True)
class ConfigMapUse:
    """A ConfigMap a container reads: every key (``envFrom``) or one key (``configMapKeyRef``)."""

    name: str
    """The ConfigMap's name (same namespace as the workload)."""
    key: str | None
    """The key read, or None for all of them (envFrom)."""
    env_name: str | None
    """The env var it lands in (``configMapKeyRef``)."""
    prefix: str = ""
    """``envFrom.prefix``."""


@dataclass(frozen=True, slots=True)
class Workload:
    """A Deployment, StatefulSet or DaemonSet as the graph sees it."""

    key: NodeKey
    """Kind, namespace, name."""
    labels: dict[str, str]
    """The pod template's labels (what Services and policies select)."""
    node_type: NodeType
    """Annotation, else inferred from images and name."""
    critical: bool
    """``precedent.dev/tier: critical`` on the workload or its pod template."""
    replicas: int | None
    """``spec.replicas``, when set."""
    refs: tuple[ValueRef, ...]
    """Service names in env values, args and command (ConfigMaps are resolved by the graph)."""
    configmaps: tuple[ConfigMapUse, ...]
    """ConfigMaps read through env."""
    images: tuple[str, ...] = field(default=())
    """Container images."""


def _container_refs(
    container: Mapping[str, Any], path: str, kind: str, name: str
) -> tuple[list[ValueRef], list[ConfigMapUse]]:
    refs: list[ValueRef] = []
    uses: list[ConfigMapUse] = []
    where = f"in {kind} {name}"
    for i, raw in enumerate(_list(container.get("env"), f"{path}.env")):
        env = _mapping(raw, f"{path}.env[{i}]")
        env_name = _str(env.get("name"), f"{path}.env[{i}].name", required=True)
        if env.get("value") is not None:
            value = _str(env.get("value"), f"{path}.env[{i}].value")
            refs.extend(
                ValueRef(r, f"env {env_name}={value} {where}", verb_of_key(env_name))
                for r in references_in_value(value, env_name)
            )
        source = _mapping(env.get("valueFrom"), f"{path}.env[{i}].valueFrom")
        cm = _mapping(source.get("configMapKeyRef"), f"{path}.env[{i}].valueFrom.configMapKeyRef")
        if cm:
            cm_where = f"{path}.env[{i}].valueFrom.configMapKeyRef"
            uses.append(
                ConfigMapUse(
                    _str(cm.get("name"), f"{cm_where}.name", required=True),
                    _str(cm.get("key"), f"{cm_where}.key", required=True),
                    env_name,
                )
            )
    for i, raw in enumerate(_list(container.get("envFrom"), f"{path}.envFrom")):
        env_from = _mapping(raw, f"{path}.envFrom[{i}]")
        cm = _mapping(env_from.get("configMapRef"), f"{path}.envFrom[{i}].configMapRef")
        if cm:
            uses.append(
                ConfigMapUse(
                    _str(cm.get("name"), f"{path}.envFrom[{i}].configMapRef.name", required=True),
                    None,
                    None,
                    _str(env_from.get("prefix"), f"{path}.envFrom[{i}].prefix"),
                )
            )
    for field_name in ("command", "args"):
        args = [
            _str(a, f"{path}.{field_name}[{j}]")
            for j, a in enumerate(_list(container.get(field_name), f"{path}.{field_name}"))
        ]
        refs.extend(
            ValueRef(r, f"{field_name} {shown!r} {where}", verb_of_key(shown.split(" ")[0]))
            for shown, r in references_in_args(args)
        )
    return refs, uses


def _depends_on(annotations: Mapping[str, str], path: str, kind: str, name: str) -> list[ValueRef]:
    raw = annotations.get(ANNOTATION_DEPENDS_ON)
    if raw is None:
        return []
    refs = []
    for item in (p.strip() for p in raw.split(",")):
        if not item:
            continue
        namespace, _, svc = item.rpartition("/")
        if not re.fullmatch(r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?", svc) or "/" in namespace:
            raise GraphInputError(
                f"{path}.{ANNOTATION_DEPENDS_ON}: {item!r} is not a Service name or namespace/name"
            )
        refs.append(
            ValueRef(
                HostRef(svc, namespace or None, Confidence.ANNOTATION),
                f"annotation {ANNOTATION_DEPENDS_ON}: {raw} on {kind} {name}",
                EdgeType.DEPENDS_ON,
            )
        )
    return refs


def parse_workload(obj: Mapping[str, Any]) -> Workload:
    """A Deployment, StatefulSet or DaemonSet (``kind`` says which)."""
    kind = _str(obj.get("kind"), "kind", required=True)
    if kind not in WORKLOAD_KINDS:
        raise GraphInputError(f"kind: {kind!r} is not one of {', '.join(WORKLOAD_KINDS)}")
    name, namespace, annotations = _meta(obj)
    spec = _mapping(obj.get("spec"), "spec")
    template = _mapping(spec.get("template"), "spec.template")
    tmeta = _mapping(template.get("metadata"), "spec.template.metadata")
    labels = _str_map(tmeta.get("labels"), "spec.template.metadata.labels")
    t_annotations = _str_map(tmeta.get("annotations"), "spec.template.metadata.annotations")
    merged = {**t_annotations, **annotations}
    pod = _mapping(template.get("spec"), "spec.template.spec")
    refs: list[ValueRef] = []
    uses: list[ConfigMapUse] = []
    images: list[str] = []
    for group in ("initContainers", "containers"):
        for i, raw in enumerate(_list(pod.get(group), f"spec.template.spec.{group}")):
            path = f"spec.template.spec.{group}[{i}]"
            container = _mapping(raw, path)
            images.append(_str(container.get("image"), f"{path}.image"))
            found, used = _container_refs(container, path, kind, name)
            refs.extend(found)
            uses.extend(used)
    refs.extend(_depends_on(merged, "metadata.annotations", kind, name))
    declared = _declared_type(merged, "metadata.annotations")
    return Workload(
        key=NodeKey(kind, namespace, name),
        labels=labels,
        node_type=declared or infer_node_type(name, images),
        critical=_critical(merged),
        replicas=_int(spec.get("replicas"), "spec.replicas"),
        refs=tuple(refs),
        configmaps=tuple(uses),
        images=tuple(i for i in images if i),
    )


# ---------------------------------------------------------------------------------------------
# Services, Ingresses, ConfigMaps
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Service:
    """A Service: its selector and what its annotations say."""

    key: NodeKey
    """Kind Service, namespace, name."""
    selector: tuple[tuple[str, str], ...]
    """``spec.selector`` (empty: selects nothing; endpoints are managed by hand)."""
    declared_type: NodeType | None
    """``precedent.dev/service-type``, or external for ``type: ExternalName``."""
    critical: bool
    """``precedent.dev/tier: critical``."""
    external_name: str | None = None
    """``spec.externalName`` for ExternalName Services."""


def parse_service(obj: Mapping[str, Any]) -> Service:
    """A v1 Service."""
    name, namespace, annotations = _meta(obj)
    spec = _mapping(obj.get("spec"), "spec")
    selector = tuple(sorted(_str_map(spec.get("selector"), "spec.selector").items()))
    external = _str(spec.get("externalName"), "spec.externalName") or None
    declared = _declared_type(annotations, "metadata.annotations")
    if declared is None and _str(spec.get("type"), "spec.type") == "ExternalName":
        declared = NodeType.EXTERNAL
    return Service(
        NodeKey("Service", namespace, name), selector, declared, _critical(annotations), external
    )


@dataclass(frozen=True, slots=True)
class Ingress:
    """An Ingress: the Services its rules and default backend send traffic to."""

    key: NodeKey
    """Kind Ingress, namespace, name."""
    backends: tuple[tuple[str, str], ...]
    """(Service name, evidence) pairs, in the order the rules list them."""
    critical: bool
    """``precedent.dev/tier: critical``."""


def _backend(value: Any, path: str) -> str | None:
    body = _mapping(value, path)
    service = _mapping(body.get("service"), f"{path}.service")
    if service:
        return _str(service.get("name"), f"{path}.service.name", required=True)
    return None


def parse_ingress(obj: Mapping[str, Any]) -> Ingress:
    """A networking.k8s.io/v1 Ingress."""
    name, namespace, annotations = _meta(obj)
    spec = _mapping(obj.get("spec"), "spec")
    found: dict[str, str] = {}
    default = _backend(spec.get("defaultBackend"), "spec.defaultBackend")
    if default:
        found[default] = f"defaultBackend service {default} in Ingress {name}"
    for i, raw in enumerate(_list(spec.get("rules"), "spec.rules")):
        rule = _mapping(raw, f"spec.rules[{i}]")
        host = _str(rule.get("host"), f"spec.rules[{i}].host") or "*"
        http = _mapping(rule.get("http"), f"spec.rules[{i}].http")
        for j, raw_path in enumerate(_list(http.get("paths"), f"spec.rules[{i}].http.paths")):
            where = f"spec.rules[{i}].http.paths[{j}]"
            path = _mapping(raw_path, where)
            svc = _backend(path.get("backend"), f"{where}.backend")
            if svc and svc not in found:
                route = host + _str(path.get("path"), f"{where}.path")
                found[svc] = f"rule {route} → service {svc} in Ingress {name}"
    return Ingress(
        NodeKey("Ingress", namespace, name), tuple(found.items()), _critical(annotations)
    )


def parse_configmap(obj: Mapping[str, Any]) -> tuple[str, str, dict[str, str]]:
    """A ConfigMap's (namespace, name, data)."""
    name, namespace, _ = _meta(obj)
    return namespace, name, _str_map(obj.get("data"), "data")


# ---------------------------------------------------------------------------------------------
# NetworkPolicies, PDBs, HPAs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyPeer:
    """One ``from``/``to`` peer: pods matching ``pods`` in namespaces matching ``namespaces``
    (None: the policy's own namespace)."""

    pods: Selector
    """``podSelector`` (empty: every pod)."""
    namespaces: Selector | None
    """``namespaceSelector``, matched against ``kubernetes.io/metadata.name``."""

    @property
    def specific(self) -> bool:
        """False for a peer that allows everything: it says nothing about one pair."""
        return not self.pods.empty or (self.namespaces is not None and not self.namespaces.empty)

    def admits(self, namespace: str, labels: Mapping[str, str], policy_namespace: str) -> bool:
        """Whether a pod with ``labels`` in ``namespace`` is this peer."""
        if self.namespaces is None:
            if namespace != policy_namespace:
                return False
        elif not self.namespaces.matches({"kubernetes.io/metadata.name": namespace}):
            return False
        return self.pods.matches(labels)


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """A NetworkPolicy's pod selector and its peers (ports are not compared)."""

    namespace: str
    """Where it lives (and the pods it selects)."""
    name: str
    """Its name."""
    pods: Selector
    """``spec.podSelector``."""
    ingress_from: tuple[PolicyPeer, ...]
    """Peers allowed in."""
    egress_to: tuple[PolicyPeer, ...]
    """Peers allowed out."""


def _peers(rules: Any, field_name: str, path: str) -> tuple[PolicyPeer, ...]:
    peers = []
    for i, raw in enumerate(_list(rules, path)):
        rule = _mapping(raw, f"{path}[{i}]")
        for j, raw_peer in enumerate(_list(rule.get(field_name), f"{path}[{i}].{field_name}")):
            where = f"{path}[{i}].{field_name}[{j}]"
            peer = _mapping(raw_peer, where)
            if "ipBlock" in peer and "podSelector" not in peer and "namespaceSelector" not in peer:
                continue
            ns_raw = peer.get("namespaceSelector")
            peers.append(
                PolicyPeer(
                    _label_selector(peer.get("podSelector"), f"{where}.podSelector"),
                    None
                    if ns_raw is None
                    else _label_selector(ns_raw, f"{where}.namespaceSelector"),
                )
            )
    return tuple(peers)


def parse_network_policy(obj: Mapping[str, Any]) -> NetworkPolicy:
    """A networking.k8s.io/v1 NetworkPolicy."""
    name, namespace, _ = _meta(obj)
    spec = _mapping(obj.get("spec"), "spec")
    return NetworkPolicy(
        namespace,
        name,
        _label_selector(spec.get("podSelector"), "spec.podSelector"),
        _peers(spec.get("ingress"), "from", "spec.ingress"),
        _peers(spec.get("egress"), "to", "spec.egress"),
    )


@dataclass(frozen=True, slots=True)
class Pdb:
    """A PodDisruptionBudget: which pods it protects and how."""

    namespace: str
    """Where it lives."""
    name: str
    """Its name."""
    selector: Selector
    """``spec.selector``."""
    budget: str
    """``minAvailable: 1`` or ``maxUnavailable: 25%``, as written."""


def parse_pdb(obj: Mapping[str, Any]) -> Pdb:
    """A policy/v1 PodDisruptionBudget."""
    name, namespace, _ = _meta(obj)
    spec = _mapping(obj.get("spec"), "spec")
    budget = ""
    for field_name in ("minAvailable", "maxUnavailable"):
        if spec.get(field_name) is not None:
            budget = f"{field_name}: {_str(spec.get(field_name), f'spec.{field_name}')}"
    return Pdb(namespace, name, _label_selector(spec.get("selector"), "spec.selector"), budget)


@dataclass(frozen=True, slots=True)
class Hpa:
    """A HorizontalPodAutoscaler's scale target and bounds."""

    namespace: str
    """Where it lives."""
    name: str
    """Its name."""
    target: NodeKey
    """``spec.scaleTargetRef`` as a node key."""
    min_replicas: int
    """``spec.minReplicas`` (1 when unset, as Kubernetes defaults it)."""
    max_replicas: int
    """``spec.maxReplicas``."""


def parse_hpa(obj: Mapping[str, Any]) -> Hpa:
    """An autoscaling/v2 (or v1) HorizontalPodAutoscaler."""
    name, namespace, _ = _meta(obj)
    spec = _mapping(obj.get("spec"), "spec")
    ref = _mapping(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    kind = _str(ref.get("kind"), "spec.scaleTargetRef.kind", required=True)
    target = _str(ref.get("name"), "spec.scaleTargetRef.name", required=True)
    maximum = _int(spec.get("maxReplicas"), "spec.maxReplicas")
    if maximum is None:
        raise GraphInputError("spec.maxReplicas: required field is missing")
    return Hpa(
        namespace,
        name,
        NodeKey(kind, namespace, target),
        _int(spec.get("minReplicas"), "spec.minReplicas") or 1,
        maximum,
    )
