"""Rendering API answers: content negotiation and the JSON, Table and partial-metadata forms.

:class:`Output` reads what the client's ``Accept`` header asks for; the functions here turn
stored objects into responses, reusing each object's encoded bytes where the version allows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from precedent_sandbox import errors as api_errors
from precedent_sandbox.errors import ApiError
from precedent_sandbox.objects import Stored, encode
from precedent_sandbox.registry import ResourceType
from precedent_sandbox.table import make_table

__all__ = [
    "JSON",
    "Output",
    "flag",
    "items_response",
    "json_response",
    "object_bytes",
    "object_response",
    "partial",
    "status_response",
    "table_of",
]

JSON = "application/json"


class Output:
    """What the client's ``Accept`` header asks for."""

    __slots__ = ("discovery", "kind", "table_version")

    def __init__(self, accept: str) -> None:
        self.kind = "json"
        self.table_version = "v1"
        self.discovery: str | None = None
        if not accept:
            return
        acceptable = False
        for media in accept.split(","):
            kind, *raw_params = [p.strip() for p in media.split(";")]
            params = dict(p.partition("=")[::2] for p in raw_params)
            role = params.get("as")
            if role == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io":
                if self.discovery is None and params.get("v") in ("v2", "v2beta1"):
                    self.discovery = params["v"]
                continue
            if role == "Table" and params.get("g") == "meta.k8s.io":
                if not acceptable:
                    self.kind = "table"
                    self.table_version = params.get("v", "v1")
                    acceptable = True
                continue
            if role in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                if not acceptable:
                    self.kind = "partial"
                    acceptable = True
                continue
            if role:
                continue
            if kind in (JSON, "*/*", "application/*", "application/yaml", "") and not acceptable:
                self.kind = "json"
                acceptable = True
        if not acceptable and self.discovery is None:
            raise api_errors.not_acceptable()


def json_response(body: Any, status: int = 200, content_type: str = JSON) -> web.Response:
    """``body`` (an object, or bytes already encoded) as a JSON response."""
    encoded = body if isinstance(body, bytes) else encode(body)
    return web.Response(body=encoded, status=status, headers={"Content-Type": content_type})


def status_response(error: ApiError) -> web.Response:
    """An API error as its ``Status`` object."""
    return json_response(error.status(), error.code)


def flag(value: str | None) -> bool:
    """A boolean query parameter (``true`` or ``1``)."""
    return value is not None and value.lower() in ("true", "1")


def object_bytes(rtype: ResourceType, version: str, stored: Stored) -> bytes:
    """The stored bytes, or the object re-encoded with the ``apiVersion`` asked for."""
    if version == rtype.version:
        return stored.raw
    return encode({**stored.obj, "apiVersion": rtype.api_version(version)})


def _at_version(rtype: ResourceType, version: str, stored: Stored) -> dict[str, Any]:
    if version == rtype.version:
        return stored.obj
    return {**stored.obj, "apiVersion": rtype.api_version(version)}


def object_response(
    request: web.Request,
    rtype: ResourceType,
    version: str,
    stored: Stored,
    code: int = 200,
    warnings: Iterable[str] = (),
) -> web.Response:
    """One object as JSON, a Table or PartialObjectMetadata, with ``Warning`` headers."""
    output = Output(request.headers.get("Accept", ""))
    if output.kind == "table":
        body: Any = table_of(
            request, rtype, version, [stored], {"resourceVersion": str(stored.rv)}, output
        )
    elif output.kind == "partial":
        body = partial(stored.obj)
    else:
        body = object_bytes(rtype, version, stored)
    response = json_response(body, code)
    for warning in warnings:
        response.headers.add("Warning", f'299 - "{_escape(warning)}"')
    return response


def table_of(
    request: web.Request,
    rtype: ResourceType,
    version: str,
    items: list[Stored],
    metadata: dict[str, Any],
    output: Output,
) -> dict[str, Any]:
    """A meta.k8s.io Table of ``items`` (printer columns; rows carry the object per request)."""
    include = request.query.get("includeObject", "Metadata")
    now = datetime.now(UTC)
    rows = [(rtype.table_cells(s.obj, now), _at_version(rtype, version, s)) for s in items]
    result = make_table(rtype.table_columns(), rows, include, metadata)
    result["apiVersion"] = f"meta.k8s.io/{output.table_version}"
    return result


def items_response(
    rtype: ResourceType,
    version: str,
    items: list[Stored],
    rv: int,
    metadata: dict[str, Any] | None = None,
) -> web.Response:
    """A ``<Kind>List`` of ``items``."""
    # Built from each object's stored bytes: no re-encoding of the items.
    head = {
        "kind": rtype.list_kind,
        "apiVersion": rtype.api_version(version),
        "metadata": metadata or {"resourceVersion": str(rv)},
    }
    body = (
        encode(head)[:-1]
        + b',"items":['
        + b",".join(object_bytes(rtype, version, s) for s in items)
        + b"]}"
    )
    return json_response(body)


def partial(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The PartialObjectMetadata of ``obj``."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
