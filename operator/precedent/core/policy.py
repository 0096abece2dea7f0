"""Policy: how dangerous an action is by kind, and whether a human must approve (seed 003).

Actions are READ_ONLY, WRITE or ADMIN, looked up by exact name in an explicit registry (the
bundled default below, or a file named by ``PRECEDENT_ACTION_REGISTRY``). Unknown actions are
treated as ADMIN, the most restrictive level. Decision table: band high → Denied; medium →
Escalated (approval required); low → Approved, except ADMIN actions, which always need approval.
READ_ONLY actions change nothing and are approved whatever the history says.

Enforce and audit-only differ for real: in enforce mode an Escalated request waits for a human
(``approval.state`` Pending) and a Denied one stays denied; in audit-only mode nothing waits or
is refused — the decision is Approved and the decision enforce mode would have made is recorded
in ``policy.wouldBe`` (approval state AuditOnly), for the telemetry seed 003 asks for.

Blast radius (issue 15): a request the table would approve is Escalated when its target has
more dependents than :attr:`BlastLimits.max_upstream`, or (``escalate_critical``) when a
critical service depends on it. The risk model does not weigh the blast radius: the risk score
says how often such actions went wrong before; how much a failure would touch is a separate
question with its own threshold, and mixing it into the score would hide which one decided.
Read-only actions change nothing and are never escalated for it; Escalated and Denied stay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from precedent.core.effects import EFFECT_CLASSES
from precedent.core.floors import DangerFloors
from precedent.models import ApprovalState, Band, Decision, PolicyApproval, PolicyResult

__all__ = [
    "ACCESS_LEVELS",
    "BAND_DECISIONS",
    "AccessLevel",
    "ActionRegistry",
    "BlastImpact",
    "BlastLimits",
    "PolicyEngine",
    "PolicyVerdict",
    "decision_without_approval",
]

AccessLevel = Literal["READ_ONLY", "WRITE", "ADMIN"]

ACCESS_LEVELS: tuple[AccessLevel, ...] = ("READ_ONLY", "WRITE", "ADMIN")


# The bundled registry: each effect class with its actions, the canonical one (the name the
# history is compared under) first, and each action's access level. Names are matched exactly:
# an action must be listed before it is treated as anything but ADMIN.
# PRECEDENT_ACTION_REGISTRY replaces all of it with a file (manifests/action-registry.yaml).
_BUNDLED_EFFECTS: dict[str, tuple[str, ...]] = {
    "read-only": (
        "collect_diagnostics",
        "collect_logs",
        "describe_resource",
        "get_logs",
        "get_events",
        "list_pods",
        "query_metrics",
        "capture_heap_dump",
    ),
    "restart": (
        "restart_service",
        "restart_pod",
        "restart_deployment",
        "rollout_restart",
    ),
    "pod-delete": ("delete_pod", "evict_pod"),
    "capacity-down": ("scale_down", "reduce_replicas", "decrease_replicas", "scale_in"),
    "capacity-up": ("scale_up", "increase_replicas", "scale_out"),
    # A replica change whose direction the verb does not say: read from the change or text.
    "capacity-change": ("scale_deployment", "scale_statefulset", "set_replicas"),
    "config-change": ("update_config", "update_configmap", "patch_deployment"),
    "secret-change": ("update_secret", "rotate_certificate"),
    "resources-change": ("update_resource_limits", "set_resources"),
    "autoscaling-change": ("update_hpa",),
    "storage-change": ("expand_volume",),
    "scheduling-change": ("cordon_node", "uncordon_node"),
    "image-change": ("rollout", "update_image", "set_image"),
    "rollback": ("rollback", "undo_rollout"),
    "object-delete": ("delete_resource", "delete_job", "delete_deployment", "delete_namespace"),
    "data-delete": ("delete_pvc", "delete_volume", "drop_database"),
    "privilege-change": ("modify_iam", "grant_role", "create_rolebinding", "bind_cluster_role"),
    "network-change": ("modify_nsg", "apply_network_policy"),
    "routing-change": ("update_ingress", "update_dns"),
    "node-disruption": ("drain_node", "upgrade_node_pool", "reboot_node"),
    "failover": ("failover_database",),
}
_ADMIN_ACTIONS = frozenset(
    {
        "delete_resource",
        "delete_deployment",
        "delete_namespace",
        "delete_pvc",
        "delete_volume",
        "drop_database",
        "modify_iam",
        "grant_role",
        "create_rolebinding",
        "bind_cluster_role",
        "modify_nsg",
        "drain_node",
        "upgrade_node_pool",
        "reboot_node",
        "failover_database",
    }
)


@dataclass(frozen=True, slots=True)
class ActionRegistry:
    """Action → access level and effect class, by exact name; an action not listed is ADMIN
    with no effect class (its text or change says what it does).

    There are no name heuristics: ``check_then_restart_service`` is not read-only because it
    starts with ``check_``; it is unknown, hence ADMIN, until someone lists it.
    """

    levels: Mapping[str, AccessLevel] = field(default_factory=lambda: dict(_BUNDLED_LEVELS))
    """Each listed action's level (default: the bundled registry)."""
    effects: Mapping[str, str] = field(default_factory=lambda: dict(_BUNDLED_EFFECT_OF))
    """Each listed action's effect class (default: the bundled registry)."""
    canonical: Mapping[str, str] = field(default_factory=lambda: dict(_BUNDLED_CANONICAL))
    """Each effect class's canonical action: the name its actions are compared under."""

    @classmethod
    def from_lists(
        cls,
        lists: Mapping[AccessLevel, Iterable[str]],
        effects: Mapping[str, Sequence[str]] | None = None,
    ) -> ActionRegistry:
        """From ``{level: [actions]}`` and ``{effect class: [actions, canonical first]}``;
        an action listed under two levels or two classes is an error, and so is an effect
        class naming an action no level lists (its access would be a guess)."""
        levels: dict[str, AccessLevel] = {}
        for level, actions in lists.items():
            if level not in ACCESS_LEVELS:
                raise ValueError(
                    f"unknown access level {level!r}: expected one of READ_ONLY, WRITE, ADMIN"
                )
            for action in actions:
                if action in levels and levels[action] != level:
                    raise ValueError(f"action {action!r} is listed as {levels[action]} and {level}")
                levels[action] = level
        effect_of: dict[str, str] = {}
        canonical: dict[str, str] = {}
        for effect, actions in (effects or {}).items():
            if effect not in EFFECT_CLASSES:
                raise ValueError(
                    f"unknown effect class {effect!r}: expected one of {', '.join(EFFECT_CLASSES)}"
                )
            for action in actions:
                if action not in levels:
                    raise ValueError(
                        f"effects.{effect}: action {action!r} is in no access level list"
                    )
                if action in effect_of and effect_of[action] != effect:
                    raise ValueError(
                        f"action {action!r} is in effect classes {effect_of[action]} and {effect}"
                    )
                effect_of[action] = effect
                canonical.setdefault(effect, action)
        for action, effect in effect_of.items():
            if effect == "read-only" and levels[action] != "READ_ONLY":
                raise ValueError(
                    f"action {action!r} has effect class read-only but access {levels[action]}"
                )
            if effect != "read-only" and levels[action] == "READ_ONLY":
                raise ValueError(f"action {action!r} is READ_ONLY but has effect class {effect}")
        return cls(levels, effect_of, canonical)

    def level(self, action: str) -> AccessLevel:
        """The action's access level; unknown actions are ADMIN, the most restrictive."""
        return self.levels.get(action, "ADMIN")

    def effect(self, action: str) -> str | None:
        """The action's effect class, or None when the registry does not say."""
        return self.effects.get(action)

    def canonical_action(self, action: str) -> str:
        """The name ``action`` is compared with the history under: its class's canonical
        action (itself when it has no class)."""
        effect = self.effects.get(action)
        return self.canonical.get(effect, action) if effect is not None else action

    def synonyms(self, action: str) -> frozenset[str]:
        """Every action of ``action``'s effect class (itself alone when it has none)."""
        effect = self.effects.get(action)
        if effect is None:
            return frozenset({action})
        return frozenset(a for a, e in self.effects.items() if e == effect) | {action}


_BUNDLED_EFFECT_OF: dict[str, str] = {
    action: effect for effect, actions in _BUNDLED_EFFECTS.items() for action in actions
}
_BUNDLED_CANONICAL: dict[str, str] = {
    effect: actions[0] for effect, actions in _BUNDLED_EFFECTS.items()
}
_BUNDLED_LEVELS: dict[str, AccessLevel] = {
    action: "READ_ONLY"
    if effect == "read-only"
    else ("ADMIN" if action in _ADMIN_ACTIONS else "WRITE")
    for action, effect in _BUNDLED_EFFECT_OF.items()
}


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """The decision and the policy part of the status."""

    decision: Decision
    """Approved, Escalated or Denied."""
    policy: PolicyResult
    """Access level, whether approval is required, and why the decision is not the band's."""


BAND_DECISIONS: dict[Band, Decision] = {
    Band.LOW: Decision.APPROVED,
    Band.MEDIUM: Decision.ESCALATED,
    Band.HIGH: Decision.DENIED,
}
"""Seed 000's decision for each risk band, before the access level is taken into account: the
one table from band to decision."""


def decision_without_approval(band: Band) -> Decision:
    """The decision a request that took an approval has again once the approval no longer
    applies (it expired): Denied for a high band (only a break-glass approval moves it), else
    Escalated (only requests the policy escalated take approvals)."""
    decision = BAND_DECISIONS[band]
    return decision if decision is Decision.DENIED else Decision.ESCALATED


@dataclass(frozen=True, slots=True)
class BlastImpact:
    """What the policy weighs of a target's blast radius (from the dependency graph)."""

    target: str
    """The node, e.g. ``deploy/payment-api``."""
    upstream_count: int
    """Nodes depending on it, transitively (workloads, Services, Ingresses)."""
    critical_upstream: tuple[str, ...] = ()
    """Critical nodes among them, nearest first."""


@dataclass(frozen=True, slots=True)
class BlastLimits:
    """When a blast radius escalates a request that would be approved."""

    max_upstream: int | None = 5
    """More dependents than this escalates; None: no count limit."""
    escalate_critical: bool = True
    """Any critical service depending on the target escalates."""

    def reason(self, impact: BlastImpact) -> str | None:
        """Why ``impact`` needs a human, or None when it is within the limits."""
        reasons = []
        critical = impact.critical_upstream
        if self.escalate_critical and critical:
            noun = "critical service" if len(critical) == 1 else "critical services"
            reasons.append(f"{len(critical)} {noun} upstream: {', '.join(critical)}")
        if self.max_upstream is not None and impact.upstream_count > self.max_upstream:
            reasons.append(
                f"{impact.upstream_count} nodes depend on {impact.target} "
                f"(limit {self.max_upstream})"
            )
        return "blast radius: " + "; ".join(reasons) if reasons else None


@dataclass(frozen=True, slots=True)
class PolicyEngine:
    """Classifies actions and applies the decision table: the only producer of a decision."""

    enforce: bool = True
    """Enforce mode: escalated requests wait for approval. Audit-only records the decision."""
    registry: ActionRegistry = field(default_factory=ActionRegistry)
    """Which access level each action has."""
    blast: BlastLimits = field(default_factory=BlastLimits)
    """When a target's blast radius escalates an approvable request."""
    floors: DangerFloors = field(default_factory=DangerFloors)
    """The lowest band a change's own danger sets (core.floors)."""

    def access_level(self, action: str) -> AccessLevel:
        """READ_ONLY, WRITE or ADMIN from the registry; unknown actions are ADMIN."""
        return self.registry.level(action)

    def decide(self, action: str, band: Band, impact: BlastImpact | None = None) -> PolicyVerdict:
        """The decision for an action whose risk fell in ``band`` and whose target has the
        blast radius ``impact`` (None: unknown, not weighed)."""
        return self.decide_level(self.access_level(action), band, impact)

    def decide_level(
        self,
        level: AccessLevel,
        band: Band,
        impact: BlastImpact | None = None,
        *,
        must_ask: str | None = None,
    ) -> PolicyVerdict:
        """:meth:`decide` for a change of access ``level``; ``must_ask`` (a reason) turns an
        Approved decision into Escalated (a read-only verb whose text asks for a write)."""
        decision, reason = BAND_DECISIONS[band], None
        if level == "READ_ONLY" and decision is not Decision.APPROVED:
            decision, reason = Decision.APPROVED, "read-only action: runs without approval"
        elif level == "ADMIN" and band is Band.LOW:
            decision, reason = Decision.ESCALATED, "ADMIN action: always needs approval"
        if must_ask is not None and decision is Decision.APPROVED:
            decision, reason = Decision.ESCALATED, must_ask
        if decision is Decision.APPROVED and level != "READ_ONLY" and impact is not None:
            wide = self.blast.reason(impact)
            if wide is not None:
                decision, reason = Decision.ESCALATED, wide
        if not self.enforce:
            if decision is Decision.APPROVED:
                return PolicyVerdict(
                    decision,
                    PolicyResult(access_level=level, approval_required=False, reason=reason),
                )
            because = f"; {reason}" if reason else ""
            return PolicyVerdict(
                Decision.APPROVED,
                PolicyResult(
                    access_level=level,
                    approval_required=False,
                    approval=PolicyApproval(state=ApprovalState.AUDIT_ONLY),
                    reason=f"audit-only mode: enforce mode would decide {decision}{because}",
                    would_be=decision,
                ),
            )
        required = decision is Decision.ESCALATED
        approval = PolicyApproval(state=ApprovalState.PENDING) if required else None
        return PolicyVerdict(
            decision,
            PolicyResult(
                access_level=level, approval_required=required, approval=approval, reason=reason
            ),
        )
