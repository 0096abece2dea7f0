"""The built-in workload and network kinds, checked against the Kubernetes documentation's
example manifests and the API server's defaults, field errors and ``kubectl get`` columns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.sandbox.conftest import MERGE, PLAYBOOKS, TABLE, playbook_body
from tests.sandbox.test_auth import Client, client, secured
from tests.sandbox.test_watch import events

__all__ = ["client", "secured"]  # the secured sandbox's fixtures, used by the RBAC test

MANIFESTS = Path(__file__).parent / "manifests"

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"
DAEMONSETS = "/apis/apps/v1/namespaces/default/daemonsets"
SERVICES = "/api/v1/namespaces/default/services"
INGRESSES = "/apis/networking.k8s.io/v1/namespaces/default/ingresses"
NETPOLS = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
HPAS = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


def manifest(name: str, index: int = 0) -> dict[str, Any]:
    """One document of a documentation example in ``manifests/``."""
    documents = list(yaml.safe_load_all((MANIFESTS / name).read_text()))
    found: dict[str, Any] = documents[index]
    return found


async def table(api: httpx.AsyncClient, path: str) -> tuple[list[str], list[list[Any]]]:
    """Column names and rows of ``kubectl get`` for ``path``."""
    body = (await api.get(path, headers={"Accept": TABLE})).json()
    return [c["name"] for c in body["columnDefinitions"]], [r["cells"] for r in body["rows"]]


def causes(response: httpx.Response) -> list[str]:
    """``field: message`` of every cause of a 422."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["reason"] == "Invalid"
    return [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]]


# -- discovery ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group_version", "plural", "kind", "short", "all_category", "status"),
    [
        ("apis/apps/v1", "deployments", "Deployment", "deploy", True, True),
        ("apis/apps/v1", "statefulsets", "StatefulSet", "sts", True, True),
        ("apis/apps/v1", "daemonsets", "DaemonSet", "ds", True, True),
        ("api/v1", "services", "Service", "svc", True, True),
        ("apis/networking.k8s.io/v1", "ingresses", "Ingress", "ing", False, True),
        ("apis/networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", "netpol", False, False),
        (
            "apis/autoscaling/v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            "hpa",
            True,
            True,
        ),
        ("apis/policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", "pdb", False, True),
    ],
)
async def test_discovery_names_verbs_short_names_categories_and_status(
    api: httpx.AsyncClient,
    group_version: str,
    plural: str,
    kind: str,
    short: str,
    all_category: bool,
    status: bool,
) -> None:
    listed = (await api.get(f"/{group_version}")).json()["resources"]
    by_name = {r["name"]: r for r in listed}
    entry = by_name[plural]
    assert entry["kind"] == kind
    assert entry["namespaced"] is True
    assert entry["shortNames"] == [short]
    assert entry.get("categories", []) == (["all"] if all_category else [])
    assert sorted(entry["verbs"]) == sorted(
        ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    )
    assert (f"{plural}/status" in by_name) is status


async def test_the_groups_are_served_at_their_preferred_versions(api: httpx.AsyncClient) -> None:
    groups = {g["name"]: g for g in (await api.get("/apis")).json()["groups"]}
    assert groups["apps"]["preferredVersion"]["groupVersion"] == "apps/v1"
    assert groups["networking.k8s.io"]["preferredVersion"]["groupVersion"] == (
        "networking.k8s.io/v1"
    )
    assert groups["autoscaling"]["preferredVersion"]["groupVersion"] == "autoscaling/v2"
    assert groups["policy"]["preferredVersion"]["groupVersion"] == "policy/v1"
    aggregated = (
        await api.get(
            "/apis",
            headers={
                "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            },
        )
    ).json()
    apps = next(i for i in aggregated["items"] if i["metadata"]["name"] == "apps")
    resources = {r["resource"]: r for r in apps["versions"][0]["resources"]}
    assert resources["deployments"]["shortNames"] == ["deploy"]
    assert resources["deployments"]["subresources"][0]["subresource"] == "status"


# -- Deployments --------------------------------------------------------------------------------


async def test_the_nginx_deployment_is_defaulted_and_printed(api: httpx.AsyncClient) -> None:
    body = manifest("nginx-deployment.yaml")
    body["status"] = {"readyReplicas": 3}  # create ignores status, as the real server does
    created = await api.post(DEPLOYMENTS, json=body)
    assert created.status_code == 201, created.text
    stored = created.json()
    assert stored["metadata"]["generation"] == 1
    assert stored["status"] == {}
    spec = stored["spec"]
    assert spec["replicas"] == 3
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod = spec["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["terminationGracePeriodSeconds"]) == (
        "Always",
        "ClusterFirst",
        30,
    )
    container = pod["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    columns, rows = await table(api, DEPLOYMENTS)
    assert columns == [
        "Name",
        "Ready",
        "Up-to-date",
        "Available",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    name, ready, updated, available, age, containers, images, selector = rows[0]
    assert (name, ready, updated, available) == ("nginx-deployment", "0/3", 0, 0)
    assert re.fullmatch(r"\d+s", age)
    assert (containers, images, selector) == ("nginx", "nginx:1.14.2", "app=nginx")


async def test_replicas_default_to_one_and_untagged_images_are_always_pulled(
    api: httpx.AsyncClient,
) -> None:
    created = (await api.post(DEPLOYMENTS, json=manifest("php-apache.yaml"))).json()
    assert created["spec"]["replicas"] == 1
    assert created["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    _, rows = await table(api, f"{DEPLOYMENTS}/php-apache")
    assert rows[0][1] == "0/1"


async def test_status_is_written_through_the_subresource_only(api: httpx.AsyncClient) -> None:
    await api.post(DEPLOYMENTS, json=manifest("nginx-deployment.yaml"))
    path = f"{DEPLOYMENTS}/nginx-deployment"
    ignored = await api.patch(path, json={"status": {"readyReplicas": 3}}, headers=MERGE)
    assert ignored.json()["status"] == {}
    status = {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    written = await api.patch(f"{path}/status", json={"status": status}, headers=MERGE)
    assert written.status_code == 200
    assert written.json()["status"] == status
    assert written.json()["metadata"]["generation"] == 1
    _, rows = await table(api, path)
    assert rows[0][1:4] == ["2/3", 3, 2]
    scaled = await api.patch(path, json={"spec": {"replicas": 5}}, headers=MERGE)
    assert scaled.json()["metadata"]["generation"] == 2
    assert scaled.json()["status"] == status


async def test_a_deployment_without_selector_or_template_is_invalid(
    api: httpx.AsyncClient,
) -> None:
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "empty"}}
    response = await api.post(DEPLOYMENTS, json={**body, "spec": {}})
    assert causes(response) == [
        "spec.selector: Required value",
        "spec.template.metadata.labels: Invalid value: map[string]string(nil): "
        "`selector` does not match template `labels`",
        "spec.template.spec.containers: Required value",
    ]
    assert response.json()["message"].startswith('Deployment.apps "empty" is invalid: [')


async def test_the_selector_must_match_the_template_labels(api: httpx.AsyncClient) -> None:
    body = manifest("nginx-deployment.yaml")
    body["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    response = await api.post(DEPLOYMENTS, json=body)
    assert causes(response) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"nginx"}: '
        "`selector` does not match template `labels`"
    ]
    body["spec"]["selector"] = {
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["nginx", "web"]}]
    }
    assert (await api.post(DEPLOYMENTS, json=body)).status_code == 201


async def test_deployment_field_errors_name_each_field(api: httpx.AsyncClient) -> None:
    body = manifest("nginx-deployment.yaml")
    body["spec"]["replicas"] = -1
    body["spec"]["template"]["spec"]["containers"] = [{"name": "nginx"}]
    assert causes(await api.post(DEPLOYMENTS, json=body)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "spec.template.spec.containers[0].image: Required value",
    ]


async def test_the_selector_cannot_change(api: httpx.AsyncClient) -> None:
    await api.post(DEPLOYMENTS, json=manifest("nginx-deployment.yaml"))
    patch = {
        "spec": {
            "selector": {"matchLabels": {"app": "nginx", "tier": "web"}},
            "template": {"metadata": {"labels": {"app": "nginx", "tier": "web"}}},
        }
    }
    response = await api.patch(f"{DEPLOYMENTS}/nginx-deployment", json=patch, headers=MERGE)
    assert causes(response)[0].endswith("field is immutable")


async def test_list_watch_and_selectors_work_as_for_any_kind(api: httpx.AsyncClient) -> None:
    await api.post(DEPLOYMENTS, json=manifest("nginx-deployment.yaml"))
    await api.post(DEPLOYMENTS, json=manifest("php-apache.yaml"))
    labelled = (await api.get(DEPLOYMENTS, params={"labelSelector": "app=nginx"})).json()
    assert labelled["kind"] == "DeploymentList"
    assert [i["metadata"]["name"] for i in labelled["items"]] == ["nginx-deployment"]
    named = (
        await api.get(DEPLOYMENTS, params={"fieldSelector": "metadata.name=php-apache"})
    ).json()
    assert [i["metadata"]["name"] for i in named["items"]] == ["php-apache"]
    since = labelled["metadata"]["resourceVersion"]
    await api.patch(
        f"{DEPLOYMENTS}/php-apache/status", json={"status": {"readyReplicas": 1}}, headers=MERGE
    )
    await api.delete(f"{DEPLOYMENTS}/php-apache")
    found = await events(api, DEPLOYMENTS, 2, resourceVersion=since)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in found] == [
        ("MODIFIED", "php-apache"),
        ("DELETED", "php-apache"),
    ]
    assert found[0]["object"]["status"] == {"readyReplicas": 1}


# -- StatefulSets and DaemonSets ------------------------------------------------------------


async def test_the_web_statefulset_is_defaulted_and_printed(api: httpx.AsyncClient) -> None:
    created = await api.post(STATEFULSETS, json=manifest("web-statefulset.yaml"))
    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert created.json()["status"] == {"replicas": 0, "availableReplicas": 0}
    columns, rows = await table(api, STATEFULSETS)
    assert columns == ["Name", "Ready", "Age", "Containers", "Images"]
    assert rows[0][:2] == ["web", "0/3"]
    assert rows[0][3:] == ["nginx", "registry.k8s.io/nginx-slim:0.24"]


async def test_the_fluentd_daemonset_is_printed(api: httpx.AsyncClient) -> None:
    created = await api.post(DAEMONSETS, json=manifest("fluentd-daemonset.yaml"))
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["updateStrategy"]["rollingUpdate"] == {
        "maxUnavailable": 1,
        "maxSurge": 0,
    }
    columns, rows = await table(api, DAEMONSETS)
    assert columns[:8] == [
        "Name",
        "Desired",
        "Current",
        "Ready",
        "Up-to-date",
        "Available",
        "Node Selector",
        "Age",
    ]
    assert rows[0][:7] == ["fluentd-elasticsearch", 0, 0, 0, 0, 0, "<none>"]
    assert rows[0][10] == "name=fluentd-elasticsearch"
    body = manifest("fluentd-daemonset.yaml")
    body["metadata"]["name"] = "no-selector"
    del body["spec"]["selector"]
    assert causes(await api.post(DAEMONSETS, json=body))[0] == "spec.selector: Required value"


# -- Services -----------------------------------------------------------------------------------


async def test_the_service_example_gets_defaults_and_a_cluster_ip(api: httpx.AsyncClient) -> None:
    created = await api.post(SERVICES, json=manifest("my-service.yaml"))
    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["clusterIP"].startswith("10.9")
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert created.json()["status"] == {"loadBalancer": {}}
    other = manifest("php-apache.yaml", 1)
    second = (await api.post(SERVICES, json=other)).json()["spec"]
    assert second["clusterIP"] != spec["clusterIP"]
    assert second["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    columns, rows = await table(api, f"{SERVICES}/my-service")
    assert columns == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
    assert rows[0][:5] == ["my-service", "ClusterIP", spec["clusterIP"], "<none>", "80/TCP"]
    assert rows[0][6] == "app.kubernetes.io/name=MyApp"


async def test_a_service_keeps_its_cluster_ip_and_may_not_change_it(
    api: httpx.AsyncClient,
) -> None:
    created = (await api.post(SERVICES, json=manifest("my-service.yaml"))).json()
    address = created["spec"]["clusterIP"]
    body = manifest("my-service.yaml")
    body["spec"]["ports"][0]["port"] = 8080
    replaced = await api.put(f"{SERVICES}/my-service", json=body)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["spec"]["clusterIP"] == address
    moved = await api.patch(
        f"{SERVICES}/my-service", json={"spec": {"clusterIP": "10.96.200.200"}}, headers=MERGE
    )
    assert causes(moved) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.200.200"}: may not change once set'
    ]


async def test_a_requested_cluster_ip_must_be_in_range_and_free(api: httpx.AsyncClient) -> None:
    body = manifest("my-service.yaml")
    body["spec"]["clusterIP"] = "192.168.0.10"
    assert causes(await api.post(SERVICES, json=body)) == [
        'spec.clusterIPs: Invalid value: []string{"192.168.0.10"}: failed to allocate IP '
        "192.168.0.10: provided IP is not in the valid range. The range of valid IPs is "
        "10.96.0.0/12"
    ]
    body["spec"]["clusterIP"] = "10.96.0.50"
    assert (await api.post(SERVICES, json=body)).status_code == 201
    body["metadata"]["name"] = "twin"
    assert causes(await api.post(SERVICES, json=body))[0].endswith(
        "failed to allocate IP 10.96.0.50: provided IP is already allocated"
    )


async def test_service_ports_are_required_unless_headless_or_external_name(
    api: httpx.AsyncClient,
) -> None:
    bare = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bare"}, "spec": {}}
    assert causes(await api.post(SERVICES, json=bare)) == ["spec.ports: Required value"]
    headless = {**bare, "metadata": {"name": "headless"}, "spec": {"clusterIP": "None"}}
    created = await api.post(SERVICES, json=headless)
    assert created.status_code == 201
    assert created.json()["spec"]["clusterIPs"] == ["None"]
    external = {
        **bare,
        "metadata": {"name": "my-database"},
        "spec": {"type": "ExternalName", "externalName": "my.database.example.com"},
    }
    made = await api.post(SERVICES, json=external)
    assert made.status_code == 201
    assert "clusterIP" not in made.json()["spec"]
    _, rows = await table(api, f"{SERVICES}/my-database")
    assert rows[0][1:5] == ["ExternalName", "<none>", "my.database.example.com", "<none>"]
    unnamed = {
        **bare,
        "metadata": {"name": "two"},
        "spec": {"ports": [{"port": 80}, {"port": 0, "protocol": "ICMP"}]},
    }
    assert causes(await api.post(SERVICES, json=unnamed)) == [
        "spec.ports[0].name: Required value",
        "spec.ports[1].name: Required value",
        "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
    ]


async def test_node_port_and_load_balancer_services(api: httpx.AsyncClient) -> None:
    body = manifest("my-service.yaml")
    body["spec"]["type"] = "NodePort"
    spec = (await api.post(SERVICES, json=body)).json()["spec"]
    node_port = spec["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    assert spec["externalTrafficPolicy"] == "Cluster"
    _, rows = await table(api, f"{SERVICES}/my-service")
    assert rows[0][4] == f"80:{node_port}/TCP"
    balanced = manifest("my-service.yaml")
    balanced["metadata"]["name"] = "balanced"
    balanced["spec"]["type"] = "LoadBalancer"
    made = (await api.post(SERVICES, json=balanced)).json()["spec"]
    assert made["ports"][0]["nodePort"] != node_port
    _, rows = await table(api, f"{SERVICES}/balanced")
    assert rows[0][3] == "<pending>"
    status = {"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.127"}]}}}
    await api.patch(f"{SERVICES}/balanced/status", json=status, headers=MERGE)
    _, rows = await table(api, f"{SERVICES}/balanced")
    assert rows[0][3] == "192.0.2.127"
    body["metadata"]["name"] = "taken"
    body["spec"]["ports"][0]["nodePort"] = node_port
    assert causes(await api.post(SERVICES, json=body)) == [
        f"spec.ports[0].nodePort: Invalid value: {node_port}: provided port is already allocated"
    ]


# -- Ingresses and NetworkPolicies -------------------------------------------------------------


async def test_the_minimal_ingress_is_printed(api: httpx.AsyncClient) -> None:
    created = await api.post(INGRESSES, json=manifest("minimal-ingress.yaml"))
    assert created.status_code == 201, created.text
    assert created.json()["status"] == {"loadBalancer": {}}
    columns, rows = await table(api, INGRESSES)
    assert columns == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    assert rows[0][:5] == ["minimal-ingress", "nginx-example", "*", "", "80"]
    tls = {
        "spec": {
            "tls": [{"hosts": ["https-example.foo.com"], "secretName": "testsecret-tls"}],
            "rules": [
                {
                    "host": "https-example.foo.com",
                    "http": manifest("minimal-ingress.yaml")["spec"]["rules"][0]["http"],
                }
            ],
        }
    }
    await api.patch(f"{INGRESSES}/minimal-ingress", json=tls, headers=MERGE)
    _, rows = await table(api, INGRESSES)
    assert rows[0][2:5] == ["https-example.foo.com", "", "80, 443"]


async def test_an_ingress_path_needs_a_path_type_and_a_backend(api: httpx.AsyncClient) -> None:
    body = manifest("minimal-ingress.yaml")
    path = body["spec"]["rules"][0]["http"]["paths"][0]
    del path["pathType"]
    path["backend"]["service"]["port"] = {}
    assert causes(await api.post(INGRESSES, json=body)) == [
        "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
        'spec.rules[0].http.paths[0].backend.service.port: Invalid value: "": port name or '
        "number is required",
    ]
    empty = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "e"}}
    assert causes(await api.post(INGRESSES, json={**empty, "spec": {}}))[0].endswith(
        "either `defaultBackend` or `rules` must be specified"
    )


async def test_the_network_policy_example_is_printed(api: httpx.AsyncClient) -> None:
    created = await api.post(NETPOLS, json=manifest("test-network-policy.yaml"))
    assert created.status_code == 201, created.text
    assert "status" not in created.json()
    columns, rows = await table(api, NETPOLS)
    assert columns == ["Name", "Pod-Selector", "Age"]
    assert rows[0][:2] == ["test-network-policy", "role=db"]
    status = await api.patch(f"{NETPOLS}/test-network-policy/status", json={}, headers=MERGE)
    assert status.status_code == 404
    deny_all = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny-egress"},
        "spec": {"egress": [{}], "podSelector": {}},
    }
    made = (await api.post(NETPOLS, json=deny_all)).json()
    assert made["spec"]["policyTypes"] == ["Ingress", "Egress"]
    _, rows = await table(api, f"{NETPOLS}/default-deny-egress")
    assert rows[0][1] == "<none>"
    deny_all["metadata"] = {"name": "bad"}
    deny_all["spec"] = {"policyTypes": ["Sideways"]}
    assert causes(await api.post(NETPOLS, json=deny_all)) == [
        'spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Egress", "Ingress"'
    ]


# -- HorizontalPodAutoscalers and PodDisruptionBudgets -----------------------------------------


async def test_the_php_apache_autoscaler_is_printed(api: httpx.AsyncClient) -> None:
    created = await api.post(HPAS, json=manifest("php-apache.yaml", 2))
    assert created.status_code == 201, created.text
    assert created.json()["status"] == {"desiredReplicas": 0}
    columns, rows = await table(api, HPAS)
    assert columns == ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]
    assert rows[0][:6] == [
        "php-apache",
        "Deployment/php-apache",
        "cpu: <unknown>/50%",
        "1",
        10,
        0,
    ]
    observed = {
        "status": {
            "currentReplicas": 1,
            "desiredReplicas": 1,
            "currentMetrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "current": {"averageUtilization": 0, "averageValue": "1m"},
                    },
                }
            ],
        }
    }
    await api.patch(f"{HPAS}/php-apache/status", json=observed, headers=MERGE)
    _, rows = await table(api, HPAS)
    assert rows[0][2] == "cpu: 0%/50%"
    assert rows[0][5] == 1


async def test_autoscaler_defaults_and_limits(api: httpx.AsyncClient) -> None:
    body = manifest("php-apache.yaml", 2)
    del body["spec"]["minReplicas"]
    del body["spec"]["metrics"]
    spec = (await api.post(HPAS, json=body)).json()["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"][0]["resource"]["target"] == {
        "type": "Utilization",
        "averageUtilization": 80,
    }
    body = manifest("php-apache.yaml", 2)
    body["metadata"]["name"] = "upside-down"
    body["spec"].update(minReplicas=5, maxReplicas=2)
    del body["spec"]["scaleTargetRef"]["name"]
    assert causes(await api.post(HPAS, json=body)) == [
        "spec.scaleTargetRef.name: Required value",
        "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
    ]


async def test_the_zookeeper_budget_is_printed_and_validated(api: httpx.AsyncClient) -> None:
    created = await api.post(PDBS, json=manifest("zk-pdb.yaml"))
    assert created.status_code == 201, created.text
    columns, rows = await table(api, PDBS)
    assert columns == ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"]
    assert rows[0][:4] == ["zk-pdb", "2", "N/A", 0]
    await api.patch(
        f"{PDBS}/zk-pdb/status", json={"status": {"disruptionsAllowed": 1}}, headers=MERGE
    )
    _, rows = await table(api, PDBS)
    assert rows[0][3] == 1
    body = manifest("zk-pdb.yaml")
    body["metadata"]["name"] = "both"
    body["spec"]["maxUnavailable"] = "abc"
    found = causes(await api.post(PDBS, json=body))
    assert found[0].endswith("minAvailable and maxUnavailable cannot be both set")
    assert found[1].startswith(
        'spec.maxUnavailable: Invalid value: "abc": a valid percent string must be'
    )


async def test_a_missing_namespace_and_a_wrong_kind_are_refused_as_for_any_kind(
    api: httpx.AsyncClient,
) -> None:
    body = manifest("zk-pdb.yaml")
    missing = await api.post("/apis/policy/v1/namespaces/nowhere/poddisruptionbudgets", json=body)
    assert missing.status_code == 404
    wrong = await api.post(DEPLOYMENTS, json=body)
    assert wrong.status_code == 400


# -- strategic merge patches --------------------------------------------------------------------

STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}


async def test_strategic_merge_patches_merge_keyed_lists_of_built_in_kinds(
    api: httpx.AsyncClient,
) -> None:
    body = manifest("nginx-deployment.yaml")
    body["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    await api.post(DEPLOYMENTS, json=body)
    path = f"{DEPLOYMENTS}/nginx-deployment"
    # What kubectl apply sends when only the image changed.
    image = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "nginx"}],
                    "containers": [{"name": "nginx", "image": "nginx:1.16.1"}],
                }
            }
        }
    }
    patched = (await api.patch(path, json=image, headers=STRATEGIC)).json()
    containers = patched["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["sidecar", "nginx"]
    assert containers[1]["image"] == "nginx:1.16.1"
    assert containers[1]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    removed = {
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}
    }
    patched = (await api.patch(path, json=removed, headers=STRATEGIC)).json()
    assert [c["name"] for c in patched["spec"]["template"]["spec"]["containers"]] == ["nginx"]
    recreate = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    response = await api.patch(path, json=recreate, headers=STRATEGIC)
    assert response.status_code == 200, response.text
    assert response.json()["spec"]["strategy"] == {"type": "Recreate"}


async def test_strategic_merge_patches_of_custom_resources_are_refused(
    api: httpx.AsyncClient,
) -> None:
    body = playbook_body("keyed")
    body["spec"]["steps"] = [{"name": "drain", "run": "a"}, {"name": "restart", "run": "b"}]
    await api.post(PLAYBOOKS, json=body)
    patch = {"spec": {"steps": [{"name": "restart", "run": "c"}]}}
    refused = await api.patch(f"{PLAYBOOKS}/keyed", json=patch, headers=STRATEGIC)
    assert refused.status_code == 415


# -- RBAC -----------------------------------------------------------------------------------


def test_rbac_applies_to_the_workload_kinds(client: Client) -> None:
    admin, bob = client("admin-token"), client("bob-token")
    body = manifest("nginx-deployment.yaml")
    denied = bob.post(DEPLOYMENTS, json=body)
    assert denied.status_code == 403
    assert denied.json()["message"] == (
        'deployments.apps is forbidden: User "bob" cannot create resource "deployments" in API '
        'group "apps" in the namespace "default"'
    )
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "deployment-reader"},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "bob-reads-deployments"},
        "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {
            "kind": "Role",
            "name": "deployment-reader",
            "apiGroup": "rbac.authorization.k8s.io",
        },
    }
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    assert admin.post(f"{rbac}/roles", json=role).status_code == 201
    assert admin.post(f"{rbac}/rolebindings", json=binding).status_code == 201
    assert admin.post(DEPLOYMENTS, json=body).status_code == 201
    assert bob.get(f"{DEPLOYMENTS}/nginx-deployment").status_code == 200
    assert bob.delete(f"{DEPLOYMENTS}/nginx-deployment").status_code == 403
    assert bob.get(SERVICES).status_code == 403
