"""The README's install commands, run as written, with real kubectl, against a fresh API server:
the sandbox, and a real kube-apiserver (with the kubectl of its release).

kubectl runs with validation on (its default: ``fieldValidation=Strict``, checked against the
OpenAPI documents the sandbox serves). The commands are read from the README's "Install on a
cluster" section, so the test and the README cannot drift apart.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from precedent_sandbox import SandboxThread
from tests.backends import External, fresh_control_plane, real_server_unavailable
from tests.e2e.conftest import Kubectl

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH"),
]

REPO = Path(__file__).resolve().parents[2]
INSTALL = [
    "kubectl apply -f crds/",
    "kubectl wait --for=condition=Established -f crds/ --timeout=60s",
    "kubectl apply -k manifests/",
]


def readme_commands() -> list[str]:
    """Every command of the README's "Install on a cluster" block, as written."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Install on a cluster\n", 1)[1]
    block = re.search(r"```console\n(.*?)```", section, re.DOTALL)
    assert block is not None, "no console block under 'Install on a cluster'"
    return [
        line[2:].split("  #")[0].strip() for line in block[1].splitlines() if line.startswith("$ ")
    ]


def readme_install() -> list[str]:
    """The first three commands of that block: the install itself."""
    return readme_commands()[: len(INSTALL)]


def key(doc: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = doc["metadata"]
    return (doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"])


@contextmanager
def empty_server(
    backend: str, home: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Path, str]]:
    """An API server with nothing registered: its admin kubeconfig and the kubectl to use."""
    if backend == "sandbox":
        with SandboxThread(crds_dir=None) as sandbox:
            yield sandbox.write_kubeconfig(home / "kubeconfig"), "kubectl"
        return
    reason = real_server_unavailable()
    if reason is not None:
        pytest.skip(reason)
    external = os.environ.get("PRECEDENT_TEST_KUBECONFIG")
    if external:
        cluster = External(Path(external), {})
        try:
            yield cluster.write_kubeconfig(home / "kubeconfig"), "kubectl"
        finally:
            cluster.close()
        return
    etcd = request.getfixturevalue("real_etcd")
    server = fresh_control_plane(etcd, {}, home / "control-plane")
    try:
        yield server.write_kubeconfig(home / "kubeconfig"), str(server.kubectl)
    finally:
        server.stop()


@pytest.fixture(scope="module", params=["sandbox", "real"])
def installed(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Kubectl]:
    """An API server with nothing registered, then the README's install commands, each once."""
    home = tmp_path_factory.mktemp("install")
    with empty_server(request.param, home, request) as (kubeconfig, binary):
        kubectl = Kubectl(kubeconfig, home / "cache", binary)
        for command in readme_install():
            argv = shlex.split(command)
            assert argv[0] == "kubectl"
            assert "--validate=false" not in argv
            result = subprocess.run(
                [*kubectl.base, *argv[1:]],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
        yield kubectl


def test_the_readme_gives_the_install_commands() -> None:
    assert readme_install() == INSTALL


def test_every_object_of_crds_and_manifests_exists(installed: Kubectl) -> None:
    crds = [
        doc
        for path in sorted((REPO / "crds").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    rendered = installed("kustomize", str(REPO / "manifests")).stdout
    manifests = [doc for doc in yaml.safe_load_all(rendered) if doc]
    # Nothing in manifests/ may need a CRD applied in the same step.
    assert not [d for d in manifests if d["kind"] == "CustomResourceDefinition"]
    wanted = crds + manifests
    found = json.loads(
        subprocess.run(
            [*installed.base, "get", "-f", "-", "-o", "json"],
            input=yaml.safe_dump_all(wanted),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    )
    items = found["items"] if found.get("kind") == "List" else [found]
    assert sorted(key(i) for i in items) == sorted(key(d) for d in wanted)
    assert {"ClusterKopfPeering", "Deployment", "ValidatingAdmissionPolicy"} <= {
        d["kind"] for d in manifests
    }


def test_the_operator_deployment_validates_for_a_recent_kubernetes(installed: Kubectl) -> None:
    rendered = installed("kustomize", str(REPO / "manifests")).stdout
    (deployment,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment"]
    version = kubernetes_validate.latest_version()
    assert tuple(int(p) for p in version.split(".")[:2]) >= (1, 32)
    # Raises ValidationError naming the field if the Deployment does not fit the schema.
    kubernetes_validate.validate(deployment, version, strict=True)


def test_a_manifest_with_an_unknown_field_is_refused_naming_it(
    installed: Kubectl, tmp_path: Path
) -> None:
    rendered = installed("kustomize", str(REPO / "manifests")).stdout
    (deployment,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment"]
    deployment["spec"]["replicaz"] = 3
    deployment["metadata"]["name"] = "precedent-typo"
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(deployment))
    refused = installed("apply", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert 'unknown field "spec.replicaz"' in refused.stderr
    gone = installed("get", "deployment", "precedent-typo", "-n", "precedent-system", check=False)
    assert gone.returncode != 0  # nothing was created


def test_kubectl_explain_reads_the_served_documents(installed: Kubectl) -> None:
    replicas = installed("explain", "deployment.spec.replicas").stdout
    assert "integer" in replicas
    assert "Number of desired pods" in replicas  # Kubernetes' own description
    spec = installed("explain", "remediationrequests.spec").stdout
    crd = yaml.safe_load((REPO / "crds" / "remediationrequests.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "RemediationRequest" in spec
    for field in ("action", "target"):
        assert field in spec
    # The CRD's description, as kubectl wraps it.
    assert " ".join(spec.split()).count(" ".join(schema["description"].split()[:6])) == 1
