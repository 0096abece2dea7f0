"""``x-kubernetes-validations``: CEL rules evaluated with the Python CEL runtime (celpy).

Rules are compiled once, when a CRD is registered. A rule that celpy cannot compile, or that
calls a Kubernetes CEL library function celpy lacks (``isSorted``, ``quantity``, ``url``,
``lowerAscii``…), is skipped and logged once, never reported as a failure: the sandbox only
rejects what it can evaluate. Transition rules (those naming ``oldSelf``) run on updates, where
an old value can be correlated through object properties, map values and map-list keys. As
with validation ratcheting in Kubernetes 1.30+, a value equal to its old value is not
re-checked.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from precedent_sandbox.errors import OMITTED, FieldError
from precedent_sandbox.schema import Schema, join_path

__all__ = ["CelRule", "attach_rules", "check_rules"]

log = logging.getLogger(__name__)

_OLD_SELF = re.compile(r"\boldSelf\b")
_REASONS = {
    "FieldValueInvalid": "invalid",
    "FieldValueForbidden": "forbidden",
    "FieldValueRequired": "required",
    "FieldValueDuplicate": "duplicate",
}
# Sentinel for "no old value here" (None is a legitimate JSON value).
_MISSING: Any = object()
_ENV = celpy.Environment()


@dataclass(slots=True)
class CelRule:
    """One compiled ``x-kubernetes-validations`` entry."""

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: str = "invalid"
    field_path: str | None = None
    transition: bool = False
    optional_old_self: bool = False
    program: Any = None
    message_program: Any = None
    skipped: str | None = None
    logged: bool = field(default=False, repr=False)

    def default_message(self) -> str:
        """The message when the rule has none: ``failed rule: <rule>``."""
        return self.message or f"failed rule: {self.rule.strip()}"


def _compile(raw: dict[str, Any]) -> CelRule:
    text = str(raw.get("rule", ""))
    rule = CelRule(
        rule=text,
        message=raw.get("message"),
        message_expression=raw.get("messageExpression"),
        reason=_REASONS.get(str(raw.get("reason", "FieldValueInvalid")), "invalid"),
        field_path=raw.get("fieldPath"),
        transition=bool(_OLD_SELF.search(text)),
        optional_old_self=bool(raw.get("optionalOldSelf", False)),
    )
    try:
        rule.program = _ENV.program(_ENV.compile(text))
    except Exception as exc:  # celpy raises its own parse errors; any failure means "skip"
        rule.skipped = f"cannot compile: {exc}"
        log.warning("CEL rule %r skipped: %s", text, rule.skipped)
    if rule.message_expression:
        try:
            rule.message_program = _ENV.program(_ENV.compile(rule.message_expression))
        except Exception:  # fall back to message / default message, as the server would
            rule.message_program = None
    return rule


def attach_rules(schema: Schema) -> int:
    """Compile every rule under ``schema`` onto its node; return how many were found."""
    count = 0
    for raw in schema.raw.get("x-kubernetes-validations", ()) or ():
        schema.rules.append(_compile(raw))
        count += 1
    for child in schema.children():
        count += attach_rules(child)
    schema.has_rules = bool(schema.rules) or any(c.has_rules for c in schema.children())
    return count


def check_rules(schema: Schema, value: Any, old: Any, path: str, errors: list[FieldError]) -> None:
    """Evaluate the rules under ``schema`` on ``value``; ``old`` is the previous value or None."""
    _check(schema, value, _MISSING if old is None else old, path, errors)


def _check(schema: Schema, value: Any, old: Any, path: str, errors: list[FieldError]) -> None:
    if not schema.has_rules or value is None:
        return
    if old is not _MISSING and value == old:
        return  # ratcheting: an unchanged value is not re-validated
    for rule in schema.rules:
        _evaluate(rule, schema, value, old, path, errors)
    if isinstance(value, dict):
        for key, item in value.items():
            sub = schema.child(key)
            if sub is not None and sub.has_rules:
                previous = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
                _check(sub, item, previous, join_path(path, key), errors)
    elif isinstance(value, list) and schema.items is not None and schema.items.has_rules:
        olds = _correlate_list(schema, value, old)
        for index, item in enumerate(value):
            _check(schema.items, item, olds[index], f"{path}[{index}]", errors)


def _correlate_list(schema: Schema, value: list[Any], old: Any) -> list[Any]:
    # Only map-lists correlate items with their old versions (by their keys), as in Kubernetes.
    if schema.list_type != "map" or not schema.list_map_keys or not isinstance(old, list):
        return [_MISSING] * len(value)
    keys = schema.list_map_keys
    by_key = {
        tuple(repr(item.get(k)) for k in keys): item for item in old if isinstance(item, dict)
    }
    return [
        by_key.get(tuple(repr(item.get(k)) for k in keys), _MISSING)
        if isinstance(item, dict)
        else _MISSING
        for item in value
    ]


def _evaluate(
    rule: CelRule, schema: Schema, value: Any, old: Any, path: str, errors: list[FieldError]
) -> None:
    if rule.program is None:
        return
    if rule.transition and old is _MISSING:
        return  # transition rules only apply to updates of a correlated value
    activation: dict[str, Any] = {"self": json_to_cel(value)}
    if rule.transition:
        activation["oldSelf"] = json_to_cel(old)
    try:
        result = rule.program.evaluate(activation)
    except CELEvalError as exc:
        reason = _eval_error(exc)
        if reason is None:
            if not rule.logged:
                rule.logged = True
                log.warning("CEL rule %r skipped: celpy lacks a function it calls", rule.rule)
            return
        target = _field(path, rule.field_path)
        errors.append(
            FieldError(
                "invalid", target, schema.type or "object", f"{reason} evaluating rule: {rule.rule}"
            )
        )
        return
    if isinstance(result, CELEvalError):
        return
    if bool(result):
        return
    message = rule.default_message()
    if rule.message_program is not None:
        try:
            produced = rule.message_program.evaluate(activation)
        except CELEvalError:
            produced = None
        if isinstance(produced, str) and produced.strip():
            message = str(produced)
    target = _field(path, rule.field_path)
    if rule.reason in ("required", "forbidden"):
        errors.append(FieldError(rule.reason, target, None, message))
    else:
        # kube-apiserver 1.36 prints a failed rule's message without the value's type.
        errors.append(FieldError(rule.reason, target, OMITTED, message))


def _field(path: str, field_path: str | None) -> str:
    if not field_path:
        return path
    suffix = field_path[1:] if field_path.startswith(".") else field_path
    return join_path(path, suffix) if not suffix.startswith("[") else f"{path}{suffix}"


def _eval_error(exc: CELEvalError) -> str | None:
    """A short reason for a runtime error, or None if celpy lacks the function called."""
    message = str(exc.args[0]) if exc.args else str(exc)
    if message.startswith("undeclared reference"):
        return None
    if "no such member" in message or "no such key" in message:
        key = message.rsplit(":", 1)[-1].strip().strip("'\"")
        return f"no such key: {key}"
    return message.split(" (in activation", 1)[0]
