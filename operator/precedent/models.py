"""Pydantic models: the custom resources' specs and the assessment written into status.

Field names are snake_case in Python and camelCase on the wire (``alias_generator=to_camel``),
so ``Incident.model_validate(yaml_spec)`` reads what ``kubectl apply`` stores and
``assessment.model_dump(by_alias=True)`` writes what the CRD schema declares.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

import zstandard
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "Alternative",
    "ApprovalDecision",
    "ApprovalNote",
    "ApprovalState",
    "ApprovalStatus",
    "ApprovalTarget",
    "Assessment",
    "Band",
    "BlastNote",
    "BlastRadiusStatus",
    "ChangeNote",
    "ChangeStatus",
    "Condition",
    "ContextNote",
    "Decision",
    "DecisionNote",
    "DeleteChange",
    "EngineInfo",
    "ImageChange",
    "Incident",
    "IncidentOutcome",
    "IncidentRef",
    "IncidentResource",
    "KeptNote",
    "MemoryNote",
    "ObservedTarget",
    "Playbook",
    "PlaybookHistory",
    "PlaybookSelection",
    "PlaybookStep",
    "PolicyApproval",
    "PolicyResult",
    "PrecedentSummary",
    "RanPlaybook",
    "Reasoning",
    "ReasoningPart",
    "Recommendation",
    "RecordedText",
    "RemediationApprovalSpec",
    "RemediationRequestSpec",
    "RemediationRequestStatus",
    "RequestChange",
    "RequestContext",
    "RequestOutcome",
    "RequestOutcomeResult",
    "ResourcesChange",
    "RiskAssessment",
    "RiskFactor",
    "Severity",
    "Signal",
    "SimilarIncident",
    "SimilarSummary",
    "SimilarityParts",
    "Target",
    "Timestamp",
    "TopologyEdge",
    "TopologyHints",
    "TopologyNode",
    "parse_timestamp",
]

API_GROUP = "precedent.dev"
API_VERSION = "precedent.dev/v1alpha1"


def _aware_utc(value: datetime) -> datetime:
    # One rule for every timestamp Precedent reads: it must say its offset (as the CRDs'
    # ``format: date-time`` requires), and it is kept in UTC, so no comparison ever mixes a
    # naive and an aware datetime.
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            "timestamp needs a timezone: write it in RFC 3339 with Z or an offset, "
            "e.g. 2025-01-01T10:00:00Z"
        )
    try:
        moment = value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00: before the first representable UTC
        moment = None
    if moment is None or not EARLIEST <= moment <= LATEST:
        raise ValueError(
            f"timestamp out of range: give a time between {EARLIEST:%Y-%m-%d} and "
            f"{LATEST:%Y-%m-%d} (UTC)"
        )
    return moment


EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
"""The earliest timestamp Precedent accepts (the CRDs' CEL rules say the same)."""
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
"""The latest timestamp Precedent accepts: far from the end of the calendar, so arithmetic
on it never overflows."""

Timestamp = Annotated[datetime, AfterValidator(_aware_utc)]
"""A datetime with an explicit offset (RFC 3339), normalised to UTC; a naive one is refused."""


def parse_timestamp(value: object, field: str) -> datetime:
    """``value`` read as an RFC 3339 timestamp (``Z`` or an offset), in UTC: the one parse of
    a timestamp string (API object metadata, stored statuses, OpenSearch hits, flags). A
    ValueError names ``field``."""
    try:
        moment = datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueError(
            f"{field}: not an RFC 3339 time: {value!r} (e.g. 2025-01-01T10:00:00Z)"
        ) from None
    try:
        return _aware_utc(moment)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None


def creation_time(meta: Mapping[str, Any]) -> datetime | None:
    """An object's ``metadata.creationTimestamp`` (None when it has none yet)."""
    value = meta.get("creationTimestamp")
    return parse_timestamp(value, "metadata.creationTimestamp") if value else None


class WireModel(BaseModel):
    """Base for every model that crosses the API: camelCase aliases, unknown fields rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        str_strip_whitespace=True,
    )


class Severity(StrEnum):
    """Severity of a past incident; seed 000 gives each a weight."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class IncidentOutcome(StrEnum):
    """How a past incident ended (seed 001's resolution status)."""

    RESOLVED = "resolved"
    PARTIAL = "partial"
    UNRESOLVED = "unresolved"
    UNKNOWN = "unknown"


class Band(StrEnum):
    """Risk band from the SRI score (seed 000: 0–25 / 26–60 / 61–100)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Decision(StrEnum):
    """What the band means for the request."""

    APPROVED = "Approved"
    ESCALATED = "Escalated"
    DENIED = "Denied"


# ---------------------------------------------------------------------------------------------
# RemediationRequest
# ---------------------------------------------------------------------------------------------


class Target(WireModel):
    """The resource the action is aimed at."""

    kind: str = Field(min_length=1, max_length=253, description="Resource type, e.g. Deployment.")
    name: str = Field(min_length=1, max_length=253, description="Short name of the resource.")
    namespace: str | None = Field(default=None, max_length=63, description="Namespace, if any.")
    api_version: str | None = Field(default=None, max_length=253, description="API version.")
    resource_id: str | None = Field(
        default=None,
        max_length=2048,
        description="Full ARM or Kubernetes path; its last segments give the type and short name.",
    )

    @field_validator("resource_id")
    @classmethod
    def _resource_id_has_a_name(cls, value: str | None) -> str | None:
        if value is not None and not value.strip("/ "):
            raise ValueError("must name a resource, e.g. /subscriptions/…/managedClusters/aks-prod")
        return value


class Signal(WireModel):
    """The alert or event that triggered the request."""

    name: str = Field(max_length=253, description="Alert or event name.")
    severity: str | None = Field(default=None, max_length=63, description="Alert severity.")
    source: str | None = Field(default=None, max_length=253, description="Alerting system.")


class RequestOutcomeResult(StrEnum):
    """How a requested action went, as its executor reports it."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    PARTIAL = "partial"


class RanPlaybook(WireModel):
    """The playbook an executor ran for a request."""

    id: str = Field(min_length=1, max_length=253, description="Playbook id (metadata.name).")
    version: str | None = Field(default=None, max_length=63, description="Version that ran.")


class RequestOutcome(WireModel):
    """``spec.outcome``: set once, after the action ran (an incident's is IncidentOutcome)."""

    result: RequestOutcomeResult = Field(description="succeeded, failed or partial.")
    playbook: RanPlaybook | None = Field(default=None, description="The playbook that ran.")
    finished_at: Timestamp | None = Field(
        default=None, description="When the action finished (RFC 3339 with an offset; kept in UTC)."
    )
    message: str = Field(default="", max_length=1024, description="What happened.")


MAX_PATCH_BYTES = 8192
"""The largest ``spec.change.patch`` (its JSON)."""
MAX_PATCH_DEPTH = 12
"""The deepest nesting of ``spec.change.patch``."""


class ImageChange(WireModel):
    """``spec.change.image``: set one container's image."""

    container: str = Field(
        min_length=1, max_length=63, description="The container (spec.template.spec.containers)."
    )
    image: str = Field(min_length=1, max_length=512, description="The new image reference.")


class ResourcesChange(WireModel):
    """``spec.change.resources``: set one container's requests and limits."""

    container: str = Field(min_length=1, max_length=63, description="The container.")
    requests: dict[str, str] = Field(
        default_factory=dict, max_length=8, description="e.g. {cpu: 500m, memory: 1Gi}."
    )
    limits: dict[str, str] = Field(default_factory=dict, max_length=8, description="Limits.")


class DeleteChange(WireModel):
    """``spec.change.delete``: delete the target."""

    propagation_policy: Literal["Foreground", "Background", "Orphan"] = Field(
        default="Background", description="What happens to its dependents."
    )


class RequestChange(WireModel):
    """``spec.change``: exactly what will be done to the target, one of a few typed changes or
    a JSON merge patch. What is approved is this change; ``kubectl precedent apply`` runs it."""

    replicas: int | None = Field(
        default=None, ge=0, le=100000, description="Set spec.replicas (the scale subresource)."
    )
    image: ImageChange | None = Field(default=None, description="Set a container's image.")
    resources: ResourcesChange | None = Field(
        default=None, description="Set a container's requests and limits."
    )
    delete: DeleteChange | None = Field(default=None, description="Delete the target.")
    patch: dict[str, Any] | None = Field(
        default=None, description="A JSON merge patch of the target (RFC 7386), for the rest."
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> RequestChange:
        given = [
            name
            for name in ("replicas", "image", "resources", "delete", "patch")
            if getattr(self, name) is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of replicas, image, resources, delete or patch"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.patch is not None:
            if not self.patch:
                raise ValueError("patch: an empty patch changes nothing")
            size = len(json.dumps(self.patch, separators=(",", ":")))
            if size > MAX_PATCH_BYTES:
                raise ValueError(f"patch: {size} bytes of JSON, at most {MAX_PATCH_BYTES}")
            if _depth(self.patch) > MAX_PATCH_DEPTH:
                raise ValueError(f"patch: nested deeper than {MAX_PATCH_DEPTH} levels")
            for key in ("apiVersion", "kind", "status"):
                if key in self.patch:
                    raise ValueError(f"patch.{key}: a change may not patch {key}")
            meta = self.patch.get("metadata")
            if isinstance(meta, dict) and ({"name", "namespace", "uid"} & set(meta)):
                raise ValueError("patch.metadata: may not change name, namespace or uid")
        return self

    def canonical(self) -> str:
        """The change as canonical JSON (sorted keys, no spaces): what its hash is over."""
        return json.dumps(
            self.model_dump(mode="json", by_alias=True, exclude_none=True),
            sort_keys=True,
            separators=(",", ":"),
        )

    def digest(self) -> str:
        """``sha256:<hex>`` of :meth:`canonical`: the change an answer judged."""
        return "sha256:" + hashlib.sha256(self.canonical().encode()).hexdigest()


def _depth(value: Any, level: int = 1) -> int:
    if isinstance(value, dict):
        return max([level, *(_depth(v, level + 1) for v in value.values())])
    if isinstance(value, list):
        return max([level, *(_depth(v, level + 1) for v in value)])
    return level


class RemediationRequestSpec(WireModel):
    """The proposed action: ``spec`` of a RemediationRequest."""

    action: str = Field(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z][a-z0-9_]*$",
        description="Operation to run, snake_case, e.g. restart_service or scale_down.",
    )
    target: Target = Field(description="The resource the action is aimed at.")
    description: str = Field(default="", max_length=8192, description="Free-text description.")
    signal: Signal | None = Field(default=None, description="The triggering alert, if any.")
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="Context labels such as incident-type, environment, priority.",
    )
    domain: str | None = Field(default=None, max_length=63, description="Domain filter.")
    outcome: RequestOutcome | None = Field(
        default=None,
        description="How the action went, set once by its executor; not an input of the "
        "assessment.",
    )
    requester: str | None = Field(
        default=None,
        max_length=253,
        description="Who asked: the authenticated user at creation (checked by admission).",
    )
    change: RequestChange | None = Field(
        default=None,
        description="Exactly what will be done to the target (optional): replicas, image, "
        "resources, delete or a merge patch. With it the answer is about this change.",
    )

    @field_validator("action", mode="before")
    @classmethod
    def _lower_action(cls, value: Any) -> Any:
        # RESTART_SERVICE and restart-service mean restart_service; one spelling keeps it exact.
        if isinstance(value, str):
            return value.strip().lower().replace("-", "_")
        return value


# ---------------------------------------------------------------------------------------------
# Incident
# ---------------------------------------------------------------------------------------------


class IncidentResource(WireModel):
    """The resource a past incident happened on."""

    type: str = Field(min_length=1, max_length=253, description="Resource type.")
    name: str = Field(min_length=1, max_length=253, description="Short resource name.")


PACKED_TEXTS = ("description", "root_cause", "resolution", "recommended_procedure")
"""The long texts ``Incident.packed`` keeps compressed."""
PACKED_KEY = "_packed_texts"
DIGEST_KEY = "_content_digest"
"""Where a packed incident keeps its :meth:`Incident.content_digest`, worked out as it was
packed (the texts were at hand) so that a snapshot does not unpack it again for it."""
_TEXT_SEPARATOR = "\x1f"  # ASCII unit separator; an incident whose text holds it stays plain
_PACK_LEVEL = 1  # zstd's fastest; 3 gave the same bytes on incident texts, 10 % slower
_DICTIONARY_BYTES = 64 * 1024
"""How much of the first texts packed makes the process's packing dictionary."""
_CODECS = threading.local()


class _Dictionary:
    """The texts the process packs share one zstd dictionary: the first ``_DICTIONARY_BYTES``
    of the texts it packed, as raw content (no training), made once and never changed, so
    that every packed text decodes with it. A history's incidents say the same things in the
    same words (templates, services, procedures): at 100,000 incidents the packed texts take
    624 → 257 bytes each (−35 MiB), and pack and unpack faster. The texts packed before it
    was made decode the same way: a text packed without a dictionary never reaches into one.
    Packed texts live in this process only (a pickle round trip in it keeps the bytes)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sample: list[bytes] = []
        self.sampled = 0
        self.made: zstandard.ZstdCompressionDict | None = None

    def offer(self, data: bytes) -> None:
        """A text being packed, for the dictionary while it is not made."""
        with self.lock:
            if self.made is not None:
                return
            self.sample.append(data)
            self.sampled += len(data)
            if self.sampled >= _DICTIONARY_BYTES:
                raw = b"".join(self.sample)[:_DICTIONARY_BYTES]
                self.made = zstandard.ZstdCompressionDict(
                    raw, dict_type=zstandard.DICT_TYPE_RAWCONTENT
                )
                self.sample = []


_DICTIONARY = _Dictionary()


def _codecs() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    """This thread's zstd contexts (a context is not for two threads at once), with the
    packing dictionary once it is made. Made once and reused: a new zlib stream per incident
    set up 256 KiB of state each time, and packing the texts of 100,000 incidents took 2.8 s
    of a cold start; zstd with a reused context 5.6 µs an incident against zlib's 17 to 66
    (by the allocator's state), unpacking 2.0 against 5.2."""
    made = _DICTIONARY.made
    kept: tuple[object, zstandard.ZstdCompressor, zstandard.ZstdDecompressor] | None = getattr(
        _CODECS, "kept", None
    )
    if kept is None or kept[0] is not made:
        if made is None:
            pair = (zstandard.ZstdCompressor(level=_PACK_LEVEL), zstandard.ZstdDecompressor())
        else:
            pair = (
                zstandard.ZstdCompressor(level=_PACK_LEVEL, dict_data=made),
                zstandard.ZstdDecompressor(dict_data=made),
            )
        kept = _CODECS.kept = (made, *pair)
    return kept[1], kept[2]


def _compressed(text: str) -> bytes:
    """``text`` compressed, in a bytes object of its own size: zstandard returns the bytes in
    the buffer of the worst-case size it compressed into (about 1.1 times the text), which
    at 100,000 incidents held 61 MiB more than the compressed texts."""
    data = text.encode()
    if _DICTIONARY.made is None:
        _DICTIONARY.offer(data)
    return memoryview(_codecs()[0].compress(data)).tobytes()


class Incident(WireModel):
    """A past incident: the institutional memory the risk score is computed from."""

    id: str = Field(min_length=1, max_length=63, description="Incident id, e.g. INC-2025-0847.")
    title: str = Field(min_length=1, max_length=512, description="One-line summary.")
    description: str = Field(default="", max_length=8192, description="What happened.")
    action: str = Field(
        default="", max_length=63, description="Operation that caused or preceded it."
    )
    resource: IncidentResource | None = Field(default=None, description="Affected resource.")
    severity: Severity = Field(default=Severity.MEDIUM, description="critical/high/medium/low.")
    tags: list[str] = Field(default_factory=list, max_length=64, description="Free tags.")
    outcome: IncidentOutcome = Field(default=IncidentOutcome.UNKNOWN, description="How it ended.")
    root_cause: str = Field(default="", max_length=4096, description="Root cause summary.")
    resolution: str = Field(default="", max_length=4096, description="How it was resolved.")
    recommended_procedure: str = Field(
        default="", max_length=4096, description="What to do before repeating the action."
    )
    occurred_at: Timestamp | None = Field(
        default=None, description="When it started (RFC 3339 with an offset; kept in UTC)."
    )
    resolution_hours: float | None = Field(default=None, ge=0, description="Hours to resolve.")
    priority: Severity | None = Field(
        default=None, description="Ticket priority; defaults to the severity."
    )
    domain: str | None = Field(default=None, max_length=63, description="Domain, for filtering.")
    quality_score: float = Field(default=1.0, ge=0, le=1, description="Record quality 0–1.")
    environment: str | None = Field(
        default=None, max_length=63, description="Environment it happened in, e.g. production."
    )
    namespace: str | None = Field(
        default=None, max_length=63, description="Namespace of the affected resource, if any."
    )
    cluster: str | None = Field(
        default=None, max_length=253, description="Cluster it happened in, if recorded."
    )

    @field_validator("action", mode="before")
    @classmethod
    def _lower_action(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower().replace("-", "_")
        return value

    @field_validator("severity", "priority", mode="before")
    @classmethod
    def _lower_severity(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower()
        return value

    @property
    def effective_priority(self) -> Severity:
        """Priority for ranking: the recorded one, else the severity."""
        return self.priority or self.severity

    def text(self) -> str:
        """The text an embedder sees: title, description, root cause and tags."""
        texts = self._unpacked_texts() if PACKED_KEY in self.__dict__ else self.__dict__
        parts = [self.title, texts["description"], texts["root_cause"], " ".join(self.tags)]
        return "\n".join(p for p in parts if p)

    # -- the long texts, kept compressed -----------------------------------------------------
    #
    # A history is held for the operator's lifetime, and of an incident's ~2.6 KB in memory its
    # four long texts are about 1.4 KB, while answering a request reads them for the one or two
    # incidents the status quotes (the vector index and BM25 read them when they are built).
    # ``packed()`` gives a copy that keeps the four as one zstd-compressed string; reading any of
    # them (an attribute, ``model_dump``, ``==``) gives the text as given. Not a model field:
    # the compressed bytes sit in the instance's ``__dict__`` under PACKED_KEY, where pydantic
    # neither validates nor serialises them.

    def content_digest(self) -> bytes:
        """sha256 of the incident's content (its JSON form, fields in their declared order:
        no field is a mapping, so equal incidents give equal digests, packed or not). A packed
        incident keeps the one worked out when it was packed."""
        kept: bytes | None = self.__dict__.get(DIGEST_KEY)
        if kept is not None:
            return kept
        return hashlib.sha256(self.model_dump_json().encode()).digest()

    def packed(self) -> Incident:
        """A copy with the long texts compressed, or this incident when there is nothing to
        gain (no long text, already packed, or a text holding the separator)."""
        values = self.__dict__
        if PACKED_KEY in values:
            return self
        joined = _TEXT_SEPARATOR.join([values[name] for name in PACKED_TEXTS])
        if (
            len(joined) == len(PACKED_TEXTS) - 1
            or joined.count(_TEXT_SEPARATOR) != len(PACKED_TEXTS) - 1
        ):
            return self  # no text at all, or one holding the separator
        blob = _compressed(joined)
        copy = self.model_copy()
        # The same record of the fields given (never changed: precedent.adapters.heap.FieldSets).
        object.__setattr__(copy, "__pydantic_fields_set__", self.__pydantic_fields_set__)
        state = copy.__dict__
        for name in PACKED_TEXTS:
            del state[name]
        state[PACKED_KEY] = blob
        state[DIGEST_KEY] = self.content_digest()
        return copy

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; one with ``update`` works its content digest out again."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy.__dict__.pop(DIGEST_KEY, None)
        return copy

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__.pop(DIGEST_KEY, None)  # the content changes: the kept digest goes
        super().__setattr__(name, value)

    @property
    def is_packed(self) -> bool:
        """Whether the long texts are kept compressed (``packed``)."""
        return PACKED_KEY in self.__dict__

    def _unpacked_texts(self) -> dict[str, str]:
        blob: bytes = self.__dict__[PACKED_KEY]
        texts = _codecs()[1].decompress(blob).decode().split(_TEXT_SEPARATOR)
        # A text replaced after packing (``model_copy(update=...)``) is in __dict__ again.
        return {
            name: self.__dict__.get(name, text)
            for name, text in zip(PACKED_TEXTS, texts, strict=True)
        }

    def unpacked(self) -> Incident:
        """This incident with every text held as a plain string (itself when not packed)."""
        if PACKED_KEY not in self.__dict__:
            return self
        texts, state = self._unpacked_texts(), self.__dict__
        copy = self.model_copy()
        # In the fields' order, as the incident was made (a JSON dump follows it).
        values = {name: texts[name] if name in texts else state[name] for name in _FIELD_ORDER}
        object.__setattr__(copy, "__dict__", values)
        return copy

    if not TYPE_CHECKING:
        # Only reached for names missing from __dict__: a packed incident's texts. The type
        # checker keeps seeing the declared ``str`` fields.
        def __getattr__(self, name: str) -> Any:
            if name in PACKED_TEXTS and PACKED_KEY in self.__dict__:
                return self._unpacked_texts()[name]
            return super().__getattr__(name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Incident) and (self.is_packed or other.is_packed):
            return BaseModel.__eq__(self.unpacked(), other.unpacked())
        return super().__eq__(other)

    def __repr_args__(self) -> Any:
        return self.unpacked().__repr_args__() if self.is_packed else super().__repr_args__()

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        # Nested or not, in Python or JSON mode, the dump is the unpacked incident's. No return
        # annotation: with one, pydantic would describe the dump by it (a bare object) instead
        # of by the model's fields in a serialization-mode JSON schema.
        return handler(self.unpacked() if PACKED_KEY in self.__dict__ else self)


_FIELD_ORDER = tuple(Incident.model_fields)


# ---------------------------------------------------------------------------------------------
# Playbook
# ---------------------------------------------------------------------------------------------


class PlaybookStep(WireModel):
    """One step of a playbook."""

    name: str = Field(min_length=1, max_length=253, description="Step name.")
    run: str = Field(default="", max_length=4096, description="What the step does or runs.")


class PlaybookHistory(WireModel):
    """Execution counts the catalog was seeded with (live counts go to status)."""

    executions: int = Field(default=0, ge=0, description="How many times it ran.")
    successes: int = Field(default=0, ge=0, description="How many of those succeeded.")

    @model_validator(mode="after")
    def _successes_within_executions(self) -> PlaybookHistory:
        if self.successes > self.executions:
            raise ValueError(
                f"successes ({self.successes}) cannot exceed executions ({self.executions})"
            )
        return self


class Playbook(WireModel):
    """A remediation playbook from the catalog."""

    id: str = Field(min_length=1, max_length=253, description="Playbook id (metadata.name).")
    version: str = Field(min_length=1, max_length=63, description="Version, e.g. v1.2.")
    description: str = Field(min_length=1, max_length=4096, description="What it does.")
    actions: list[str] = Field(default_factory=list, max_length=32, description="Actions.")
    labels: dict[str, list[str]] = Field(
        default_factory=dict, description="Labels it is meant for: key → accepted values."
    )
    steps: list[PlaybookStep] = Field(default_factory=list, max_length=64, description="Steps.")
    examples: list[Annotated[str, Field(min_length=1, max_length=512)]] = Field(
        default_factory=list,
        max_length=32,
        description="Requests it served, one line each (alert text, ticket summary): read by "
        "the selection's semantic part with the description and the steps.",
    )
    history: PlaybookHistory = Field(default_factory=PlaybookHistory, description="Counts.")

    @field_validator("labels", mode="before")
    @classmethod
    def _labels_as_lists(cls, value: Any) -> Any:
        # A single value is the common case in YAML; accept it as a one-element list.
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value


# ---------------------------------------------------------------------------------------------
# Assessment (becomes the RemediationRequest's status)
# ---------------------------------------------------------------------------------------------


class SimilarityParts(WireModel):
    """The parts of one incident's similarity (seed 000's four dimensions, plus semantic)."""

    action: float = Field(description="Action type part (0 or 0.40).")
    resource_type: float = Field(description="Resource type part (0 or 0.30).")
    resource_name: float = Field(description="Resource name part (0 or 0.20).")
    tags: float = Field(description="Tag relevance part (0 or 0.10).")
    rule: float = Field(description="Rule similarity: the sum of the four parts.")
    semantic: float | None = Field(default=None, description="Embedding similarity, if used.")
    counted: Literal["rule", "semantic"] = Field(
        default="rule", description="Which similarity counted in the risk score."
    )


class SimilarIncident(WireModel):
    """A past incident similar to the request."""

    id: str = Field(description="Incident id.")
    title: str = Field(description="Incident title.")
    severity: Severity = Field(description="Incident severity.")
    similarity: float = Field(description="Similarity that counted in the risk score, 0–1.")
    parts: SimilarityParts = Field(description="How the similarity was made up.")
    relevance: float | None = Field(
        default=None, description="Ranking score for people (hybrid + rerank), 0–1."
    )
    outcome: IncidentOutcome = Field(default=IncidentOutcome.UNKNOWN, description="How it ended.")
    source: Literal["memory", "cluster", "bundled"] | None = Field(
        default=None,
        description="Where it came from: the fleet memory, this cluster's Incident objects, "
        "or the bundled history.",
    )
    cluster: str | None = Field(
        default=None, description="The cluster that wrote it (fleet memory and cluster only)."
    )
    boosts: dict[str, float] | None = Field(
        default=None,
        description="Seed 001's rerank boosts applied to a fleet-memory incident, by name "
        "(exactName, outcome, quality, recency); their product multiplies its relevance.",
    )


class RiskFactor(WireModel):
    """One term of the risk score: what moved it and by how many points."""

    name: str = Field(max_length=63, description="Factor name, e.g. precedent or environment.")
    contribution: float = Field(description="Points it added (negative: removed), one decimal.")
    detail: str = Field(max_length=512, description="One line saying why.")


# -- the reasoning: typed parts, rendered once into ``status.risk.reasoning`` ------------------


@dataclass(frozen=True, slots=True)
class IncidentRef:
    """The incident a reasoning names."""

    id: str
    title: str
    severity: Severity
    outcome: IncidentOutcome


@dataclass(frozen=True, slots=True)
class SimilarSummary:
    """Seed 000's risk model: how many incidents were similar and the most relevant one."""

    history_size: int
    count: int
    threshold: float
    strongest: IncidentRef | None
    similarity: float
    score: float
    band: Band

    def text(self) -> str:
        """The sentences."""
        verdict = f"SRI:Historical {self.score:g} → {self.band.value} risk."
        top = self.strongest
        if top is None:
            return (
                f"No similar past incidents (similarity ≥ {self.threshold:.2f}) among "
                f"{self.history_size} in the history. {verdict}"
            )
        noun = "incident" if self.count == 1 else "incidents"
        return (
            f'{self.count} similar past {noun}. Most relevant: {top.id} "{top.title}" '
            f"(similarity {self.similarity:.2f}, {top.severity.value}, "
            f"{top.outcome.value}). {verdict}"
        )


@dataclass(frozen=True, slots=True)
class PrecedentSummary:
    """The default risk model: the precedents counted, the strongest, what moved the score."""

    history_size: int
    counted: int
    listed: int
    strongest: IncidentRef | None
    moved: tuple[RiskFactor, ...]
    score: float
    band: Band

    def text(self) -> str:
        """The sentences."""
        verdict = f"Risk {self.score:g} → {self.band.value} risk."
        top = self.strongest
        if top is None:
            return f"No precedent for this change among {self.history_size} incidents. {verdict}"
        noun = "precedent" if self.counted == 1 else "precedents"
        named = "; ".join(f"{f.name} {f.contribution:+g} ({f.detail})" for f in self.moved)
        extra = (
            f", {self.listed - self.counted} more below the threshold"
            if self.listed > self.counted
            else ""
        )
        return (
            f'{self.counted} {noun}{extra}. Strongest: {top.id} "{top.title}" '
            f"({top.severity.value}, {top.outcome.value}). Moved by: {named}. {verdict}"
        )


@dataclass(frozen=True, slots=True)
class MemoryNote:
    """The listed incidents the fleet memory contributed (id, writing cluster)."""

    shared: tuple[tuple[str, str | None], ...]
    strongest: tuple[str, str | None] | None = None
    """The most relevant incident, when it is one of them."""

    def text(self) -> str:
        """The sentences."""
        named = ", ".join(f"{i} from cluster {c or 'unknown'}" for i, c in self.shared)
        noun = "incident" if len(self.shared) == 1 else "incidents"
        text = f"Fleet memory: {len(self.shared)} listed {noun} came from other clusters ({named})."
        if self.strongest is not None:
            top, cluster = self.strongest
            text += f" The most relevant incident {top} is from cluster {cluster or 'unknown'}."
        return text


@dataclass(frozen=True, slots=True)
class ContextNote:
    """Where the requester's claims differ from the verified context."""

    note: str

    def text(self) -> str:
        """The sentence."""
        return f"Context: {self.note}."


@dataclass(frozen=True, slots=True)
class BlastNote:
    """Who depends on the target, through what."""

    status: BlastRadiusStatus

    def text(self) -> str:
        """The sentence."""
        status = self.status
        if not status.in_graph:
            return f"Blast radius: {status.summary}."
        if not status.upstream_count:
            return f"Blast radius: nothing depends on it ({status.summary})."
        named = ", ".join(status.upstream_workloads[:8]) or "only Services"
        more = "+" if status.truncated else ""
        text = f"Blast radius: {status.upstream_count}{more} nodes depend on it ({named})"
        if status.top_paths:
            text += f", e.g. {status.top_paths[0]}"
        if status.critical_services:
            text += f"; critical upstream: {', '.join(status.critical_services)}"
        text += f"; {'PDB ' + ', '.join(status.pdbs) if status.pdbs else 'no PDB'}."
        return text


@dataclass(frozen=True, slots=True)
class ChangeNote:
    """What the change does, how it was read, and the danger floor it set, if any."""

    summary: str
    disagreement: str | None = None
    floor: str | None = None

    def text(self) -> str:
        """The sentences."""
        parts = [f"Change: {self.summary}."]
        if self.disagreement:
            parts.append(f"Reading: {self.disagreement}.")
        if self.floor:
            parts.append(f"Floor: {self.floor}.")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class DecisionNote:
    """The policy's decision, and why when it is not the band's."""

    decision: Decision
    reason: str | None = None

    def text(self) -> str:
        """The sentence."""
        because = f" ({self.reason})" if self.reason else ""
        return f"Decision: {self.decision}{because}."


@dataclass(frozen=True, slots=True)
class ApprovalNote:
    """The human decision of an accepted RemediationApproval."""

    approved: bool
    approver: str
    approval: str
    reason: str

    def text(self) -> str:
        """The sentence."""
        verb = "Approved" if self.approved else "Rejected"
        return f"{verb} by {self.approver} (RemediationApproval {self.approval}): {self.reason}"

    @classmethod
    def of(cls, approval: PolicyApproval | None) -> ApprovalNote | None:
        """The note an approval recorded in ``policy.approval`` wrote (None: none decided)."""
        if (
            approval is None
            or approval.state not in (ApprovalState.APPROVED, ApprovalState.REJECTED)
            or approval.by is None
            or approval.approval is None
            or approval.reason is None
        ):
            return None
        return cls(
            approval.state is ApprovalState.APPROVED,
            approval.by,
            approval.approval,
            approval.reason,
        )


@dataclass(frozen=True, slots=True)
class KeptNote:
    """A stricter earlier decision kept over a more permissive re-assessment."""

    earlier: Decision
    now: Decision

    def text(self) -> str:
        """The sentence."""
        return (
            f"Kept {self.earlier} from the earlier answer (assessed again as {self.now}): a "
            "decision becomes more permissive only with a new approval."
        )


@dataclass(frozen=True, slots=True)
class RecordedText:
    """Reasoning read back from a stored status: its text as written."""

    recorded: str

    def text(self) -> str:
        """The text."""
        return self.recorded


ReasoningPart = (
    SimilarSummary
    | PrecedentSummary
    | MemoryNote
    | ContextNote
    | BlastNote
    | ChangeNote
    | DecisionNote
    | ApprovalNote
    | KeptNote
    | RecordedText
)
"""One part of a risk reasoning."""


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Why the answer is what it is: typed parts, each added by the step that knows it
    (the risk model, the fleet memory, the context check, the blast radius, the policy, an
    approval) and rendered once, as one string, when the status is written."""

    parts: tuple[ReasoningPart, ...] = ()

    def plus(self, *parts: ReasoningPart) -> Reasoning:
        """This reasoning with ``parts`` after its own."""
        return Reasoning((*self.parts, *parts))

    def without(self, kind: type[ReasoningPart]) -> Reasoning:
        """This reasoning without its parts of ``kind``."""
        return Reasoning(tuple(p for p in self.parts if not isinstance(p, kind)))

    @property
    def text(self) -> str:
        """The rendered reasoning: each part's sentences, space-separated."""
        return " ".join(p.text() for p in self.parts)

    def __str__(self) -> str:
        return self.text

    def __contains__(self, words: str) -> bool:
        return words in self.text

    @classmethod
    def read(cls, text: str, approval: PolicyApproval | None = None) -> Reasoning:
        """A stored reasoning, with the note of the approval that decided it (``approval``,
        from ``policy.approval``) as its own part when the text ends with it."""
        note = ApprovalNote.of(approval)
        if note is not None:
            base, sentence = text[: -len(note.text()) - 1], text[-len(note.text()) - 1 :]
            if base and sentence == f" {note.text()}":
                return cls((RecordedText(base), note))
        return cls((RecordedText(text),))


def _reasoning_of(value: object) -> Reasoning:
    if isinstance(value, Reasoning):
        return value
    if isinstance(value, str):
        return Reasoning.read(value.strip())
    raise ValueError("reasoning: expected a string")


ReasoningText = Annotated[
    Reasoning,
    PlainValidator(_reasoning_of),
    PlainSerializer(lambda reasoning: reasoning.text, return_type=str),
    WithJsonSchema({"type": "string"}),
]
"""A :class:`Reasoning` in models; a string on the wire."""


class RiskAssessment(WireModel):
    """SRI:Historical result (seed 000)."""

    score: float = Field(ge=0, le=100, description="SRI:Historical score, 0–100.")
    band: Band = Field(description="low / medium / high.")
    decision: Decision = Field(description="Approved / Escalated / Denied.")
    reasoning: ReasoningText = Field(description="Human-readable explanation.")
    most_relevant_incident: str | None = Field(default=None, description="Top incident id.")
    recommended_procedure: str | None = Field(
        default=None, description="The top incident's recommended procedure."
    )
    factors: list[RiskFactor] = Field(
        default_factory=list,
        max_length=16,
        description="Each factor's contribution in points (default model); they sum to the score.",
    )


class PlaybookSelection(WireModel):
    """The chosen playbook and why (seed 004)."""

    id: str = Field(description="Playbook id.")
    version: str = Field(description="Playbook version.")
    confidence: float = Field(ge=0, le=1, description="0.4 semantic + 0.4 labels + 0.2 history.")
    components: dict[str, float] = Field(description="semantic, labelMatch, historical.")
    selection_method: Literal["data_driven", "fallback"] = Field(description="How it was chosen.")
    rationale: str = Field(description="Why it was chosen.")

    @staticmethod
    def components_of(
        *, semantic: float, label_match: float, historical: float
    ) -> dict[str, float]:
        """The ``components`` map: each part of the confidence under its status name, 4 places.

        The one place the parts get their wire names (``labelMatch``); empty when a catalog
        reported the total only.
        """
        return {
            "semantic": round(semantic, 4),
            "labelMatch": round(label_match, 4),
            "historical": round(historical, 4),
        }


class Alternative(WireModel):
    """A runner-up playbook."""

    id: str = Field(description="Playbook id.")
    version: str = Field(description="Playbook version.")
    confidence: float = Field(ge=0, le=1, description="Its confidence.")


class Recommendation(WireModel):
    """What to do when no playbook qualifies."""

    action: Literal["manual_investigation"] = Field(description="Always manual_investigation.")
    reason: str = Field(description="Why no playbook was chosen.")
    suggested_actions: list[str] = Field(default_factory=list, description="Next steps.")


class ApprovalState(StrEnum):
    """Where a request stands with its human approval (``status.policy.approval.state``)."""

    PENDING = "Pending"
    """Escalated in enforce mode: waits for a RemediationApproval."""
    APPROVED = "Approved"
    """A valid approval moved the request to Approved."""
    REJECTED = "Rejected"
    """A valid rejection moved the request to Denied."""
    AUDIT_ONLY = "AuditOnly"
    """Audit-only mode: the decision was recorded, nothing waits."""


class PolicyApproval(WireModel):
    """The human approval of a request: its state, who decided, when and why."""

    state: ApprovalState = Field(description="Pending, Approved, Rejected or AuditOnly.")
    by: str | None = Field(default=None, max_length=253, description="The approver (username).")
    at: str | None = Field(default=None, max_length=64, description="When it was applied.")
    reason: str | None = Field(default=None, max_length=1024, description="The approver's reason.")
    approval: str | None = Field(
        default=None, max_length=253, description="The RemediationApproval object applied."
    )


class PolicyResult(WireModel):
    """Access level of the action and whether it needs a human (seed 003)."""

    access_level: Literal["READ_ONLY", "WRITE", "ADMIN"] = Field(description="Action class.")
    approval_required: bool = Field(description="Whether a human must approve.")
    approval: PolicyApproval | None = Field(
        default=None, description="The approval's state, who gave it, when and why (if any)."
    )
    reason: str | None = Field(
        default=None, description="Why the policy's decision differs from the risk band's."
    )
    would_be: Decision | None = Field(
        default=None,
        description="Audit-only mode: the decision enforce mode would have made, when it is "
        "not Approved.",
    )


class EngineInfo(WireModel):
    """What produced the answer, so a reader can tell two answers apart."""

    version: str = Field(description="Precedent version.")
    history_size: int = Field(description="Incidents in the history snapshot.")
    similarity_mode: str = Field(description="rules | semantic | hybrid.")
    embedder: str | None = Field(default=None, description="Embedder name, if used.")
    risk_model: str | None = Field(default=None, description="seed or default.")
    sources: list[str] = Field(
        default_factory=list,
        description="History sources that answered (bundled, cluster, memory); a missing one "
        "is listed with its reason, e.g. 'memory: timeout after 2000 ms'.",
    )


class TopologyNode(WireModel):
    """A resource the fleet memory knows of (seed 001's topology hints)."""

    type: str = Field(max_length=63, description="Resource type, e.g. deployment or lambda.")
    name: str = Field(max_length=253, description="Resource name.")


class TopologyEdge(WireModel):
    """A relationship between two known resources, as past investigations recorded it."""

    source: str = Field(max_length=253, description="The resource the relation starts from.")
    relation: str = Field(max_length=63, description="CALLS, TRIGGERS, READS, ….")
    target: str = Field(max_length=253, description="The resource it points to.")
    confidence: float = Field(ge=0, le=1, description="How sure the investigation was, 0–1.")
    observed_at: datetime = Field(description="When the relation was last observed.")


class TopologyHints(WireModel):
    """Topology from the fleet memory, for people to validate with live tools; never scored."""

    nodes: list[TopologyNode] = Field(
        default_factory=list, max_length=20, description="Known resources (bounded)."
    )
    edges: list[TopologyEdge] = Field(
        default_factory=list, max_length=20, description="Relationships, most confident first."
    )
    total_nodes: int = Field(default=0, description="Resources found before the bound.")
    total_edges: int = Field(default=0, description="Relationships kept before the bound.")


class BlastRadiusStatus(WireModel):
    """Who depends on the request's target, and what it depends on (issue 15): the cluster's
    dependency graph as the operator follows it, queried for this target."""

    in_graph: bool = Field(
        description="Whether the target is a workload, Service or Ingress the graph holds."
    )
    upstream_count: int = Field(
        default=0, ge=0, description="Nodes (workloads, Services, Ingresses) depending on it."
    )
    downstream_count: int = Field(default=0, ge=0, description="Nodes it depends on.")
    upstream_workloads: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Workloads and Ingresses depending on it, nearest first (bounded).",
    )
    critical_services: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Nodes marked precedent.dev/tier: critical that depend on it (bounded).",
    )
    namespaces: list[str] = Field(
        default_factory=list, max_length=20, description="Namespaces touched (bounded)."
    )
    pdb_protected: bool = Field(default=False, description="A PodDisruptionBudget covers it.")
    pdbs: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="Those budgets, e.g. ledger (minAvailable: 2).",
    )
    summary: str = Field(max_length=1024, description="One line for people.")
    top_paths: list[str] = Field(
        default_factory=list,
        max_length=5,
        description="Up to five upstream paths ending at the target (arrow strings).",
    )
    hints: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="Fleet-memory topology hints naming the target, with their confidence.",
    )
    truncated: bool = Field(
        default=False, description="The walk stopped at its node limit; counts are lower bounds."
    )


class RequestContext(WireModel):
    """Where the change lands, as the answer used it, and whether that was verified."""

    environment: str = Field(max_length=63, description="The environment the answer used.")
    source: str = Field(
        max_length=253,
        description="Where it came from: namespace label on NS, an environment mapping rule, "
        "the default environment, or the requester's labels (claimed, unverified).",
    )
    verified: bool = Field(description="Whether it came from facts admins control.")
    cluster: str | None = Field(default=None, max_length=253, description="The cluster used.")
    claim: str | None = Field(
        default=None,
        max_length=512,
        description="The requester's claim the answer did not use (it was less risky than "
        "the verified context), e.g. 'claimed dev, verified production from namespace label'.",
    )
    facts: str | None = Field(
        default=None,
        max_length=512,
        description="What the facts said when the answer was given (the verified environment, "
        "its source and the cluster); the answer is given again when they change.",
    )


class SpecWarning(WireModel):
    """Input that is valid but probably not what the requester meant."""

    reason: str = Field(description="UnknownAction or UnknownLabelKey.", max_length=64)
    message: str = Field(
        description="The field, and the known name it is close to.", max_length=1024
    )


class ObservedTarget(WireModel):
    """The live target a change was judged against (what ``kubectl precedent apply`` checks
    is still there before it runs the change)."""

    exists: bool = Field(description="Whether the target was found.")
    uid: str | None = Field(default=None, max_length=128, description="metadata.uid.")
    replicas: int | None = Field(default=None, description="spec.replicas when judged.")
    image: str | None = Field(
        default=None, max_length=512, description="The changed container's image when judged."
    )
    source: str = Field(
        default="", max_length=128, description="Where it was read: the API server or a manifest."
    )


class ChangeStatus(WireModel):
    """What the request does, as the answer read it (issue: the change, not the verb)."""

    effect: str = Field(max_length=32, description="The effect class the answer is for.")
    verb_effect: str | None = Field(
        default=None, max_length=32, description="The effect class of spec.action (registry)."
    )
    readings: list[str] = Field(
        default_factory=list,
        max_length=16,
        description="Every effect the verb, the description and spec.change ask for.",
    )
    summary: str = Field(default="", max_length=512, description="The change and its size.")
    hash: str | None = Field(
        default=None, max_length=80, description="sha256 of spec.change (canonical JSON)."
    )
    observed: ObservedTarget | None = Field(
        default=None, description="The live target the change was judged against."
    )
    asked: str | None = Field(
        default=None,
        max_length=64,
        description="The precedent.dev/reassess annotation this answer took into account (an "
        "executor found the target moved and asked for a new answer).",
    )


class Assessment(WireModel):
    """Everything Precedent says about one request; written into its status."""

    risk: RiskAssessment = Field(description="Risk score, band and decision.")
    similar_incidents: list[SimilarIncident] = Field(
        default_factory=list, description="Top similar incidents, most similar first."
    )
    similar_count: int = Field(default=0, description="How many incidents passed the threshold.")
    playbook: PlaybookSelection | None = Field(default=None, description="Chosen playbook.")
    alternatives: list[Alternative] = Field(default_factory=list, description="Runners-up.")
    recommendation: Recommendation | None = Field(default=None, description="If none chosen.")
    policy: PolicyResult | None = Field(default=None, description="Access level and approval.")
    engine: EngineInfo = Field(description="What produced this answer.")
    topology_hints: TopologyHints | None = Field(
        default=None, description="Topology hints from the fleet memory (seed 001), if any."
    )
    blast_radius: BlastRadiusStatus | None = Field(
        default=None, description="The target's blast radius (None when the graph is off)."
    )
    context: RequestContext | None = Field(
        default=None, description="The environment and cluster the answer used, and their source."
    )
    input_hash: str = Field(description="sha256 of the canonical spec and history snapshot.")
    change: ChangeStatus | None = Field(
        default=None, description="What the request does: its effect, and the change judged."
    )
    warnings: list[SpecWarning] = Field(
        default_factory=list,
        description="Input that is valid but probably a mistake: an action no registry lists, "
        "a label key close to one Precedent reads (with a suggestion).",
    )


class Condition(WireModel):
    """One status condition in the metav1.Condition shape (kstatus reads these)."""

    type: str = Field(description="Ready, Reconciling, Stalled, ….")
    status: Literal["True", "False", "Unknown"] = Field(description="The condition's state.")
    reason: str = Field(description="One CamelCase word: why it is in this state.")
    message: str = Field(default="", description="A sentence for people.")
    observed_generation: int | None = Field(
        default=None, description="The spec generation it describes."
    )
    last_transition_time: str = Field(description="When the status last changed (RFC 3339).")


class RemediationRequestStatus(WireModel):
    """A RemediationRequest's ``status``: the assessment (when there is one) and conditions."""

    observed_generation: int = Field(description="The spec generation this status answers.")
    conditions: list[Condition] = Field(description="Ready, Reconciling and Stalled.")
    assessment: Assessment | None = Field(
        default=None, description="Everything Precedent says about the request, if assessed."
    )

    def to_patch(self) -> dict[str, Any]:
        """The status as the CRD stores it: the assessment's fields at the top level."""
        body: dict[str, Any] = {}
        if self.assessment is not None:
            body.update(self.assessment.model_dump(mode="json", by_alias=True, exclude_none=True))
        body["observedGeneration"] = self.observed_generation
        body["conditions"] = [
            c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in self.conditions
        ]
        return body


# ---------------------------------------------------------------------------------------------
# RemediationApproval
# ---------------------------------------------------------------------------------------------


class ApprovalDecision(StrEnum):
    """What the approver decided."""

    APPROVE = "approve"
    REJECT = "reject"


class ApprovalTarget(WireModel):
    """The RemediationRequest an approval is about (same namespace)."""

    name: str = Field(min_length=1, max_length=253, description="The request's metadata.name.")
    uid: str | None = Field(
        default=None, max_length=64, description="The request's uid, to pin one incarnation."
    )


class RemediationApprovalSpec(WireModel):
    """A human's decision on an escalated request: ``spec`` of a RemediationApproval."""

    request_ref: ApprovalTarget = Field(description="The request decided on.")
    decision: ApprovalDecision = Field(description="approve or reject.")
    reason: str = Field(min_length=1, max_length=1024, description="Why (required).")
    approver: str = Field(
        min_length=1, max_length=253, description="Who decided: the authenticated user (admission)."
    )
    access_level: Literal["READ_ONLY", "WRITE", "ADMIN"] | None = Field(
        default=None,
        description="The access level approved; admission checks the approve verb for ADMIN, "
        "the operator checks it is the request's.",
    )
    approver_groups: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="Groups the approver claims (admission checks each against the user's).",
    )
    expires_at: Timestamp | None = Field(default=None, description="No longer valid after this.")


class ApprovalStatus(WireModel):
    """A RemediationApproval's ``status``, written by the operator."""

    state: Literal["Accepted", "Ignored"] = Field(description="Accepted or Ignored.")
    reason: str = Field(description="One CamelCase word: why.")
    message: str = Field(default="", description="A sentence for people.")
    observed_generation: int = Field(description="The generation this status answers.")
