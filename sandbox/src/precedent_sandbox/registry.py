"""Resource types the sandbox serves: a few built-ins and every registered CRD."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from precedent_sandbox.cel import attach_rules
from precedent_sandbox.errors import FieldError
from precedent_sandbox.schema import Schema
from precedent_sandbox.table import NAME_COLUMN, Column, age, printer_columns
from precedent_sandbox.workloads import STRATEGIES, Strategy

__all__ = ["BUILTINS", "ResourceType", "crd_problems", "resource_type_from_crd"]

CR_VERBS = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]
_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})

Row = Callable[[dict[str, Any], datetime], list[Any]]


@dataclass(eq=False)
class ResourceType:
    """One served resource: names, scope, verbs, schema and how ``kubectl get`` prints it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    verbs: list[str] = field(default_factory=lambda: list(CR_VERBS))
    subresources: list[str] = field(default_factory=list)
    served_versions: list[str] = field(default_factory=list)
    schema: Schema | None = None
    columns: list[Column] = field(default_factory=list)
    builtin_columns: list[dict[str, Any]] = field(default_factory=list)
    builtin_row: Row | None = None
    field_selectors: frozenset[str] = _META_FIELDS
    has_generation: bool = True
    is_custom: bool = False
    crd_name: str | None = None
    list_kind: str = ""
    review: bool = False
    """A create-only review (SelfSubjectAccessReview …): answered, never stored."""
    strategy: Strategy | None = None
    """Defaults, validation, initial status and rows of a built-in workload or network kind."""

    def __post_init__(self) -> None:
        if not self.list_kind:
            self.list_kind = f"{self.kind}List"
        if not self.served_versions:
            self.served_versions = [self.version]

    @property
    def qualified(self) -> str:
        """``remediationrequests.precedent.dev``; core resources have no group suffix."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str | None = None) -> str:
        """``precedent.dev/v1alpha1``, or ``v1`` for the core group."""
        version = version or self.version
        return f"{self.group}/{version}" if self.group else version

    @property
    def has_status(self) -> bool:
        """Whether ``/status`` is a separate subresource."""
        return "status" in self.subresources

    def table_columns(self) -> list[dict[str, Any]]:
        """Column definitions for ``kubectl get``."""
        if self.builtin_row is not None:
            return self.builtin_columns
        return [NAME_COLUMN, *(c.definition for c in self.columns)]

    def table_cells(self, obj: dict[str, Any], now: datetime) -> list[Any]:
        """One row's cells."""
        if self.builtin_row is not None:
            return self.builtin_row(obj, now)
        name = obj.get("metadata", {}).get("name", "")
        return [name, *(c.cell(obj, now) for c in self.columns)]


def _column(
    name: str, kind: str = "string", description: str = "", priority: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": "",
        "description": description,
        "priority": priority,
    }


def _name(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _created(obj: dict[str, Any], now: datetime) -> str:
    return age(obj.get("metadata", {}).get("creationTimestamp"), now)


def _namespace_row(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(obj), obj.get("status", {}).get("phase", ""), _created(obj, now)]


def _event_row(obj: dict[str, Any], now: datetime) -> list[Any]:
    seen = obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("firstTimestamp")
    involved = obj.get("involvedObject", {})
    target = f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"
    return [
        age(seen, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        target,
        obj.get("message", ""),
    ]


def _configmap_row(obj: dict[str, Any], now: datetime) -> list[Any]:
    data = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_name(obj), data, _created(obj, now)]


def _secret_row(obj: dict[str, Any], now: datetime) -> list[Any]:
    data = len(obj.get("data") or {}) + len(obj.get("stringData") or {})
    return [_name(obj), obj.get("type", "Opaque"), data, _created(obj, now)]


def _crd_row(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(obj), obj.get("metadata", {}).get("creationTimestamp", "")]


_AGE = _column("Age", "string")
_BUILTIN_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _builtins() -> list[ResourceType]:
    return [
        ResourceType(
            group="",
            version="v1",
            plural="namespaces",
            singular="namespace",
            kind="Namespace",
            namespaced=False,
            short_names=["ns"],
            verbs=["create", "delete", "get", "list", "patch", "update", "watch"],
            subresources=["status"],
            builtin_columns=[NAME_COLUMN, _column("Status"), _AGE],
            builtin_row=_namespace_row,
            field_selectors=frozenset({"metadata.name", "status.phase"}),
            has_generation=False,
        ),
        ResourceType(
            group="",
            version="v1",
            plural="events",
            singular="event",
            kind="Event",
            namespaced=True,
            short_names=["ev"],
            verbs=list(_BUILTIN_VERBS),
            builtin_columns=[
                _column("Last Seen"),
                _column("Type"),
                _column("Reason"),
                _column("Object"),
                _column("Message"),
            ],
            builtin_row=_event_row,
            field_selectors=_META_FIELDS
            | {
                f"involvedObject.{f}"
                for f in (
                    "kind",
                    "namespace",
                    "name",
                    "uid",
                    "apiVersion",
                    "resourceVersion",
                    "fieldPath",
                )
            }
            | {"reason", "reportingComponent", "source", "type"},
            has_generation=False,
        ),
        ResourceType(
            group="",
            version="v1",
            plural="configmaps",
            singular="configmap",
            kind="ConfigMap",
            namespaced=True,
            short_names=["cm"],
            verbs=list(_BUILTIN_VERBS),
            builtin_columns=[NAME_COLUMN, _column("Data", "integer"), _AGE],
            builtin_row=_configmap_row,
            has_generation=False,
        ),
        ResourceType(
            group="",
            version="v1",
            plural="secrets",
            singular="secret",
            kind="Secret",
            namespaced=True,
            verbs=list(_BUILTIN_VERBS),
            builtin_columns=[NAME_COLUMN, _column("Type"), _column("Data", "integer"), _AGE],
            builtin_row=_secret_row,
            field_selectors=_META_FIELDS | {"type"},
            has_generation=False,
        ),
        ResourceType(
            group="apiextensions.k8s.io",
            version="v1",
            plural="customresourcedefinitions",
            singular="customresourcedefinition",
            kind="CustomResourceDefinition",
            namespaced=False,
            short_names=["crd", "crds"],
            categories=["api-extensions"],
            verbs=list(_BUILTIN_VERBS),
            subresources=["status"],
            builtin_columns=[NAME_COLUMN, _column("Created At", "date")],
            builtin_row=_crd_row,
        ),
    ]


def _plain(group: str, plural: str, kind: str, *, namespaced: bool, **extra: Any) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        verbs=list(_BUILTIN_VERBS),
        builtin_columns=[NAME_COLUMN, _column("Created At", "date")],
        builtin_row=_crd_row,
        has_generation=False,
        **extra,
    )


def _review(group: str, plural: str, kind: str) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=False,
        verbs=["create"],
        has_generation=False,
        review=True,
    )


_RBAC = "rbac.authorization.k8s.io"
_ADMISSION = "admissionregistration.k8s.io"


def _security_builtins() -> list[ResourceType]:
    """ServiceAccounts, RBAC, Validating and MutatingAdmissionPolicies, webhook configurations
    and the self-reviews."""
    return [
        _plain("", "serviceaccounts", "ServiceAccount", namespaced=True, short_names=["sa"]),
        _plain(_RBAC, "roles", "Role", namespaced=True),
        _plain(_RBAC, "rolebindings", "RoleBinding", namespaced=True),
        _plain(_RBAC, "clusterroles", "ClusterRole", namespaced=False),
        _plain(_RBAC, "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
        _plain(
            _ADMISSION,
            "validatingadmissionpolicies",
            "ValidatingAdmissionPolicy",
            namespaced=False,
            categories=["api-extensions"],
            subresources=["status"],
        ),
        _plain(
            _ADMISSION,
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
            namespaced=False,
            categories=["api-extensions"],
        ),
        # Mutating policies: v1 (Kubernetes 1.36) and v1beta1 (1.34 and 1.35), one schema.
        _plain(
            _ADMISSION,
            "mutatingadmissionpolicies",
            "MutatingAdmissionPolicy",
            namespaced=False,
            categories=["api-extensions"],
            served_versions=["v1", "v1beta1"],
        ),
        _plain(
            _ADMISSION,
            "mutatingadmissionpolicybindings",
            "MutatingAdmissionPolicyBinding",
            namespaced=False,
            categories=["api-extensions"],
            served_versions=["v1", "v1beta1"],
        ),
        # Stored so that the install applies; the sandbox never calls a webhook (docs/sandbox.md).
        _plain(
            _ADMISSION,
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            namespaced=False,
            categories=["api-extensions"],
        ),
        _review("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
        _review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview"),
    ]


_CONTAINERS = _column(
    "Containers", description="Names of each container in the template.", priority=1
)
_IMAGES = _column(
    "Images", description="Images referenced by each container in the template.", priority=1
)
_SELECTOR = _column("Selector", description="Label selector for pods.", priority=1)
_CREATED = _column("Age", description="CreationTimestamp of the object.")

# Column definitions of pkg/printers/internalversion (the server always sends the wide ones).
_WORKLOAD_COLUMNS: dict[str, list[dict[str, Any]]] = {
    "deployments": [
        NAME_COLUMN,
        _column("Ready", description="Number of the pod with ready state"),
        _column(
            "Up-to-date",
            description="Pods with the desired template spec.",
        ),
        _column(
            "Available",
            description="Pods available for at least minReadySeconds.",
        ),
        _CREATED,
        _CONTAINERS,
        _IMAGES,
        _SELECTOR,
    ],
    "statefulsets": [
        NAME_COLUMN,
        _column("Ready", description="Number of the pod with ready state"),
        _CREATED,
        _CONTAINERS,
        _IMAGES,
    ],
    "daemonsets": [
        NAME_COLUMN,
        _column("Desired", "integer", "Nodes that should run the daemon pod."),
        _column(
            "Current",
            "integer",
            "Nodes running the daemon pod.",
        ),
        _column(
            "Ready",
            "integer",
            "Nodes with the daemon pod ready.",
        ),
        _column("Up-to-date", "integer", "Nodes running the updated daemon pod."),
        _column(
            "Available",
            "integer",
            "Nodes with the daemon pod available.",
        ),
        _column(
            "Node Selector",
            description="Labels a node must have to run the pod.",
        ),
        _CREATED,
        _CONTAINERS,
        _IMAGES,
        _SELECTOR,
    ],
    "services": [
        NAME_COLUMN,
        _column("Type", description="type determines how the Service is exposed."),
        _column("Cluster-IP", description="clusterIP is the IP address of the service."),
        _column(
            "External-IP",
            description="Addresses outside the cluster for this service.",
        ),
        _column("Port(s)", description="The list of ports that are exposed by this service."),
        _CREATED,
        _column(
            "Selector",
            description="Pods the service routes traffic to.",
            priority=1,
        ),
    ],
    "ingresses": [
        NAME_COLUMN,
        _column(
            "Class",
            description="The IngressClass of the ingress",
        ),
        _column(
            "Hosts",
            description="Hosts requests are matched against",
        ),
        _column(
            "Address",
            description="Ingress points of the load-balancer",
        ),
        _column("Ports", description="Ports of TLS configurations that open"),
        _CREATED,
    ],
    "networkpolicies": [
        NAME_COLUMN,
        _column(
            "Pod-Selector",
            description="Pods the policy applies to.",
        ),
        _CREATED,
    ],
    "horizontalpodautoscalers": [
        NAME_COLUMN,
        _column(
            "Reference",
            description="The scaled resource.",
        ),
        _column(
            "Targets",
            description="Current and target metrics.",
        ),
        _column(
            "MinPods",
            description="Lower limit of replicas.",
        ),
        _column(
            "MaxPods",
            description="Upper limit of replicas.",
        ),
        _column(
            "Replicas",
            description="Current number of replicas.",
        ),
        _CREATED,
    ],
    "poddisruptionbudgets": [
        NAME_COLUMN,
        _column("Min Available", description="The minimum number of pods that must be available."),
        _column(
            "Max Unavailable", description="The maximum number of pods that may be unavailable."
        ),
        _column(
            "Allowed Disruptions",
            "integer",
            "Pods that may be disrupted now.",
        ),
        _CREATED,
    ],
}


def _workload(
    group: str,
    version: str,
    plural: str,
    kind: str,
    short: str,
    *,
    status: bool = True,
    categories: tuple[str, ...] = (),
) -> ResourceType:
    strategy = STRATEGIES[plural]
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=True,
        short_names=[short],
        categories=list(categories),
        verbs=list(_BUILTIN_VERBS),
        subresources=["status"] if status else [],
        builtin_columns=_WORKLOAD_COLUMNS[plural],
        builtin_row=strategy.row,
        strategy=strategy,
    )


def _workload_builtins() -> list[ResourceType]:
    """apps/v1 workloads, Services, networking, autoscaling/v2 and policy/v1 kinds."""
    return [
        _workload("apps", "v1", "deployments", "Deployment", "deploy", categories=("all",)),
        _workload("apps", "v1", "statefulsets", "StatefulSet", "sts", categories=("all",)),
        _workload("apps", "v1", "daemonsets", "DaemonSet", "ds", categories=("all",)),
        _workload("", "v1", "services", "Service", "svc", categories=("all",)),
        _workload("networking.k8s.io", "v1", "ingresses", "Ingress", "ing"),
        _workload(
            "networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", "netpol", status=False
        ),
        _workload(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            "hpa",
            categories=("all",),
        ),
        _workload("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", "pdb"),
    ]


def _all_builtins() -> list[ResourceType]:
    return [*_builtins(), *_security_builtins(), *_workload_builtins()]


BUILTINS: Callable[[], list[ResourceType]] = _all_builtins


def crd_problems(crd: dict[str, Any]) -> list[FieldError]:
    """What makes a CRD unacceptable (the checks kopf and kubectl rely on, not all of them)."""
    errors: list[FieldError] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [FieldError("required", "spec")]
    group = spec.get("group")
    raw_names = spec.get("names")
    names: dict[str, Any] = raw_names if isinstance(raw_names, dict) else {}
    if not group:
        errors.append(FieldError("required", "spec.group"))
    for key in ("plural", "kind"):
        if not names.get(key):
            errors.append(FieldError("required", f"spec.names.{key}"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errors.append(
            FieldError(
                "unsupported",
                "spec.scope",
                spec.get("scope", ""),
                'supported values: "Cluster", "Namespaced"',
            )
        )
    name = crd.get("metadata", {}).get("name")
    if group and names.get("plural") and name != f"{names['plural']}.{group}":
        errors.append(
            FieldError("invalid", "metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        errors.append(
            FieldError("required", "spec.versions", None, "must have at least one version")
        )
        return errors
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        errors.append(
            FieldError(
                "invalid",
                "spec.versions",
                versions,
                "must have exactly one version marked as storage version",
            )
        )
    for index, version in enumerate(versions):
        if not isinstance(version, dict) or not version.get("name"):
            errors.append(FieldError("required", f"spec.versions[{index}].name"))
            continue
        raw = (version.get("schema") or {}).get("openAPIV3Schema")
        if raw is not None and not isinstance(raw, dict):
            errors.append(
                FieldError("invalid", f"spec.versions[{index}].schema.openAPIV3Schema", raw)
            )
            continue
        try:
            if raw is not None:
                Schema(raw)
            printer_columns(version.get("additionalPrinterColumns"))
        except (ValueError, TypeError, KeyError) as exc:
            errors.append(
                FieldError("invalid", f"spec.versions[{index}]", version["name"], str(exc))
            )
    return errors


def resource_type_from_crd(crd: dict[str, Any]) -> ResourceType:
    """A served resource for a CRD that :func:`crd_problems` accepted."""
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec["versions"] if v.get("served", True)] or spec["versions"]
    storage = next(v for v in spec["versions"] if v.get("storage"))
    chosen = storage if storage in versions else versions[0]
    raw_schema = (chosen.get("schema") or {}).get("openAPIV3Schema")
    schema = Schema(raw_schema) if raw_schema is not None else None
    if schema is not None:
        attach_rules(schema)
    selectable = {
        str(f.get("jsonPath", "")).lstrip(".") for f in chosen.get("selectableFields") or []
    }
    subresources = chosen.get("subresources") or spec.get("subresources") or {}
    return ResourceType(
        group=spec["group"],
        version=storage["name"],
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        kind=names["kind"],
        list_kind=names.get("listKind") or f"{names['kind']}List",
        namespaced=spec["scope"] == "Namespaced",
        short_names=list(names.get("shortNames") or []),
        categories=list(names.get("categories") or []),
        subresources=[s for s in ("status", "scale") if s in subresources],
        served_versions=[v["name"] for v in versions],
        schema=schema,
        columns=printer_columns(chosen.get("additionalPrinterColumns")),
        field_selectors=_META_FIELDS | frozenset(s for s in selectable if s),
        is_custom=True,
        crd_name=crd["metadata"]["name"],
    )
