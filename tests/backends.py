"""The API servers the suites run on: the sandbox, and a real Kubernetes.

The real one is the control plane ``tools/control-plane/build.sh`` builds from pinned Go modules
(kube-apiserver, kube-controller-manager, kubectl and etcd of one release), started on loopback
as envtest does, one fresh API server per test over a shared etcd. ``PRECEDENT_TEST_KUBECONFIG``
points the same suites at any cluster instead (kind, a cloud cluster): its current context must be
a cluster administrator, and the suites' users get real credentials from it (client
certificates through the CertificateSigningRequest API, ServiceAccount tokens).

A test gets a real API server from :func:`real_server`; a fixture that serves both backends is
parametrised ``["sandbox", "real"]`` (``secured`` in tests/e2e/test_approvals_rbac.py).
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
import yaml

from precedent.demo import ClusterServer
from precedent.demo import install_crds as create_crds
from precedent_sandbox.control_plane import (
    ADMIN,
    ControlPlane,
    ControlPlaneError,
    Etcd,
    User,
    binaries_missing,
)
from precedent_sandbox.runner import save_kubeconfig

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
    """A cluster given by ``PRECEDENT_TEST_KUBECONFIG`` (a throwaway one: the suites delete
    every Precedent object in it). Its current context must be a cluster administrator.

    Each person gets a real client certificate through the CertificateSigningRequest API
    (signer ``kubernetes.io/kube-apiserver-client``, CN the name, O the groups; approved by
    the admin), and a ServiceAccount (the operator, a GitOps controller) a real token from the
    TokenRequest API: kubectl, the plugin and kopf then authenticate as they would anywhere."""

    backend = "real"

    def __init__(self, kubeconfig: Path, users: Mapping[str, User]) -> None:
        self.source = yaml.safe_load(kubeconfig.read_text())
        self.tokens = dict(users)
        current = self.source["current-context"]
        context = next(c for c in self.source["contexts"] if c["name"] == current)["context"]
        self.cluster = next(c for c in self.source["clusters"] if c["name"] == context["cluster"])[
            "cluster"
        ]
        self.user = next(u for u in self.source["users"] if u["name"] == context["user"])["user"]
        self.server = ClusterServer(kubeconfig)
        self.kubectl_path = shutil.which("kubectl") or "kubectl"
        self._credentials: dict[str, dict[str, str]] = {}
        self._files = tempfile.TemporaryDirectory(prefix="precedent-test-users-")

    @property
    def url(self) -> str:
        return str(self.cluster["server"])

    def _user(self, user: str | None, token: str | None) -> User | None:
        if token is not None:
            return self.tokens.get(token)
        return next((u for u in self.tokens.values() if u.name == user), None)

    def client(self, token: str | None = None) -> httpx.Client:
        """An HTTP client as the admin, or as the user of ``token``."""
        found = self._user(None, token) if token is not None else None
        if found is None or found.name == ADMIN or "system:masters" in found.groups:
            return self.server.client()
        identity = self._identity(found.name, None)
        if "token" in identity:
            return httpx.Client(
                base_url=self.url,
                verify=self._context(),
                timeout=30,
                headers={"Authorization": f"Bearer {identity['token']}"},
            )
        directory = Path(self._files.name) / found.name.replace(":", "_")
        directory.mkdir(exist_ok=True)
        (directory / "tls.crt").write_bytes(base64.b64decode(identity["client-certificate-data"]))
        (directory / "tls.key").write_bytes(base64.b64decode(identity["client-key-data"]))
        context = self._context()
        context.load_cert_chain(str(directory / "tls.crt"), str(directory / "tls.key"))
        return httpx.Client(base_url=self.url, verify=context, timeout=30)

    def _context(self) -> ssl.SSLContext:
        verify = self.server.verify
        if isinstance(verify, str):
            return ssl.create_default_context(cafile=verify)
        context = ssl.create_default_context()
        if not verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def _certificate(self, user: User) -> dict[str, str]:
        """A client certificate for ``user`` from the cluster's kube-apiserver-client signer."""
        key = subprocess.run(["openssl", "genrsa", "2048"], capture_output=True, check=True).stdout
        subject = "/CN=" + user.name + "".join(f"/O={g}" for g in user.groups)
        request = subprocess.run(
            ["openssl", "req", "-new", "-key", "/dev/stdin", "-subj", subject],
            input=key,
            capture_output=True,
            check=True,
        ).stdout
        name = f"precedent-test-{user.name}-{int(time.time() * 1000)}"
        base = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
        with self.server.client() as admin:
            created = admin.post(
                base,
                json={
                    "apiVersion": "certificates.k8s.io/v1",
                    "kind": "CertificateSigningRequest",
                    "metadata": {"name": name},
                    "spec": {
                        "request": base64.b64encode(request).decode(),
                        "signerName": "kubernetes.io/kube-apiserver-client",
                        "usages": ["client auth"],
                        "expirationSeconds": 7200,
                    },
                },
            )
            created.raise_for_status()
            body = created.json()
            body["status"] = {
                "conditions": [
                    {
                        "type": "Approved",
                        "status": "True",
                        "reason": "PrecedentTests",
                        "message": "a test user of Precedent's suites",
                    }
                ]
            }
            admin.put(f"{base}/{name}/approval", json=body).raise_for_status()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                issued = (admin.get(f"{base}/{name}").json().get("status") or {}).get("certificate")
                if issued:
                    admin.delete(f"{base}/{name}")
                    return {
                        "client-certificate-data": issued,
                        "client-key-data": base64.b64encode(key).decode(),
                    }
                time.sleep(0.2)
        raise AssertionError(
            f"the cluster signed no certificate for {user.name} within 60 s: does its "
            "controller manager sign kubernetes.io/kube-apiserver-client requests?"
        )

    def _service_account_token(self, name: str) -> str:
        _, _, namespace, account = name.split(":", 3)
        with self.client() as admin:
            admin.post("/api/v1/namespaces", json={"metadata": {"name": namespace}})
            admin.post(
                f"/api/v1/namespaces/{namespace}/serviceaccounts",
                json={"metadata": {"name": account}},
            )
            answer = admin.post(
                f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                json={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenRequest",
                    "spec": {"expirationSeconds": 7200},
                },
            )
        answer.raise_for_status()
        return str(answer.json()["status"]["token"])

    def _identity(self, user: str | None, token: str | None) -> dict[str, Any]:
        found = self._user(user, token)
        if found is None or found.name == ADMIN or "system:masters" in found.groups:
            return dict(self.user)
        if found.name not in self._credentials:
            self._credentials[found.name] = (
                {"token": self._service_account_token(found.name)}
                if found.name.startswith("system:serviceaccount:")
                else self._certificate(found)
            )
        return dict(self._credentials[found.name])

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
        return save_kubeconfig(path, self.kubeconfig(namespace=namespace, user=user, token=token))

    def close(self) -> None:
        """Remove the certificate files written for the HTTP clients."""
        self.server.__exit__(None, None, None)
        self._files.cleanup()

    def reset(self) -> None:
        """Delete what a suite may have left: every Precedent object, the admission policies
        and bindings labelled ``app.kubernetes.io/name=precedent``, and the ClusterRoleBindings
        to Precedent's roles; wait until they are gone."""
        with self.client() as admin:

            def items(path: str) -> list[dict[str, Any]]:
                # A kind whose watch cache is still filling answers 429 for a moment.
                deadline = time.monotonic() + 60
                while True:
                    answer = admin.get(path)
                    if answer.status_code == 200 or time.monotonic() > deadline:
                        answer.raise_for_status()
                        return list(answer.json().get("items") or [])
                    time.sleep(0.5)

            group = "/apis/precedent.dev/v1alpha1"
            if admin.get(group).status_code == 200:
                for plural in ("remediationrequests", "remediationapprovals"):
                    for item in items(f"{group}/{plural}"):
                        meta = item["metadata"]
                        admin.delete(
                            f"{group}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
                        )
                for plural in ("incidents", "playbooks"):
                    admin.delete(f"{group}/{plural}")
            registration = "/apis/admissionregistration.k8s.io/v1"
            for plural in (
                "validatingadmissionpolicies",
                "validatingadmissionpolicybindings",
                "mutatingadmissionpolicies",
                "mutatingadmissionpolicybindings",
            ):
                admin.delete(
                    f"{registration}/{plural}",
                    params={"labelSelector": "app.kubernetes.io/name=precedent"},
                )
                for item in items(f"{registration}/{plural}"):
                    if item["metadata"]["name"].startswith("precedent-"):
                        admin.delete(f"{registration}/{plural}/{item['metadata']['name']}")
            bindings = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
            for item in items(bindings):
                if item["roleRef"]["name"].startswith("precedent"):
                    admin.delete(f"{bindings}/{item['metadata']['name']}")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                left = admin.get(f"{group}/remediationrequests")
                if left.status_code != 200 or not left.json()["items"]:
                    break
                time.sleep(0.5)
        # The policies just deleted act for a moment longer (informers).
        time.sleep(3)


def admin_client(server: ControlPlane) -> httpx.Client:
    """An HTTP client for the API server as its administrator."""
    return httpx.Client(
        base_url=server.url,
        verify=server.ssl_context(),
        timeout=30,
        headers={"Authorization": f"Bearer {server.admin_token}"},
    )


def install_crds(client: httpx.Client, directory: Path, timeout: float = 60.0) -> None:
    """Create the CRDs of ``directory`` and wait until each is served (as the demo does)."""
    create_crds(client, directory, timeout)


@pytest.fixture(scope="session")
def real_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Etcd]:
    """One etcd for the session's real API servers (each under its own key prefix)."""
    reason = real_server_unavailable()
    if reason is not None:
        pytest.skip(reason)
    if os.environ.get(EXTERNAL):
        pytest.skip(f"starts its own kube-apiserver: not with {EXTERNAL}")
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


def installed_policies_in_force(server: ControlPlane, timeout: float = 90.0) -> None:
    """After the README's install on ``server``: wait, as the README tells admins to check,
    until the admission policies act (until then a request may be refused with 503 while
    admission resolves the kinds they name, or admitted without them)."""
    with admin_client(server) as client:
        admission_in_force(client, timeout=timeout)


@contextmanager
def real_server(
    users: Mapping[str, User], workdir: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Any, httpx.Client]]:
    """A real API server for one test and an admin client: a fresh kube-apiserver (with
    kube-controller-manager) over the session's etcd, or the cluster of
    ``PRECEDENT_TEST_KUBECONFIG`` emptied of Precedent's objects. Skips, saying why, where
    neither can be had."""
    reason = real_server_unavailable()
    if reason is not None:
        pytest.skip(reason)
    external = os.environ.get(EXTERNAL)
    if external:
        cluster = External(Path(external), users)
        try:
            cluster.reset()
            with cluster.client() as client:
                yield cluster, client
        finally:
            cluster.close()
        return
    server = fresh_control_plane(
        request.getfixturevalue("real_etcd"), users, workdir, controller_manager=True
    )
    try:
        with admin_client(server) as client:
            yield server, client
    finally:
        server.stop()
