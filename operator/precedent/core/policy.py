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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

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


# The bundled registry. Names are matched exactly: an action must be listed before it is
# treated as anything but ADMIN. PRECEDENT_ACTION_REGISTRY replaces these lists with a file.
_READ_ONLY_ACTIONS = frozenset(
    {
        "collect_diagnostics",
        "collect_logs",
        "describe_resource",
        "get_logs",
        "get_events",
        "list_pods",
        "query_metrics",
        "capture_heap_dump",
    }
)
_WRITE_ACTIONS = frozenset(
    {
        "restart_service",
        "restart_pod",
        "scale_down",
        "scale_up",
        "scale_deployment",  # seed 003's name for a replica change
        "reduce_replicas",  # scale_down by another name (seed 000's upgrade case)
        "increase_replicas",
        "update_config",
        "update_configmap",
        "update_secret",
        "rollback",
        "rollout",
        "patch_deployment",
        "delete_pod",
        "cordon_node",
        "uncordon_node",
        "rotate_certificate",
        "update_resource_limits",
        "update_hpa",
        "update_ingress",
        "update_dns",
        "apply_network_policy",
        "expand_volume",
    }
)
_ADMIN_ACTIONS = frozenset(
    {
        "delete_resource",
        "modify_iam",
        "modify_nsg",
        "drain_node",
        "upgrade_node_pool",
        "failover_database",
    }
)


@dataclass(frozen=True, slots=True)
class ActionRegistry:
    """Action → access level, by exact name; an action not listed is ADMIN.

    There are no name heuristics: ``check_then_restart_service`` is not read-only because it
    starts with ``check_``; it is unknown, hence ADMIN, until someone lists it.
    """

    levels: Mapping[str, AccessLevel] = field(default_factory=lambda: dict(_BUNDLED_LEVELS))
    """Each listed action's level (default: the bundled registry)."""

    @classmethod
    def from_lists(cls, lists: Mapping[AccessLevel, Iterable[str]]) -> ActionRegistry:
        """From ``{level: [actions]}``; an action listed under two levels is an error."""
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
        return cls(levels)

    def level(self, action: str) -> AccessLevel:
        """The action's access level; unknown actions are ADMIN, the most restrictive."""
        return self.levels.get(action, "ADMIN")


_BUNDLED_LEVELS: dict[str, AccessLevel] = {
    **dict.fromkeys(_READ_ONLY_ACTIONS, "READ_ONLY"),
    **dict.fromkeys(_WRITE_ACTIONS, "WRITE"),
    **dict.fromkeys(_ADMIN_ACTIONS, "ADMIN"),
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

    def access_level(self, action: str) -> AccessLevel:
        """READ_ONLY, WRITE or ADMIN from the registry; unknown actions are ADMIN."""
        return self.registry.level(action)

    def decide(self, action: str, band: Band, impact: BlastImpact | None = None) -> PolicyVerdict:
        """The decision for an action whose risk fell in ``band`` and whose target has the
        blast radius ``impact`` (None: unknown, not weighed)."""
        level = self.access_level(action)
        decision, reason = BAND_DECISIONS[band], None
        if level == "READ_ONLY" and decision is not Decision.APPROVED:
            decision, reason = Decision.APPROVED, "read-only action: runs without approval"
        elif level == "ADMIN" and band is Band.LOW:
            decision, reason = Decision.ESCALATED, "ADMIN action: always needs approval"
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
