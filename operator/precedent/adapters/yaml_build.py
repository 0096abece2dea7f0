"""Python objects from the nodes libyaml composed, as PyYAML's safe constructor builds them.

PyYAML's ``CSafeLoader`` parses and composes in C and constructs in Python, one generic call
per node (a recursion guard, a generator per collection, a lookup of the constructor by tag).
A history of 10,000 incidents is about 1.6 million nodes, and that construction was the
largest part of reading it. Most of them are plain: strings, lists and mappings of strings.
:func:`load_all` builds those directly and hands every other node (an int, a timestamp, a
merge key, a tag it does not know) to the loader's own constructor, so the objects are the
ones ``yaml.load_all(text, Loader=CSafeLoader)`` returns (tests/adapters/test_yaml_build.py
compares the two). An alias is the same object as its anchor, as there.

Depth and aliases are checked before this runs (``bounded._scan_yaml``): the recursion here
is bounded by ``max_depth``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["load_all", "load_native"]

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"


class _Builder:
    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.built: dict[int, Any] = {}

    def build(self, node: Node) -> Any:
        found = self.built.get(id(node))
        if found is not None or id(node) in self.built:
            return found
        tag = node.tag
        if tag == _STR and type(node) is ScalarNode:
            return node.value
        if tag == _SEQ and type(node) is SequenceNode:
            items: list[Any] = []
            self.built[id(node)] = items
            items.extend(map(self.build, node.value))
            return items
        if (
            tag == _MAP
            and type(node) is MappingNode
            and not any(key.tag == _MERGE for key, _ in node.value)
        ):
            mapping: dict[Any, Any] = {}
            self.built[id(node)] = mapping
            for key_node, value_node in node.value:
                key = self.build(key_node)
                if not isinstance(key, Hashable):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        "found unhashable key",
                        key_node.start_mark,
                    )
                mapping[key] = self.build(value_node)
            return mapping
        # Everything else as PyYAML builds it (its constructor keeps its own alias table).
        value = self.loader.construct_object(node, deep=True)
        self.built[id(node)] = value
        return value


def load_all(text: str, loader_class: Any) -> list[Any]:
    """Every document of ``text``, as ``list(yaml.load_all(text, Loader=loader_class))``."""
    loader = loader_class(text)
    try:
        documents = []
        while loader.check_node():
            node = loader.get_node()
            documents.append(_Builder(loader).build(node))
            # As PyYAML's construct_document leaves the constructor for the next document.
            loader.constructed_objects = {}
            loader.recursive_objects = {}
        return documents
    finally:
        loader.dispose()


NativeLoad = Callable[[str, int, int, Callable[[str | None, str, bool, bool], Any], str], Any]


def load_native(
    text: str, max_depth: int, max_alias_nodes: int, loader_class: Any, load: NativeLoad
) -> tuple[str, Any]:
    """``load`` (the compiled core's ``load_yaml``) with this loader's resolver and scalar
    constructors: what it gives (``("ok", documents)``, ``("depth" | "aliases", line)`` or
    ``("elsewhere", None)``). A loader with a resolver for every first character cannot take
    this path: ``("elsewhere", None)``."""
    resolvers = loader_class.yaml_implicit_resolvers
    if None in resolvers:
        return "elsewhere", None
    loader = loader_class("")
    try:

        def construct(tag: str | None, value: str, plain: bool, quoted: bool) -> Any:
            # As PyYAML's composer and constructor make a scalar of this event.
            if tag is None:
                tag = loader.resolve(ScalarNode, value, (plain, quoted))
                if tag == _STR:  # "True story", "2024 outage": the safe constructor's
                    return value  # str of a scalar node is its value
            node = ScalarNode(tag, value)
            try:
                return loader.construct_object(node, deep=True)
            finally:
                loader.constructed_objects.pop(node, None)

        first = "".join(key for key in resolvers if key)
        found: tuple[str, Any] = load(text, max_depth, max_alias_nodes, construct, first)
        return found
    finally:
        loader.dispose()
