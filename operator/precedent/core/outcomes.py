"""Reported outcomes: what a request's ``spec.outcome`` contributes, as pure values.

An executor reports once how an action went (``succeeded``, ``failed`` or ``partial``). Three
things are derived from the set of reported outcomes, always recounted from the whole set so
that a duplicate event or a restart can never count one twice:

* **playbook counts** — executions and successes of the playbook that ran, added to the
  playbook's hand-edited prior (``spec.history``); seed 004's historical part of the
  confidence is their smoothed rate;
* **base-rate evidence** — per (action, canonical resource kind), the successes and the
  failures with their times, for the risk model (``core.risk_model.OutcomeEvidence``);
* **an Incident** for a failed or partial outcome (:func:`incident_from_outcome`), so that
  the history grows by itself;
* **served examples** — the requests a playbook served successfully, one line each
  (:func:`served_examples`): the catalog reads them with the playbook's description and steps
  when it scores the semantic part, so a playbook learns the words its requests are written in.

A ``partial`` outcome is not a success: it counts as an execution without success, and as a
failure in the base-rate evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from precedent.core.normalize import ACTION_KEYWORDS, normalize_request
from precedent.core.risk_model import OutcomeEvidence
from precedent.core.risk_model import OutcomeRecord as OutcomeRecord_
from precedent.models import (
    Incident,
    IncidentOutcome,
    IncidentResource,
    PlaybookHistory,
    RemediationRequestSpec,
    RequestOutcomeResult,
    Severity,
)

__all__ = [
    "INCIDENT_REFERENCE_ANNOTATION",
    "INCIDENT_REQUEST_UID_LABEL",
    "OutcomeRecord",
    "PlaybookCounts",
    "count_playbooks",
    "incident_from_outcome",
    "incident_name",
    "outcome_evidence",
    "outcome_record",
    "request_line",
    "served_examples",
    "severity_of_request",
]

MAX_EXAMPLE_CHARS = 512
"""Longest served example (``Playbook.examples`` items are at most this long)."""
MAX_SERVED_EXAMPLES = 8
"""Most served examples per playbook: the most recent successful requests."""

INCIDENT_REFERENCE_ANNOTATION = "precedent.dev/remediation-request"
"""Annotation on an Incident created from an outcome: ``<namespace>/<name>`` of the request."""
INCIDENT_REQUEST_UID_LABEL = "precedent.dev/request-uid"
"""Label on an Incident created from an outcome: the request's uid."""

# Severity words as alerting systems and ticket priorities spell them (Prometheus/Alertmanager
# severities, PagerDuty/Jira priorities, SEV levels). Anything else is medium.
_SEVERITY_WORDS: dict[str, Severity] = {
    **dict.fromkeys(
        ("critical", "crit", "fatal", "emergency", "disaster", "p0", "p1", "sev0", "sev1"),
        Severity.CRITICAL,
    ),
    **dict.fromkeys(("high", "error", "major", "urgent", "p2", "sev2"), Severity.HIGH),
    **dict.fromkeys(
        ("medium", "warning", "warn", "moderate", "average", "p3", "sev3"), Severity.MEDIUM
    ),
    **dict.fromkeys(("low", "info", "minor", "notice", "p4", "p5", "sev4", "sev5"), Severity.LOW),
}

_NAME_LIMIT = 63
_UID_PART = 8
_INVALID_NAME_CHARS = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True, slots=True)
class OutcomeRecord:
    """One request's reported outcome, reduced to what the counts and the evidence need."""

    uid: str
    """The request's uid: the key that makes each outcome count once."""
    action: str
    """The request's action, e.g. restart_service."""
    resource_kind: str
    """The canonical resource kind (``canonical_resource_type``), e.g. deployment."""
    result: RequestOutcomeResult
    """succeeded, failed or partial."""
    playbook: str | None = None
    """Id of the playbook the executor says ran, if it named one."""
    finished_at: datetime | None = None
    """When the action finished, as reported."""
    target: str | None = None
    """The target's short name (lower case), for target-specific evidence."""
    request: str = ""
    """What the request asked, one line (:func:`request_line`): a served example when the
    outcome is a success."""

    @property
    def succeeded(self) -> bool:
        """Only ``succeeded`` is a success; ``partial`` is not."""
        return self.result is RequestOutcomeResult.SUCCEEDED


def outcome_record(uid: str, spec: RemediationRequestSpec) -> OutcomeRecord | None:
    """The record of a request's outcome, or None while no outcome is reported."""
    if spec.outcome is None:
        return None
    proposed = normalize_request(spec)
    return OutcomeRecord(
        uid=uid,
        action=proposed.action,
        resource_kind=proposed.resource_type,
        result=spec.outcome.result,
        playbook=spec.outcome.playbook.id if spec.outcome.playbook else None,
        finished_at=spec.outcome.finished_at,
        target=proposed.resource_name or None,
        request=request_line(spec),
    )


def request_line(spec: RemediationRequestSpec) -> str:
    """What a request asked, one line of at most :data:`MAX_EXAMPLE_CHARS` characters: its
    description, or its action in words when it has none."""
    text = " ".join((spec.description or "").split()) or spec.action.replace("_", " ")
    return text if len(text) <= MAX_EXAMPLE_CHARS else text[: MAX_EXAMPLE_CHARS - 1] + "…"


def served_examples(
    records: Iterable[OutcomeRecord], playbook: str, limit: int = MAX_SERVED_EXAMPLES
) -> tuple[str, ...]:
    """The requests ``playbook`` served successfully, most recent first (by finish time, then
    uid, so the same set always gives the same list), each text once, at most ``limit``."""
    served = [r for r in records if r.playbook == playbook and r.succeeded and r.request]
    served.sort(key=lambda r: r.uid)
    served.sort(key=lambda r: r.finished_at.timestamp() if r.finished_at else 0.0, reverse=True)
    seen: dict[str, None] = {}
    for record in served:
        seen.setdefault(record.request, None)
        if len(seen) == limit:
            break
    return tuple(seen)


@dataclass(frozen=True, slots=True)
class PlaybookCounts:
    """Executions and successes of one playbook."""

    executions: int = 0
    """How many times it ran."""
    successes: int = 0
    """How many of those succeeded."""

    def plus(self, prior: PlaybookHistory) -> PlaybookCounts:
        """These counts added to a playbook's hand-edited prior (``spec.history``)."""
        return PlaybookCounts(self.executions + prior.executions, self.successes + prior.successes)

    def as_history(self) -> PlaybookHistory:
        """The counts in the shape the catalog scores (``Playbook.history``)."""
        return PlaybookHistory(executions=self.executions, successes=self.successes)


def count_playbooks(records: Iterable[OutcomeRecord]) -> dict[str, PlaybookCounts]:
    """Executions and successes per playbook id, over the outcomes that name a playbook."""
    executions: dict[str, int] = {}
    successes: dict[str, int] = {}
    for record in records:
        if record.playbook is None:
            continue
        executions[record.playbook] = executions.get(record.playbook, 0) + 1
        successes[record.playbook] = successes.get(record.playbook, 0) + int(record.succeeded)
    return {pid: PlaybookCounts(n, successes[pid]) for pid, n in executions.items()}


def outcome_evidence(records: Iterable[OutcomeRecord]) -> OutcomeEvidence:
    """The risk model's base-rate evidence: per (action, kind) and per (action, kind, target).

    Successes and failures (``partial`` counts as a failure) with the failures' times; the
    model prefers a target's own record over its kind's.
    """
    successes: dict[tuple[str, str, str | None], int] = {}
    failures: dict[tuple[str, str, str | None], list[datetime | None]] = {}
    for record in records:
        for key in (
            (record.action, record.resource_kind, None),
            (record.action, record.resource_kind, record.target),
        ):
            successes.setdefault(key, 0)
            failures.setdefault(key, [])
            if record.succeeded:
                successes[key] += 1
            else:
                failures[key].append(record.finished_at)
    return OutcomeEvidence(
        tuple(
            OutcomeRecord_(
                action=action,
                resource_kind=kind,
                target=target,
                successes=successes[(action, kind, target)],
                failure_times=tuple(failures[(action, kind, target)]),
            )
            for action, kind, target in sorted(successes, key=lambda k: (k[0], k[1], k[2] or ""))
        )
    )


def severity_of_request(spec: RemediationRequestSpec) -> Severity:
    """The signal's severity, else the ``priority`` label, as a Severity; medium otherwise.

    critical/crit/fatal/emergency/P0/P1/SEV1 → critical; high/error/major/urgent/P2/SEV2 →
    high; medium/warning/moderate/P3/SEV3 → medium; low/info/minor/notice/P4/P5/SEV4 → low.
    """
    candidates = [spec.signal.severity if spec.signal else None, spec.labels.get("priority")]
    for value in candidates:
        if value:
            found = _SEVERITY_WORDS.get(value.strip().lower().replace("-", "").replace(" ", ""))
            if found is not None:
                return found
    return Severity.MEDIUM


def incident_name(namespace: str, name: str, uid: str) -> str:
    """``rr-<namespace>-<name>-<uid[:8]>``, at most 63 characters: one name per request.

    The uid part is kept whole when the rest is trimmed, so two requests never share a name.
    """
    suffix = _INVALID_NAME_CHARS.sub("-", uid.lower())[:_UID_PART].strip("-") or "0"
    stem = _INVALID_NAME_CHARS.sub("-", f"rr-{namespace}-{name}".lower())
    stem = stem[: _NAME_LIMIT - len(suffix) - 1].rstrip("-")
    return f"{stem}-{suffix}"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def incident_from_outcome(
    spec: RemediationRequestSpec, *, namespace: str, name: str, uid: str, now: datetime
) -> tuple[str, Incident] | None:
    """The Incident a failed or partial outcome becomes (object name, spec); None otherwise.

    Its id is its object name; ``occurredAt`` is the reported ``finishedAt``, else ``now``.
    """
    outcome = spec.outcome
    if outcome is None or outcome.result is RequestOutcomeResult.SUCCEEDED:
        return None
    proposed = normalize_request(spec)
    object_name = incident_name(namespace, name, uid)
    verb = "failed" if outcome.result is RequestOutcomeResult.FAILED else "partly failed"
    title = f"{spec.action} on {spec.target.kind}/{proposed.resource_name} {verb}"
    first_line = outcome.message.strip().splitlines()[0] if outcome.message.strip() else ""
    if first_line:
        title = f"{title}: {first_line}"
    environment = spec.labels.get("environment")
    context = f"Namespace {namespace}" + (f", environment {environment}" if environment else "")
    playbook = ""
    if outcome.playbook is not None:
        playbook = f" Playbook {outcome.playbook.id} {outcome.playbook.version or ''}".rstrip()
        playbook += " ran."
    parts = [
        spec.description.strip(),
        f"Reported outcome: {outcome.result.value}.{playbook} {outcome.message.strip()}".strip(),
        f"{context}; RemediationRequest {namespace}/{name}.",
    ]
    tags = sorted(
        {spec.action, *ACTION_KEYWORDS.get(spec.action, ()), "remediation-outcome"}
        | ({f"environment-{environment}"} if environment else set())
    )
    incident = Incident(
        id=object_name,
        title=_shorten(title, 512),
        description=_shorten("\n\n".join(p for p in parts if p), 8192),
        action=spec.action,
        resource=IncidentResource(type=proposed.resource_type, name=proposed.resource_name),
        severity=severity_of_request(spec),
        tags=[_shorten(t, 253) for t in tags],
        outcome=IncidentOutcome.UNRESOLVED
        if outcome.result is RequestOutcomeResult.FAILED
        else IncidentOutcome.PARTIAL,
        occurred_at=outcome.finished_at or now,
        domain=spec.domain,
    )
    return object_name, incident
