"""kubectl against the sandbox's workload and network kinds: apply the documentation's example
manifests, read the columns, watch, re-apply a change, and delete."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from precedent_sandbox import SandboxThread
from tests.e2e.conftest import Kubectl

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH"),
]

MANIFESTS = Path(__file__).resolve().parents[1] / "sandbox" / "manifests"


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """A sandbox with no CRDs and the example manifests applied."""
    home = tmp_path_factory.mktemp("kubectl")
    with SandboxThread(crds_dir=None) as sandbox:
        run = Kubectl(sandbox.write_kubeconfig(home / "kubeconfig"), home / "cache")
        created = run("apply", "-f", str(MANIFESTS)).stdout
        assert "deployment.apps/nginx-deployment created" in created
        assert "horizontalpodautoscaler.autoscaling/php-apache created" in created
        yield run


def header_and_rows(text: str, kind: str) -> tuple[list[str], list[list[str]]]:
    """The block of ``kubectl get a,b,…`` output for one kind, split on runs of spaces."""
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        if lines and lines[1].startswith(f"{kind}/"):
            split = [[c for c in line.split("   ") if c.strip()] for line in lines]
            return [c.strip() for c in split[0]], [[c.strip() for c in r] for r in split[1:]]
    raise AssertionError(f"no {kind} in:\n{text}")


def test_get_prints_the_columns_of_the_real_server(kubectl: Kubectl) -> None:
    shown = kubectl("get", "deploy,sts,ds,svc,ing,netpol,hpa,pdb").stdout
    header, rows = header_and_rows(shown, "deployment.apps")
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[0][:4] == ["deployment.apps/nginx-deployment", "0/3", "0", "0"]
    header, rows = header_and_rows(shown, "service")
    assert header == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert rows[0][1] == "ClusterIP"
    assert rows[0][2].startswith("10.9")
    assert rows[0][3:5] == ["<none>", "80/TCP"]
    header, rows = header_and_rows(shown, "ingress.networking.k8s.io")
    assert header == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    header, rows = header_and_rows(shown, "networkpolicy.networking.k8s.io")
    assert header == ["NAME", "POD-SELECTOR", "AGE"]
    assert rows[0][1] == "role=db"
    header, rows = header_and_rows(shown, "horizontalpodautoscaler.autoscaling")
    assert header == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[0][1:6] == ["Deployment/php-apache", "cpu: <unknown>/50%", "1", "10", "0"]
    header, rows = header_and_rows(shown, "poddisruptionbudget.policy")
    assert header == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    assert rows[0][1:4] == ["2", "N/A", "0"]
    wide = kubectl("get", "deploy", "nginx-deployment", "-o", "wide").stdout.split()
    assert wide[-3:] == ["nginx", "nginx:1.14.2", "app=nginx"]


def test_get_all_lists_the_kinds_in_the_all_category(kubectl: Kubectl) -> None:
    shown = kubectl("get", "all").stdout
    for name in (
        "deployment.apps/nginx-deployment",
        "statefulset.apps/web",
        "daemonset.apps/fluentd-elasticsearch",
        "service/my-service",
        "horizontalpodautoscaler.autoscaling/php-apache",
    ):
        assert name in shown
    assert "ingress" not in shown
    assert "poddisruptionbudget" not in shown


def test_reapplying_a_changed_image_keeps_the_rest_of_the_container(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    unchanged = kubectl("apply", "-f", str(MANIFESTS / "nginx-deployment.yaml")).stdout
    assert "deployment.apps/nginx-deployment unchanged" in unchanged
    changed = tmp_path / "nginx.yaml"
    text = (MANIFESTS / "nginx-deployment.yaml").read_text()
    changed.write_text(text.replace("nginx:1.14.2", "nginx:1.16.1"))
    assert "configured" in kubectl("apply", "-f", str(changed)).stdout
    shown = kubectl("get", "deploy", "nginx-deployment", "-o", "json").stdout
    deployment = json.loads(shown)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx:1.16.1"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert deployment["metadata"]["generation"] == 2


def test_an_invalid_deployment_is_refused_naming_the_field(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    text = (MANIFESTS / "nginx-deployment.yaml").read_text()
    broken.write_text(
        text.replace("name: nginx-deployment", "name: broken").replace(
            "      app: nginx\n  template", "      app: web\n  template"
        )
    )
    result = kubectl("apply", "-f", str(broken), check=False)
    assert result.returncode != 0
    assert result.stderr.strip() == (
        'The Deployment "broken" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"nginx"}: `selector` does not match template `labels`'
    )


def test_watch_sees_a_service_change_and_delete_removes_everything(kubectl: Kubectl) -> None:
    watch = subprocess.Popen(
        [*kubectl.base, "get", "svc", "my-service", "--watch", "--output-watch-events"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # A watch that never prints would block readline; killing it ends the read instead.
    guard = threading.Timer(60, watch.kill)
    guard.start()
    try:
        assert watch.stdout is not None
        assert watch.stdout.readline().split()[:3] == ["EVENT", "NAME", "TYPE"]
        first = watch.stdout.readline()
        assert "ADDED" in first
        assert "my-service" in first
        kubectl("label", "svc", "my-service", "tier=frontend")
        second = watch.stdout.readline()
        assert "MODIFIED" in second
        assert "my-service" in second
    finally:
        guard.cancel()
        watch.terminate()
        watch.communicate(timeout=30)
    deleted = kubectl("delete", "-f", str(MANIFESTS)).stdout
    assert 'deployment.apps "nginx-deployment" deleted' in deleted
    assert 'networkpolicy.networking.k8s.io "test-network-policy" deleted' in deleted
    left = kubectl("get", "deploy,sts,ds,svc,ing,netpol,hpa,pdb")
    assert "No resources found" in left.stderr + left.stdout
