"""Structural OpenAPI v3 schemas as the API server applies them to custom resources.

A CRD's ``openAPIV3Schema`` is compiled once into a tree of :class:`Schema` nodes. A write then
goes through three passes, in the real server's order: :meth:`Schema.normalize` prunes unknown
fields (reporting them for ``fieldValidation=Strict``), drops non-nullable nulls and applies
defaults; :meth:`Schema.validate` checks types, ``required``, enums and bounds and returns field
errors worded like the real server's; CEL rules run afterwards (see :mod:`.cel`).
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

import re2  # type: ignore[import-untyped]

from precedent_sandbox.errors import FieldError, GoLiteral

__all__ = ["Schema", "join_path", "json_type"]

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value, as the validator reports it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def join_path(path: str, key: str) -> str:
    """``spec`` + ``target`` → ``spec.target``."""
    return f"{path}.{key}" if path else key


def _number(value: float) -> str:
    # Go's %v prints 1.0 as 1; bounds read from YAML are often floats.
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _valid_date_time(text: str) -> bool:
    if not _DATE_TIME.fullmatch(text):
        return False
    try:
        datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


def _valid_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _valid_byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# Formats the sandbox checks; like the real server, unknown formats are accepted as-is.
_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _valid_date_time,
    "datetime": _valid_date_time,
    "date": _valid_date,
    "uuid": lambda s: bool(_UUID.fullmatch(s)),
    "byte": _valid_byte,
}
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _compiled(pattern: Any) -> Any:
    """A schema's ``pattern`` in RE2; ValueError (the CRD is refused, 422) when RE2 cannot read
    it, as kube-apiserver refuses a pattern Go's regexp cannot compile (a lookahead, say)."""
    try:
        return re2.compile(str(pattern))
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ValueError(
            f"pattern {pattern!r} must be a valid regular expression, but isn't: {detail}"
        ) from None


class Schema:
    """One compiled node of a structural schema."""

    __slots__ = (
        "additional",
        "default",
        "description",
        "embedded",
        "enum",
        "exclusive_maximum",
        "exclusive_minimum",
        "format",
        "has_rules",
        "int_or_string",
        "items",
        "list_map_keys",
        "list_type",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "nullable",
        "pattern",
        "preserve_unknown",
        "properties",
        "raw",
        "required",
        "rules",
        "type",
        "unique_items",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.type: str | None = raw.get("type")
        self.description: str | None = raw.get("description")
        self.nullable = bool(raw.get("nullable", False))
        self.preserve_unknown = bool(raw.get("x-kubernetes-preserve-unknown-fields", False))
        self.int_or_string = bool(raw.get("x-kubernetes-int-or-string", False))
        self.embedded = bool(raw.get("x-kubernetes-embedded-resource", False))
        self.properties: dict[str, Schema] | None = (
            {k: Schema(v) for k, v in raw["properties"].items()} if "properties" in raw else None
        )
        additional = raw.get("additionalProperties")
        self.additional: Schema | bool | None = (
            Schema(additional) if isinstance(additional, dict) else additional
        )
        self.items: Schema | None = (
            Schema(raw["items"]) if isinstance(raw.get("items"), dict) else None
        )
        self.required: tuple[str, ...] = tuple(raw.get("required", ()))
        self.enum: list[Any] | None = raw.get("enum")
        self.min_length: int | None = raw.get("minLength")
        self.max_length: int | None = raw.get("maxLength")
        self.min_items: int | None = raw.get("minItems")
        self.max_items: int | None = raw.get("maxItems")
        self.min_properties: int | None = raw.get("minProperties")
        self.max_properties: int | None = raw.get("maxProperties")
        self.minimum: float | None = raw.get("minimum")
        self.maximum: float | None = raw.get("maximum")
        self.exclusive_minimum = bool(raw.get("exclusiveMinimum", False))
        self.exclusive_maximum = bool(raw.get("exclusiveMaximum", False))
        self.multiple_of: float | None = raw.get("multipleOf")
        self.unique_items = bool(raw.get("uniqueItems", False))
        # kube-apiserver matches with Go's regexp (RE2): ``$`` is the end of the text (Python's
        # also matches before a final newline) and ``\s``/``\d`` are ASCII only.
        self.pattern: Any = _compiled(raw["pattern"]) if "pattern" in raw else None
        self.format: str | None = raw.get("format")
        self.default: Any = raw.get("default")
        self.list_type: str | None = raw.get("x-kubernetes-list-type")
        self.list_map_keys: tuple[str, ...] = tuple(raw.get("x-kubernetes-list-map-keys", ()))
        # CEL rules are attached by precedent_sandbox.cel; has_rules marks subtrees holding any.
        self.rules: list[Any] = []
        self.has_rules = False

    # -- traversal -------------------------------------------------------------------------

    def children(self) -> list[Schema]:
        """Direct sub-schemas: properties, additionalProperties and items."""
        found = list(self.properties.values()) if self.properties else []
        if isinstance(self.additional, Schema):
            found.append(self.additional)
        if self.items is not None:
            found.append(self.items)
        return found

    def child(self, key: str) -> Schema | None:
        """The schema of property ``key`` (or of a map value), if the node declares one."""
        if self.properties is not None and key in self.properties:
            return self.properties[key]
        if isinstance(self.additional, Schema):
            return self.additional
        return None

    # -- pruning and defaulting ------------------------------------------------------------

    def normalize(self, value: Any, path: str, unknown: list[str]) -> Any:
        """Prune unknown fields (appending their paths to ``unknown``) and apply defaults.

        Works in place on ``value`` (the request's own decoded body) and returns it.
        """
        if isinstance(value, dict):
            if self.embedded:
                _normalize_embedded(value, path, unknown)
            properties = self.properties
            if properties is not None or self.additional is not None:
                for key in list(value):
                    sub = properties.get(key) if properties is not None else None
                    if sub is None and isinstance(self.additional, Schema):
                        sub = self.additional
                    if sub is None:
                        if self.additional is True or self.preserve_unknown:
                            continue
                        if self.embedded and key in ("apiVersion", "kind", "metadata"):
                            continue
                        del value[key]
                        unknown.append(join_path(path, key))
                        continue
                    item = value[key]
                    if item is None and not sub.nullable:
                        # Nulls of non-nullable fields are pruned before defaulting.
                        del value[key]
                        continue
                    value[key] = sub.normalize(item, join_path(path, key), unknown)
                if properties is not None:
                    for key, sub in properties.items():
                        if key not in value and sub.default is not None:
                            value[key] = copy.deepcopy(sub.default)
            elif not self.preserve_unknown and self.type == "object":
                for key in list(value):
                    if self.embedded and key in ("apiVersion", "kind", "metadata"):
                        continue
                    del value[key]
                    unknown.append(join_path(path, key))
        elif isinstance(value, list) and self.items is not None:
            for index, item in enumerate(value):
                value[index] = self.items.normalize(item, f"{path}[{index}]", unknown)
        return value

    # -- validation ------------------------------------------------------------------------

    def validate(self, value: Any, path: str, errors: list[FieldError]) -> None:
        """Append a :class:`FieldError` for every violation under ``path``."""
        if value is None:
            if not self.nullable and self.type is not None:
                errors.append(
                    FieldError(
                        "type", path, "null", f'{path} in body must be of type {self.type}: "null"'
                    )
                )
            return
        kind = json_type(value)
        if self.int_or_string:
            if kind not in ("integer", "string"):
                errors.append(
                    FieldError(
                        "type",
                        path,
                        kind,
                        f'{path} in body must be of type integer,string: "{kind}"',
                    )
                )
                return
        elif self.type is not None and not (
            kind == self.type or (self.type == "number" and kind == "integer")
        ):
            errors.append(
                FieldError(
                    "type", path, kind, f'{path} in body must be of type {self.type}: "{kind}"'
                )
            )
            return
        if self.enum is not None and value not in self.enum:
            supported = ", ".join(
                f'"{v}"' if isinstance(v, str) else _json_scalar(v) for v in self.enum
            )
            errors.append(FieldError("unsupported", path, value, f"supported values: {supported}"))
        if kind == "string":
            self._validate_string(value, path, errors)
        elif kind in ("integer", "number"):
            self._validate_number(value, path, errors)
        elif kind == "array":
            self._validate_array(value, path, errors)
        elif kind == "object":
            self._validate_object(value, path, errors)

    def _validate_string(self, value: str, path: str, errors: list[FieldError]) -> None:
        if self.max_length is not None and len(value) > self.max_length:
            unit = "byte" if self.max_length == 1 else "bytes"
            errors.append(
                FieldError(
                    "too_long", path, value, f"may not be more than {self.max_length} {unit}"
                )
            )
        if self.min_length is not None and len(value) < self.min_length:
            errors.append(
                FieldError(
                    "invalid",
                    path,
                    value,
                    f"{path} in body should be at least {self.min_length} chars long",
                )
            )
        if self.pattern is not None and not self.pattern.search(value):
            errors.append(
                FieldError(
                    "invalid", path, value, f"{path} in body should match '{self.pattern.pattern}'"
                )
            )
        if self.format is not None:
            check = _FORMATS.get(self.format)
            if check is not None and not check(value):
                errors.append(
                    FieldError(
                        "type",
                        path,
                        value,
                        f'{path} in body must be of type {self.format}: "{value}"',
                    )
                )

    def _validate_number(self, value: float, path: str, errors: list[FieldError]) -> None:
        if self.minimum is not None:
            low = self.minimum
            if value < low or (self.exclusive_minimum and value == low):
                word = "greater than" if self.exclusive_minimum else "greater than or equal to"
                errors.append(
                    FieldError(
                        "invalid", path, value, f"{path} in body should be {word} {_number(low)}"
                    )
                )
        if self.maximum is not None:
            high = self.maximum
            if value > high or (self.exclusive_maximum and value == high):
                word = "less than" if self.exclusive_maximum else "less than or equal to"
                errors.append(
                    FieldError(
                        "invalid", path, value, f"{path} in body should be {word} {_number(high)}"
                    )
                )
        if self.multiple_of and (value / self.multiple_of) % 1:
            errors.append(
                FieldError(
                    "invalid",
                    path,
                    value,
                    f"{path} in body should be a multiple of {_number(self.multiple_of)}",
                )
            )
        if self.format in _INT_RANGES and isinstance(value, int):
            low_int, high_int = _INT_RANGES[self.format]
            if not low_int <= value <= high_int:
                errors.append(
                    FieldError("type", path, value, f"{path} in body must be of type {self.format}")
                )

    def _validate_array(self, value: list[Any], path: str, errors: list[FieldError]) -> None:
        if self.max_items is not None and len(value) > self.max_items:
            errors.append(
                FieldError(
                    "too_many", path, len(value), f"must have at most {self.max_items} items"
                )
            )
        if self.min_items is not None and len(value) < self.min_items:
            errors.append(
                FieldError(
                    "invalid",
                    path,
                    value,
                    f"{path} in body should have at least {self.min_items} items",
                )
            )
        if self.items is not None:
            for index, item in enumerate(value):
                self.items.validate(item, f"{path}[{index}]", errors)
        if self.unique_items and len(value) > 1:
            seen: list[Any] = []
            for item in value:
                if item in seen:
                    errors.append(
                        FieldError(
                            "invalid", path, value, f"{path} in body shouldn't contain duplicates"
                        )
                    )
                    break
                seen.append(item)
        if self.list_type == "set":
            seen = []
            for index, item in enumerate(value):
                if item in seen:
                    errors.append(FieldError("duplicate", f"{path}[{index}]", item))
                seen.append(item)
        elif self.list_type == "map" and self.list_map_keys:
            keys_seen: set[str] = set()
            for index, item in enumerate(value):
                if not isinstance(item, dict):
                    continue
                key = repr([item.get(k) for k in self.list_map_keys])
                if key in keys_seen:
                    shown = ",".join(
                        f'"{k}":{_json_scalar(item.get(k))}' for k in self.list_map_keys
                    )
                    errors.append(
                        FieldError(
                            "duplicate",
                            f"{path}[{index}]",
                            GoLiteral(f"map[string]interface {{}}{{{shown}}}"),
                        )
                    )
                keys_seen.add(key)

    def _validate_object(self, value: dict[str, Any], path: str, errors: list[FieldError]) -> None:
        for key in self.required:
            if key not in value:
                errors.append(FieldError("required", join_path(path, key)))
        if self.max_properties is not None and len(value) > self.max_properties:
            errors.append(
                FieldError(
                    "too_many", path, len(value), f"must have at most {self.max_properties} items"
                )
            )
        if self.min_properties is not None and len(value) < self.min_properties:
            errors.append(
                FieldError(
                    "invalid",
                    path,
                    value,
                    f"{path} in body should have at least {self.min_properties} properties",
                )
            )
        properties = self.properties
        additional = self.additional if isinstance(self.additional, Schema) else None
        if properties is None and additional is None:
            return
        for key, item in value.items():
            sub = properties.get(key) if properties is not None else None
            if sub is None:
                sub = additional
            if sub is not None:
                sub.validate(item, join_path(path, key), errors)


def _json_scalar(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _number(value)


# ObjectMeta fields of an embedded resource; anything else under its metadata is pruned.
_EMBEDDED_META = {
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
}


def _normalize_embedded(value: dict[str, Any], path: str, unknown: list[str]) -> None:
    meta = value.get("metadata")
    if isinstance(meta, dict):
        for key in list(meta):
            if key not in _EMBEDDED_META:
                del meta[key]
                unknown.append(join_path(join_path(path, "metadata"), key))
