"""MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding (``admissionregistration.k8s.io``
``v1``, GA in Kubernetes 1.36; ``v1beta1`` in 1.34 and 1.35 behind the ``MutatingAdmissionPolicy``
feature gate), applied as kube-apiserver's admission chain applies them.

Where they run: kube-apiserver admits a write in two phases, mutating admission first, then
object validation (schema, CEL rules) and validating admission. So a mutation's result is what
the CRD schema and every ValidatingAdmissionPolicy see; the store calls :meth:`mutate` after
defaulting and before :func:`precedent_sandbox.admission.validate`, and prunes the result to
the schema again.

What a binding does: "For a given admission request, each binding will cause its policy to be
evaluated N times, where N is 1 for policies/bindings that don't use params, otherwise N is the
number of parameters selected by the binding" (the MutatingAdmissionPolicyBinding reference).
Matching (``matchConstraints``, the binding's ``matchResources``), params (``paramKind`` +
``paramRef``) and ``matchConditions`` follow the validating policies (:mod:`.policy`). Then
``variables`` are computed and the ``mutations`` applied in order; each mutation sees the
object as the previous ones left it.

Mutations: ``patchType: JSONPatch`` — the expression evaluates to a list of
``JSONPatch{op, path, value, from}`` values, applied as RFC 6902 (add, remove, replace, move,
copy, test); ``patchType: ApplyConfiguration`` — the expression evaluates to an
``Object{…}`` value (``Object.spec{…}`` for nested fields) merged into the object: maps merge
field by field, everything else (lists included) replaces. The sandbox has no per-field
list-type information for merging keyed lists; Precedent's policies use JSONPatch.

Failures: "failurePolicy defines how to handle failures for the admission policy. Failures can
occur from CEL expression parse errors, type check errors, runtime errors and invalid or
mis-configured policy definitions or bindings. [...] Defaults to Fail." A failing expression
or a patch that cannot apply refuses the write under ``Fail`` and skips the policy under
``Ignore`` (its partial changes are dropped).

Reinvocation: ``reinvocationPolicy`` ``Never`` or ``IfNeeded``, required (kube-apiserver 1.36
has no default for it and refuses a policy without it): "the mutations
may be called at least one additional time as part of the admission evaluation if the object
being admitted is modified by other admission plugins after the initial mutation". After the
first pass, each ``IfNeeded`` binding whose result a later binding changed is invoked once
more, in order; no binding is invoked more than twice.

Timeouts: policies run in the API server's process and have no timeout setting (only CEL cost
budgets, which the sandbox does not meter).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from precedent_sandbox.auth import CURRENT_USER
from precedent_sandbox.errors import ApiError, FieldError
from precedent_sandbox.objects import Obj
from precedent_sandbox.patch import apply_json_patch
from precedent_sandbox.policy import (
    GROUP,
    PolicyError,
    _Authorizer,
    _error_text,
    _evaluate,
    _Request,
    _request_value,
)
from precedent_sandbox.rbac import Attributes
from precedent_sandbox.registry import ResourceType

if TYPE_CHECKING:
    from precedent_sandbox.store import Store

__all__ = ["MutatingPolicyAdmission", "mutating_policy_problems"]

PATCH_TYPES = ("ApplyConfiguration", "JSONPatch")
REINVOCATION = ("Never", "IfNeeded")


def mutating_policy_problems(spec: Any) -> list[FieldError]:
    """A MutatingAdmissionPolicy's spec as kube-apiserver validates it (the parts the sandbox
    evaluates): at least one mutation, each with a known patchType and its expression, and a
    known failurePolicy, and a reinvocationPolicy (required: kube-apiserver gives it no
    default)."""
    if not isinstance(spec, Mapping):
        return [FieldError("required", "spec")]
    found: list[FieldError] = []
    mutations = spec.get("mutations")
    if not isinstance(mutations, list) or not mutations:
        found.append(FieldError("required", "spec.mutations", detail="mutations must not be empty"))
    for index, mutation in enumerate(mutations if isinstance(mutations, list) else ()):
        path = f"spec.mutations[{index}]"
        kind = mutation.get("patchType") if isinstance(mutation, Mapping) else None
        if kind not in PATCH_TYPES:
            found.append(
                FieldError(
                    "unsupported" if kind else "required",
                    f"{path}.patchType",
                    kind,
                    'supported values: "ApplyConfiguration", "JSONPatch"',
                )
            )
            continue
        field = "jsonPatch" if kind == "JSONPatch" else "applyConfiguration"
        body = mutation.get(field)
        if not isinstance(body, Mapping) or not str(body.get("expression") or "").strip():
            found.append(FieldError("required", f"{path}.{field}.expression"))
    for key, allowed in (
        ("failurePolicy", ("Fail", "Ignore")),
        ("reinvocationPolicy", REINVOCATION),
    ):
        value = spec.get(key)
        if value is None and key == "reinvocationPolicy":
            found.append(FieldError("required", f"spec.{key}"))
        elif value is not None and value not in allowed:
            supported = ", ".join(f'"{a}"' for a in allowed)
            found.append(
                FieldError("unsupported", f"spec.{key}", value, f"supported values: {supported}")
            )
    return found


# -- CEL values ------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A CEL value as JSON (maps, lists, strings, numbers, booleans, null); an error inside a
    built value (CEL evaluates the fields of ``Name{…}`` lazily) is the expression's error."""
    if isinstance(value, CELEvalError):
        raise PolicyError(_error_text(value))
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.IntType | celtypes.UintType):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class _Typed(celtypes.MapType):
    """A value built by ``Name{field: value, …}``: a map that remembers its type's name."""

    def __init__(self, type_name: str, fields: Any) -> None:
        super().__init__(dict(fields or {}))
        self.type_name = type_name


class _Constructor:
    """``JSONPatch`` and ``Object`` (and ``Object.spec`` …): callables the CEL evaluator
    invokes with the field initialisers of ``Name{…}``."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __call__(self, fields: Any) -> _Typed:
        return _Typed(self.type_name, fields)


class _ObjectType(celtypes.MapType):
    """``Object``: callable as ``Object{…}``, and ``Object.spec`` … names the nested types."""

    def __init__(self, prefix: str = "Object") -> None:
        super().__init__({})
        self.prefix = prefix

    def __call__(self, fields: Any) -> _Typed:
        return _Typed(self.prefix, fields)

    def get(self, key: Any, default: Any = None) -> Any:
        return _ObjectType(f"{self.prefix}.{key}")

    def __getitem__(self, key: Any) -> Any:
        return _ObjectType(f"{self.prefix}.{key}")

    def __contains__(self, key: object) -> bool:
        return True


def _merge(target: Any, patch: Any) -> Any:
    """Apply configuration merge: maps merge field by field, anything else replaces."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return copy.deepcopy(patch)
    merged = dict(target)
    for key, value in patch.items():
        merged[key] = _merge(merged.get(key), value)
    return merged


# -- the dispatcher --------------------------------------------------------------------------


class MutatingPolicyAdmission:
    """Applies the stored mutating policies and bindings to a write, before validation."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _all(self, plural: str) -> list[Obj]:
        rtype = self.store.types.get((GROUP, plural))
        if rtype is None:
            return []
        return [s.obj for s in self.store.bucket(rtype).objects.get("", {}).values()]

    def mutate(
        self,
        operation: str,
        rtype: ResourceType,
        namespace: str,
        name: str,
        obj: Obj,
        old: Obj | None,
        subresource: str | None,
        *,
        dry_run: bool = False,
    ) -> Obj:
        """The object after every matching binding's mutations (raises on a failure under
        ``failurePolicy: Fail``)."""
        bindings = sorted(
            self._all("mutatingadmissionpolicybindings"), key=lambda b: b["metadata"]["name"]
        )
        if not bindings:
            return obj
        policies = {p["metadata"]["name"]: p for p in self._all("mutatingadmissionpolicies")}
        pairs = [
            (policies[str((b.get("spec") or {}).get("policyName", ""))], b)
            for b in bindings
            if str((b.get("spec") or {}).get("policyName", "")) in policies
        ]
        after: list[Obj | None] = []
        for policy, binding in pairs:
            obj = self._invoke(
                policy, binding, operation, rtype, namespace, name, obj, old, subresource, dry_run
            )
            after.append(copy.deepcopy(obj))
        # Reinvocation: an IfNeeded binding whose result a later binding changed runs once more.
        for index, (policy, binding) in enumerate(pairs):
            if (policy.get("spec") or {}).get("reinvocationPolicy") != "IfNeeded":
                continue
            if after[index] is not None and after[index] != obj:
                obj = self._invoke(
                    policy,
                    binding,
                    operation,
                    rtype,
                    namespace,
                    name,
                    obj,
                    old,
                    subresource,
                    dry_run,
                )
                after[index] = None  # at most one reinvocation
        return obj

    def _invoke(
        self,
        policy: Obj,
        binding: Obj,
        operation: str,
        rtype: ResourceType,
        namespace: str,
        name: str,
        obj: Obj,
        old: Obj | None,
        subresource: str | None,
        dry_run: bool,
    ) -> Obj:
        validating = self.store.policies
        request = _Request(
            operation,
            rtype,
            namespace,
            name,
            subresource or "",
            obj,
            old,
            dry_run,
            CURRENT_USER.get(),
        )
        spec = policy.get("spec") or {}
        binding_spec = binding.get("spec") or {}
        if not validating._matches(spec.get("matchConstraints"), request, binding=False):
            return obj
        if not validating._matches(binding_spec.get("matchResources"), request, binding=True):
            return obj
        fail = spec.get("failurePolicy", "Fail") != "Ignore"
        label = (
            f"MutatingAdmissionPolicy '{policy['metadata']['name']}' with binding "
            f"'{binding['metadata']['name']}'"
        )
        try:
            params_list = validating._params(spec, binding_spec, request)
            current = copy.deepcopy(obj)
            for params in params_list:
                current = self._apply(spec, request, current, params)
        except PolicyError as error:
            if fail:
                raise _refused(rtype, name, obj, f"{label} denied request: {error}") from None
            return obj
        return current

    def _apply(self, spec: Obj, request: _Request, obj: Obj, params: Any) -> Obj:
        rtype = request.rtype
        attrs = Attributes(
            "",
            group=rtype.group,
            version=rtype.version,
            resource=rtype.plural,
            subresource=request.subresource,
            namespace=request.namespace,
            name=request.name,
        )
        validating = self.store.policies
        namespace_object = validating._namespace(request.namespace) if rtype.namespaced else None
        variables = celtypes.MapType({})

        def activation(current: Obj) -> dict[str, Any]:
            return {
                "object": json_to_cel(current),
                "oldObject": json_to_cel(request.old) if request.old is not None else None,
                "request": json_to_cel(_request_value(request)),
                "params": json_to_cel(params) if params is not None else None,
                "namespaceObject": (
                    json_to_cel(namespace_object) if namespace_object is not None else None
                ),
                "authorizer": _Authorizer(request.user, validating.authorize, attrs),
                "variables": variables,
                "JSONPatch": _Constructor("JSONPatch"),
                "Object": _ObjectType(),
            }

        first = activation(obj)
        for condition in spec.get("matchConditions") or ():
            if not bool(_evaluate(str(condition.get("expression", "")), first)):
                return obj
        for variable in spec.get("variables") or ():
            value = _evaluate(str(variable.get("expression", "")), first)
            variables[celtypes.StringType(str(variable.get("name", "")))] = value
        for index, mutation in enumerate(spec.get("mutations") or ()):
            kind = mutation.get("patchType")
            field = "jsonPatch" if kind == "JSONPatch" else "applyConfiguration"
            expression = str((mutation.get(field) or {}).get("expression", ""))
            try:
                result = _evaluate(expression, activation(obj))
            except PolicyError as error:
                raise PolicyError(
                    f"mutations[{index}]: expression '{expression}' resulted in error: {error}"
                ) from None
            obj = _patched(obj, kind, result, index)
        return obj


def _patched(obj: Obj, kind: Any, result: Any, index: int) -> Obj:
    if kind == "JSONPatch":
        if not isinstance(result, list):
            raise PolicyError(f"mutations[{index}]: JSONPatch expression must return a list")
        operations = []
        for item in result:
            if not isinstance(item, _Typed) or item.type_name != "JSONPatch":
                raise PolicyError(
                    f"mutations[{index}]: each item of a JSONPatch list must be a JSONPatch{{}}"
                )
            operations.append(_plain(item))
        try:
            patched = apply_json_patch(copy.deepcopy(obj), operations)
        except ApiError as error:
            raise PolicyError(f"mutations[{index}]: JSON patch: {error.message}") from None
        if not isinstance(patched, dict):
            raise PolicyError(f"mutations[{index}]: JSON patch must leave an object")
        return patched
    if not isinstance(result, _Typed) or result.type_name != "Object":
        raise PolicyError(f"mutations[{index}]: applyConfiguration must return an Object{{}}")
    merged = _merge(obj, _plain(result))  # PolicyError names the failing field
    return merged if isinstance(merged, dict) else obj


def _refused(rtype: ResourceType, name: str, obj: Obj, message: str) -> ApiError:
    if not name:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or meta.get("generateName") or "Unknown")
    details: dict[str, Any] = {"name": name, "kind": rtype.plural, "causes": [{"message": message}]}
    if rtype.group:
        details["group"] = rtype.group
    return ApiError(422, "Invalid", f'{rtype.qualified} "{name}" is invalid: {message}', details)
