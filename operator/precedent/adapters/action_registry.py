"""Read an action registry: a YAML mapping ``{READ_ONLY: [...], WRITE: [...], ADMIN: [...]}``,
optionally with ``effects: {effect class: [actions, canonical first]}`` (core.effects).

``PRECEDENT_ACTION_REGISTRY`` names such a file (e.g. mounted from a ConfigMap,
``manifests/action-registry.yaml``); it replaces the bundled registry of ``core.policy``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from precedent.adapters.bounded import parse_yaml_documents, read_text
from precedent.core.effects import EFFECT_CLASSES
from precedent.core.floors import DangerFloors, Floor
from precedent.core.policy import ACCESS_LEVELS, AccessLevel, ActionRegistry
from precedent.errors import InputError
from precedent.models import Band

__all__ = [
    "load_action_registry",
    "load_danger_floors",
    "parse_action_registry",
    "parse_danger_floors",
]


def parse_action_registry(text: str, where: str) -> ActionRegistry:
    """Parse a registry document; ``where`` (file name) starts every error message."""
    documents = parse_yaml_documents(text, where)  # bounded: depth, aliases, odd scalars
    if len(documents) > 1:
        raise InputError(f"{where}: expected one YAML document, found {len(documents)}")
    data: Any = documents[0] if documents else None
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a mapping of READ_ONLY, WRITE and ADMIN to lists")
    lists: dict[AccessLevel, list[str]] = {}
    effects: dict[str, list[str]] | None = None
    for key, actions in data.items():
        if key == "effects":
            effects = _effects(actions, where)
            continue
        if key not in ACCESS_LEVELS:
            raise InputError(
                f"{where}: {key}: unknown access level (READ_ONLY, WRITE or ADMIN; or effects)"
            )
        if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
            raise InputError(f"{where}: {key}: expected a list of action names")
        lists[key] = [_name(a) for a in actions]
    try:
        return ActionRegistry.from_lists(lists, effects)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None


def _name(action: str) -> str:
    return action.strip().lower().replace("-", "_")


def _effects(value: Any, where: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise InputError(
            f"{where}: effects: expected a mapping of effect class to a list of actions "
            f"({', '.join(EFFECT_CLASSES)})"
        )
    out: dict[str, list[str]] = {}
    for effect, actions in value.items():
        if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
            raise InputError(f"{where}: effects.{effect}: expected a list of action names")
        if not actions:
            raise InputError(f"{where}: effects.{effect}: lists no action")
        out[str(effect)] = [_name(a) for a in actions]
    return out


def load_action_registry(path: Path | None = None) -> ActionRegistry:
    """The registry in the file at ``path``, or the bundled one; errors name the file and key."""
    if path is None:
        return ActionRegistry()
    try:
        text, source = read_text(path)
    except InputError as exc:
        raise InputError(f"action registry {exc}") from None
    return parse_action_registry(text, f"action registry {source}")


def parse_danger_floors(text: str, where: str) -> DangerFloors:
    """Parse a floors document ``{floors: [{effect, band, reason, environments, when}]}``;
    errors name the file and the entry (``floors[2].when.toZero: …``)."""
    documents = parse_yaml_documents(text, where)
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise InputError(f"{where}: expected one YAML document, a mapping with a floors list")
    data = documents[0]
    unknown = sorted(set(data) - {"floors"})
    if unknown:
        raise InputError(f"{where}: {unknown[0]}: unknown key (floors)")
    entries = data.get("floors")
    if not isinstance(entries, list):
        raise InputError(f"{where}: floors: expected a list of floors")
    floors: list[Floor] = []
    for i, entry in enumerate(entries):
        at = f"{where}: floors[{i}]"
        if not isinstance(entry, dict):
            raise InputError(f"{at}: expected a mapping (effect, band, reason, when)")
        extra = sorted(set(entry) - {"effect", "band", "reason", "environments", "when"})
        if extra:
            raise InputError(f"{at}.{extra[0]}: unknown key")
        band = entry.get("band")
        if band not in ("low", "medium", "high"):
            raise InputError(f"{at}.band: expected low, medium or high")
        environments = entry.get("environments", ["production"])
        if not isinstance(environments, list) or not all(isinstance(e, str) for e in environments):
            raise InputError(f"{at}.environments: expected a list of environment names")
        when = entry.get("when", {})
        if not isinstance(when, dict) or not all(
            isinstance(v, (bool, int, float)) for v in when.values()
        ):
            raise InputError(f"{at}.when: expected a mapping of fact to a number or true/false")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(f"{at}.reason: say why, for people (e.g. deletes data)")
        try:
            floors.append(
                Floor(
                    effect=str(entry.get("effect")),
                    band=Band(band),
                    reason=reason.strip()[:200],
                    environments=tuple(environments),
                    when=dict(when),
                )
            )
        except ValueError as exc:
            raise InputError(f"{at}.{exc}") from None
    return DangerFloors(tuple(floors))


def load_danger_floors(path: Path | None = None) -> DangerFloors:
    """The floors in the file at ``path``, or the bundled ones."""
    if path is None:
        return DangerFloors()
    try:
        text, source = read_text(path)
    except InputError as exc:
        raise InputError(f"danger floors {exc}") from None
    return parse_danger_floors(text, f"danger floors {source}")
