"""The real operator, in-process (kopf's KopfRunner), against the sandbox API server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from kopf.testing import KopfRunner

from precedent.demo import apply, object_path
from precedent_sandbox import SandboxThread
from tests.backends import ApiServer, install_crds, real_server, use_kubectl_of
from tests.helpers import eventually

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The condition of type ``kind`` in an object's status, if any."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def is_true(obj: dict[str, Any], kind: str) -> bool:
    """Whether condition ``kind`` is True."""
    found = condition(obj, kind)
    return bool(found and found.get("status") == "True")


class Cluster:
    """An API server (the sandbox, or a real one) with the CRDs, an HTTP client, and a way to
    run the operator."""

    def __init__(
        self, sandbox: ApiServer, client: httpx.Client, kubeconfig: Path, backend: str = "sandbox"
    ) -> None:
        self.sandbox = sandbox
        self.client = client
        self.kubeconfig = kubeconfig
        self.backend = backend
        """``sandbox`` or ``real`` (a kube-apiserver): a few answers differ (docs/sandbox.md)."""

    def create(self, body: dict[str, Any]) -> httpx.Response:
        """POST an object; returns the response (callers check the status)."""
        namespace = (
            body["metadata"].get("namespace") if body["kind"] == "RemediationRequest" else None
        )
        if body["kind"] == "RemediationRequest" and namespace is None:
            namespace = body["metadata"]["namespace"] = "default"
        return self.client.post(object_path(body["kind"], namespace), json=body)

    def get_request(self, name: str, namespace: str = "default") -> dict[str, Any]:
        """GET a RemediationRequest."""
        response = self.client.get(object_path("RemediationRequest", namespace, name))
        response.raise_for_status()
        return dict(response.json())

    def wait_ready(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        """Wait until the request is Ready (or fail), and return it."""
        return dict(
            eventually(lambda: (o := self.get_request(name)) and is_true(o, "Ready") and o, timeout)
        )

    def events_for(self, name: str) -> list[dict[str, Any]]:
        """Kubernetes Events whose involved object is ``name``."""
        items = self.client.get("/api/v1/namespaces/default/events").json()["items"]
        return [e for e in items if e.get("involvedObject", {}).get("name") == name]

    @contextmanager
    def operator(self, stop_timeout: float = 60) -> Iterator[KopfRunner]:
        """Run ``kopf run -m precedent.handlers`` in this process until the block ends
        (``stop_timeout``: how long it may take to stop, its pending API retries included)."""
        args = ["run", "-m", "precedent.handlers", "--all-namespaces", "--standalone"]
        with KopfRunner(args, timeout=stop_timeout) as runner:
            yield runner
        assert runner.exception is None or isinstance(runner.exception, SystemExit), runner.output


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module runs its ``cluster`` tests on the backends it names in ``BACKENDS`` (the
    sandbox alone unless it says ``("sandbox", "real")``)."""
    if "cluster" in metafunc.fixturenames:
        backends = getattr(metafunc.module, "BACKENDS", ("sandbox",))
        metafunc.parametrize("cluster", backends, indirect=True)


@pytest.fixture
def cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """An API server with the CRDs, the bundled incidents and playbooks, and an administrator's
    client and kubeconfig (no RBAC roles or admission policies installed); the operator reads
    the cluster only. The sandbox, or a real kube-apiserver (tests/backends.py)."""
    monkeypatch.setenv("PRECEDENT_HISTORY_PATH", "")
    monkeypatch.setenv("PRECEDENT_CATALOG", "")
    monkeypatch.setenv("PRECEDENT_STATUS_KEY", "integration-test-key")
    monkeypatch.setenv("PRECEDENT_METRICS_PORT", "0")
    if getattr(request, "param", "sandbox") == "real":
        with real_server({}, tmp_path / "control-plane", request) as (server, client):
            use_kubectl_of(server, monkeypatch)
            kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
            monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
            install_crds(client, REPO / "crds")
            apply(client, [DATA / "incidents", DATA / "playbooks"])
            yield Cluster(server, client, kubeconfig, backend="real")
        return
    with SandboxThread(REPO / "crds") as sandbox:
        kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        with httpx.Client(base_url=sandbox.url, timeout=30) as client:
            apply(client, [DATA / "incidents", DATA / "playbooks"])
            yield Cluster(sandbox, client, kubeconfig)
