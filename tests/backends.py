"""The API servers the suites run on: the sandbox, and a real Kubernetes.

The real one is the control plane ``tools/control-plane/build.sh`` builds from pinned Go modules
(kube-apiserver, kube-controller-manager, kubectl and etcd of one release), started on loopback
as envtest does, one fresh API server per test over a shared etcd. ``PRECEDENT_TEST_KUBECONFIG``
points the same suites at any cluster instead (kind, a cloud cluster): its current context must be
a cluster administrator, and the suites' users are impersonated through it.

A test asks for a backend with :func:`backends` (``@pytest.mark.parametrize("backend",
backends(), indirect=True)``) or only the real one with :data:`REAL`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
import yaml

from precedent_sandbox.control_plane import (
    ADMIN,
    ControlPlane,
    ControlPlaneError,
    Etcd,
    User,
    binaries_missing,
)

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "tools" / "control-plane" / "build.sh"
EXTERNAL = "PRECEDENT_TEST_KUBECONFIG"
BIN_ENV = "PRECEDENT_CONTROL_PLANE_BIN"


class ApiServer(Protocol):
    """What the suites need of an API server, sandbox or real."""

    @property
    def url(self) -> str: ...

    def kubeconfig(
        self, *, namespace: str = "default", user: str | None = None, token: str | None = None
    ) -> dict[str, Any]: ...

    def write_kubeconfig(
        self,
        path: str | Path,
        *,
        namespace: str = "default",
        user: str | None = None,
        token: str | None = None,
    ) -> Path: ...


def control_plane_bin() -> Path | None:
    """Where the built binaries are: ``$PRECEDENT_CONTROL_PLANE_BIN``, or the build cache for
    the pinned go.sum (None when not built)."""
    given = os.environ.get(BIN_ENV)
    if given:
        return Path(given)
    if not BUILD.exists() or shutil.which("go") is None:
        return None
    found = subprocess.run(
        [str(BUILD), "print-dir"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not found or not (Path(found) / ".complete").exists():
        return None
    return Path(found) / "bin"


def real_server_unavailable() -> str | None:
    """Why the real-server tests cannot run here, or None."""
    if os.environ.get(EXTERNAL):
        return None
    found = control_plane_bin()
    if found is None:
        if shutil.which("go") is None:
            return (
                "the real Kubernetes tests need Go to build the control plane "
                "(install Go 1.26+, then `make control-plane`), or "
                f"{EXTERNAL}=<kubeconfig of a cluster admin>"
            )
        return "the control plane is not built: run `make control-plane`"
    missing = binaries_missing(found)
    if missing:
        return f"{', '.join(missing)} missing from {found}: run `make control-plane`"
    return None


class External:
    """A cluster given by ``PRECEDENT_TEST_KUBECONFIG``: its admin context, and the suites'
    users impersonated through it (``as``/``as-groups`` in the kubeconfig)."""

    def __init__(self, kubeconfig: Path, users: Mapping[str, User]) -> None:
        self.source = yaml.safe_load(kubeconfig.read_text())
        self.tokens = dict(users)
        current = self.source["current-context"]
        context = next(c for c in self.source["contexts"] if c["name"] == current)["context"]
        self.cluster = next(c for c in self.source["clusters"] if c["name"] == context["cluster"])[
            "cluster"
        ]
        self.user = next(u for u in self.source["users"] if u["name"] == context["user"])["user"]
        self.kubectl_path = shutil.which("kubectl") or "kubectl"

    @property
    def url(self) -> str:
        return str(self.cluster["server"])

    def _identity(self, user: str | None, token: str | None) -> dict[str, Any]:
        if token is not None and token in self.tokens:
            user = self.tokens[token].name
        if user is None or user == ADMIN:
            return dict(self.user)
        groups = next((u.groups for u in self.tokens.values() if u.name == user), ())
        return {**self.user, "as": user, "as-groups": [*groups, "system:authenticated"]}

    def kubeconfig(
        self, *, namespace: str = "default", user: str | None = None, token: str | None = None
    ) -> dict[str, Any]:
        name = "precedent-test"
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": self.cluster}],
            "users": [{"name": name, "user": self._identity(user, token)}],
            "contexts": [
                {"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
            ],
            "current-context": name,
        }

    def write_kubeconfig(
        self,
        path: str | Path,
        *,
        namespace: str = "default",
        user: str | None = None,
        token: str | None = None,
    ) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        config = self.kubeconfig(namespace=namespace, user=user, token=token)
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        return target


def admin_client(server: ControlPlane) -> httpx.Client:
    """An HTTP client for the API server as its administrator."""
    return httpx.Client(
        base_url=server.url,
        verify=server.ssl_context(),
        timeout=30,
        headers={"Authorization": f"Bearer {server.admin_token}"},
    )


def install_crds(client: httpx.Client, directory: Path, timeout: float = 60.0) -> None:
    """Create every CRD of ``directory`` and wait until each is Established and served
    (a real API server serves a new kind a moment after it reports Established)."""
    names: list[tuple[str, str, str]] = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            answer = client.post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=doc
            )
            assert answer.status_code in (201, 409), answer.text
            spec = doc["spec"]
            served = next(v["name"] for v in spec["versions"] if v.get("served", True))
            names.append(
                (doc["metadata"]["name"], f"{spec['group']}/{served}", spec["names"]["plural"])
            )
    deadline = time.monotonic() + timeout
    for name, group_version, plural in names:
        while True:
            crd = client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            established = any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (crd.json().get("status") or {}).get("conditions") or []
            )
            listed = (
                established and client.get(f"/apis/{group_version}/{plural}").status_code == 200
            )
            if listed:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"CRD {name} not served within {timeout:.0f} s")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def real_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Etcd]:
    """One etcd for the session's real API servers (each under its own key prefix)."""
    reason = real_server_unavailable()
    if reason is not None:
        pytest.skip(reason)
    found = control_plane_bin()
    assert found is not None
    etcd = Etcd(found, tmp_path_factory.mktemp("etcd"))
    try:
        etcd.start()
    except ControlPlaneError as error:
        pytest.fail(str(error))
    yield etcd
    etcd.stop()


def fresh_control_plane(
    etcd: Etcd, users: Mapping[str, User], workdir: Path, **options: Any
) -> ControlPlane:
    """A new, empty kube-apiserver over the session's etcd (started; the caller stops it)."""
    found = control_plane_bin()
    assert found is not None
    return ControlPlane(found, users, workdir=workdir, etcd=etcd, **options).start()


def use_kubectl_of(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the server's own kubectl first on PATH (the machine's may be outside the skew)."""
    kubectl = getattr(server, "kubectl", None)
    if kubectl is not None:
        monkeypatch.setenv("PATH", f"{Path(kubectl).parent}{os.pathsep}{os.environ['PATH']}")


def admission_in_force(client: httpx.Client, timeout: float = 30.0) -> None:
    """Wait until the shipped admission policies act on new requests.

    A real API server loads policies, bindings and their parameter kinds through informers: for
    a moment after ``kubectl apply`` a request is admitted as if they did not exist (or refused
    with 503 while a kind is resolved). The probe is a server-side dry run of a request that
    names someone else as requester, as the caller: in force, the requester is the caller."""
    body = {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": "admission-probe", "namespace": "default"},
        "spec": {
            "action": "restart_service",
            "target": {"kind": "Deployment", "name": "probe", "namespace": "default"},
            "description": "probe: are the admission policies in force",
            "requester": "someone-else",
        },
    }
    path = "/apis/precedent.dev/v1alpha1/namespaces/default/remediationrequests"
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        answer = client.post(path, params={"dryRun": "All"}, json=body)
        if answer.status_code == 201 and answer.json()["spec"].get("requester") != "someone-else":
            return
        last = f"{answer.status_code} {answer.text[:200]}"
        time.sleep(0.2)
    raise AssertionError(f"the admission policies are not in force after {timeout:.0f} s: {last}")
