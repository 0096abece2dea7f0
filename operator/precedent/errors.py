"""Precedent's exceptions.

PrecedentError
├── InputError          bad input: a document, a field, a line — the message names it
│   └── LoadError       a file or document could not be read
└── DependencyError     something Precedent needs is unavailable (index, catalog, model)
    └── CatalogUnavailable  a playbook catalog could not answer a query
"""

from __future__ import annotations

from pydantic import ValidationError

__all__ = [
    "KUBECTL_EXTRA",
    "CatalogUnavailable",
    "DependencyError",
    "InputError",
    "LoadError",
    "PrecedentError",
    "describe_validation",
]


class PrecedentError(Exception):
    """Base of every error Precedent raises on purpose."""


class InputError(PrecedentError):
    """Bad input; the message names the document and field."""


class LoadError(InputError):
    """A file or a document in it could not be read."""


class DependencyError(PrecedentError):
    """A dependency (vector index, catalog, model files) is unavailable."""


class CatalogUnavailable(DependencyError):
    """A playbook catalog could not answer; the message says why (timeout, 503, open circuit)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def describe_validation(error: ValidationError, prefix: str = "") -> str:
    """One line per problem, ``field.path: message`` (first three problems, then a count)."""
    problems = []
    for item in error.errors():
        # A key may be anything a requester wrote: quote one that would break the line.
        loc = ".".join(str(p) if str(p).isprintable() else repr(p) for p in item["loc"])
        path = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "missing":
            message = "required field is missing"
        elif item["type"] == "value_error":
            message = message.removeprefix("Value error, ")
        problems.append(f"{path}: {message}")
    more = len(problems) - 3
    text = "; ".join(problems[:3])
    return f"{text}; and {more} more" if more > 0 else text


KUBECTL_EXTRA = (
    "the Kubernetes client is not installed (the operator does not need it): "
    "pip install 'precedent[kubectl]'"
)
"""What a command that talks to a cluster as the user says without the ``kubectl`` extra."""
