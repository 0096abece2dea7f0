"""The real Kubernetes control plane on loopback, started as controller-runtime's envtest does.

Not the sandbox: etcd, kube-apiserver and (optionally) kube-controller-manager, the binaries
``tools/control-plane/build.sh`` builds from pinned Go modules. This module only starts and
stops them: a static token file names the users and their groups (``token,user,uid,"g1,g2"``,
the format both servers read), a client CA (whose key the controller manager signs approved
client CertificateSigningRequests with), RBAC and the default admission plugins are on,
service-account tokens are signed with a key made here, and a kubeconfig can be written for
every user.

``with ControlPlane(bin_dir, users) as cp:`` (or ``start()``/``stop()``); ``cp.url``,
``cp.write_kubeconfig(path, user="rita")``. Several API servers can share one etcd, each under
its own key prefix (``Etcd`` then ``ControlPlane(..., etcd=etcd)``): a fresh, empty cluster
costs one kube-apiserver start, not an etcd too.

``python -m precedent_sandbox.control_plane BIN_DIR`` runs one for people (``make cluster``).
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from precedent_sandbox.runner import save_kubeconfig
from precedent_sandbox.tls import generate_self_signed

__all__ = [
    "ADMIN",
    "GITOPS_SA",
    "IDENTITIES",
    "OPERATOR_SA",
    "ControlPlane",
    "ControlPlaneError",
    "Etcd",
    "User",
    "binaries_missing",
]

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
ADMIN = "precedent-admin"
"""The token file's cluster administrator (group ``system:masters``), always present."""


class ControlPlaneError(RuntimeError):
    """A binary is missing, or a component did not start; the message says which and why."""


@dataclass(frozen=True, slots=True)
class User:
    """One identity of the token file."""

    name: str
    groups: tuple[str, ...] = ()


def binaries_missing(bin_dir: Path) -> list[str]:
    """The control-plane binaries ``bin_dir`` lacks (empty when all are there)."""
    return [name for name in BINARIES if not os.access(bin_dir / name, os.X_OK)]


def _die_with_parent() -> None:
    """In the child, before exec: Linux kills it when the process that started it dies, so a
    killed test run or ``make cluster`` leaves no etcd or API server behind (SIGKILL: a
    kube-apiserver whose etcd is gone does not finish a graceful shutdown)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's stop() is the only clean-up
        pass


def _spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,  # only prctl: no lock is taken
        )


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stop(process: subprocess.Popen[bytes] | None, timeout: float = 20.0) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class Etcd:
    """One etcd member on loopback with its data in a directory of its own."""

    def __init__(self, bin_dir: Path, workdir: Path) -> None:
        self.binary = bin_dir / "etcd"
        self.workdir = workdir
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log = workdir / "etcd.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Etcd:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port, peer = free_port(), free_port()
        self.process = _spawn(
            [
                str(self.binary),
                "--name=precedent",
                f"--data-dir={self.workdir / 'data'}",
                f"--listen-client-urls={self.url}",
                f"--advertise-client-urls={self.url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=precedent=http://127.0.0.1:{peer}",
                # As envtest: tests need no durability, and fsync dominates on slow disks.
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
            self.log,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ControlPlaneError(
                    f"etcd exited ({self.process.returncode}):\n{_tail(self.log)}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                    if json.load(answer).get("health") == "true":
                        return self
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        self.stop()
        raise ControlPlaneError(f"etcd not healthy within {timeout:.0f} s:\n{_tail(self.log)}")

    def compact(self) -> int:
        """Compact etcd's history up to its current revision (what kube-apiserver does every
        ``--etcd-compaction-interval``): a watch resumed from an older resourceVersion is then
        answered 410 Gone. Returns the revision."""

        def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
            request = urllib.request.Request(
                f"{self.url}/v3/{path}",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                return dict(json.load(answer))

        revision = int(
            call("kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"]
        )
        call("kv/compaction", {"revision": revision, "physical": True})
        return revision

    def stop(self) -> None:
        _stop(self.process)
        self.process = None


class ControlPlane:
    """kube-apiserver (and optionally kube-controller-manager) on loopback, with users from a
    static token file, RBAC, and its own etcd unless one is given."""

    def __init__(
        self,
        bin_dir: str | Path,
        users: Mapping[str, User] | None = None,
        *,
        workdir: str | Path | None = None,
        etcd: Etcd | None = None,
        controller_manager: bool = False,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.bin_dir = Path(bin_dir)
        missing = binaries_missing(self.bin_dir)
        if missing:
            raise ControlPlaneError(
                f"{', '.join(missing)} not found in {self.bin_dir}: build them with "
                "`make control-plane` (needs Go)"
            )
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="precedent-control-plane-")
            workdir = self._tmp.name
        self.workdir = Path(workdir)
        self.tokens: dict[str, User] = {f"{uuid.uuid4().hex}": User(ADMIN, ("system:masters",))}
        for token, user in (users or {}).items():
            self.tokens[token] = user
        self._own_etcd = etcd is None
        self.etcd = etcd or Etcd(self.bin_dir, self.workdir / "etcd")
        self.prefix = f"/registry-{uuid.uuid4().hex[:12]}"
        self.with_controller_manager = controller_manager
        self.extra_args = list(extra_args)
        self.port = 0
        self.apiserver: subprocess.Popen[bytes] | None = None
        self.controller_manager: subprocess.Popen[bytes] | None = None
        self.ca_file = self.workdir / "pki" / "apiserver.crt"
        self.admin_token = next(iter(self.tokens))

    # --- addresses and identities ---------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubectl(self) -> Path:
        """The kubectl of the same release."""
        return self.bin_dir / "kubectl"

    def token_for(self, user: str) -> str:
        """The token of ``user`` in the token file; KeyError if the file has none."""
        for token, info in self.tokens.items():
            if info.name == user:
                return token
        raise KeyError(f"no token for user {user!r} in the token file")

    def kubeconfig(
        self, *, namespace: str = "default", user: str | None = None, token: str | None = None
    ) -> dict[str, Any]:
        """A kubeconfig with one context, as ``user`` (the admin by default) or ``token``."""
        value = token if token is not None else self.token_for(user or ADMIN)
        name = "precedent-control-plane"
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(
                            self.ca_file.read_bytes()
                        ).decode(),
                    },
                }
            ],
            "users": [{"name": name, "user": {"token": value}}],
            "contexts": [
                {"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
            ],
            "current-context": name,
            "preferences": {},
        }

    def write_kubeconfig(
        self,
        path: str | Path,
        *,
        namespace: str = "default",
        user: str | None = None,
        token: str | None = None,
    ) -> Path:
        """Write :meth:`kubeconfig` to ``path`` (parents created) and return the path."""
        return save_kubeconfig(path, self.kubeconfig(namespace=namespace, user=user, token=token))

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts this API server."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    # --- life cycle -------------------------------------------------------------------------

    def _prepare(self) -> None:
        pki = self.workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        if not self.ca_file.exists():
            files = generate_self_signed(pki, "127.0.0.1")
            shutil.move(files.cert, self.ca_file)
            shutil.move(files.key, pki / "apiserver.key")
        if not (pki / "client-ca.crt").exists():
            # The CA of client certificates (--client-ca-file), which the controller manager
            # also signs approved CertificateSigningRequests with: a user can be given a real
            # certificate identity (CN the name, O the groups) through the API, as on any cluster.
            openssl = shutil.which("openssl")
            if openssl is None:
                raise ControlPlaneError("the openssl command is needed to make the client CA")
            subprocess.run(
                [
                    openssl,
                    "req",
                    "-x509",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=precedent-client-ca",
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
                    "-keyout",
                    str(pki / "client-ca.key"),
                    "-out",
                    str(pki / "client-ca.crt"),
                ],
                check=True,
                capture_output=True,
            )
        key = pki / "sa.key"
        if not key.exists():
            openssl = shutil.which("openssl")
            if openssl is None:
                raise ControlPlaneError("the openssl command is needed to make the signing key")
            subprocess.run(
                [openssl, "genrsa", "-out", str(key), "2048"], check=True, capture_output=True
            )
            subprocess.run(
                [openssl, "rsa", "-in", str(key), "-pubout", "-out", str(pki / "sa.pub")],
                check=True,
                capture_output=True,
            )
        lines = [
            f'{token},{user.name},{user.name},"{",".join(user.groups)}"\n'
            for token, user in self.tokens.items()
        ]
        (pki / "tokens.csv").write_text("".join(lines), encoding="utf-8")
        self.write_kubeconfig(self.workdir / "admin.kubeconfig")

    def start(self, timeout: float = 120.0) -> ControlPlane:
        """Start etcd (unless shared), kube-apiserver and, if asked, the controller manager;
        return once ``/readyz`` answers ok."""
        try:
            if self._own_etcd:
                self.etcd.start()
            if not self.port:
                self.port = free_port()
            self._prepare()
            self.start_apiserver(timeout)
            if self.with_controller_manager:
                self.start_controller_manager()
        except BaseException:
            self.stop()
            raise
        return self

    def start_apiserver(self, timeout: float = 120.0) -> None:
        """(Re)start kube-apiserver on the same port and data; wait for ``/readyz``."""
        pki = self.workdir / "pki"
        if not self.port:
            self.port = free_port()
        log = self.workdir / "kube-apiserver.log"
        # envtest's flags (controller-runtime, pkg/internal/testing/controlplane), with a
        # static token file for the users and RBAC for authorization.
        args = [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers={self.etcd.url}",
            f"--etcd-prefix={self.prefix}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={self.ca_file}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            "--disable-admission-plugins=ServiceAccount",
            "--authorization-mode=RBAC",
            f"--token-auth-file={pki / 'tokens.csv'}",
            f"--client-ca-file={pki / 'client-ca.crt'}",
            f"--service-account-issuer={self.url}/",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--anonymous-auth=false",
            *self.extra_args,
        ]
        self.apiserver = _spawn(args, log)
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until ``/readyz`` answers ``ok`` as the admin; raise with the log's tail if not."""
        log = self.workdir / "kube-apiserver.log"
        deadline = time.monotonic() + timeout
        context = self.ssl_context()
        last = ""
        while time.monotonic() < deadline:
            if self.apiserver is None or self.apiserver.poll() is not None:
                code = None if self.apiserver is None else self.apiserver.returncode
                raise ControlPlaneError(f"kube-apiserver exited ({code}):\n{_tail(log)}")
            request = urllib.request.Request(
                f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.admin_token}"}
            )
            try:
                with urllib.request.urlopen(request, timeout=5, context=context) as answer:
                    if answer.read() == b"ok":
                        return
            except urllib.error.HTTPError as error:
                last = error.read().decode(errors="replace")[-500:]
            except OSError as error:
                last = str(error)
            time.sleep(0.2)
        raise ControlPlaneError(f"kube-apiserver not ready within {timeout:.0f} s: {last}")

    def stop_apiserver(self) -> None:
        _stop(self.apiserver)
        self.apiserver = None

    def start_controller_manager(self, timeout: float = 60.0) -> None:
        """kube-controller-manager with the controllers a test cluster without nodes needs:
        the garbage collector, namespace deletion, service accounts, the signer of client
        certificates, the aggregation of the built-in roles (``edit`` and ``admin`` take
        their rules from it) and Deployments (their ReplicaSets; no pods are made), each
        under its own kube-system service account as kubeadm runs them; returns once its
        ``/healthz`` answers ok."""
        pki = self.workdir / "pki"
        log = self.workdir / "kube-controller-manager.log"
        port = free_port()
        self.controller_manager = _spawn(
            [
                str(self.bin_dir / "kube-controller-manager"),
                f"--kubeconfig={self.workdir / 'admin.kubeconfig'}",
                "--controllers=garbage-collector-controller,namespace-controller,"
                "serviceaccount-controller,certificatesigningrequest-signing-controller,"
                "clusterrole-aggregation-controller,deployment-controller",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--cluster-signing-kube-apiserver-client-cert-file={pki / 'client-ca.crt'}",
                f"--cluster-signing-kube-apiserver-client-key-file={pki / 'client-ca.key'}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={pki / 'kcm'}",
            ],
            log,
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # its own self-signed serving certificate
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.controller_manager.poll() is not None:
                raise ControlPlaneError(
                    f"kube-controller-manager exited ({self.controller_manager.returncode}):\n"
                    f"{_tail(log)}"
                )
            try:
                url = f"https://127.0.0.1:{port}/healthz"
                with urllib.request.urlopen(url, timeout=2, context=insecure) as answer:
                    if answer.read() == b"ok":
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise ControlPlaneError(f"kube-controller-manager not healthy within {timeout:.0f} s")

    def stop(self) -> None:
        """Stop every process started here (etcd only if it is this control plane's own)."""
        _stop(self.controller_manager)
        self.controller_manager = None
        self.stop_apiserver()
        if self._own_etcd:
            self.etcd.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


OPERATOR_SA = "system:serviceaccount:precedent-system:precedent"
GITOPS_SA = "system:serviceaccount:argocd:argocd-application-controller"
IDENTITIES: dict[str, User] = {
    "requester": User("rita", ("sre",)),
    "another-requester": User("ryan", ("sre",)),
    "approver": User("alice", ("sre",)),
    "admin-approver": User("adam", ("platform-admins",)),
    "executor": User("erin", ("automation",)),
    "viewer": User("vic", ("viewers",)),
    "gitops": User(GITOPS_SA, ("system:serviceaccounts", "system:serviceaccounts:argocd")),
    "operator": User(
        OPERATOR_SA, ("system:serviceaccounts", "system:serviceaccounts:precedent-system")
    ),
}
"""The identities ``make cluster`` writes a kubeconfig for (role → user and groups). None has
any permission until a binding grants it (docs/real-cluster.md binds the shipped roles)."""


def _say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


@click.command()
@click.argument("bin_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--crds", type=click.Path(file_okay=False, path_type=Path), help="CRDs to install.")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".precedent/cluster"),
    show_default=True,
    help="Where the kubeconfigs, logs, keys and etcd's data go (emptied at start).",
)
def main(bin_dir: Path, crds: Path | None, directory: Path) -> None:
    """Run a real control plane (etcd, kube-apiserver, kube-controller-manager) on loopback
    until Ctrl-C; write a kubeconfig per identity."""
    if directory.exists():
        shutil.rmtree(directory)
    users = {uuid.uuid4().hex: user for user in IDENTITIES.values()}
    try:
        plane = ControlPlane(
            bin_dir, users, workdir=directory.resolve(), controller_manager=True
        ).start()
    except ControlPlaneError as error:
        raise click.ClickException(str(error)) from None
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        if crds is not None:
            kubectl = [str(plane.kubectl), "--kubeconfig", str(directory / "admin.kubeconfig")]
            for step in (
                ["apply", "-f", str(crds)],
                ["wait", "--for=condition=Established", "-f", str(crds), "--timeout=60s"],
            ):
                done = subprocess.run([*kubectl, *step], capture_output=True, text=True)
                if done.returncode != 0:
                    raise click.ClickException(f"kubectl {' '.join(step)}: {done.stderr.strip()}")
        out = sys.stdout
        _say(out, f"kube-apiserver {plane.url} (etcd {plane.etcd.url}); logs in {directory}")
        _say(out, f"export KUBECONFIG={(directory / 'admin.kubeconfig').resolve()}   # admin")
        width = max(len(u.name) for u in IDENTITIES.values())
        for role, user in IDENTITIES.items():
            path = plane.write_kubeconfig(directory / "users" / role / "kubeconfig", user=user.name)
            _say(out, f"  {role:<18} {user.name:<{width}}  {path.resolve()}")
        _say(out, f"kubectl of the same release: {plane.kubectl}")
        _say(out, "Ctrl-C stops it.")
        stop.wait()
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
