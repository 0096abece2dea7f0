"""The catalog query and its answer: what a playbook catalog is asked, and what it returns.

:class:`PlaybookCatalog` is the port; the in-process :class:`~precedent.core.playbooks.index.
CatalogIndex` (behind ``LocalPlaybookCatalog``) and the Context API client implement it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from precedent.core.playbooks.confidence import ConfidenceParts
from precedent.core.playbooks.labels import (
    INCIDENT_TYPE,
    action_label,
    normalize_label_key,
    normalize_label_value,
)
from precedent.models import RemediationRequestSpec

__all__ = [
    "DEFAULT_MAX_RESULTS",
    "DEFAULT_MIN_CONFIDENCE",
    "MAX_DESCRIPTION_BYTES",
    "MAX_RESULTS_LIMIT",
    "CatalogAnswer",
    "PlaybookCatalog",
    "PlaybookQuery",
    "ScoredPlaybook",
]

DEFAULT_MIN_CONFIDENCE = 0.7
"""The seed's default ``min_confidence``."""
DEFAULT_MAX_RESULTS = 10
"""The seed's default ``max_results``."""
MAX_RESULTS_LIMIT = 100
"""The largest ``max_results`` a query may ask for."""
MAX_DESCRIPTION_BYTES = 8192
"""The longest query text, in UTF-8 bytes (the Context API answers 413 beyond it)."""


def _truncate_utf8(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore")


@dataclass(frozen=True, slots=True)
class PlaybookQuery:
    """What the catalog is asked: text, labels and the two selection parameters."""

    text: str
    """Request text: its action in words and its description (the API's ``description``)."""
    labels: tuple[tuple[str, str], ...] = ()
    """Normalised ``(key, value)`` pairs, sorted by key."""
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    """Lowest confidence listed (new playbooks aside), 0–1."""
    max_results: int = DEFAULT_MAX_RESULTS
    """Most playbooks returned, 1–100."""
    subject: str = field(default="", compare=False)
    """The target, for suggested actions; not part of the query's identity."""
    action: str | None = None
    """The request's action as a label value (its concept, e.g. ``scale-down``), which the
    default label rule counts as an implicit ``action`` label; None when not known."""
    kind: str = ""
    """The target's kind (``Node``, ``Certificate``…), which names what the change touches;
    empty when not known (the Context API is asked with a description only)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {self.min_confidence}")
        if not 1 <= self.max_results <= MAX_RESULTS_LIMIT:
            raise ValueError(
                f"max_results must be in 1..{MAX_RESULTS_LIMIT}, got {self.max_results}"
            )

    @classmethod
    def create(
        cls,
        text: str,
        labels: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        *,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
        max_results: int = DEFAULT_MAX_RESULTS,
        subject: str = "",
        action: str | None = None,
        kind: str = "",
    ) -> PlaybookQuery:
        """Normalise labels (keys without prefix, lower case, sorted); a key twice is an error.

        ``action`` is a request action name (``reduce_replicas``), kept as its label value."""
        pairs = labels.items() if isinstance(labels, Mapping) else labels
        seen: dict[str, str] = {}
        for key, value in pairs:
            k, v = normalize_label_key(key), normalize_label_value(value)
            if not k or not v:
                raise ValueError(f"label {key!r}: empty key or value")
            if seen.get(k, v) != v:
                raise ValueError(f"label {k!r} given twice: {seen[k]!r} and {v!r}")
            seen[k] = v
        return cls(
            text=text,
            labels=tuple(sorted(seen.items())),
            min_confidence=min_confidence,
            max_results=max_results,
            subject=subject,
            action=action_label(action) if action else None,
            kind=kind.strip(),
        )

    @classmethod
    def from_spec(
        cls,
        spec: RemediationRequestSpec,
        *,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
        max_results: int = DEFAULT_MAX_RESULTS,
    ) -> PlaybookQuery:
        """The request's action words and description, its labels, its action (for the
        implicit ``action`` label, see :mod:`precedent.core.playbooks.labels`), its target as
        the subject."""
        action = spec.action.replace("_", " ")
        text = f"{action}. {spec.description}" if spec.description else action
        target = spec.target
        subject = f"{target.kind}/{target.name}"
        if target.namespace:
            subject = f"{target.kind} {target.namespace}/{target.name}"
        return cls.create(
            _truncate_utf8(text, MAX_DESCRIPTION_BYTES),
            spec.labels,
            min_confidence=min_confidence,
            max_results=max_results,
            subject=subject,
            action=spec.action,
            kind=target.kind,
        )

    @property
    def incident_type(self) -> str:
        """The ``incident-type`` label, or ``unknown``."""
        return dict(self.labels).get(INCIDENT_TYPE, "unknown")

    def cache_key(self) -> str:
        """The normalised query: whitespace-collapsed lower-case text, labels, parameters."""
        text = " ".join(self.text.lower().split())
        return json.dumps(
            [
                text,
                self.labels,
                self.action,
                self.kind.lower(),
                round(self.min_confidence, 6),
                self.max_results,
            ],
            separators=(",", ":"),
        )


@dataclass(frozen=True, slots=True)
class ScoredPlaybook:
    """One playbook with its confidence, and its parts when the catalog reported them."""

    id: str
    """Playbook id."""
    version: str
    """Playbook version."""
    description: str
    """What the playbook does."""
    confidence: float
    """Confidence, 0–1."""
    parts: ConfidenceParts | None = None
    """The parts of the confidence (None when a remote catalog gave the total only)."""
    executions: int | None = None
    """How many times it ran (None through the HTTP path)."""
    held_back: str = ""
    """Why it was not listed although it scored at or above the bar (empty when it was not
    held back): the request asks for no change, or a near runner-up is written for a fact
    the request names and it is not."""

    @property
    def is_new(self) -> bool:
        """No execution history (unknown through the HTTP path)."""
        return self.executions == 0


@dataclass(frozen=True, slots=True)
class CatalogAnswer:
    """A catalog's answer to one query."""

    candidates: tuple[ScoredPlaybook, ...]
    """Qualifying playbooks, best first, at most ``max_results``."""
    total: int
    """How many qualified before the ``max_results`` cut."""
    source: str
    """Which catalog answered (``in-process`` or the Context API's URL)."""
    catalog_size: int | None = None
    """Playbooks in the catalog (unknown through the HTTP path)."""
    consistent: int | None = None
    """Playbooks that contradict none of the request's labels (in-process only)."""
    best_below: ScoredPlaybook | None = None
    """The best playbook that did not qualify (in-process only)."""
    inferred_incident_types: tuple[str, ...] = ()
    """Incident types read from the request's text when it states none (in-process only)."""
    held_back: tuple[ScoredPlaybook, ...] = ()
    """Playbooks that scored above the pick but were held back, best first (in-process only)."""
    cached_age: float | None = None
    """Seconds since a cache stored this answer (None: the catalog answered this query now)."""
    stale_because: str | None = None
    """Why the catalog could not answer now: this is its last good answer, however old."""


class PlaybookCatalog(Protocol):
    """The catalog port: answers a playbook query within a time budget. Adapters: in-process,
    HTTP, and a cache in front of either."""

    @property
    def kind(self) -> str:
        """``in_process`` or ``http``: the metrics label for this catalog."""
        ...

    @property
    def name(self) -> str:
        """What to call this catalog in rationales and logs."""
        ...

    async def search(self, query: PlaybookQuery, *, budget: float | None = None) -> CatalogAnswer:
        """Scored, qualifying playbooks within ``budget`` seconds (None: the catalog's own
        bounds; an in-process catalog answers at once); raises ``CatalogUnavailable`` when it
        cannot answer."""
        ...

    async def aclose(self) -> None:
        """Release what the catalog holds (connections); nothing for an in-process one."""
        ...
