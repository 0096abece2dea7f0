"""API errors as the real API server reports them: ``Status`` objects with a reason and a code.

ApiError
├── field errors collected into one 422 ``Invalid`` (``invalid``)
└── NotFound, AlreadyExists, Conflict, Gone (Expired), BadRequest, MethodNotAllowed, … (helpers)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "OMITTED",
    "ApiError",
    "FieldError",
    "GoLiteral",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "invalid",
    "method_not_allowed",
    "not_acceptable",
    "not_found",
    "path_not_found",
    "render_value",
    "unprocessable",
    "unsupported_media_type",
]

# field.ErrorType → (text in the message, StatusCause.reason)
_ERROR_TYPES = {
    "required": ("Required value", "FieldValueRequired"),
    "invalid": ("Invalid value", "FieldValueInvalid"),
    "type": ("Invalid value", "FieldValueTypeInvalid"),
    "unsupported": ("Unsupported value", "FieldValueNotSupported"),
    "too_long": ("Too long", "FieldValueTooLong"),
    "too_many": ("Too many", "FieldValueTooMany"),
    "duplicate": ("Duplicate value", "FieldValueDuplicate"),
    "forbidden": ("Forbidden", "FieldValueForbidden"),
}
# These types print no value, only the detail (k8s.io/apimachinery field.Error.ErrorBody).
_NO_VALUE = {"required", "forbidden", "too_long"}


class _Omitted:
    """The value of a field error that prints none (``Invalid value: <detail>``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Any = _Omitted()
"""kube-apiserver 1.36 omits the value of a failed CEL rule: ``Invalid value: <message>``."""


class GoLiteral(str):
    """A bad value already rendered the Go way; printed as it is, not quoted."""

    __slots__ = ()


def render_value(value: Any) -> str:
    """Render a bad value the way Go's field errors do: strings quoted, scalars bare."""
    if isinstance(value, GoLiteral):
        return str(value)
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return _quote(str(value))


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field, like ``field.Error`` in k8s.io/apimachinery."""

    kind: str
    field: str
    value: Any = None
    detail: str = ""

    def body(self) -> str:
        """The message without the field path: ``Required value``, ``Invalid value: "x": …``."""
        text, _ = _ERROR_TYPES[self.kind]
        if self.kind not in _NO_VALUE and self.value is not OMITTED:
            text = f"{text}: {render_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, str]:
        """The ``StatusCause`` kubectl prints."""
        return {"reason": _ERROR_TYPES[self.kind][1], "message": self.body(), "field": self.field}


class ApiError(Exception):
    """An error answered with a ``Status`` object and an HTTP code."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """The ``v1 Status`` body."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(qualified: str, name: str | None) -> dict[str, Any]:
    # details.kind carries the plural resource for these reasons, as the real server does.
    resource, _, group = qualified.partition(".")
    details: dict[str, Any] = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def not_found(qualified: str, name: str) -> ApiError:
    """404 for a named object: ``remediationrequests.precedent.dev "x" not found``."""
    return ApiError(404, "NotFound", f'{qualified} "{name}" not found', _details(qualified, name))


def path_not_found() -> ApiError:
    """404 for a path the server does not serve."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(qualified: str, name: str) -> ApiError:
    """409 on create of a name that is taken."""
    return ApiError(
        409, "AlreadyExists", f'{qualified} "{name}" already exists', _details(qualified, name)
    )


def conflict(qualified: str, name: str, why: str | None = None) -> ApiError:
    """409 on a stale resourceVersion or a failed precondition."""
    why = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
        _details(qualified, name),
    )


def expired(message: str) -> ApiError:
    """410 ``Expired``: a watch asked for a resourceVersion that history no longer holds."""
    return ApiError(410, "Expired", message)


def bad_request(message: str) -> ApiError:
    """400 ``BadRequest``."""
    return ApiError(400, "BadRequest", message)


def forbidden(qualified: str, name: str, why: str) -> ApiError:
    """403 ``Forbidden``, e.g. creating content in a namespace being terminated."""
    return ApiError(
        403, "Forbidden", f'{qualified} "{name}" is forbidden: {why}', _details(qualified, name)
    )


def method_not_allowed() -> ApiError:
    """405 for a verb the resource does not support."""
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def not_acceptable() -> ApiError:
    """406 when the client accepts no representation the sandbox can produce (protobuf)."""
    return ApiError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/yaml, "
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    )


def unsupported_media_type(content_type: str, *, custom: bool = False) -> ApiError:
    """415 for a body format the sandbox cannot read (``custom``: a patch of a custom
    resource, which has no strategic merge patch)."""
    accepted = "application/json-patch+json, application/merge-patch+json, "
    if not custom:
        accepted += "application/strategic-merge-patch+json, "
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{accepted}application/apply-patch+yaml",
    )


def invalid_options(kind: str, errors: list[FieldError]) -> ApiError:
    """422 for invalid request options: ``PatchOptions.meta.k8s.io "" is invalid: …``."""
    message = f'{kind} "" is invalid: ' + ", ".join(str(e) for e in errors)
    group = kind.partition(".")[2]
    details = {
        "group": group,
        "kind": kind.partition(".")[0],
        "causes": [e.cause() for e in errors],
    }
    return ApiError(422, "Invalid", message, details)


def unprocessable(message: str) -> ApiError:
    """422 without field causes: a JSON patch that cannot be applied (``test`` failed)."""
    return ApiError(422, "Invalid", message)


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 ``Invalid`` naming every field: ``Kind.group "name" is invalid: field: problem``."""
    qualified = f"{kind}.{group}" if group else kind
    if not errors:
        message = f'{qualified} "{name}" is invalid'
    elif len(errors) == 1:
        message = f'{qualified} "{name}" is invalid: {errors[0]}'
    else:
        message = f'{qualified} "{name}" is invalid: [{", ".join(str(e) for e in errors)}]'
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [e.cause() for e in errors],
    }
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", message, details)
