"""Object metadata rules: names, labels, selectors, timestamps and human-readable ages."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from precedent_sandbox.errors import FieldError, bad_request

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "generate_name",
    "human_duration",
    "now_rfc3339",
    "parse_time",
    "validate_metadata",
]

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_LABEL = re.compile(rf"^{_DNS1123_LABEL}$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the real server's generateName alphabet


def now_rfc3339() -> str:
    """Now, in Kubernetes' timestamp format (seconds precision, ``Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: Any) -> datetime | None:
    """Parse an RFC 3339 timestamp (``Z`` or an offset, optional fraction); None if it isn't."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def human_duration(seconds: float) -> str:
    """An age as ``kubectl get`` shows it (k8s.io/apimachinery ``duration.HumanDuration``)."""
    secs = int(seconds)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        rest = secs % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


def generate_name(prefix: str) -> str:
    """``metadata.generateName`` + five random characters, as the real server does."""
    return prefix + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))


def _validate_name(name: str, namespace_like: bool, path_segment: bool) -> FieldError | None:
    if path_segment:
        # RBAC names (``system:discovery``) only need to be a valid path segment.
        if name in (".", "..") or "/" in name or "%" in name:
            return FieldError(
                "invalid", "metadata.name", name, f"may not contain '/' or '%' or be '{name}'"
            )
        return None
    if namespace_like:
        if len(name) > 63:
            return FieldError("too_long", "metadata.name", name, "may not be more than 63 bytes")
        if not _LABEL.fullmatch(name):
            return FieldError("invalid", "metadata.name", name, _LABEL_MSG)
        return None
    if len(name) > 253:
        return FieldError("too_long", "metadata.name", name, "may not be more than 253 bytes")
    if not _SUBDOMAIN.fullmatch(name):
        return FieldError("invalid", "metadata.name", name, _SUBDOMAIN_MSG)
    return None


def _validate_qualified_key(key: str, path: str) -> FieldError | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        return FieldError("invalid", path, key, "prefix part " + _SUBDOMAIN_MSG)
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return FieldError(
            "invalid",
            path,
            key,
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        )
    return None


def validate_metadata(
    meta: Mapping[str, Any], *, namespace_like: bool, path_segment: bool = False
) -> list[FieldError]:
    """Check name, labels, annotations and finalizers as ObjectMeta validation does."""
    errors: list[FieldError] = []
    name = meta.get("name")
    if isinstance(name, str) and name:
        problem = _validate_name(name, namespace_like, path_segment)
        if problem:
            errors.append(problem)
    elif not meta.get("generateName"):
        errors.append(
            FieldError("required", "metadata.name", None, "name or generateName is required")
        )
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is None:
            continue
        if not isinstance(value, dict):
            errors.append(
                FieldError("type", f"metadata.{field}", value, "must be a map of strings")
            )
            continue
        for key, item in value.items():
            path = f"metadata.{field}"
            problem = _validate_qualified_key(str(key), path)
            if problem:
                errors.append(problem)
            if not isinstance(item, str):
                errors.append(FieldError("type", f"{path}.{key}", item, "must be a string"))
            elif field == "labels" and (len(item) > 63 or not _LABEL_VALUE.fullmatch(item)):
                errors.append(FieldError("invalid", path, item, _LABEL_VALUE_MSG))
    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers)
    ):
        errors.append(
            FieldError("type", "metadata.finalizers", finalizers, "must be a list of strings")
        )
    return errors


# -- label selectors --------------------------------------------------------------------------

_Requirement = Callable[[Mapping[str, str]], bool]
_SET_OP = re.compile(r"^\s*(!?)\s*([^\s!=,()]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_OP = re.compile(r"^\s*([^\s!=,()]+)\s*(==|=|!=)\s*([^\s,()]*)\s*$")


def _split_selector(text: str) -> list[str]:
    # Commas inside "in (a,b)" do not separate requirements.
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


class LabelSelector:
    """A parsed ``labelSelector``: equality, set-based (in / notin) and existence terms."""

    def __init__(self, text: str | None) -> None:
        self.text = text or ""
        self.requirements: list[_Requirement] = [
            self._parse(term) for term in _split_selector(self.text)
        ]

    @staticmethod
    def _parse(term: str) -> _Requirement:
        eq = _EQ_OP.match(term)
        if eq:
            key, op, value = eq.groups()
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
        found = _SET_OP.match(term)
        if found:
            negated, key, op, values = found.groups()
            if op:
                options = {v.strip() for v in values.split(",") if v.strip()}
                if op == "in":
                    return lambda labels: labels.get(key) in options
                return lambda labels: labels.get(key) not in options
            if negated:
                return lambda labels: key not in labels
            return lambda labels: key in labels
        raise bad_request(f"unable to parse requirement: {term!r}")

    @property
    def empty(self) -> bool:
        """True if it selects everything."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with ``labels`` is selected."""
        labels = labels or {}
        return all(requirement(labels) for requirement in self.requirements)


class FieldSelector:
    """A parsed ``fieldSelector`` (``a.b=c``, ``a.b==c``, ``a.b!=c``) over supported fields."""

    def __init__(self, text: str | None, supported: frozenset[str]) -> None:
        self.text = text or ""
        self.terms: list[tuple[tuple[str, ...], bool, str]] = []
        for term in _split_selector(self.text):
            eq = _EQ_OP.match(term)
            if not eq:
                raise bad_request(f"invalid selector: '{self.text}'; can't understand '{term}'")
            key, op, value = eq.groups()
            if key not in supported:
                raise bad_request(f"field label not supported: {key}")
            self.terms.append((tuple(key.split(".")), op != "!=", value))

    @property
    def empty(self) -> bool:
        """True if it selects everything."""
        return not self.terms

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` is selected; a missing field reads as the empty string."""
        for path, equal, value in self.terms:
            current: Any = obj
            for part in path:
                current = current.get(part) if isinstance(current, Mapping) else None
            text = "" if current is None else _field_text(current)
            if (text == value) != equal:
                return False
        return True

    def name(self) -> str | None:
        """The name pinned by ``metadata.name=X``, if any: lets a list skip a full scan."""
        for path, equal, value in self.terms:
            if equal and path == ("metadata", "name"):
                return value
        return None


def _field_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
