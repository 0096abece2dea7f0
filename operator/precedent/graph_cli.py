"""``precedent graph``: the dependency graph, or the blast radius of one target.

precedent graph -f data/shop                                  # every edge, with evidence
precedent graph -f data/shop --target deploy/payment-api -n shop
precedent graph -f data/shop -o dot | dot -Tsvg > shop.svg
precedent graph --context prod --target svc/checkout -n shop  # a live cluster
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import click

from precedent.adapters.graph_source import graph_from_files
from precedent.core.graph import (
    BlastRadius,
    DependencyGraph,
    Edge,
    NodeKey,
    NodeType,
    blast_radius,
    resolve_target,
)
from precedent.errors import KUBECTL_EXTRA, InputError, PrecedentError

if TYPE_CHECKING:
    from precedent.adapters.graph_cluster import ClusterRead

from precedent.output import OUTPUT_FORMATS, fail, format_table, output_option, render_documents

__all__ = ["graph_command", "render_dot"]

_SHAPES = {
    NodeType.COMPUTE: "box",
    NodeType.DATABASE: "cylinder",
    NodeType.CACHE: "box3d",
    NodeType.QUEUE: "cds",
    NodeType.EXTERNAL: "doubleoctagon",
    NodeType.GATEWAY: "house",
    NodeType.STORAGE: "folder",
    NodeType.UNKNOWN: "ellipse",
}


@click.command("graph")
@click.option(
    "-f",
    "--filename",
    "files",
    multiple=True,
    metavar="FILE_OR_DIR",
    help="Manifests to read (repeatable; - for stdin). Without it, the cluster is listed.",
)
@click.option("--kubeconfig", metavar="PATH", help="Kubeconfig file. Default: $KUBECONFIG.")
@click.option("--context", metavar="NAME", help="Kubeconfig context. Default: the current one.")
@click.option(
    "--target",
    metavar="KIND/NAME",
    help="Show the blast radius of this node: deploy/checkout, svc/ledger, shop/deploy/x, or a "
    "bare name (a workload of that name, else the Service).",
)
@click.option("-n", "--namespace", metavar="NS", help="The target's namespace.")
@click.option(
    "--direction",
    type=click.Choice(["up", "down", "both"]),
    default="both",
    show_default=True,
    help="up: who depends on the target; down: what it depends on.",
)
@output_option(
    (*OUTPUT_FORMATS, "dot"),
    help_text="table: readable; wide: every piece of evidence, namespaces; json/yaml: every "
    "field; name: kind/name of each node; dot: Graphviz.",
)
def graph_command(
    files: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    target: str | None,
    namespace: str | None,
    direction: str,
    output: str,
) -> None:
    """Print the dependency graph, or the upstream/downstream of --target."""
    if files and (kubeconfig or context):
        fail("give either -f FILES or --kubeconfig/--context, not both")
    try:
        if files:
            graph = graph_from_files(files)
        else:
            read = _live_graph(kubeconfig, context)
            graph = read.graph
            if read.missing:
                click.echo(
                    f"warning: the API server does not serve {', '.join(read.missing)}",
                    err=True,
                )
    except PrecedentError as exc:
        fail(str(exc))
    if target is None:
        click.echo(_whole(graph, output))
        return
    kind, _, name = target.rpartition("/")
    key = resolve_target(graph, None, "", namespace, resource_id=target) if kind else None
    if key is None:
        key = resolve_target(graph, kind or None, name, namespace)
    if key is None:
        where = f" in namespace {namespace}" if namespace else ""
        fail(f"--target: no workload, Service or Ingress {target!r}{where} in the graph")
    radius = blast_radius(graph, key)
    click.echo(_radius(graph, radius, direction, output))


# ---------------------------------------------------------------------------------------------


def _evidence(edge: Edge) -> str:
    more = len(edge.evidence) - 1
    return edge.evidence[0] + (f" (+{more} more)" if more else "")


def _name(key: NodeKey) -> str:
    """``-o name``: kind/name, as kubectl prints it (lower-case kind)."""
    return f"{key.kind.lower()}/{key.name}"


def _whole(graph: DependencyGraph, output: str) -> str:
    edges = graph.edges()
    if output == "dot":
        return render_dot(graph, graph.nodes(), edges)
    if output in ("json", "yaml"):
        document = {
            "nodes": [_node_json(graph, k) for k in graph.nodes()],
            "edges": [_edge_json(e) for e in edges],
        }
        return render_documents([document], output)
    if output == "name":
        return "\n".join(_name(k) for k in graph.nodes())
    rows = [
        [
            f"{e.source.namespace}/{e.source.short()}",
            f"{e.target.namespace}/{e.target.short()}",
            e.type.value,
            f"{e.confidence:.2f}",
            "; ".join(e.evidence) if output == "wide" else _evidence(e),
        ]
        for e in edges
    ]
    header = (
        f"{len(graph.nodes())} nodes ({graph.workload_count} workloads), {len(edges)} edges, "
        f"namespaces {', '.join(graph.namespaces()) or '-'}"
    )
    return (
        header + "\n" + format_table(["SOURCE", "TARGET", "TYPE", "CONFIDENCE", "EVIDENCE"], rows)
    )


def _radius(graph: DependencyGraph, radius: BlastRadius, direction: str, output: str) -> str:
    ups = radius.upstream if direction in ("up", "both") else ()
    downs = radius.downstream if direction in ("down", "both") else ()
    if output in ("json", "yaml"):
        body = radius.to_dict()
        if direction == "up":
            body.pop("downstream")
        elif direction == "down":
            body.pop("upstream")
        return render_documents([body], output)
    if output == "name":
        return "\n".join(_name(r.key) for r in (*ups, *downs))
    if output == "dot":
        keys = [radius.target, *(r.key for r in ups), *(r.key for r in downs)]
        inside = set(keys)
        edges = [
            e
            for k in sorted(inside)
            for e in graph.outgoing(k).values()
            if e.target in inside
            and _on_side(e, radius.target, {r.key for r in ups}, {r.key for r in downs})
        ]
        return render_dot(graph, sorted(inside), edges, highlight=radius.target)
    wide = output == "wide"
    ns = None if wide else radius.target.namespace
    rows = [
        [
            side,
            *([r.key.namespace] if wide else []),
            r.key.short(ns),
            r.type.value,
            str(r.hops),
            f"{r.confidence:.2f}",
            "yes" if r.critical else "",
            r.via.short(r.key.namespace if wide else ns),
        ]
        for side, reached in (("upstream", ups), ("downstream", downs))
        for r in reached
    ]
    lines = [radius.summary, ""]
    if rows:
        headers = ["DIRECTION", "NODE", "TYPE", "HOPS", "CONFIDENCE", "CRITICAL", "VIA"]
        if wide:
            headers.insert(1, "NAMESPACE")
        lines.append(format_table(headers, rows))
    if ups and radius.paths:
        lines += ["", "PATHS", *(f"  {p}" for p in radius.paths)]
    return "\n".join(lines)


def _on_side(edge: Edge, target: NodeKey, ups: set[NodeKey], downs: set[NodeKey]) -> bool:
    """Keep edges within the upstream side (into it) or the downstream side (out of it)."""
    up_side = ups | {target}
    down_side = downs | {target}
    return (edge.source in up_side and edge.target in up_side) or (
        edge.source in down_side and edge.target in down_side
    )


def _node_json(graph: DependencyGraph, key: NodeKey) -> dict[str, Any]:
    info = graph.info(key)
    return {
        "kind": key.kind,
        "namespace": key.namespace,
        "name": key.name,
        "type": info.type.value,
        "critical": info.critical,
        "attributes": dict(info.attributes),
    }


def _edge_json(edge: Edge) -> dict[str, Any]:
    return {
        "source": f"{edge.source.namespace}/{edge.source.short()}",
        "target": f"{edge.target.namespace}/{edge.target.short()}",
        "type": edge.type.value,
        "confidence": edge.confidence,
        "evidence": list(edge.evidence),
    }


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(
    graph: DependencyGraph,
    nodes: Sequence[NodeKey],
    edges: Iterable[Edge],
    *,
    highlight: NodeKey | None = None,
) -> str:
    """Graphviz DOT: one cluster per namespace, shapes by node type, critical nodes in red,
    edges labelled with their type and confidence (dashed below 0.8)."""
    lines = [
        "digraph precedent {",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8];',
    ]
    by_ns: dict[str, list[NodeKey]] = {}
    for key in nodes:
        by_ns.setdefault(key.namespace, []).append(key)
    for index, (namespace, keys) in enumerate(sorted(by_ns.items())):
        lines.append(f"  subgraph cluster_{index} {{")
        lines.append(f"    label={_quote('namespace ' + namespace)}; style=rounded;")
        for key in keys:
            info = graph.info(key)
            attrs = [
                "label=" + _quote(key.short() + "\n" + info.type.value).replace("\n", "\\n"),
                f"shape={_SHAPES[info.type]}",
            ]
            if info.critical:
                attrs.append('color="red", penwidth=2')
            if key == highlight:
                attrs.append('style=filled, fillcolor="lightyellow"')
            lines.append(f"    {_quote(_node_id(key))} [{', '.join(attrs)}];")
        lines.append("  }")
    for edge in edges:
        style = ", style=dashed" if edge.confidence < 0.8 else ""
        label = _quote(f"{edge.type.value} {edge.confidence:.2f}")
        lines.append(
            f"  {_quote(_node_id(edge.source))} -> {_quote(_node_id(edge.target))} "
            f"[label={label}{style}];"
        )
    lines.append("}")
    return "\n".join(lines)


def _node_id(key: NodeKey) -> str:
    return f"{key.namespace}/{key.short()}"


def _live_graph(kubeconfig: str | None, context: str | None) -> ClusterRead:
    """The graph listed from the cluster, with the Kubernetes client of the ``kubectl`` extra."""
    try:
        from precedent.adapters.graph_cluster import graph_from_cluster
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "kubernetes":
            raise
        raise InputError(KUBECTL_EXTRA) from None
    return graph_from_cluster(kubeconfig, context)
