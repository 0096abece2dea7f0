"""The readings of a request: what its verb, its text and its change each say it does.

A request is scored once per distinct reading and the strictest answer wins
(services.assessment). Each reading names the action the history is searched under (the
canonical action of its effect class, with the class's other actions as synonyms), the access
level the policy applies, and the facts its danger floor tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from precedent.core.change import ChangeFacts, LiveTarget, facts_without_change, judge_change
from precedent.core.effects import CAPACITY_CHANGE, TextReading, read_text
from precedent.core.normalize import ProposedAction, normalize_request
from precedent.core.policy import ACCESS_LEVELS, AccessLevel, ActionRegistry
from precedent.models import RemediationRequestSpec

__all__ = [
    "SIZED_EFFECTS",
    "Reading",
    "Readings",
    "needs_target",
    "read_request",
    "searched_as",
]

SIZED_EFFECTS = frozenset(
    {"capacity-down", "capacity-up", CAPACITY_CHANGE, "object-delete", "data-delete"}
)
"""Effects whose size the live target tells (replicas, volumes): the target is read for them."""

# When the registry names no action for a class, the history is searched under these (the
# names the bundled incidents and registry use).
_FALLBACK_ACTION: dict[str, str] = {
    "read-only": "collect_diagnostics",
    "restart": "restart_service",
    "pod-delete": "delete_pod",
    "capacity-down": "scale_down",
    "capacity-up": "scale_up",
    "config-change": "update_config",
    "secret-change": "update_secret",
    "resources-change": "update_resource_limits",
    "autoscaling-change": "update_hpa",
    "storage-change": "expand_volume",
    "scheduling-change": "cordon_node",
    "image-change": "rollout",
    "rollback": "rollback",
    "routing-change": "update_ingress",
    "object-delete": "delete_resource",
    "data-delete": "delete_resource",
    "privilege-change": "modify_iam",
    "network-change": "modify_nsg",
    "node-disruption": "drain_node",
    "failover": "failover_database",
}
_FALLBACK_LEVEL: dict[str, AccessLevel] = {
    "read-only": "READ_ONLY",
    "object-delete": "ADMIN",
    "data-delete": "ADMIN",
    "privilege-change": "ADMIN",
    "node-disruption": "ADMIN",
    "failover": "ADMIN",
}


@dataclass(frozen=True, slots=True)
class Reading:
    """One way to read what a request does."""

    effect: str | None
    """Effect class (None: the verb is not in the registry and nothing else says)."""
    action: str
    """The action the history is searched under."""
    synonyms: frozenset[str]
    """The other actions of its class."""
    level: AccessLevel
    """The access level the policy applies to this reading."""
    source: str
    """``spec.action``, ``spec.description`` or ``spec.change``."""
    facts: ChangeFacts | None
    """What it does to the target and how much (None: nothing known beyond the verb)."""


@dataclass(frozen=True, slots=True)
class Readings:
    """Every reading of a request, the verb's first."""

    action: str
    """``spec.action`` as written."""
    verb: Reading
    others: tuple[Reading, ...]
    text: tuple[TextReading, ...]
    change: ChangeFacts | None
    """What ``spec.change`` does, when given."""

    @property
    def all(self) -> tuple[Reading, ...]:
        """The verb's reading, then the others."""
        return (self.verb, *self.others)

    def disagreement(self) -> str | None:
        """A sentence naming the verb's effect and what else the request asks for (None when
        they agree)."""
        differ = [r for r in self.others if r.effect != self.verb.effect]
        if not differ:
            return None
        verb = self.verb.effect or "not in the action registry"
        asks = "; ".join(f"{r.source} asks for {r.effect} ({_evidence(r, self)})" for r in differ)
        return f"spec.action {self.action} is {verb}, but {asks}: scored as the riskier reading"


def _evidence(reading: Reading, readings: Readings) -> str:
    if reading.source == "spec.change" and reading.facts is not None:
        return reading.facts.summary
    quoted = next((t.evidence for t in readings.text if t.effect == reading.effect), "")
    return f'"{quoted}"' if quoted else reading.effect or ""


def _stricter(a: AccessLevel, b: AccessLevel) -> AccessLevel:
    return a if ACCESS_LEVELS.index(a) >= ACCESS_LEVELS.index(b) else b


def _reading(
    registry: ActionRegistry,
    effect: str,
    source: str,
    verb_level: AccessLevel,
    facts: ChangeFacts | None,
) -> Reading:
    action = registry.canonical.get(effect) or _FALLBACK_ACTION.get(effect, effect)
    level = registry.levels.get(action) or _FALLBACK_LEVEL.get(effect, "WRITE")
    synonyms = registry.synonyms(action) if action in registry.effects else frozenset({action})
    return Reading(effect, action, synonyms, _stricter(verb_level, level), source, facts)


def read_request(
    spec: RemediationRequestSpec, registry: ActionRegistry, target: LiveTarget | None
) -> Readings:
    """The readings of ``spec``: the verb's (its registry class, canonical action and level),
    the text's and the change's, each once; ``target`` sizes them."""
    kind, name = spec.target.kind, spec.target.name
    text = read_text(spec.description)
    change = judge_change(spec.change, kind, name, target) if spec.change is not None else None
    verb_effect = registry.effect(spec.action)
    verb_level = registry.level(spec.action)
    writes = [t for t in text if t.effect != "read-only"]
    # A verb that does not say its direction takes it from the change or the text.
    if verb_effect == CAPACITY_CHANGE:
        said = change.effect if change is not None else None
        said = said or next(
            (t.effect for t in writes if t.effect in ("capacity-down", "capacity-up")), None
        )
        verb_effect = said or "capacity-down"
    if verb_effect is None:
        verb = Reading(
            None,
            spec.action,
            frozenset({spec.action}),
            verb_level,
            "spec.action",
            None,
        )
    else:
        facts = facts_without_change(verb_effect, kind, name, target, list(text), spec.description)
        if change is not None and change.effect == verb_effect:
            facts = change
        read = _reading(registry, verb_effect, "spec.action", verb_level, facts)
        # Searched under its class's names and its own (a verb an admin added to a class).
        verb = Reading(
            read.effect, read.action, read.synonyms | {spec.action}, verb_level, read.source, facts
        )
    others: list[Reading] = []
    seen = {verb.effect}
    if change is not None and change.effect not in seen:
        others.append(_reading(registry, change.effect, "spec.change", verb_level, change))
        seen.add(change.effect)
    for t in writes:
        if t.effect in seen or (t.effect == "restart" and verb.effect is None):
            continue
        facts = facts_without_change(t.effect, kind, name, target, list(text), spec.description)
        # "Set checkout to 12 replicas" is a decrease or an increase by the live count.
        effect = facts.effect if t.effect in SIZED_EFFECTS else t.effect
        if effect in seen:
            continue
        others.append(_reading(registry, effect, "spec.description", verb_level, facts))
        seen.add(effect)
    return Readings(spec.action, verb, tuple(others), tuple(text), change)


def needs_target(spec: RemediationRequestSpec, registry: ActionRegistry) -> bool:
    """Whether the live target changes the answer: a change is given, or the verb or the
    text asks for a replica change or a delete."""
    if spec.change is not None:
        return True
    if registry.effect(spec.action) in SIZED_EFFECTS:
        return True
    return any(t.effect in SIZED_EFFECTS for t in read_text(spec.description))


def searched_as(spec: RemediationRequestSpec, registry: ActionRegistry) -> ProposedAction:
    """The request as the history is searched under its verb: its class's canonical action and
    synonyms (what the operator lists unless another reading is stricter)."""
    proposed = normalize_request(spec)
    verb = read_request(spec, registry, None).verb
    return proposed.reading(verb.action, verb.synonyms)
