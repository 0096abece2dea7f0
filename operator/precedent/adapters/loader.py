"""Read RemediationRequest, Incident and Playbook documents from YAML files, directories or stdin.

Every error names the file, the document's position (1-based) and the field, e.g.
``data/requests/bad.yaml, document 2 (RemediationRequest restart-api): spec.target.name:
required field is missing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from precedent.adapters.bounded import STDIN, parse_yaml_documents, read_text
from precedent.adapters.heap import LoadedIncidents
from precedent.errors import LoadError, describe_validation
from precedent.models import API_GROUP, Band, Decision, Incident, Playbook, RemediationRequestSpec

__all__ = [
    "ACCEPTABLE_PLAYBOOKS",
    "EXPECTED_BAND",
    "EXPECTED_DECISION",
    "MANUAL_INVESTIGATION",
    "RATIONALE",
    "SPLIT",
    "Document",
    "LabelledRequest",
    "NamedRequest",
    "SelectionLabel",
    "iter_documents",
    "load_incidents",
    "load_labelled_requests",
    "load_playbooks",
    "load_requests",
    "load_selection_requests",
]

_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document and where it came from."""

    source: str
    index: int
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        """The document's ``kind`` ('' if absent)."""
        kind = self.body.get("kind")
        return kind if isinstance(kind, str) else ""

    @property
    def name(self) -> str:
        """``metadata.name`` ('' if absent)."""
        meta = self.body.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        return name if isinstance(name, str) else ""

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace``, if any."""
        meta = self.body.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        return ns if isinstance(ns, str) else None

    @property
    def where(self) -> str:
        """``file, document N (Kind name)`` for messages."""
        what = " ".join(p for p in (self.kind, self.name) if p)
        return f"{self.source}, document {self.index}" + (f" ({what})" if what else "")

    def error(self, message: str) -> LoadError:
        """A LoadError that names this document."""
        return LoadError(f"{self.where}: {message}")


@dataclass(frozen=True, slots=True)
class NamedRequest:
    """A RemediationRequest's identity and validated spec."""

    name: str
    namespace: str | None
    spec: RemediationRequestSpec
    source: str


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _SUFFIXES)
    if path.is_file():
        return [path]
    raise LoadError(f"{path}: no such file or directory")


def _parse(text: str, source: str) -> Iterator[Document]:
    raw = parse_yaml_documents(text, source)
    index = 0
    for body in raw:
        if body is None:  # empty document between two '---'
            continue
        index += 1
        if not isinstance(body, dict):
            raise LoadError(
                f"{source}, document {index}: expected a mapping, got {type(body).__name__}"
            )
        if body.get("kind") == "List" and isinstance(body.get("items"), list):
            for item in body["items"]:
                if not isinstance(item, dict):
                    raise LoadError(f"{source}, document {index}: List item is not a mapping")
                yield Document(source, index, item)
            continue
        yield Document(source, index, body)


def iter_documents(paths: Iterable[str | Path]) -> Iterator[Document]:
    """Documents from files, directories (recursively: .yaml, .yml, .json) or ``-`` (stdin).

    Each file is read and parsed within :data:`precedent.adapters.bounded.LIMITS`.
    """
    for entry in paths:
        if str(entry) == STDIN:
            yield from _parse(*read_text(STDIN))
            continue
        for file in _files(Path(entry)):
            yield from _parse(*read_text(file))


def _spec(doc: Document, expected_kind: str) -> dict[str, Any]:
    if doc.kind != expected_kind:
        found = f"kind {doc.kind!r}" if doc.kind else "no kind"
        raise doc.error(f"expected kind {expected_kind!r}, found {found}")
    api_version = doc.body.get("apiVersion")
    if not isinstance(api_version, str) or not api_version.startswith(f"{API_GROUP}/"):
        raise doc.error(f"apiVersion: expected {API_GROUP}/v1alpha1, found {api_version!r}")
    spec = doc.body.get("spec")
    if spec is None:
        raise doc.error("spec: required field is missing")
    if not isinstance(spec, dict):
        raise doc.error(f"spec: expected a mapping, got {type(spec).__name__}")
    return spec


_M = TypeVar("_M", RemediationRequestSpec, Incident, Playbook)


def _validate(doc: Document, model: type[_M], data: dict[str, Any]) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise doc.error(describe_validation(exc, "spec")) from None


def load_requests(paths: Iterable[str | Path]) -> list[NamedRequest]:
    """Every document must be a RemediationRequest; any other kind is an error."""
    requests = []
    for doc in iter_documents(paths):
        spec = _validate(doc, RemediationRequestSpec, _spec(doc, "RemediationRequest"))
        requests.append(
            NamedRequest(doc.name or f"request-{doc.index}", doc.namespace, spec, doc.where)
        )
    return requests


def load_incidents(
    paths: Iterable[str | Path],
    *,
    strict_kind: bool = False,
    kept: LoadedIncidents | None = None,
) -> list[Incident]:
    """Incident documents; other kinds are skipped unless ``strict_kind`` (data/ mixes kinds).
    With ``kept``, each incident is made as ``kept`` keeps it as it is read (its field record
    and resource shared, its long texts compressed if asked: precedent.adapters.heap)."""
    incidents: list[Incident] = []
    seen: dict[str, str] = {}
    for doc in iter_documents(paths):
        if doc.kind != "Incident" and not strict_kind:
            continue
        incident = _validate(doc, Incident, _spec(doc, "Incident"))
        if incident.id in seen:
            raise doc.error(
                f"spec.id: duplicate incident id {incident.id!r} (first in {seen[incident.id]})"
            )
        seen[incident.id] = doc.where
        incidents.append(incident if kept is None else kept.keep(incident))
    return incidents


def load_playbooks(paths: Iterable[str | Path], *, strict_kind: bool = False) -> list[Playbook]:
    """Playbook documents; the playbook id is ``metadata.name``."""
    playbooks: list[Playbook] = []
    seen: dict[str, str] = {}
    for doc in iter_documents(paths):
        if doc.kind != "Playbook" and not strict_kind:
            continue
        spec = dict(_spec(doc, "Playbook"))
        if not doc.name:
            raise doc.error("metadata.name: required field is missing")
        spec.setdefault("id", doc.name)
        playbook = _validate(doc, Playbook, spec)
        if playbook.id in seen:
            raise doc.error(
                f"metadata.name: duplicate playbook {playbook.id!r} (first in {seen[playbook.id]})"
            )
        seen[playbook.id] = doc.where
        playbooks.append(playbook)
    return playbooks


EXPECTED_BAND = f"{API_GROUP}/expected-band"
EXPECTED_DECISION = f"{API_GROUP}/expected-decision"
RATIONALE = f"{API_GROUP}/rationale"
CLUSTER = f"{API_GROUP}/cluster"
"""The cluster a labelled request is evaluated in (its facts: ``precedent eval risk -f``)."""


@dataclass(frozen=True, slots=True)
class LabelledRequest:
    """A RemediationRequest annotated with the band (and optionally decision) it should get."""

    request: NamedRequest
    expected_band: Band
    expected_decision: Decision | None
    rationale: str
    cluster: str | None = None
    """The cluster it is evaluated in (``precedent.dev/cluster``), None: ``--cluster``."""


def _annotations(doc: Document) -> dict[str, Any]:
    meta = doc.body.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def load_labelled_requests(paths: Iterable[str | Path]) -> list[LabelledRequest]:
    """RemediationRequests with ``precedent.dev/expected-band`` (required),
    ``precedent.dev/expected-decision`` and ``precedent.dev/rationale`` annotations."""
    labelled = []
    for doc in iter_documents(paths):
        spec = _validate(doc, RemediationRequestSpec, _spec(doc, "RemediationRequest"))
        annotations = _annotations(doc)
        band = annotations.get(EXPECTED_BAND)
        if band is None:
            raise doc.error(f"metadata.annotations[{EXPECTED_BAND!r}]: required for a labelled set")
        try:
            expected_band = Band(str(band).strip().lower())
        except ValueError:
            raise doc.error(
                f"metadata.annotations[{EXPECTED_BAND!r}]: expected low, medium or high, "
                f"found {band!r}"
            ) from None
        decision = annotations.get(EXPECTED_DECISION)
        expected_decision = None
        if decision is not None:
            by_name = {d.value.lower(): d for d in Decision}
            expected_decision = by_name.get(str(decision).strip().lower())
            if expected_decision is None:
                raise doc.error(
                    f"metadata.annotations[{EXPECTED_DECISION!r}]: expected Approved, "
                    f"Escalated or Denied, found {decision!r}"
                )
        request = NamedRequest(doc.name or f"request-{doc.index}", doc.namespace, spec, doc.where)
        labelled.append(
            LabelledRequest(
                request=request,
                expected_band=expected_band,
                expected_decision=expected_decision,
                rationale=str(annotations.get(RATIONALE, "")).strip(),
                cluster=str(annotations[CLUSTER]).strip() or None
                if annotations.get(CLUSTER) is not None
                else None,
            )
        )
    return labelled


ACCEPTABLE_PLAYBOOKS = f"{API_GROUP}/acceptable-playbooks"
SPLIT = f"{API_GROUP}/split"
MANUAL_INVESTIGATION = "manual_investigation"
"""The label of a request no catalog playbook fits."""


@dataclass(frozen=True, slots=True)
class SelectionLabel:
    """A RemediationRequest annotated with the playbooks a reviewer would accept for it."""

    request: NamedRequest
    acceptable: frozenset[str]
    """Acceptable playbook ids; empty when the answer should be manual investigation."""
    split: str
    """``holdout`` or ``tune`` (empty when not given)."""
    rationale: str


def load_selection_requests(paths: Iterable[str | Path]) -> list[SelectionLabel]:
    """RemediationRequests with ``precedent.dev/acceptable-playbooks`` (required: playbook ids
    separated by commas, or ``manual_investigation``), ``precedent.dev/split`` and
    ``precedent.dev/rationale`` annotations."""
    labelled = []
    for doc in iter_documents(paths):
        spec = _validate(doc, RemediationRequestSpec, _spec(doc, "RemediationRequest"))
        annotations = _annotations(doc)
        where = f"metadata.annotations[{ACCEPTABLE_PLAYBOOKS!r}]"
        raw = annotations.get(ACCEPTABLE_PLAYBOOKS)
        if raw is None:
            raise doc.error(f"{where}: required for a labelled selection set")
        ids = {part.strip() for part in str(raw).split(",") if part.strip()}
        if not ids:
            raise doc.error(f"{where}: empty; name playbooks or {MANUAL_INVESTIGATION}")
        if MANUAL_INVESTIGATION in ids and len(ids) > 1:
            raise doc.error(f"{where}: {MANUAL_INVESTIGATION} cannot be listed with playbooks")
        request = NamedRequest(doc.name or f"request-{doc.index}", doc.namespace, spec, doc.where)
        labelled.append(
            SelectionLabel(
                request=request,
                acceptable=frozenset(ids - {MANUAL_INVESTIGATION}),
                split=str(annotations.get(SPLIT, "")).strip().lower(),
                rationale=str(annotations.get(RATIONALE, "")).strip(),
            )
        )
    return labelled
