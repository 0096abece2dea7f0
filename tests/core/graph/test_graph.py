"""The incremental graph: edges from each rule, updates touching only what changed, queries."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from precedent.core.graph import (
    Confidence,
    DependencyGraph,
    EdgeType,
    GraphInputError,
    NodeKey,
    NodeType,
    TopologyHint,
    blast_radius,
    resolve_target,
)

SHOP = Path(__file__).resolve().parents[3] / "data" / "shop"


def deploy(
    name: str,
    ns: str = "shop",
    env: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    image: str = "example/app:1",
    kind: str = "Deployment",
    **container: Any,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}},
        "spec": {
            "template": {
                "metadata": {"labels": labels or {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": image,
                            "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
                            **container,
                        }
                    ]
                },
            }
        },
    }


def service(
    name: str, ns: str = "shop", selector: dict[str, str] | None = None, **meta: Any
) -> dict[str, Any]:
    return {
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns, **meta},
        "spec": {"selector": {"app": name} if selector is None else selector},
    }


def app(name: str, ns: str = "shop", **kw: Any) -> list[dict[str, Any]]:
    return [deploy(name, ns, **kw), service(name, ns)]


def shop_objects() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(SHOP.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def shop() -> DependencyGraph:
    graph = DependencyGraph()
    graph.apply_all(shop_objects())
    return graph


def D(name: str, ns: str = "shop") -> NodeKey:
    return NodeKey("Deployment", ns, name)


def S(name: str, ns: str = "shop") -> NodeKey:
    return NodeKey("Service", ns, name)


def edge_set(graph: DependencyGraph) -> list[tuple[Any, ...]]:
    return [(e.source, e.target, e.type, e.confidence, e.evidence) for e in graph.edges()]


# ------------------------------------------------------------------------------ the demo shop


def test_restart_payment_api_lists_checkout_storefront_and_the_ingress_upstream() -> None:
    graph = shop()
    radius = blast_radius(graph, D("payment-api"))
    up = {r.key: r for r in radius.upstream}
    assert D("checkout") in up
    assert D("storefront") in up
    assert NodeKey("Ingress", "shop", "shop") in up
    assert up[D("checkout")].hops == 2
    assert up[NodeKey("Ingress", "shop", "shop")].hops == 6
    assert radius.paths[0] == (
        "ingress/shop → svc/storefront → deploy/storefront → svc/checkout → deploy/checkout"
        " → svc/payment-api → deploy/payment-api"
    )
    # the weakest edge on the path: checkout's PAYMENT_URL (HOST 0.85) corroborated by policy
    assert up[NodeKey("Ingress", "shop", "shop")].confidence == pytest.approx(0.95)
    assert radius.pdbs == ("payment-api (minAvailable: 2)",)
    assert radius.namespaces == ("payments", "shop")
    down = {r.key for r in radius.downstream}
    assert NodeKey("StatefulSet", "shop", "ledger") in down
    assert D("fraud-check", "payments") in down
    assert "6 upstream" in radius.summary
    assert "PDB: payment-api" in radius.summary


def test_upstream_of_the_ledger_names_the_critical_payment_api() -> None:
    radius = blast_radius(shop(), NodeKey("StatefulSet", "shop", "ledger"))
    assert radius.critical_upstream == (D("payment-api"),)
    assert radius.pdbs == ()
    assert "critical upstream: deploy/payment-api" in radius.summary


def test_deleting_checkout_removes_it_from_later_answers_and_reapplying_restores_it() -> None:
    graph = shop()
    before = edge_set(graph)
    graph.delete("Deployment", "shop", "checkout")
    up = {r.key for r in blast_radius(graph, D("payment-api")).upstream}
    assert D("checkout") not in up
    assert D("storefront") not in up  # it reached payment-api only through checkout
    assert all(D("checkout") not in (e.source, e.target) for e in graph.edges())
    graph.apply(
        next(
            o
            for o in shop_objects()
            if o["metadata"]["name"] == "checkout" and o["kind"] == "Deployment"
        )
    )
    assert edge_set(graph) == before


def test_the_graph_does_not_depend_on_the_order_objects_arrive_in() -> None:
    objects = shop_objects()
    expected = edge_set(shop())
    rng = random.Random(7)
    for _ in range(20):
        rng.shuffle(objects)
        graph = DependencyGraph()
        graph.apply_all(objects)
        assert edge_set(graph) == expected


def test_deleting_and_reapplying_every_object_in_random_order_converges() -> None:
    objects = shop_objects()
    expected = edge_set(shop())
    rng = random.Random(11)
    graph = shop()
    for _ in range(10):
        victims = rng.sample(objects, 8)
        for obj in victims:
            graph.delete(
                obj["kind"], obj["metadata"].get("namespace", "default"), obj["metadata"]["name"]
            )
        for obj in rng.sample(victims, len(victims)):
            graph.apply(obj)
        assert edge_set(graph) == expected


# ------------------------------------------------------------------------------ edge rules


def test_service_selects_workloads_in_its_namespace_only() -> None:
    graph = DependencyGraph()
    graph.apply_all([deploy("api", "a"), deploy("api", "b"), service("api", "a")])
    assert set(graph.outgoing(S("api", "a"))) == {D("api", "a")}


def test_service_selector_needs_every_label() -> None:
    graph = DependencyGraph()
    graph.apply_all(
        [
            deploy("web", labels={"app": "web", "track": "canary"}),
            deploy("web-stable", labels={"app": "web", "track": "stable"}),
            service("web", selector={"app": "web", "track": "stable"}),
        ]
    )
    assert set(graph.outgoing(S("web"))) == {D("web-stable")}


def test_changing_a_selector_or_labels_moves_the_edges() -> None:
    graph = DependencyGraph()
    graph.apply_all([deploy("a"), deploy("b"), service("front", selector={"app": "a"})])
    assert set(graph.outgoing(S("front"))) == {D("a")}
    graph.apply(service("front", selector={"app": "b"}))
    assert set(graph.outgoing(S("front"))) == {D("b")}
    graph.apply(deploy("a", labels={"app": "b"}))
    assert set(graph.outgoing(S("front"))) == {D("a"), D("b")}
    assert set(graph.incoming(D("a"))) == {S("front")}


def test_a_service_created_after_its_caller_links_at_once() -> None:
    graph = DependencyGraph()
    graph.apply(deploy("web", env={"API_URL": "http://api:8080"}))
    assert graph.outgoing(D("web")) == {}
    graph.apply(service("api"))
    assert set(graph.outgoing(D("web"))) == {S("api")}
    graph.delete("Service", "shop", "api")
    assert graph.outgoing(D("web")) == {}


def test_bare_names_resolve_in_the_callers_namespace_and_svc_ns_across() -> None:
    graph = DependencyGraph()
    graph.apply_all(
        [
            *app("api", "other"),
            deploy("web", env={"A": "http://api:80", "B": "http://api.other:80"}),
        ]
    )
    edge = graph.outgoing(D("web"))[S("api", "other")]
    assert edge.confidence == Confidence.NAMESPACED
    assert edge.evidence == ("env B=http://api.other:80 in Deployment web",)


def test_a_common_word_service_is_not_matched_inside_unrelated_values() -> None:
    graph = DependencyGraph()
    graph.apply_all(
        [
            *app("api"),
            *app("cache"),
            deploy(
                "web",
                env={"LOG_LEVEL": "api-verbose", "NOTE": "disable the cache for tests"},
                args=["--log=api-debug", "warm the cache"],
            ),
        ]
    )
    assert graph.outgoing(D("web")) == {}


def test_a_workload_naming_its_own_service_does_not_depend_on_it() -> None:
    graph = DependencyGraph()
    graph.apply_all(
        app("checkout", env={"SERVICE_NAME": "checkout", "SELF": "http://checkout:8080"})
    )
    assert graph.outgoing(D("checkout")) == {}


def test_args_command_and_init_containers_count() -> None:
    graph = DependencyGraph()
    body = deploy(
        "job",
        command=["sh", "-c", "wait-for ledger.shop.svc:5432 && run"],
        args=["--cache", "redis"],
    )
    body["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "init", "image": "busybox", "args": ["http://queue:5672"]}
    ]
    graph.apply_all([*app("ledger"), *app("redis"), *app("queue"), body])
    out = graph.outgoing(D("job"))
    assert set(out) == {S("ledger"), S("redis"), S("queue")}
    assert out[S("ledger")].confidence == Confidence.FQDN
    assert out[S("redis")].confidence == Confidence.EXACT
    assert out[S("queue")].confidence == Confidence.HOST


def test_configmaps_by_key_and_envfrom_and_their_changes() -> None:
    cm = {
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "shop"},
        "data": {"DB_URL": "postgres://u@ledger:5432/x", "OTHER": "x"},
    }
    web = deploy("web")
    web["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "DATABASE_URL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "DB_URL"}}}
    ]
    worker = deploy("worker")
    worker["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"configMapRef": {"name": "cfg"}, "prefix": "APP_"}
    ]
    graph = DependencyGraph()
    graph.apply_all([web, worker, *app("ledger"), *app("redis")])
    assert graph.outgoing(D("web")) == {}  # the ConfigMap is not there yet
    graph.apply(cm)
    assert graph.outgoing(D("web"))[S("ledger")].evidence == (
        "ConfigMap cfg DB_URL=postgres://u@ledger:5432/x (env DATABASE_URL) read by Deployment web",
    )
    assert set(graph.outgoing(D("worker"))) == {S("ledger")}
    cm["data"] = {"DB_URL": "redis:6379"}
    graph.apply(cm)
    assert set(graph.outgoing(D("web"))) == {S("redis")}
    graph.delete("ConfigMap", "shop", "cfg")
    assert graph.outgoing(D("web")) == {}
    assert graph.outgoing(D("worker")) == {}


def test_ingress_routes_to_its_backend_services() -> None:
    ingress = {
        "kind": "Ingress",
        "metadata": {"name": "edge", "namespace": "shop"},
        "spec": {
            "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}},
            "rules": [
                {
                    "host": "x.example",
                    "http": {"paths": [{"path": "/api", "backend": {"service": {"name": "api"}}}]},
                }
            ],
        },
    }
    graph = DependencyGraph()
    graph.apply_all([ingress, *app("web")])
    assert set(graph.outgoing(NodeKey("Ingress", "shop", "edge"))) == {S("web")}
    graph.apply_all(app("api"))
    out = graph.outgoing(NodeKey("Ingress", "shop", "edge"))
    assert out[S("api")].evidence == ("rule x.example/api → service api in Ingress edge",)
    assert out[S("api")].confidence == Confidence.INGRESS_BACKEND


def test_depends_on_annotation_is_explicit() -> None:
    graph = DependencyGraph()
    graph.apply_all(
        [
            *app("a"),
            *app("b", "other"),
            deploy("w", annotations={"precedent.dev/depends-on": "a, other/b"}),
        ]
    )
    out = graph.outgoing(D("w"))
    assert set(out) == {S("a"), S("b", "other")}
    assert all(e.confidence == 1.0 and e.type == EdgeType.DEPENDS_ON for e in out.values())


def _policy(name: str, pods: dict[str, str], **rules: Any) -> dict[str, Any]:
    return {
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"podSelector": {"matchLabels": pods}, **rules},
    }


def test_network_policy_corroborates_but_never_creates_an_edge() -> None:
    graph = DependencyGraph()
    graph.apply_all([*app("api"), deploy("web", env={"API": "http://api:80"}), deploy("idle")])
    assert graph.outgoing(D("web"))[S("api")].confidence == Confidence.HOST
    graph.apply(
        _policy(
            "api-in",
            {"app": "api"},
            ingress=[
                {
                    "from": [
                        {"podSelector": {"matchLabels": {"app": "web"}}},
                        {"podSelector": {"matchLabels": {"app": "idle"}}},
                    ]
                }
            ],
        )
    )
    edge = graph.outgoing(D("web"))[S("api")]
    assert edge.confidence == pytest.approx(Confidence.HOST + Confidence.NETWORK_POLICY_BONUS)
    assert edge.evidence[-1] == "NetworkPolicy shop/api-in allows ingress from Deployment web"
    assert graph.outgoing(D("idle")) == {}  # allowed, but nothing says it calls
    graph.delete("NetworkPolicy", "shop", "api-in")
    assert graph.outgoing(D("web"))[S("api")].confidence == Confidence.HOST


def test_an_allow_everything_policy_corroborates_nothing() -> None:
    graph = DependencyGraph()
    graph.apply_all(
        [
            *app("api"),
            deploy("web", env={"API": "http://api:80"}),
            _policy("open", {}, egress=[{"to": [{"podSelector": {}}]}]),
        ]
    )
    assert graph.outgoing(D("web"))[S("api")].confidence == Confidence.HOST


def test_egress_policy_with_namespace_selector() -> None:
    graph = DependencyGraph()
    graph.apply_all(
        [
            *app("api", "other"),
            deploy("web", env={"API": "api.other:80"}),
            _policy(
                "web-out",
                {"app": "web"},
                egress=[
                    {
                        "to": [
                            {
                                "namespaceSelector": {
                                    "matchLabels": {"kubernetes.io/metadata.name": "other"}
                                },
                                "podSelector": {
                                    "matchExpressions": [
                                        {"key": "app", "operator": "In", "values": ["api"]}
                                    ]
                                },
                            }
                        ]
                    }
                ],
            ),
        ]
    )
    edge = graph.outgoing(D("web"))[S("api", "other")]
    assert edge.confidence == pytest.approx(1.0)
    assert "NetworkPolicy shop/web-out allows egress to api" in edge.evidence


# ------------------------------------------------------------------------------ node types


def test_node_types_from_annotation_image_name_and_externalname() -> None:
    graph = DependencyGraph()
    external = service("mail", selector={})
    external["spec"]["type"] = "ExternalName"
    graph.apply_all(
        [
            *app("orders-db", image="postgres:16"),
            *app("sessions", image="docker.io/library/redis:7"),
            *app("blob", annotations={"precedent.dev/service-type": "storage"}),
            *app("web"),
            external,
            deploy(
                "client",
                env={
                    "DB": "orders-db:5432",
                    "SESSION_PRIMARY_HOST": "sessions",
                    "API": "http://web",
                },
            ),
        ]
    )
    assert graph.info(D("orders-db")).type == NodeType.DATABASE
    assert graph.info(S("orders-db")).type == NodeType.DATABASE
    assert graph.info(D("sessions")).type == NodeType.CACHE
    assert graph.info(S("blob")).type == NodeType.STORAGE
    assert graph.info(S("mail")).type == NodeType.EXTERNAL
    assert graph.info(D("web")).type == NodeType.COMPUTE
    out = graph.outgoing(D("client"))
    assert out[S("orders-db")].type == EdgeType.DEPENDS_ON
    assert out[S("sessions")].type == EdgeType.WRITES_TO
    assert out[S("web")].type == EdgeType.CALLS


def test_hpa_and_pdb_attributes() -> None:
    graph = DependencyGraph()
    graph.apply_all(
        [
            *app("web"),
            {
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "web", "namespace": "shop"},
                "spec": {
                    "scaleTargetRef": {"kind": "Deployment", "name": "web"},
                    "minReplicas": 2,
                    "maxReplicas": 9,
                },
            },
            {
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web-pdb", "namespace": "shop"},
                "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}},
            },
        ]
    )
    attrs = dict(graph.info(D("web")).attributes)
    assert attrs["hpa"] == "web min 2 max 9"
    assert attrs["pdb"] == "web-pdb (maxUnavailable: 25%)"
    assert graph.pdbs_protecting(S("web")) == ["web-pdb (maxUnavailable: 25%)"]
    graph.delete("PodDisruptionBudget", "shop", "web-pdb")
    graph.delete("HorizontalPodAutoscaler", "shop", "web")
    assert graph.info(D("web")).attributes == ()


# ------------------------------------------------------------------------------ topology hints


def test_topology_hints_add_capped_edges_by_name() -> None:
    graph = DependencyGraph()
    graph.apply_all([*app("web"), *app("api")])
    graph.set_hints(
        [TopologyHint("web", "api", "CALLS", 0.9), TopologyHint("web", "ghost", "CALLS", 0.9)]
    )
    edge = graph.outgoing(S("web"))[S("api")]
    assert edge.confidence == Confidence.TOPOLOGY_HINT_CAP
    assert edge.evidence == ("fleet memory: web CALLS api",)
    graph.apply_all(app("ghost"))
    assert S("ghost") in graph.outgoing(S("web"))
    graph.set_hints([])
    assert set(graph.outgoing(S("web"))) == {D("web")}


# ------------------------------------------------------------------------------ targets, input


@pytest.mark.parametrize(
    ("kind", "name", "ns", "rid", "expected"),
    [
        ("Deployment", "payment-api", "shop", None, D("payment-api")),
        ("deploy", "payment-api", "shop", None, D("payment-api")),
        ("Service", "payment-api", "shop", None, S("payment-api")),
        ("svc", "ledger", None, None, S("ledger")),
        ("App", "ledger", "shop", None, NodeKey("StatefulSet", "shop", "ledger")),
        ("Deployment", "ledger", "shop", None, NodeKey("StatefulSet", "shop", "ledger")),
        (None, "", None, "shop/deploy/checkout", D("checkout")),
        (None, "", None, "/api/v1/namespaces/shop/services/checkout", S("checkout")),
        ("Deployment", "fraud-check", "payments", None, D("fraud-check", "payments")),
        ("Deployment", "fraud-check", "shop", None, None),
        ("Deployment", "nothing", None, None, None),
    ],
)
def test_resolve_target(
    kind: str | None, name: str, ns: str | None, rid: str | None, expected: NodeKey | None
) -> None:
    assert resolve_target(shop(), kind, name, ns, rid) == expected


def test_bad_object_names_the_field_and_leaves_the_graph_unchanged() -> None:
    graph = shop()
    before = edge_set(graph)
    bad = deploy("checkout", env={"PAYMENT_URL": "http://payment-api:8080"})
    bad["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = {"oops": 1}
    with pytest.raises(
        GraphInputError,
        match=r"^spec\.template\.spec\.containers\[0\]\.env\[0\]\.value: expected a string",
    ):
        graph.apply(bad)
    with pytest.raises(GraphInputError, match=r"precedent\.dev/service-type: .db. is not one of"):
        graph.apply(deploy("x", annotations={"precedent.dev/service-type": "db"}))
    with pytest.raises(GraphInputError, match=r"^spec\.maxReplicas: required"):
        graph.apply(
            {
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "h"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}},
            }
        )
    assert edge_set(graph) == before


def test_blast_radius_is_deterministic_and_bounded() -> None:
    graph = shop()
    first = blast_radius(graph, NodeKey("StatefulSet", "shop", "ledger")).to_dict()
    assert blast_radius(graph, NodeKey("StatefulSet", "shop", "ledger")).to_dict() == first
    cut = blast_radius(graph, NodeKey("StatefulSet", "shop", "ledger"), limit=2)
    assert cut.truncated
    assert "+ upstream" in cut.summary
