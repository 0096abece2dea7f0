"""The OpenAPI definitions of the built-in kinds the sandbox serves, as Kubernetes 1.36 has them.

``kubernetes-1.36-definitions.json.gz`` (next to this module) holds, in swagger 2.0 form
(``#/definitions/…`` references), every definition the served built-in kinds reach: descriptions,
types, formats, ``x-kubernetes-group-version-kind`` and the list/map extensions. It is made by
``python -m precedent_sandbox.builtin_schemas`` from the JSON schemas the ``kubernetes-validate``
package ships (derived from Kubernetes' own OpenAPI document), turned back into the shape
kube-apiserver serves: ``["string", "null"]`` types become ``string``, the ``additionalProperties:
false`` and ``apiVersion``/``kind`` enums the strict variant adds are dropped, IntOrString becomes
``string`` with format ``int-or-string`` and Quantity ``string``. The sandbox needs no
``kubernetes-validate`` at run time; a test regenerates the file and compares.

:func:`prune_unknown` drops fields a kind does not declare (reporting their paths), as decoding
into the API's Go types does in kube-apiserver; :mod:`.openapi` serves the definitions.
"""

from __future__ import annotations

import functools
import gzip
import json
import sys
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "DATA_FILE",
    "KUBERNETES_VERSION",
    "build",
    "definition_for",
    "definitions",
    "prune_unknown",
]

KUBERNETES_VERSION = "1.36.0"
DATA_FILE = "kubernetes-1.36-definitions.json.gz"
_SOURCE_REF = "#/$defs/"
_REF = "#/definitions/"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
# Always included: what a CRD's document refers to.
_ALWAYS = ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",)


@functools.cache
def definitions() -> dict[str, Any]:
    """Definition name → swagger 2.0 schema (``$ref`` as ``#/definitions/NAME``)."""
    data = resources.files("precedent_sandbox").joinpath(DATA_FILE).read_bytes()
    loaded: dict[str, Any] = json.loads(gzip.decompress(data))
    return loaded


@functools.cache
def _by_gvk() -> dict[tuple[str, str, str], str]:
    found: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            found.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return found


def definition_for(group: str, version: str, kind: str) -> str | None:
    """The definition name of a built-in kind, or None if the sandbox has no schema for it."""
    return _by_gvk().get((group, version, kind))


# -- pruning -----------------------------------------------------------------------------------


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = definitions()[schema["$ref"].removeprefix(_REF)]
    return schema


def _path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune_unknown(name: str, obj: dict[str, Any], unknown: list[str]) -> None:
    """Drop the fields of ``obj`` (a built-in kind's body, without ``apiVersion``, ``kind``
    and ``metadata``) that definition ``name`` does not declare; append their paths."""
    _prune(definitions()[name], obj, "", unknown)


def _prune(schema: dict[str, Any], value: Any, path: str, unknown: list[str]) -> None:
    schema = _resolve(schema)
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key in list(value):
            if properties is not None and key in properties:
                _prune(properties[key], value[key], _path(path, key), unknown)
            elif isinstance(additional, dict):
                _prune(additional, value[key], _path(path, key), unknown)
            elif properties is not None:
                # A struct: a field it does not declare is dropped by the decoder.
                del value[key]
                unknown.append(_path(path, key))
            # No properties at all (RawExtension, FieldsV1, JSON …): any content.
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _prune(schema["items"], item, f"{path}[{index}]", unknown)


# -- generation from kubernetes-validate --------------------------------------------------------


def _convert(node: Any) -> Any:
    """One schema from the strict JSON-schema form back to swagger 2.0."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref":
            out[key] = _REF + str(value).split(_SOURCE_REF, 1)[1]
        elif key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            if len(kinds) == 1:
                out[key] = kinds[0]
            else:
                out[key] = kinds
        elif key == "properties":
            out[key] = {name: _convert(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            if value is False and key == "additionalProperties":
                continue  # added by the strict variant; kube-apiserver's document has none
            out[key] = _convert(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_convert(v) for v in value]
        else:
            out[key] = value
    properties = out.get("properties")
    if isinstance(properties, dict):
        for field in ("apiVersion", "kind"):
            # The JSON-schema variant pins them with an enum; the API's document does not.
            if isinstance(properties.get(field), dict):
                properties[field].pop("enum", None)
    return out


def _special(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if name == _INT_OR_STRING:
        return {"type": "string", "format": "int-or-string"}
    if name == _QUANTITY:
        return {"type": "string"}
    return schema


def _refs(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref.removeprefix(_REF)
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    yield from _refs(sub)
            elif key != "properties":
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def build(source: dict[str, Any], kinds: Iterable[tuple[str, str, str]]) -> dict[str, Any]:
    """The definitions ``kinds`` (group, version, kind) reach, from kubernetes-validate's
    ``_definitions.json`` (``source``), in swagger 2.0 form."""
    raw = source["$defs"]
    wanted = set(kinds)
    roots = [
        name
        for name, schema in raw.items()
        if any(
            (g["group"], g["version"], g["kind"]) in wanted
            for g in schema.get("x-kubernetes-group-version-kind", ())
        )
    ]
    missing = wanted - {
        (g["group"], g["version"], g["kind"])
        for name in roots
        for g in raw[name]["x-kubernetes-group-version-kind"]
    }
    if missing:
        raise SystemExit(f"no definition for {sorted(missing)} in Kubernetes {KUBERNETES_VERSION}")
    result: dict[str, Any] = {}
    todo = [*roots, *_ALWAYS]
    while todo:
        name = todo.pop()
        if name in result:
            continue
        result[name] = _special(name, _convert(raw[name]))
        todo.extend(_refs(result[name]))
    return dict(sorted(result.items()))


def _source_file() -> Path:
    base = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    return Path(str(base)) / f"v{KUBERNETES_VERSION}-local-strict" / "_definitions.json"


def served_kinds() -> list[tuple[str, str, str]]:
    """The (group, version, kind) of every built-in kind the sandbox serves."""
    from precedent_sandbox.registry import BUILTINS

    return sorted({(t.group, v, t.kind) for t in BUILTINS() for v in t.served_versions})


def encode(defs: dict[str, Any]) -> bytes:
    """The data file's bytes: sorted compact JSON, gzip without a timestamp."""
    text = json.dumps(defs, sort_keys=True, separators=(",", ":"))
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def regenerate() -> bytes:
    """The data file as made from the installed kubernetes-validate."""
    source = json.loads(_source_file().read_text())
    return encode(build(source, served_kinds()))


def main() -> None:
    """Write the data file next to this module."""
    target = Path(__file__).with_name(DATA_FILE)
    data = regenerate()
    target.write_bytes(data)
    print(f"{target}: {len(data)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
