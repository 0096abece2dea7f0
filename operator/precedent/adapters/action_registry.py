"""Read an action registry: a YAML mapping ``{READ_ONLY: [...], WRITE: [...], ADMIN: [...]}``.

``PRECEDENT_ACTION_REGISTRY`` names such a file (e.g. mounted from a ConfigMap,
``manifests/action-registry.yaml``); it replaces the bundled registry of ``core.policy``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from precedent.adapters.bounded import parse_yaml_documents, read_text
from precedent.core.policy import ACCESS_LEVELS, AccessLevel, ActionRegistry
from precedent.errors import InputError

__all__ = ["load_action_registry", "parse_action_registry"]


def parse_action_registry(text: str, where: str) -> ActionRegistry:
    """Parse a registry document; ``where`` (file name) starts every error message."""
    documents = parse_yaml_documents(text, where)  # bounded: depth, aliases, odd scalars
    if len(documents) > 1:
        raise InputError(f"{where}: expected one YAML document, found {len(documents)}")
    data: Any = documents[0] if documents else None
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a mapping of READ_ONLY, WRITE and ADMIN to lists")
    lists: dict[AccessLevel, list[str]] = {}
    for key, actions in data.items():
        if key not in ACCESS_LEVELS:
            raise InputError(f"{where}: {key}: unknown access level (READ_ONLY, WRITE or ADMIN)")
        if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
            raise InputError(f"{where}: {key}: expected a list of action names")
        lists[key] = [a.strip().lower().replace("-", "_") for a in actions]
    try:
        return ActionRegistry.from_lists(lists)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None


def load_action_registry(path: Path | None = None) -> ActionRegistry:
    """The registry in the file at ``path``, or the bundled one; errors name the file and key."""
    if path is None:
        return ActionRegistry()
    try:
        text, source = read_text(path)
    except InputError as exc:
        raise InputError(f"action registry {exc}") from None
    return parse_action_registry(text, f"action registry {source}")
