"""Admission: what a write must look like before the store commits it.

Decoding the body against its resource type, pruning to ObjectMeta and the schema (unknown
fields reported per ``fieldValidation``), the defaults set on create, and validation: object
metadata, the CRD's ``openAPIV3Schema``, its CEL rules (transition rules see the old object),
CRD acceptability, and delete preconditions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from precedent_sandbox import builtin_schemas
from precedent_sandbox import errors as api_errors
from precedent_sandbox.cel import check_rules
from precedent_sandbox.errors import FieldError, GoLiteral
from precedent_sandbox.meta import validate_metadata
from precedent_sandbox.mutation import mutating_policy_problems
from precedent_sandbox.objects import Obj, Stored, duplicate_fields
from precedent_sandbox.registry import ResourceType, crd_problems

__all__ = [
    "OBJECT_META_FIELDS",
    "allocate",
    "check_crd_update",
    "check_preconditions",
    "decode_body",
    "defaults_on_create",
    "defaults_on_update",
    "field_validation",
    "normalize",
    "param_ref_problems",
    "validate",
]

# ObjectMeta fields a client may send; anything else under metadata is pruned (and reported).
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


def decode_body(rtype: ResourceType, body: Any) -> Obj:
    """The body as an object of ``rtype`` (kind and apiVersion set); 400 if it cannot be."""
    if not isinstance(body, dict):
        raise api_errors.bad_request(
            f"the body of the request could not be decoded as a {rtype.kind}"
        )
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if kind not in (None, "", rtype.kind):
        raise api_errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rtype.api_version()})"
            if api_version not in (None, "", rtype.api_version())
            else f'{kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
            "the kind does not match"
        )
    if api_version not in (None, "") and api_version not in [
        rtype.api_version(v) for v in rtype.served_versions
    ]:
        raise api_errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rtype.api_version()})"
        )
    body["kind"] = rtype.kind
    body["apiVersion"] = rtype.api_version()
    meta = body.get("metadata")
    if meta is None:
        meta = body["metadata"] = {}
    if not isinstance(meta, dict):
        raise api_errors.bad_request("metadata must be an object")
    return body


def normalize(rtype: ResourceType, obj: Obj) -> list[str]:
    """Prune metadata to ObjectMeta and the rest to the schema (a CRD's, or the built-in kind's
    definition); return what ``fieldValidation`` reports: ``unknown field "…"`` for each pruned
    path, then ``duplicate field "…"`` for each key the request's JSON repeated."""
    duplicates = duplicate_fields(obj)
    unknown: list[str] = []
    meta = obj["metadata"]
    for key in list(meta):
        if key not in OBJECT_META_FIELDS:
            del meta[key]
            unknown.append(f"metadata.{key}")
    if meta.get("managedFields") is not None:
        meta.pop("managedFields")  # field management is not emulated
    schema = rtype.schema
    head = {k: obj.pop(k) for k in ("apiVersion", "kind", "metadata")}
    if schema is not None:
        schema.normalize(obj, "", unknown)
    else:
        definition = builtin_schemas.definition_for(rtype.group, rtype.version, rtype.kind)
        if definition is not None:
            builtin_schemas.prune_unknown(definition, obj, unknown)
    obj.update(head)
    return [f'unknown field "{u}"' for u in unknown] + [
        f'duplicate field "{d}"' for d in duplicates
    ]


def field_validation(rtype: ResourceType, problems: list[str], directive: str) -> tuple[str, ...]:
    """``problems`` (from :func:`normalize`) as warnings (``Warn``, the default), a 400 naming
    them all (``Strict``), or nothing (``Ignore``), as kube-apiserver's field validation."""
    if not problems or directive == "Ignore":
        return ()
    if directive == "Strict":
        raise api_errors.bad_request(
            f'{rtype.kind} in version "{rtype.version}" cannot be handled as a '
            f"{rtype.kind}: strict decoding error: {', '.join(problems)}"
        )
    return tuple(problems)


def validate(rtype: ResourceType, obj: Obj, old: Obj | None, name: str) -> None:
    """Metadata, schema, CEL rules and CRD checks; 422 naming every invalid field."""
    meta = obj["metadata"]
    found = validate_metadata(
        meta,
        namespace_like=rtype.plural == "namespaces",
        path_segment=rtype.group == "rbac.authorization.k8s.io",
    )
    schema = rtype.schema
    if schema is not None:
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        schema_errors: list[FieldError] = []
        schema.validate(body, "", schema_errors)
        found.extend(schema_errors)
        # apiextensions-apiserver (hasBlockingErr) skips the CEL rules when the schema found a
        # type, required, enum, too-long or too-many error, and says so in one more cause whose
        # field path is nil; other schema errors (a pattern, a bound) do not stop the rules.
        blocking = any(
            e.kind in ("required", "type", "unsupported", "too_long", "too_many")
            for e in schema_errors
        )
        if blocking and schema.has_rules:
            found.append(
                FieldError(
                    "invalid",
                    "<nil>",
                    GoLiteral("null"),
                    "some validation rules were not checked because the object was invalid; "
                    "correct the existing errors to complete validation",
                )
            )
        if not blocking and schema.has_rules:
            previous = (
                {k: v for k, v in old.items() if k not in ("apiVersion", "kind", "metadata")}
                if old is not None
                else None
            )
            check_rules(schema, body, previous, "", found)
    if rtype.plural == "customresourcedefinitions":
        found.extend(crd_problems(obj))
    if rtype.strategy is not None:
        found.extend(rtype.strategy.validate(obj, old))
    if rtype.group == "admissionregistration.k8s.io" and rtype.plural in (
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicybindings",
    ):
        found.extend(param_ref_problems((obj.get("spec") or {}).get("paramRef")))
    if rtype.group == "admissionregistration.k8s.io" and rtype.plural == (
        "mutatingadmissionpolicies"
    ):
        found.extend(mutating_policy_problems(obj.get("spec")))
    if found:
        raise api_errors.invalid(rtype.kind, rtype.group, name or "", found)


def param_ref_problems(ref: Any, path: str = "spec.paramRef") -> list[FieldError]:
    """A binding's ``paramRef`` as kube-apiserver validates it: ``name`` or ``selector`` (not
    both), and ``parameterNotFoundAction`` Allow or Deny (required, no default)."""
    if ref is None:
        return []
    if not isinstance(ref, dict):
        return [FieldError("type", path, ref, "must be an object")]
    found: list[FieldError] = []
    name, selector = ref.get("name"), ref.get("selector")
    if name and selector is not None:
        exclusive = "name and selector are mutually exclusive"
        found.append(FieldError("forbidden", f"{path}.name", detail=exclusive))
        found.append(FieldError("forbidden", f"{path}.selector", detail=exclusive))
    if not name and selector is None:
        found.append(
            FieldError("required", path, detail="one of name or selector must be specified")
        )
    action = ref.get("parameterNotFoundAction")
    if not action:
        found.append(FieldError("required", f"{path}.parameterNotFoundAction"))
    elif action not in ("Deny", "Allow"):
        found.append(
            FieldError(
                "unsupported",
                f"{path}.parameterNotFoundAction",
                action,
                'supported values: "Deny", "Allow"',
            )
        )
    return found


def defaults_on_create(rtype: ResourceType, obj: Obj) -> None:
    """What the server fills in on create: namespace finalizer and phase, secret type, and the
    defaults of the workload and network kinds."""
    if rtype.strategy is not None:
        rtype.strategy.defaults(obj)
    elif rtype.plural == "namespaces":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
        labels = obj["metadata"].setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")
    elif rtype.plural == "secrets" and not obj.get("type"):
        obj["type"] = "Opaque"


def defaults_on_update(rtype: ResourceType, obj: Obj) -> None:
    """Defaults decoding applies to every write of a workload or network kind, not just create."""
    if rtype.strategy is not None:
        rtype.strategy.defaults(obj)


def allocate(
    rtype: ResourceType, obj: Obj, old: Obj | None, others: Callable[[], list[Obj]]
) -> None:
    """What the server allocates (a Service's cluster IP, node ports); 422 if it cannot.
    ``others`` lists the objects the allocation must avoid: called only for a type that
    allocates (a pass over every stored object of the type)."""
    if rtype.strategy is None or rtype.strategy.allocate is None:
        return
    errors = rtype.strategy.allocate(obj, old, others())
    if errors:
        raise api_errors.invalid(rtype.kind, rtype.group, obj["metadata"].get("name", ""), errors)


def check_crd_update(obj: Obj, old: Obj) -> None:
    """A CRD update may not change its scope."""
    if obj["spec"].get("scope") != old["spec"].get("scope"):
        raise api_errors.invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            obj["metadata"]["name"],
            [FieldError("invalid", "spec.scope", obj["spec"].get("scope"), "field is immutable")],
        )


def check_preconditions(rtype: ResourceType, current: Stored, options: Obj) -> None:
    """DELETE ``preconditions``: 409 when the uid or resourceVersion differs."""
    pre = options.get("preconditions") or {}
    meta = current.obj["metadata"]
    name = meta["name"]
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise api_errors.conflict(
            rtype.qualified,
            name,
            f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
            f"{meta.get('uid')}",
        )
    if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(current.rv):
        raise api_errors.conflict(
            rtype.qualified,
            name,
            "Precondition failed: ResourceVersion in precondition: "
            f"{pre['resourceVersion']}, ResourceVersion in object meta: {current.rv}",
        )
