"""Policy: how dangerous an action is by kind, and whether a human must approve (seed 003).

Actions are READ_ONLY, WRITE or ADMIN. Unknown actions are treated as ADMIN, the most
restrictive level. Decision table: band high → Denied; medium → Escalated (approval
required); low → Approved, except ADMIN actions, which always need approval. READ_ONLY actions
change nothing and are approved whatever the history says. In audit-only mode the decision
is recorded but nothing waits for approval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from precedent.models import Band, Decision, PolicyResult

__all__ = ["BAND_DECISIONS", "AccessLevel", "PolicyEngine", "PolicyVerdict"]

AccessLevel = Literal["READ_ONLY", "WRITE", "ADMIN"]

_READ_ONLY_PREFIXES = ("get_", "list_", "describe_", "collect_", "fetch_", "query_", "check_")
_WRITE_ACTIONS = frozenset(
    {
        "restart_service",
        "restart_pod",
        "scale_down",
        "scale_up",
        "update_config",
        "update_configmap",
        "update_secret",
        "rollback",
        "rollout",
        "patch_deployment",
        "delete_pod",
        "cordon_node",
        "rotate_certificate",
        "update_resource_limits",
        "update_hpa",
        "update_ingress",
        "update_dns",
        "apply_network_policy",
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
"""Seed 000's decision for each risk band, before the access level is taken into account."""


@dataclass(frozen=True, slots=True)
class PolicyEngine:
    """Classifies actions and applies the decision table: the only producer of a decision."""

    enforce: bool = True
    read_only: frozenset[str] = field(default_factory=frozenset)
    write: frozenset[str] = _WRITE_ACTIONS
    admin: frozenset[str] = _ADMIN_ACTIONS

    def access_level(self, action: str) -> AccessLevel:
        """READ_ONLY, WRITE or ADMIN; unknown actions are ADMIN."""
        if action in self.read_only or action.startswith(_READ_ONLY_PREFIXES):
            return "READ_ONLY"
        if action in self.admin:
            return "ADMIN"
        if action in self.write:
            return "WRITE"
        return "ADMIN"

    def decide(self, action: str, band: Band) -> PolicyVerdict:
        """The decision for an action whose risk fell in ``band``."""
        level = self.access_level(action)
        decision, reason = BAND_DECISIONS[band], None
        if level == "READ_ONLY" and decision is not Decision.APPROVED:
            decision, reason = Decision.APPROVED, "read-only action: runs without approval"
        elif level == "ADMIN" and band is Band.LOW:
            decision, reason = Decision.ESCALATED, "ADMIN action: always needs approval"
        required = decision is Decision.ESCALATED
        if not self.enforce:
            approval = "audit-only" if required else None
            return PolicyVerdict(
                decision,
                PolicyResult(
                    access_level=level, approval_required=False, approval=approval, reason=reason
                ),
            )
        approval = "Pending" if required else None
        return PolicyVerdict(
            decision,
            PolicyResult(
                access_level=level, approval_required=required, approval=approval, reason=reason
            ),
        )
