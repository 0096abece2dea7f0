"""The selection decision: which playbooks qualify, which one is picked, and why.

Every playbook is scored; those at or above ``min_confidence`` qualify. New playbooks are
always listed when they are relevant: a **new** playbook (no executions) qualifies below
``min_confidence`` when it contradicts none of the request's labels, either pins the request's
``incident-type`` (it was written for this kind of incident) or has an evidence part —
semantic and label parts re-weighted to sum to 1 — that reaches ``min_confidence``, and no
established playbook that also fits the labels scored higher and was turned away, and (under a
model that reads objects) it is written for the kind of object the request touches — a TLS
Secret procedure is never offered for a database password: a new playbook is a best guess
where nothing proven fits, never a way around a proven one. Its
reported confidence is the full formula, low until it has run, and the rationale says when a
pick is below ``min_confidence``.

Qualifying playbooks are sorted by confidence (ties by id), cut to ``max_results``; the first
is selected, the next three are alternatives. When none qualifies the answer is a
``manual_investigation`` recommendation that says whether nothing matched (every playbook pins
a request label to another value, or the catalog is empty) or nothing was confident enough.
"""

from __future__ import annotations

from typing import Literal

from precedent.core.playbooks._arrays import BoolArray, F64Array
from precedent.core.playbooks.confidence import ConfidenceWeights
from precedent.core.playbooks.query import CatalogAnswer, PlaybookQuery, ScoredPlaybook
from precedent.core.ports import PlaybookDecision
from precedent.models import Alternative, PlaybookSelection, Recommendation

__all__ = [
    "MAX_ALTERNATIVES",
    "MAX_RATIONALE",
    "MAX_SUGGESTION",
    "NEAR_MISS",
    "SCORE_TOLERANCE",
    "SelectionMethod",
    "decide",
    "qualifying",
    "unavailable",
]

MAX_ALTERNATIVES = 3
"""Runner-up playbooks listed beside the selection."""
NEAR_MISS = 0.1
"""A playbook this close below ``min_confidence`` is worth a look by hand."""
MAX_RATIONALE = 4096
"""Longest ``status.playbook.rationale`` and ``status.recommendation.reason`` (CRD limits)."""
MAX_SUGGESTION = 1024
"""Longest entry of ``status.recommendation.suggestedActions`` (CRD limit)."""
SCORE_TOLERANCE = 1e-9
"""Scores this close count as equal: float sums differ in the last bits with term order."""

SelectionMethod = Literal["data_driven", "fallback"]


def qualifying(
    min_confidence: float,
    confidence: F64Array,
    evidence: F64Array,
    *,
    active: BoolArray,
    new: BoolArray,
    contradicts: BoolArray,
    targets_incident: BoolArray,
    same_object: BoolArray | None = None,
) -> BoolArray:
    """Which playbooks are listed (the module doc's rule), one entry per catalog row.

    ``evidence`` is :func:`~precedent.core.playbooks.confidence.evidence`; ``active`` marks
    rows holding a playbook; ``contradicts`` and ``targets_incident`` come from the label
    table; ``same_object`` (when the model reads objects) marks rows written for the kind of
    object the request touches: a new playbook for another kind is never offered.
    """
    threshold = min_confidence - SCORE_TOLERANCE
    fits = active & ~contradicts
    turned_away = fits & ~new & (confidence < threshold)
    bar = float(confidence[turned_away].max()) if turned_away.any() else 0.0
    relevant = targets_incident | (evidence >= threshold)
    new_ok = new & fits & relevant & (confidence >= bar - SCORE_TOLERANCE)
    listed: BoolArray = active & ((confidence >= threshold) | new_ok)
    if same_object is not None:
        # The model that reads objects also reads labels as the seed's filters: a playbook
        # that pins a stated label to another value is not listed, however well it scores.
        listed &= ~contradicts
        listed &= ~(new & ~same_object & (confidence < threshold))
    return listed


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _percent(value: float) -> str:
    return f"{value:.2f}"


def _below(value: float, threshold: float) -> tuple[str, str]:
    """``value`` and ``threshold`` (value < threshold) printed with as many digits (two at
    least) as it takes for the comparison to show: "0.699 below 0.700", never "0.70 below 0.70"."""
    for digits in range(2, 7):
        shown, limit = f"{value:.{digits}f}", f"{threshold:.{digits}f}"
        if float(shown) < float(limit):
            return shown, limit
    return repr(value), repr(threshold)


def _rationale(
    pick: ScoredPlaybook,
    query: PlaybookQuery,
    weights: ConfidenceWeights,
    source_note: str | None,
    alternatives: int,
    inferred: tuple[str, ...] = (),
    held_back: tuple[ScoredPlaybook, ...] = (),
) -> str:
    below = pick.is_new and pick.confidence < query.min_confidence
    shown, limit = (
        _below(pick.confidence, query.min_confidence)
        if below
        else (_percent(pick.confidence), _percent(query.min_confidence))
    )
    sentence = f"Selected {pick.id} {pick.version} with confidence {shown}"
    if pick.parts is not None:
        part, value = pick.parts.strongest(weights)
        sentence += f", strongest on {part} ({_percent(value)})"
    else:
        sentence += " (the Context API reports the total only, not its parts)"
    if pick.is_new:
        sentence += ", a new playbook with no execution history"
        if below:
            sentence += (
                f", listed below min_confidence {limit} because new "
                "playbooks are judged without history"
            )
    if alternatives:
        sentence += f"; {alternatives} alternative{'s' if alternatives > 1 else ''} listed"
    if inferred:
        sentence += (
            f"; the request states no incident-type, read from its text as {_types(inferred)}"
        )
    for held in held_back[:MAX_ALTERNATIVES]:
        sentence += (
            f"; {held.id} scored {_percent(held.confidence)} but was held back: {held.held_back}"
        )
    sentence += "."
    return f"{source_note} {sentence}" if source_note else sentence


def _suggestions(query: PlaybookQuery, answer: CatalogAnswer | None) -> list[str]:
    subject = query.subject or "the target"
    steps = [
        f"inspect the events, logs and recent restarts of {subject}",
        f"review recent changes to {subject} (rollouts, configuration, scaling)",
    ]
    near = answer.best_below if answer else None
    if near is not None and near.confidence >= query.min_confidence - NEAR_MISS:
        steps.append(
            f"review the closest playbook, {near.id} {near.version} "
            f"(confidence {_percent(near.confidence)}), before running any step by hand"
        )
    incident = query.incident_type
    steps.append(
        f"create a playbook for incident type {incident} once the cause is known"
        if incident != "unknown"
        else "label the request with its incident-type so a playbook can match it"
    )
    return steps


def _types(inferred: tuple[str, ...]) -> str:
    return " or ".join(inferred[:3])


def _manual_reason(query: PlaybookQuery, answer: CatalogAnswer) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in query.labels) or "none"
    if answer.catalog_size == 0:
        return f"no playbook matched: the catalog ({answer.source}) is empty"
    if answer.consistent == 0:
        return (
            f"no playbook matched: all {answer.catalog_size} playbooks pin one of the "
            f"request's labels ({labels}) to another value"
        )
    near = answer.best_below
    if near is not None and near.parts is not None:
        p = near.parts
        parts = (
            f"(semantic {_percent(p.semantic)}, label match {_percent(p.label_match)}, "
            f"historical {_percent(p.historical)})"
        )
        if near.held_back:
            reason = (
                f"no playbook selected: the best, {near.id} {near.version}, scored "
                f"{_percent(near.confidence)} {parts} but was held back: {near.held_back}"
            )
        else:
            shown, limit = _below(near.confidence, query.min_confidence)
            reason = (
                f"no playbook confident enough: the best, {near.id} {near.version}, scored "
                f"{shown} {parts}, below min_confidence {limit}"
            )
        if answer.inferred_incident_types:
            reason += "; the request states no incident-type, read from its text as " + _types(
                answer.inferred_incident_types
            )
        return reason
    return (
        f"no playbook confident enough: {answer.source} returned none at or above "
        f"min_confidence {_percent(query.min_confidence)} for labels {labels}"
    )


def _selection(pick: ScoredPlaybook, method: SelectionMethod, rationale: str) -> PlaybookSelection:
    parts = pick.parts
    return PlaybookSelection(
        id=pick.id,
        version=pick.version,
        confidence=round(min(max(pick.confidence, 0.0), 1.0), 4),
        components=PlaybookSelection.components_of(
            semantic=parts.semantic, label_match=parts.label_match, historical=parts.historical
        )
        if parts is not None
        else {},
        selection_method=method,
        rationale=_clip(rationale, MAX_RATIONALE),
    )


def decide(
    query: PlaybookQuery,
    answer: CatalogAnswer,
    *,
    method: SelectionMethod = "data_driven",
    note: str | None = None,
    weights: ConfidenceWeights | None = None,
) -> PlaybookDecision:
    """Pick the highest-confidence candidate, or recommend manual investigation.

    ``note`` prefixes the rationale (why a fallback was used).
    """
    weights = weights or ConfidenceWeights()
    if not answer.candidates:
        reason = _manual_reason(query, answer)
        return PlaybookDecision(
            recommendation=Recommendation(
                action="manual_investigation",
                reason=_clip(f"{note} {reason}" if note else reason, MAX_RATIONALE),
                suggested_actions=[_clip(a, MAX_SUGGESTION) for a in _suggestions(query, answer)],
            )
        )
    pick, *rest = answer.candidates
    alternatives = [
        Alternative(id=c.id, version=c.version, confidence=round(c.confidence, 4))
        for c in rest[:MAX_ALTERNATIVES]
    ]
    rationale = _rationale(
        pick,
        query,
        weights,
        note,
        len(alternatives),
        answer.inferred_incident_types,
        answer.held_back,
    )
    return PlaybookDecision(
        selection=_selection(pick, method, rationale), alternatives=alternatives
    )


def unavailable(query: PlaybookQuery, reason: str) -> PlaybookDecision:
    """Manual investigation because no catalog could answer."""
    return PlaybookDecision(
        recommendation=Recommendation(
            action="manual_investigation",
            reason=_clip(f"playbook catalog unavailable: {reason}", MAX_RATIONALE),
            suggested_actions=[_clip(a, MAX_SUGGESTION) for a in _suggestions(query, None)],
        )
    )
