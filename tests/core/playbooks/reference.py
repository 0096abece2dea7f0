"""Scalar reference of seed 004's scoring and listing rule, one playbook at a time.

Written from the README's "Playbook selection" section with plain arithmetic, independently of
the product's vectorised code, which the tests check against it on random catalogs. Both label
rules: ``seed`` (the mean over the request's labels) and ``default`` (plus the request's action
as an ``action`` label, every label weighted by 1 − the share of playbooks accepting it, and an
unstated incident type counted as one unknown label for playbooks pinned to one).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from precedent.core.playbooks import PlaybookQuery
from precedent.core.ports import Embedder
from precedent.core.semantic import SemanticCalibration
from precedent.core.vocabulary import concepts
from precedent.models import Playbook

TOLERANCE = 1e-9
_REFINED = ("default", "unstated-unknown")
"""Rule names of the refined label rule (``unstated-unknown`` is the default before the
profile and the selection vocabulary; the reference knows neither)."""


def label_score(accepted: Mapping[str, Collection[str]], key: str, value: str) -> float:
    """One request label: pinned to it (or ``*``) 1, pinned to others 0, not pinned ½."""
    values = accepted.get(key)
    if values is None:
        return 0.5
    return 1.0 if value in values or "*" in values else 0.0


def label_match(
    accepted: Mapping[str, Collection[str]],
    labels: Sequence[tuple[str, str]],
    weights: Sequence[float] | None = None,
) -> float:
    """Weighted mean label score over the request's labels (weights 1 by default); ½ without
    labels or when every weight is 0."""
    weights = [1.0] * len(labels) if weights is None else weights
    total = sum(weights)
    if not labels or total <= 0:
        return 0.5
    scores = [label_score(accepted, k, v) for k, v in labels]
    return sum(w * x for w, x in zip(weights, scores, strict=True)) / total


def accepted_labels(playbook: Playbook, rule: str = "seed") -> dict[str, set[str]]:
    """The playbook's labels, keys without DNS prefix, keys and values lower case; under the
    default rule also its actions (snake_case names and their concepts) under ``action``."""
    out: dict[str, set[str]] = {}
    for key, values in playbook.labels.items():
        out.setdefault(key.lower().rsplit("/", 1)[-1], set()).update(v.lower() for v in values)
    if rule in _REFINED and "action" not in out and playbook.actions:
        names = set(playbook.actions)
        names |= {c.lstrip("~") for a in playbook.actions for c in concepts(a.replace("_", " "))}
        out["action"] = names
    return out


def request_labels(query: PlaybookQuery, rule: str = "seed") -> list[tuple[str, str]]:
    """The labels scored: the request's own, plus its action under the default rule."""
    labels = list(query.labels)
    if rule in _REFINED and query.action and all(k != "action" for k, _ in labels):
        labels.append(("action", query.action))
    return labels


def selectivity(catalog: Sequence[Playbook], key: str, value: str, rule: str) -> float:
    """1 − the share of the catalog's playbooks that accept ``key: value`` (pinned to it or *)."""
    if rule == "seed" or not catalog:
        return 1.0
    accepting = 0
    for playbook in catalog:
        values = accepted_labels(playbook, rule).get(key)
        accepting += values is not None and (value in values or "*" in values)
    return 1.0 - accepting / len(catalog)


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
    *,
    rule: str = "seed",
    catalog: Sequence[Playbook] = (),
) -> Scored:
    """Every part of one playbook's confidence, and the facts the listing rule needs.

    ``catalog`` (every playbook) gives the default rule's selectivity weights."""
    accepted = accepted_labels(playbook, rule)
    asked = request_labels(query, rule)
    label_weights = [selectivity(catalog, k, v, rule) for k, v in asked]
    scores = [label_score(accepted, k, v) for k, v in asked]
    # Default rule: a request that does not state its incident type leaves a playbook pinned
    # to one unconfirmed — one more label, score ½, weight 1.
    if (
        rule in _REFINED
        and "incident-type" in accepted
        and all(k != "incident-type" for k, _ in asked)
    ):
        label_weights.append(1.0)
        scores.append(0.5)
    total_weight = sum(label_weights)
    labels = (
        sum(w * x for w, x in zip(label_weights, scores, strict=True)) / total_weight
        if total_weight > 0
        else 0.5
    )
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
        # The action label never contradicts; only the request's own labels can.
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
