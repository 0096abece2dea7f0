"""Just enough Kubernetes protobuf to read what ``kubectl create`` sends for core objects.

kubectl's typed clients (``kubectl create namespace|configmap|secret``) send
``application/vnd.kubernetes.protobuf`` bodies: the ``k8s\\0`` magic, then a
``runtime.Unknown`` wrapping the object's message. This decodes Namespace, ConfigMap and
Secret into the JSON shape the rest of the sandbox works with; anything else is a 415.
Answers always go back as JSON, which those clients accept.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

__all__ = ["MAGIC", "decode_object"]

MAGIC = b"k8s\x00"


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) for each field; values are ints or bytes."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(data, position)
            yield number, wire, value
        elif wire == 2:
            length, position = _varint(data, position)
            yield number, wire, data[position : position + length]
            position += length
        elif wire == 1:
            yield number, wire, data[position : position + 8]
            position += 8
        elif wire == 5:
            yield number, wire, data[position : position + 4]
            position += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _text(value: bytes) -> str:
    return value.decode("utf-8")


def _map_entry(value: bytes, decode_value: Callable[[bytes], Any]) -> tuple[str, Any]:
    key, item = "", decode_value(b"")
    for number, _, raw in _fields(value):
        if number == 1:
            key = _text(raw)
        elif number == 2:
            item = decode_value(raw)
    return key, item


def _time(value: bytes) -> str:
    seconds = next((raw for number, _, raw in _fields(value) if number == 1), 0)
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _owner_reference(value: bytes) -> dict[str, Any]:
    names = {
        1: "kind",
        3: "name",
        4: "uid",
        5: "apiVersion",
        6: "controller",
        7: "blockOwnerDeletion",
    }
    found: dict[str, Any] = {}
    for number, _, raw in _fields(value):
        if number in (6, 7):
            found[names[number]] = bool(raw)
        elif number in names:
            found[names[number]] = _text(raw)
    return found


def _object_meta(value: bytes) -> dict[str, Any]:
    strings = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    meta: dict[str, Any] = {}
    for number, _, raw in _fields(value):
        if number in strings:
            if raw:  # proto2 writes empty strings too; JSON would leave them out
                meta[strings[number]] = _text(raw)
        elif number == 7:
            meta["generation"] = raw
        elif number == 8:
            meta["creationTimestamp"] = _time(raw)
        elif number in (11, 12):
            key, item = _map_entry(raw, _text)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = item
        elif number == 13:
            meta.setdefault("ownerReferences", []).append(_owner_reference(raw))
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(raw))
    return meta


def _bytes_b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


def _namespace(fields: list[tuple[int, int, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for number, _, raw in fields:
        if number == 1:
            body["metadata"] = _object_meta(raw)
        elif number == 2:
            finalizers = [_text(v) for n, _, v in _fields(raw) if n == 1]
            body["spec"] = {"finalizers": finalizers} if finalizers else {}
    return body


def _configmap(fields: list[tuple[int, int, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for number, _, raw in fields:
        if number == 1:
            body["metadata"] = _object_meta(raw)
        elif number == 2:
            key, item = _map_entry(raw, _text)
            body.setdefault("data", {})[key] = item
        elif number == 3:
            key, item = _map_entry(raw, _bytes_b64)
            body.setdefault("binaryData", {})[key] = item
        elif number == 4:
            body["immutable"] = bool(raw)
    return body


def _secret(fields: list[tuple[int, int, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for number, _, raw in fields:
        if number == 1:
            body["metadata"] = _object_meta(raw)
        elif number == 2:
            key, item = _map_entry(raw, _bytes_b64)
            body.setdefault("data", {})[key] = item
        elif number == 3 and raw:
            body["type"] = _text(raw)
        elif number == 4:
            key, item = _map_entry(raw, _text)
            body.setdefault("stringData", {})[key] = item
        elif number == 5:
            body["immutable"] = bool(raw)
    return body


_RESOURCE_ATTRIBUTES = (
    "",
    "namespace",
    "verb",
    "group",
    "version",
    "resource",
    "subresource",
    "name",
)


def _strings(value: bytes, names: tuple[str, ...]) -> dict[str, Any]:
    return {
        names[number]: _text(raw)
        for number, wire, raw in _fields(value)
        if wire == 2 and number < len(names)
    }


def _access_review(fields: list[tuple[int, int, Any]]) -> dict[str, Any]:
    # What ``kubectl auth can-i`` sends: spec.resourceAttributes or nonResourceAttributes.
    body: dict[str, Any] = {"metadata": {}, "spec": {}}
    for number, _, raw in fields:
        if number != 2:
            continue
        for inner, _, value in _fields(raw):
            if inner == 1:
                body["spec"]["resourceAttributes"] = _strings(value, _RESOURCE_ATTRIBUTES)
            elif inner == 2:
                body["spec"]["nonResourceAttributes"] = _strings(value, ("", "path", "verb"))
    return body


def _self_review(_: list[tuple[int, int, Any]]) -> dict[str, Any]:
    return {"metadata": {}}  # ``kubectl auth whoami`` sends an empty review


_DECODERS: dict[tuple[str, str], Callable[[list[tuple[int, int, Any]]], dict[str, Any]]] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ConfigMap"): _configmap,
    ("v1", "Secret"): _secret,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _access_review,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): _self_review,
}


def decode_object(data: bytes) -> dict[str, Any] | None:
    """The JSON form of a protobuf-encoded core object, or None if it is not one we read."""
    if not data.startswith(MAGIC):
        return None
    api_version = kind = ""
    raw = b""
    for number, _, value in _fields(data[len(MAGIC) :]):
        if number == 1:
            for inner, _, text in _fields(value):
                if inner == 1:
                    api_version = _text(text)
                elif inner == 2:
                    kind = _text(text)
        elif number == 2:
            raw = value
    decoder = _DECODERS.get((api_version, kind))
    if decoder is None:
        return None
    body = decoder(list(_fields(raw)))
    body["apiVersion"] = api_version
    body["kind"] = kind
    return body
