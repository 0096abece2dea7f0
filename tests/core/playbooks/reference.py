"""Scalar reference of seed 004's scoring and listing rule, one playbook at a time.

Written from the README's "Playbook selection" section with plain arithmetic, independently of
the product's vectorised code, which the tests check against it on random catalogs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from precedent.core.playbooks import PlaybookQuery
from precedent.core.ports import Embedder
from precedent.core.semantic import SemanticCalibration
from precedent.models import Playbook

TOLERANCE = 1e-9


def label_score(accepted: Mapping[str, Collection[str]], key: str, value: str) -> float:
    """One request label: pinned to it (or ``*``) 1, pinned to others 0, not pinned ½."""
    values = accepted.get(key)
    if values is None:
        return 0.5
    return 1.0 if value in values or "*" in values else 0.0


def label_match(
    accepted: Mapping[str, Collection[str]], labels: Sequence[tuple[str, str]]
) -> float:
    """Mean label score over the request's labels; ½ without labels."""
    if not labels:
        return 0.5
    return sum(label_score(accepted, k, v) for k, v in labels) / len(labels)


def accepted_labels(playbook: Playbook) -> dict[str, set[str]]:
    """The playbook's labels, keys without DNS prefix, keys and values lower case."""
    out: dict[str, set[str]] = {}
    for key, values in playbook.labels.items():
        out.setdefault(key.lower().rsplit("/", 1)[-1], set()).update(v.lower() for v in values)
    return out


@dataclass(frozen=True)
class Scored:
    """One playbook scored by the reference."""

    id: str
    semantic: float
    label_match: float
    historical: float
    confidence: float
    new: bool
    contradicts: bool
    targets_incident: bool


def score(
    playbook: Playbook,
    query: PlaybookQuery,
    semantic: float,
    weights: tuple[float, float, float] = (0.4, 0.4, 0.2),
    prior: tuple[float, float] = (1.0, 1.0),
) -> Scored:
    """Every part of one playbook's confidence, and the facts the listing rule needs."""
    accepted = accepted_labels(playbook)
    labels = label_match(accepted, query.labels)
    runs, ok = playbook.history.executions, playbook.history.successes
    historical = (ok + prior[0]) / (runs + prior[0] + prior[1])
    w_sem, w_lab, w_hist = weights
    return Scored(
        id=playbook.id,
        semantic=semantic,
        label_match=labels,
        historical=historical,
        confidence=w_sem * semantic + w_lab * labels + w_hist * historical,
        new=runs == 0,
        contradicts=any(label_score(accepted, k, v) == 0.0 for k, v in query.labels),
        targets_incident=any(
            k == "incident-type" and label_score(accepted, k, v) == 1.0 for k, v in query.labels
        ),
    )


def semantic(
    embedder: Embedder, calibration: SemanticCalibration, text: str, description: str
) -> float:
    """Calibrated cosine of two texts, one pair at a time, to 6 places as the product keeps it
    (float32 sums differ in the last bits with the order of terms)."""
    a, b = embedder.embed([text, description])
    return round(calibration(float(a @ b)), 6)


def listed(
    scored: Sequence[Scored],
    min_confidence: float,
    weights: tuple[float, float, float] = (0.4, 0.4, 0.2),
) -> list[Scored]:
    """The playbooks the README's rule lists, best first (ties by id)."""
    bar = min_confidence - TOLERANCE
    turned_away = [
        s.confidence for s in scored if not s.contradicts and not s.new and s.confidence < bar
    ]
    best_turned_away = max(turned_away, default=0.0)
    w_sem, w_lab, _ = weights
    out = []
    for s in scored:
        evidence = (w_sem * s.semantic + w_lab * s.label_match) / (w_sem + w_lab)
        new_ok = (
            s.new
            and not s.contradicts
            and (s.targets_incident or evidence >= bar)
            and s.confidence >= best_turned_away - TOLERANCE
        )
        if s.confidence >= bar or new_ok:
            out.append(s)
    return sorted(out, key=lambda s: (-round(s.confidence, 9), s.id))
