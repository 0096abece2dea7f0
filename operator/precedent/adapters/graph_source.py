"""Objects for the dependency graph from YAML files (a live cluster: :mod:`graph_cluster`).

Files go through the bounded reader (:mod:`precedent.adapters.loader`); a malformed object is
one :class:`~precedent.errors.LoadError` naming the file, the document and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from precedent.adapters.loader import iter_documents
from precedent.core.graph import DependencyGraph, GraphInputError

__all__ = ["graph_from_files"]


def graph_from_files(paths: Iterable[str | Path]) -> DependencyGraph:
    """A graph of every object in ``paths`` (files, directories, ``-``); other kinds ignored."""
    graph = DependencyGraph()
    for doc in iter_documents(paths):
        try:
            graph.apply(doc.body)
        except GraphInputError as exc:
            raise doc.error(str(exc)) from None
    return graph
