"""Danger floors: what a change's own danger says about its risk when history says little.

History answers "has something like this gone wrong before?"; with no precedent its score is
low, and an approver reads "low" or "medium" as "not that risky". Some changes are dangerous
whatever the history holds: deleting data in production, granting cluster-wide admin, stopping
every member of a quorum. A floor is a rule ``effect class + environment + facts → band``; the
score is raised to the band's floor (:data:`FLOOR_SCORES`) and never lowered, so history can
raise it further. Floors are admin-owned policy (``PRECEDENT_DANGER_FLOORS``, a YAML file like
the action registry); :data:`BUNDLED_FLOORS` are the defaults, documented in docs/risk.md.
Seed 000's formula (``--risk-model seed``) has no floors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from precedent.core.effects import EFFECT_CLASSES
from precedent.core.risk import LOW_BAND_MAX, MEDIUM_BAND_MAX
from precedent.models import Band

__all__ = [
    "BUNDLED_FLOORS",
    "FACTS",
    "FLOOR_SCORES",
    "DangerFloors",
    "Floor",
    "FloorHit",
]

FLOOR_SCORES: dict[Band, float] = {
    Band.LOW: 0.0,
    Band.MEDIUM: float(int(LOW_BAND_MAX) + 1),
    Band.HIGH: float(int(MEDIUM_BAND_MAX) + 1),
}
"""The score a floor raises to: the first whole point of its band (26 medium, 61 high)."""

FACTS: dict[str, str] = {
    "capacityRemoved": "share of the target's replicas the change removes (0–1)",
    "toZero": "the change leaves no replica",
    "stateful": "the target is a StatefulSet or mounts PersistentVolumeClaims",
    "quorum": "every member of a stateful set stops at once",
    "belowHpaMin": "fewer replicas than its HorizontalPodAutoscaler's minimum",
    "beyondPdb": "fewer replicas than its PodDisruptionBudget's minAvailable",
    "dataVolumes": "PersistentVolumeClaims (or other data) the change deletes",
    "clusterAdmin": "the role granted is cluster-admin, admin or system:masters",
    "broad": "the subjects include a broad group (system:authenticated, all service accounts)",
    "wholePool": "every node of a pool is disrupted at once",
    "completed": "the target is a Job that has completed",
}
"""The facts a floor may test (core.change), with what each means."""

_TIERS = {"production": 0, "staging": 1, "development": 2}


@dataclass(frozen=True, slots=True)
class Floor:
    """One rule: when ``effect`` in one of ``environments`` has every fact in ``when``, the
    band is at least ``band``. A number in ``when`` is a minimum, a bool must be equal."""

    effect: str
    band: Band
    reason: str
    environments: tuple[str, ...] = ("production",)
    when: Mapping[str, float | bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.effect not in EFFECT_CLASSES:
            raise ValueError(f"effect: unknown effect class {self.effect!r}")
        for env in self.environments:
            if env not in _TIERS:
                raise ValueError(f"environments: {env!r} is not production, staging or development")
        for key in self.when:
            if key not in FACTS:
                raise ValueError(f"when.{key}: unknown fact (one of {', '.join(FACTS)})")

    def holds(self, effect: str, tier: int, facts: Mapping[str, float | bool]) -> bool:
        """Whether the rule applies to a change of ``effect`` in environment ``tier``."""
        if effect != self.effect or tier not in {_TIERS[e] for e in self.environments}:
            return False
        for key, wanted in self.when.items():
            have = facts.get(key)
            if isinstance(wanted, bool):
                if bool(have) is not wanted:
                    return False
            elif have is None or isinstance(have, bool) or float(have) < float(wanted):
                return False
        return True


@dataclass(frozen=True, slots=True)
class FloorHit:
    """The strictest floor that applies, and the score it sets."""

    floor: Floor
    score: float


BUNDLED_FLOORS: tuple[Floor, ...] = (
    Floor("data-delete", Band.HIGH, "deletes data in production"),
    Floor(
        "privilege-change",
        Band.HIGH,
        "grants a cluster-wide admin role in production",
        when={"clusterAdmin": True},
    ),
    Floor(
        "privilege-change",
        Band.HIGH,
        "grants a role to a broad group in production",
        when={"broad": True},
    ),
    Floor("privilege-change", Band.MEDIUM, "changes privileges in production"),
    Floor(
        "capacity-down",
        Band.HIGH,
        "stops every member of a stateful workload in production",
        when={"quorum": True},
    ),
    Floor(
        "object-delete",
        Band.HIGH,
        "deletes a stateful workload with all its members in production",
        when={"quorum": True},
    ),
    Floor(
        "capacity-down",
        Band.HIGH,
        "takes a production workload to zero replicas: an outage by construction",
        when={"toZero": True, "capacityRemoved": 1.0},
    ),
    Floor(
        "capacity-down",
        Band.MEDIUM,
        "removes at least half of a production workload's capacity",
        when={"capacityRemoved": 0.5},
    ),
    Floor(
        "object-delete",
        Band.HIGH,
        "deletes a production workload with all its replicas: an outage by construction",
        when={"toZero": True, "capacityRemoved": 1.0},
    ),
    Floor(
        "capacity-down",
        Band.MEDIUM,
        "scales a production workload below its HorizontalPodAutoscaler's minimum",
        when={"belowHpaMin": True},
    ),
    Floor(
        "capacity-down",
        Band.MEDIUM,
        "scales a production workload below what its PodDisruptionBudget requires",
        when={"beyondPdb": True},
    ),
    Floor(
        "node-disruption",
        Band.HIGH,
        "disrupts every node of a production pool at once",
        when={"wholePool": True},
    ),
    Floor("failover", Band.MEDIUM, "fails a production database over"),
)


@dataclass(frozen=True, slots=True)
class DangerFloors:
    """The floors in force (default: :data:`BUNDLED_FLOORS`)."""

    floors: Sequence[Floor] = BUNDLED_FLOORS

    def strictest(
        self, effect: str, tier: int, facts: Mapping[str, float | bool]
    ) -> FloorHit | None:
        """The highest floor that applies (the first listed on a tie), or None."""
        best: FloorHit | None = None
        for floor in self.floors:
            if floor.holds(effect, tier, facts):
                score = FLOOR_SCORES[floor.band]
                if best is None or score > best.score:
                    best = FloorHit(floor, score)
        return best
