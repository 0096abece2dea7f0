"""``precedent graph`` on the demo shop's manifests and against a real HTTP API on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from precedent.cli import main

SHOP = Path(__file__).resolve().parents[2] / "data" / "shop"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["graph", *args])


def test_whole_graph_table_lists_every_edge_with_its_evidence() -> None:
    result = run("-f", str(SHOP))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "19 nodes (9 workloads), 20 edges, namespaces payments, shop"
    assert lines[1].split() == ["SOURCE", "TARGET", "TYPE", "CONFIDENCE", "EVIDENCE"]
    assert any(
        line.split()[:4] == ["shop/deploy/checkout", "shop/svc/payment-api", "calls", "0.95"]
        for line in lines
    )
    assert len(lines) == 2 + 20


def test_target_table_shows_upstream_downstream_and_paths() -> None:
    result = run("-f", str(SHOP), "--target", "deploy/payment-api", "-n", "shop")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.splitlines()[0].startswith("deploy/payment-api in shop: 6 upstream")
    assert "PATHS\n  ingress/shop → svc/storefront → deploy/storefront → svc/checkout" in out
    assert "downstream   payments/svc/fraud-check" in out


def test_direction_up_json() -> None:
    result = run(
        "-f", str(SHOP), "--target", "shop/deploy/payment-api", "--direction", "up", "-o", "json"
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert "downstream" not in body
    names = [u["name"] for u in body["upstream"]]
    assert names == ["payment-api", "checkout", "checkout", "storefront", "storefront", "shop"]
    assert body["pdbs"] == ["payment-api (minAvailable: 2)"]


def test_dot_output_is_graphviz() -> None:
    result = run("-f", str(SHOP), "-o", "dot")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("digraph precedent {")
    assert '"shop/deploy/checkout" -> "shop/svc/payment-api" [label="calls 0.95"];' in out
    assert '"shop/sts/ledger" [label="sts/ledger\\ndatabase", shape=cylinder, color="red"' in out
    assert out.count("subgraph cluster_") == 2


def test_target_dot_highlights_the_target_and_keeps_its_sides() -> None:
    result = run("-f", str(SHOP), "--target", "svc/redis", "-n", "shop", "-o", "dot")
    assert result.exit_code == 0, result.output
    assert 'fillcolor="lightyellow"' in result.output
    assert "payments/" not in result.output  # fraud-check is neither up- nor downstream


def test_unknown_target_is_one_line() -> None:
    result = run("-f", str(SHOP), "--target", "deploy/nothing", "-n", "shop")
    assert result.exit_code == 1
    assert result.output == (
        "error: --target: no workload, Service or Ingress 'deploy/nothing' in namespace shop"
        " in the graph\n"
    )


def test_bad_manifest_names_file_document_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "kind: Service\nmetadata: {name: a}\n---\n"
        "kind: Deployment\nmetadata: {name: web}\n"
        "spec: {template: {spec: {containers: [{name: c, env: [{name: X, value: [1]}]}]}}}\n"
    )
    result = run("-f", str(bad))
    assert result.exit_code == 1
    assert result.output == (
        f"error: {bad}, document 2 (Deployment web): "
        "spec.template.spec.containers[0].env[0].value: expected a string, got list\n"
    )


def test_files_and_kubeconfig_together_is_refused() -> None:
    result = run("-f", str(SHOP), "--context", "x")
    assert result.exit_code == 1
    assert result.output.startswith("error: give either -f")


# ------------------------------------------------------------------------------ a live API


_PATHS = {
    "/apis/apps/v1/deployments": "Deployment",
    "/apis/apps/v1/statefulsets": "StatefulSet",
    "/apis/apps/v1/daemonsets": "DaemonSet",
    "/api/v1/services": "Service",
    "/api/v1/configmaps": "ConfigMap",
    "/apis/networking.k8s.io/v1/ingresses": "Ingress",
    "/apis/networking.k8s.io/v1/networkpolicies": "NetworkPolicy",
    "/apis/policy/v1/poddisruptionbudgets": "PodDisruptionBudget",
    # HorizontalPodAutoscalers left out: the server answers 404, as an old server would.
}


@pytest.fixture
def api_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on loopback answering the list calls with the shop's objects (items
    without ``kind``, as the API server lists them); records every request."""
    objects: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(SHOP.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                kind = doc.pop("kind")
                objects.setdefault(kind, []).append(doc)
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(f"{self.command} {self.path}")
            kind = _PATHS.get(self.path.split("?")[0])
            if kind is None:
                self.send_response(404)
                self.end_headers()
                return
            body = json.dumps({"kind": f"{kind}List", "items": objects.get(kind, [])}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_live_cluster_is_listed_with_the_kubeconfig(
    api_server: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, seen = api_server
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    result = CliRunner().invoke(
        main,
        ["graph", "--kubeconfig", str(kubeconfig), "--target", "payment-api", "-n", "shop"],
    )
    assert result.exit_code == 0, result.output
    assert "warning: the API server does not serve HorizontalPodAutoscaler" in result.output
    assert "deploy/payment-api in shop: 6 upstream" in result.output
    assert all(line.startswith("GET ") for line in seen)  # list calls only
    assert len(seen) == 9
