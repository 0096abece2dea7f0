"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
(``admissionregistration.k8s.io/v1``), evaluated on every create, update, delete and
subresource write, after schema validation, as the real admission chain does.

A binding applies its policy (``spec.policyName``) to a request the policy's
``matchConstraints`` match and, if set, the binding's ``matchResources`` too (resourceRules
with ``x/status``-style subresources, operations, scope, resourceNames,
excludeResourceRules, namespaceSelector, objectSelector). Then, for each parameter object
(``paramKind`` + ``paramRef`` by name or selector, in a namespace), the ``matchConditions``
must all be true, the ``variables`` are computed in order and every ``validations``
expression must be true. A failed validation is acted on per ``validationActions``: ``Deny``
refuses the request (``reason``'s HTTP code, 422 ``Invalid`` by default), ``Warn`` adds a
``Warning`` header, ``Audit`` is accepted and does nothing (there is no audit log). An
expression that errors (or that ``cel-python`` cannot compile) follows ``failurePolicy``:
``Fail`` (the default) refuses, ``Ignore`` skips.

CEL sees ``object``, ``oldObject``, ``request`` (``operation``, ``subResource``,
``userInfo`` …), ``params``, ``namespaceObject``, ``variables`` and ``authorizer``, the
Kubernetes authorizer library (``authorizer.group(g).resource(r).namespace(ns).name(n)
.subresource(s).check(verb).allowed()``, ``authorizer.path(p)``,
``authorizer.serviceAccount(ns, name)``, ``authorizer.requestResource``), checked against the
sandbox's authorizer for the requesting user.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from precedent_sandbox.auth import CURRENT_USER, UserInfo
from precedent_sandbox.errors import ApiError
from precedent_sandbox.objects import Obj
from precedent_sandbox.rbac import Attributes, selector_matches
from precedent_sandbox.registry import ResourceType

if TYPE_CHECKING:
    from precedent_sandbox.store import Store

__all__ = ["PolicyAdmission"]

log = logging.getLogger(__name__)

GROUP = "admissionregistration.k8s.io"
Authorize = Callable[[UserInfo, Attributes], tuple[bool, str]]
_CODES = {"Unauthorized": 401, "Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}
_ENV = celpy.Environment()


class PolicyError(Exception):
    """An expression that failed to compile or to evaluate."""


# -- the authorizer CEL library --------------------------------------------------------------


class _Authorizer(celtypes.MapType):
    """``authorizer``: a map so that ``authorizer.requestResource`` is a field lookup."""

    def __init__(self, user: UserInfo, check: Authorize, request: Attributes) -> None:
        super().__init__({celtypes.StringType("requestResource"): _Check(user, check, request)})
        self.user = user
        self.check = check


@dataclass(frozen=True)
class _Check:
    """A resource or path check being built (``group(…).resource(…)…``)."""

    user: UserInfo
    authorize: Authorize
    attrs: Attributes


@dataclass(frozen=True)
class _Decision:
    """The result of ``check(verb)``."""

    allowed: bool
    reason: str


def _start(target: Any) -> _Check:
    if isinstance(target, _Authorizer):
        return _Check(target.user, target.check, Attributes(""))
    if isinstance(target, _Check):
        return target
    raise TypeError("not an authorizer")


def _with(**field: Any) -> Callable[[Any, Any], _Check]:
    (key,) = field

    def build(target: Any, value: Any) -> _Check:
        check = _start(target)
        changed: dict[str, Any] = {key: str(value)}
        return replace(check, attrs=replace(check.attrs, **changed))

    return build


def _path(target: Any, value: Any) -> _Check:
    check = _start(target)
    return replace(check, attrs=Attributes("", resource_request=False, path=str(value)))


def _service_account(target: Any, namespace: Any, name: Any) -> _Authorizer:
    if not isinstance(target, _Authorizer):
        raise TypeError("serviceAccount() is called on authorizer")
    user = UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        "",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )
    request = Attributes("")
    return _Authorizer(user, target.check, request)


def _check_verb(target: Any, verb: Any) -> _Decision:
    if not isinstance(target, _Check):
        raise TypeError("check() is called on a resource or path check")
    attrs = replace(target.attrs, verb=str(verb))
    allowed, reason = target.authorize(target.user, attrs)
    return _Decision(allowed, reason)


def _decision(getter: Callable[[_Decision], Any]) -> Callable[[Any], Any]:
    def read(target: Any) -> Any:
        if not isinstance(target, _Decision):
            raise TypeError("called on a check() result")
        return getter(target)

    return read


_FUNCTIONS: dict[str, Any] = {
    "group": _with(group=""),
    "resource": _with(resource=""),
    "subresource": _with(subresource=""),
    "namespace": _with(namespace=""),
    "name": _with(name=""),
    "path": _path,
    "serviceAccount": _service_account,
    "check": _check_verb,
    "allowed": _decision(lambda d: celtypes.BoolType(d.allowed)),
    "denied": _decision(lambda d: celtypes.BoolType(not d.allowed)),
    "reason": _decision(lambda d: celtypes.StringType(d.reason)),
    "errored": _decision(lambda d: celtypes.BoolType(False)),
    "error": _decision(lambda d: celtypes.StringType("")),
}

_PROGRAMS: dict[str, Any] = {}


def _program(expression: str) -> Any:
    found = _PROGRAMS.get(expression)
    if found is None:
        try:
            found = _ENV.program(_ENV.compile(expression), functions=_FUNCTIONS)
        except Exception as error:  # celpy's parse errors have no common base class
            log.warning("CEL expression %r does not compile: %s", expression, error)
            found = PolicyError(f"compilation failed: {str(error).splitlines()[0]}")
        _PROGRAMS[expression] = found
    return found


def _evaluate(expression: str, activation: Mapping[str, Any]) -> Any:
    program = _program(expression)
    if isinstance(program, PolicyError):
        raise program
    try:
        result = program.evaluate(dict(activation))
    except CELEvalError as error:
        raise PolicyError(_error_text(error)) from None
    except Exception as error:  # a library function given the wrong types
        raise PolicyError(str(error) or type(error).__name__) from None
    if isinstance(result, CELEvalError):
        raise PolicyError(_error_text(result))
    return result


def _error_text(error: CELEvalError) -> str:
    text = str(error.args[0]) if error.args else str(error)
    return text.split(" (in activation", 1)[0]


# -- matching ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Request:
    """One admission request as the matcher and CEL's ``request`` see it."""

    operation: str
    rtype: ResourceType
    namespace: str
    name: str
    subresource: str
    obj: Obj | None
    old: Obj | None
    dry_run: bool
    user: UserInfo


def _resource_matches(patterns: Any, resource: str, subresource: str) -> bool:
    for pattern in patterns or ():
        base, _, sub = str(pattern).partition("/")
        if not sub:
            if not subresource and base in ("*", resource):
                return True
        elif base in ("*", resource) and sub in ("*", subresource) and subresource:
            return True
    return False


def _rule_matches(rule: Any, request: _Request) -> bool:
    if not isinstance(rule, Mapping):
        return False
    rtype = request.rtype
    if not any(o in ("*", request.operation) for o in rule.get("operations") or ()):
        return False
    if not any(g in ("*", rtype.group) for g in rule.get("apiGroups") or ()):
        return False
    if not any(v in ("*", *rtype.served_versions) for v in rule.get("apiVersions") or ()):
        return False
    if not _resource_matches(rule.get("resources"), rtype.plural, request.subresource):
        return False
    names = rule.get("resourceNames") or ()
    if names and request.name not in names:
        return False
    scope = rule.get("scope") or "*"
    return not (
        (scope == "Cluster" and rtype.namespaced)
        or (scope == "Namespaced" and not rtype.namespaced)
    )


def _labels(obj: Obj | None) -> Mapping[str, Any] | None:
    return (obj or {}).get("metadata", {}).get("labels") if obj else None


class PolicyAdmission:
    """Evaluates the stored policies and bindings on each write."""

    def __init__(self, store: Store, authorize: Authorize) -> None:
        self.store = store
        self.authorize = authorize

    def _all(self, plural: str) -> list[Obj]:
        rtype = self.store.types.get((GROUP, plural))
        if rtype is None:
            return []
        return [s.obj for s in self.store.bucket(rtype).objects.get("", {}).values()]

    def active(self) -> bool:
        """Whether any binding exists (nothing to do otherwise)."""
        rtype = self.store.types.get((GROUP, "validatingadmissionpolicybindings"))
        return rtype is not None and bool(self.store.bucket(rtype).objects.get(""))

    def admit(
        self,
        operation: str,
        rtype: ResourceType,
        namespace: str,
        name: str,
        obj: Obj | None,
        old: Obj | None,
        subresource: str | None,
        *,
        dry_run: bool = False,
    ) -> tuple[str, ...]:
        """Apply every matching binding; raise the first denial, return the warnings."""
        if not self.active():
            return ()
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
        policies = {p["metadata"]["name"]: p for p in self._all("validatingadmissionpolicies")}
        warnings: list[str] = []
        for binding in sorted(
            self._all("validatingadmissionpolicybindings"), key=lambda b: b["metadata"]["name"]
        ):
            spec = binding.get("spec") or {}
            policy = policies.get(str(spec.get("policyName", "")))
            if policy is None:
                continue
            for message, reason in self._apply(policy, binding, request):
                label = (
                    f"ValidatingAdmissionPolicy '{policy['metadata']['name']}' with binding "
                    f"'{binding['metadata']['name']}'"
                )
                actions = spec.get("validationActions") or ["Deny"]
                if "Deny" in actions:
                    raise _denied(request, f"{label} denied request: {message}", reason)
                if "Warn" in actions:
                    warnings.append(f"Validation failed for {label}: {message}")
        return tuple(warnings)

    def _matches(self, match: Any, request: _Request, *, binding: bool) -> bool:
        if not isinstance(match, Mapping):
            return binding  # a binding without matchResources takes all the policy matches
        rules = match.get("resourceRules")
        # A binding's matchResources without resourceRules does not narrow the policy's.
        if (rules or not binding) and not any(_rule_matches(r, request) for r in rules or ()):
            return False
        if any(_rule_matches(r, request) for r in match.get("excludeResourceRules") or ()):
            return False
        object_selector = match.get("objectSelector")
        if object_selector and not (
            selector_matches(object_selector, _labels(request.obj))
            or (request.old is not None and selector_matches(object_selector, _labels(request.old)))
        ):
            return False
        namespace_selector = match.get("namespaceSelector")
        if namespace_selector:
            if request.rtype.plural == "namespaces":
                labels = _labels(request.obj or request.old)
            elif request.rtype.namespaced:
                labels = _labels(self._namespace(request.namespace))
            else:
                return True
            if not selector_matches(namespace_selector, labels):
                return False
        return True

    def _namespace(self, name: str) -> Obj | None:
        if not name:
            return None
        found = self.store.bucket(self.store.lookup("", "v1", "namespaces")).objects
        stored = found.get("", {}).get(name)
        return stored.obj if stored is not None else None

    def _apply(self, policy: Obj, binding: Obj, request: _Request) -> list[tuple[str, str]]:
        """The failed validations (message, reason) of one policy through one binding."""
        spec = policy.get("spec") or {}
        if not self._matches(spec.get("matchConstraints"), request, binding=False):
            return []
        if not self._matches(
            (binding.get("spec") or {}).get("matchResources"), request, binding=True
        ):
            return []
        fail = spec.get("failurePolicy", "Fail") != "Ignore"
        try:
            params_list = self._params(spec, binding.get("spec") or {}, request)
        except PolicyError as error:
            return [(str(error), "Invalid")] if fail else []
        failures: list[tuple[str, str]] = []
        for params in params_list:
            failures.extend(self._validate(spec, request, params, fail))
        return failures

    def _params(self, spec: Obj, binding: Obj, request: _Request) -> list[Any]:
        """The params to evaluate the policy with, as kube-apiserver's dispatcher collects them.

        No ``paramKind``, or a binding without ``paramRef``: one evaluation with ``params``
        null. Otherwise the object ``paramRef.name`` names, or every object ``paramRef.selector``
        matches (``{}``: all of them), in ``paramRef.namespace`` — or, when that is unset and
        the kind is namespaced, in the namespace of the object being admitted. Each param is
        evaluated on its own and all must pass. None found: admitted under
        ``parameterNotFoundAction: Allow``, a configuration error under ``Deny`` (then
        ``failurePolicy`` decides). Configuration errors say what the API server says.
        """
        kind = spec.get("paramKind")
        if not isinstance(kind, Mapping):
            return [None]
        ref = binding.get("paramRef")
        if not isinstance(ref, Mapping):
            return [None]  # the policy has a paramKind the binding does not use
        api_version = str(kind.get("apiVersion", ""))
        group = api_version.rpartition("/")[0]
        rtype = next(
            (
                t
                for t in self.store.types.values()
                if t.group == group and t.kind == kind.get("kind")
            ),
            None,
        )
        if rtype is None:
            raise PolicyError(
                "failed to configure policy: failed to find resource referenced by paramKind: "
                f"'{api_version}, Kind={kind.get('kind')}'"
            )
        name = str(ref.get("name") or "")
        selector = ref.get("selector")
        if ref.get("namespace") and not rtype.namespaced:
            raise _binding_error(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
            )
        namespace = ""
        if rtype.namespaced:
            namespace = str(ref.get("namespace") or request.namespace)
            if not namespace:
                raise _binding_error(
                    "cannot use namespaced paramRef in policy binding that matches "
                    "cluster-scoped resources"
                )
        objects = self.store.bucket(rtype).objects.get(namespace, {})
        if name:
            if selector is not None:
                raise _binding_error("paramRef.name and paramRef.selector are mutually exclusive")
            stored = objects.get(name)
            found = [stored.obj] if stored is not None else []
        elif selector is not None:
            found = [
                s.obj
                for _, s in sorted(objects.items())
                if selector_matches(selector, _labels(s.obj))
            ]
        else:
            raise _binding_error("one of name or selector must be provided")
        if not found and ref.get("parameterNotFoundAction") == "Deny":
            raise _binding_error(
                "no params found for policy binding with `Deny` parameterNotFoundAction"
            )
        return found

    def _validate(
        self, spec: Obj, request: _Request, params: Any, fail: bool
    ) -> list[tuple[str, str]]:
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
        namespace_object = self._namespace(request.namespace) if rtype.namespaced else None
        variables = celtypes.MapType({})
        activation: dict[str, Any] = {
            "object": json_to_cel(request.obj) if request.obj is not None else None,
            "oldObject": json_to_cel(request.old) if request.old is not None else None,
            "request": json_to_cel(_request_value(request)),
            "params": json_to_cel(params) if params is not None else None,
            "namespaceObject": (
                json_to_cel(namespace_object) if namespace_object is not None else None
            ),
            "authorizer": _Authorizer(request.user, self.authorize, attrs),
            "variables": variables,
        }
        try:
            for condition in spec.get("matchConditions") or ():
                if not bool(_evaluate(str(condition.get("expression", "")), activation)):
                    return []
            for variable in spec.get("variables") or ():
                value = _evaluate(str(variable.get("expression", "")), activation)
                variables[celtypes.StringType(str(variable.get("name", "")))] = value
        except PolicyError as error:
            return [(str(error), "Invalid")] if fail else []
        failures: list[tuple[str, str]] = []
        for validation in spec.get("validations") or ():
            expression = str(validation.get("expression", ""))
            reason = str(validation.get("reason") or "Invalid")
            try:
                passed = bool(_evaluate(expression, activation))
            except PolicyError as error:
                if fail:
                    failures.append(
                        (f"expression '{expression}' resulted in error: {error}", reason)
                    )
                continue
            if not passed:
                failures.append((_message(validation, expression, activation), reason))
        return failures


def _binding_error(message: str) -> PolicyError:
    return PolicyError(f"failed to configure binding: {message}")


def _message(validation: Mapping[str, Any], expression: str, activation: Mapping[str, Any]) -> str:
    text = validation.get("messageExpression")
    if text:
        try:
            produced = _evaluate(str(text), activation)
        except PolicyError:
            produced = None
        if isinstance(produced, str) and produced.strip() and "\n" not in produced:
            return str(produced)
    message = validation.get("message")
    return str(message) if message else f"failed expression: {expression}"


def _request_value(request: _Request) -> dict[str, Any]:
    rtype = request.rtype
    kind = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
    resource = {"group": rtype.group, "version": rtype.version, "resource": rtype.plural}
    value: dict[str, Any] = {
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": request.name,
        "namespace": request.namespace,
        "operation": request.operation,
        "userInfo": request.user.as_dict(),
        "dryRun": request.dry_run,
    }
    if request.subresource:
        value["subResource"] = request.subresource
        value["requestSubResource"] = request.subresource
    return value


def _denied(request: _Request, message: str, reason: str) -> ApiError:
    rtype = request.rtype
    name = request.name
    if not name and request.obj is not None:
        meta = request.obj.get("metadata") or {}
        name = str(meta.get("name") or meta.get("generateName") or "")
    name = name or "Unknown"
    details: dict[str, Any] = {"name": name, "kind": rtype.plural, "causes": [{"message": message}]}
    if rtype.group:
        details["group"] = rtype.group
    code = _CODES.get(reason, 422)
    if reason not in _CODES:
        reason = "Invalid"
    return ApiError(code, reason, f'{rtype.qualified} "{name}" is forbidden: {message}', details)
