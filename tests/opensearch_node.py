"""A real OpenSearch for the fleet memory's tests: nodes on loopback, as tests/backends.py does
for the control plane.

The distribution is the one ``tools/opensearch/install.sh`` installs (``make opensearch``:
OpenSearch from Maven Central with the k-NN plugin, digests pinned in the script);
``PRECEDENT_OPENSEARCH_HOME`` points at another installation instead (it needs the k-NN plugin
for the shipped mapping). Each node runs in its own temporary directory (configuration, data,
logs, the JVM's temporary files), in its own process group, with a small heap; stopping it kills
the group and removes the directory.

Fixtures: :func:`opensearch` (one single-node cluster for the whole session) and
:func:`opensearch_pair` (two nodes, for the tests that kill or pause one). Where Java or the
distribution is missing they skip with one line saying what to run. The nodes run with the
security plugin disabled; :class:`Security` turns it on for one (TLS, internal users, roles).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from precedent.adapters.memory_opensearch import MANIFEST_DIR, load_index_manifests

REPO = Path(__file__).resolve().parent.parent
INSTALL = REPO / "tools" / "opensearch" / "install.sh"
HOME_ENV = "PRECEDENT_OPENSEARCH_HOME"
JAVA_OPTS = "-Xms512m -Xmx512m -XX:-UsePerfData"
"""Each node's heap (enough for the tests' few hundred documents, small beside the suites), and
no hsperfdata file in /tmp (a killed JVM would leave it behind)."""
UNPRIVILEGED = "nobody"
"""The account a node runs as when the tests run as root (OpenSearch refuses root)."""
START_TIMEOUT = 180.0
"""How long a node may take to start (a busy 2-core machine: ~20-40 s)."""


def java_home() -> Path | None:
    """The Java the distribution's scripts should use: ``$OPENSEARCH_JAVA_HOME``,
    ``$JAVA_HOME``, or the one ``java`` on PATH belongs to."""
    for variable in ("OPENSEARCH_JAVA_HOME", "JAVA_HOME"):
        given = os.environ.get(variable)
        if given:
            return Path(given)
    found = shutil.which("java")
    return Path(found).resolve().parents[1] if found else None


def opensearch_home() -> Path | None:
    """The installed distribution: ``$PRECEDENT_OPENSEARCH_HOME``, or the install cache for the
    pinned versions (None when not installed)."""
    given = os.environ.get(HOME_ENV)
    if given:
        return Path(given)
    found = subprocess.run(
        ["bash", str(INSTALL), "print-dir"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not found or not (Path(found).parent / ".complete").exists():
        return None
    return Path(found)


def opensearch_unavailable() -> str | None:
    """Why the real OpenSearch tests cannot run here, or None."""
    if java_home() is None:
        return (
            "the real OpenSearch tests need Java (install a JDK 11+, e.g. Debian's "
            "openjdk-17-jre-headless, then `make opensearch`)"
        )
    home = opensearch_home()
    if home is None:
        return "OpenSearch is not installed: run `make opensearch`"
    if not (home / "bin" / "opensearch").exists():
        return f"no bin/opensearch under {home} ({HOME_ENV}?): run `make opensearch`"
    return None


def free_port() -> int:
    """A TCP port on loopback nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class OpenSearchError(RuntimeError):
    """A node did not start, or its cluster did not become healthy."""


class OpenSearchNode:
    """One OpenSearch process on loopback, in ``workdir``."""

    def __init__(
        self,
        home: Path,
        workdir: Path,
        *,
        name: str,
        cluster: str,
        http_port: int | None = None,
        transport_port: int | None = None,
        seeds: Sequence[int] = (),
        managers: Sequence[str] = (),
        roles: Sequence[str] | None = None,
        security: Security | None = None,
    ) -> None:
        self.home = home
        self.workdir = workdir
        self.name = name
        self.cluster = cluster
        self.http_port = http_port or free_port()
        self.transport_port = transport_port or free_port()
        self.seeds = list(seeds)
        """Transport ports of the other nodes (none: a single-node cluster)."""
        self.managers = list(managers)
        """Names of the cluster-manager-eligible nodes that bootstrap the cluster."""
        self.roles = roles
        self.security = security
        """TLS and users (the security plugin on); None: the plugin disabled, plain HTTP."""
        self.process: subprocess.Popen[bytes] | None = None
        self.started_seconds: float | None = None
        """From spawning the process to a healthy cluster, as measured by :meth:`wait_ready`."""
        self._spawned = 0.0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https://localhost:PORT`` with the security plugin: the
        name its certificate is for)."""
        if self.security is not None:
            return f"https://localhost:{self.http_port}"
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def log(self) -> Path:
        """The node's main log."""
        return self.workdir / "logs" / f"{self.cluster}.log"

    def _configure(self) -> Path:
        config = self.workdir / "config"
        logs = self.workdir / "logs"
        for directory in (config, logs, self.workdir / "data", self.workdir / "tmp"):
            directory.mkdir(parents=True, exist_ok=True)
        source = self.home / "config"
        shutil.copy(source / "log4j2.properties", config)
        if (source / "jvm.options.d").is_dir():
            shutil.copytree(source / "jvm.options.d", config / "jvm.options.d", dirs_exist_ok=True)
        # The shipped JVM options, with every relative path (resolved against the installation,
        # shared by the nodes) moved into this node's directory; the heap comes from JAVA_OPTS.
        options = []
        for line in (source / "jvm.options").read_text().splitlines():
            if line.strip() in ("-Xms1g", "-Xmx1g"):
                continue
            line = line.replace("file=logs/gc.log", f"file={logs}/gc.log")
            line = line.replace("HeapDumpPath=data", f"HeapDumpPath={self.workdir}")
            line = line.replace("ErrorFile=logs/", f"ErrorFile={logs}/")
            options.append(line)
        (config / "jvm.options").write_text("\n".join(options) + "\n")
        settings: dict[str, Any] = {
            "cluster.name": self.cluster,
            "node.name": self.name,
            "network.host": "127.0.0.1",
            "http.port": self.http_port,
            "transport.port": self.transport_port,
            "path.data": str(self.workdir / "data"),
            "path.logs": str(logs),
            # A full test disk must not turn the index read-only under the tests.
            "cluster.routing.allocation.disk.threshold_enabled": False,
        }
        if self.seeds:
            settings["discovery.seed_hosts"] = [f"127.0.0.1:{p}" for p in self.seeds]
            if self.roles is None or "cluster_manager" in self.roles:
                settings["cluster.initial_cluster_manager_nodes"] = self.managers
        else:
            settings["discovery.type"] = "single-node"
        if self.roles is not None:
            settings["node.roles"] = list(self.roles)
        if self.security is not None:
            settings.update(self.security.configure(self.home, config, self.name))
        elif (self.home / "plugins" / "opensearch-security").is_dir():
            settings["plugins.security.disabled"] = True
        lines = [f"{key}: {_yaml(value)}" for key, value in settings.items()]
        (config / "opensearch.yml").write_text("\n".join(lines) + "\n")
        return config

    def start(self) -> OpenSearchNode:
        """Spawn the node (returns at once; :meth:`wait_ready` waits for it)."""
        config = self._configure()
        java = java_home()
        env = {
            **os.environ,
            "OPENSEARCH_PATH_CONF": str(config),
            "OPENSEARCH_TMPDIR": str(self.workdir / "tmp"),
            "OPENSEARCH_JAVA_OPTS": JAVA_OPTS,
        }
        if java is not None and not env.get("JAVA_HOME"):
            env["OPENSEARCH_JAVA_HOME"] = str(java)
        env.pop("JAVA_TOOL_OPTIONS", None)
        identity: dict[str, Any] = {}
        if os.geteuid() == 0:
            # OpenSearch refuses to run as root: the node runs as nobody, owning its directory
            # (the installation only needs to be readable).
            account = pwd.getpwnam(UNPRIVILEGED)
            for path in (self.workdir, *self.workdir.rglob("*")):
                os.chown(path, account.pw_uid, account.pw_gid)
            identity = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
            env["HOME"] = str(self.workdir)
        self._spawned = time.monotonic()
        with (self.workdir / "stdout.log").open("ab") as out:
            self.process = subprocess.Popen(
                [str(self.home / "bin" / "opensearch")],
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as one
                **identity,
            )
        return self

    def health(self, **params: str) -> dict[str, Any] | None:
        """``GET /_cluster/health`` (None when the node does not answer)."""
        options: dict[str, Any] = {}
        if self.security is not None:
            options = {"auth": self.security.admin, "verify": self.security.context()}
        try:
            answer = httpx.get(
                f"{self.url}/_cluster/health", params=params, timeout=10.0, **options
            )
        except httpx.HTTPError:
            return None
        return dict(answer.json()) if answer.status_code in (200, 408) else None

    def wait_ready(self, nodes: int = 1, timeout: float = START_TIMEOUT) -> OpenSearchNode:
        """Wait until the cluster has ``nodes`` nodes and is at least yellow (a single node
        cannot hold replicas), or raise with the end of the node's log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise OpenSearchError(f"{self.name} exited ({code}):\n{self.log_tail()}")
            health = self.health(wait_for_status="yellow", wait_for_nodes=str(nodes), timeout="1s")
            if (
                health is not None
                and not health.get("timed_out")
                and health.get("status") in ("yellow", "green")
            ):
                self.started_seconds = time.monotonic() - self._spawned
                return self
            time.sleep(0.5)
        raise OpenSearchError(
            f"{self.name} did not report a yellow cluster of {nodes} node(s) within "
            f"{timeout:.0f} s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the node's log (or of its standard output before the log exists)."""
        for path in (self.log, self.workdir / "stdout.log"):
            if path.exists() and path.stat().st_size:
                return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return "(no log)"

    def rss_bytes(self) -> int | None:
        """The node's resident memory (the JVM's, from /proc)."""
        if self.process is None:
            return None
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return None

    def _signal(self, number: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, number)

    def pause(self) -> None:
        """SIGSTOP the node: its sockets stay open, nothing answers."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT a paused node."""
        self._signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL the node (its data stays, for a restart)."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """Stop the node (SIGTERM, SIGKILL after 30 s); the directory stays."""
        if self.process is None:
            return
        self._signal(signal.SIGCONT)  # a paused JVM cannot act on SIGTERM
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        # Anything the group still holds (the JVM's children, if any).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)


@dataclass(frozen=True)
class InternalUser:
    """A user of the security plugin's internal user database."""

    name: str
    password: str
    roles: tuple[str, ...]
    """The security roles the user has (``all_access``, or one of :class:`Security`'s)."""


class Security:
    """The security plugin turned on for a test node: TLS on HTTP and transport with a CA and a
    node certificate made here, internal users (bcrypt hashes made by the plugin's own
    ``tools/hash.sh``) and roles, loaded into the security index when the node first starts
    (``allow_default_init_securityindex``). Files go to ``directory``."""

    def __init__(
        self,
        directory: Path,
        users: Sequence[InternalUser] = (),
        roles: dict[str, Any] | None = None,
    ) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.users = list(users)
        self.roles = dict(roles or {})
        self.admin = ("admin", "Adm1n-" + secrets.token_urlsafe(12))
        """A user with ``all_access`` (the node's health checks, the tests' own setup)."""
        self._ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "precedent-test-ca")])
        now = dt.datetime.now(dt.UTC)
        self._ca_name = name
        self._ca_cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca = directory / "root-ca.pem"
        """The CA (PEM) the node's certificate is signed by: what a client trusts."""
        self.ca.write_bytes(self._ca_cert.public_bytes(serialization.Encoding.PEM))

    def context(self) -> ssl.SSLContext:
        """A client's TLS context that trusts the node's certificate."""
        return ssl.create_default_context(cafile=str(self.ca))

    def _node_certificate(self, node: str) -> tuple[bytes, bytes]:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        now = dt.datetime.now(dt.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, node)]))
            .issuer_name(self._ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                # Transport TLS: each node is the other's client as well as its server.
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .sign(self._ca_key, hashes.SHA256())
        )
        pem_key = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,  # the plugin reads PKCS #8 keys only
            serialization.NoEncryption(),
        )
        return certificate.public_bytes(serialization.Encoding.PEM), pem_key

    def _hash(self, home: Path, password: str) -> str:
        tool = home / "plugins" / "opensearch-security" / "tools" / "hash.sh"
        java = java_home()
        env = {**os.environ}
        if java is not None and not env.get("JAVA_HOME"):
            env["OPENSEARCH_JAVA_HOME"] = str(java)
        done = subprocess.run(
            ["bash", str(tool), "-p", password],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("$2")]
        if done.returncode != 0 or not lines:
            raise OpenSearchError(f"{tool} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        return lines[-1].strip()

    def configure(self, home: Path, config: Path, node: str) -> dict[str, Any]:
        """Write the certificates and the security configuration into a node's ``config``;
        return the settings that turn the plugin on there."""
        shipped = home / "config" / "opensearch-security"
        if not shipped.is_dir():
            raise OpenSearchError(f"no security plugin configuration in {shipped}")
        certificate, key = self._node_certificate(node)
        (config / "node.pem").write_bytes(certificate)
        (config / "node-key.pem").write_bytes(key)
        shutil.copy(self.ca, config / "root-ca.pem")
        target = config / "opensearch-security"
        shutil.copytree(shipped, target, dirs_exist_ok=True)
        users: dict[str, Any] = {"_meta": {"type": "internalusers", "config_version": 2}}
        admin, password = self.admin
        users[admin] = {"hash": self._hash(home, password), "backend_roles": ["admin"]}
        for user in self.users:
            users[user.name] = {
                "hash": self._hash(home, user.password),
                "opendistro_security_roles": list(user.roles),
            }
        (target / "internal_users.yml").write_text(yaml.safe_dump(users))
        roles = yaml.safe_load((target / "roles.yml").read_text()) or {}
        roles.update(self.roles)
        (target / "roles.yml").write_text(yaml.safe_dump(roles))
        return {
            "plugins.security.ssl.transport.pemcert_filepath": "node.pem",
            "plugins.security.ssl.transport.pemkey_filepath": "node-key.pem",
            "plugins.security.ssl.transport.pemtrustedcas_filepath": "root-ca.pem",
            "plugins.security.ssl.transport.enforce_hostname_verification": False,
            "plugins.security.ssl.http.enabled": True,
            "plugins.security.ssl.http.pemcert_filepath": "node.pem",
            "plugins.security.ssl.http.pemkey_filepath": "node-key.pem",
            "plugins.security.ssl.http.pemtrustedcas_filepath": "root-ca.pem",
            "plugins.security.allow_default_init_securityindex": True,
            "plugins.security.nodes_dn": [f"CN={node}"],
        }


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    if isinstance(value, int):
        return str(value)
    return f'"{value}"'


def native_knn(home: Path) -> bool:
    """Whether the k-NN plugin has its faiss library (the full distribution's has; the Maven
    Central zip ``make opensearch`` installs has none)."""
    return any((home / "plugins" / "opensearch-knn").rglob("libopensearchknn_faiss*.so"))


def manifests_for(home: Path, directory: Path) -> Path:
    """The index manifests the tests install: the shipped ones (manifests/opensearch/) where the
    k-NN plugin has its native faiss library; otherwise the same mapping with the ``embedding``
    field's method on k-NN's ``lucene`` engine (same HNSW parameters and inner product), since
    without the library a node exits on the first refresh of a faiss field (``fatal error …
    UnsatisfiedLinkError: no opensearchknn_faiss_avx2``)."""
    if native_knn(home):
        return MANIFEST_DIR
    directory.mkdir(parents=True, exist_ok=True)
    body, template = load_index_manifests(MANIFEST_DIR)
    for mappings in (body["mappings"], template["template"]["mappings"]):
        mappings["properties"]["embedding"]["method"]["engine"] = "lucene"
    (directory / "index.json").write_text(json.dumps(body, indent=2))
    (directory / "index-template.json").write_text(json.dumps(template, indent=2))
    return directory


class OpenSearchCluster:
    """Nodes started together in one temporary directory, removed when stopped."""

    def __init__(self, nodes: list[OpenSearchNode], root: Path) -> None:
        self.nodes = nodes
        self.root = root
        self.manifests = manifests_for(nodes[0].home, root / "manifests")
        """The index manifests to install on it (``precedent memory init --manifests``)."""

    @property
    def url(self) -> str:
        """The first node's URL (the one the tests' clients talk to)."""
        return self.nodes[0].url

    def client(self) -> httpx.Client:
        """A synchronous HTTP client on the first node, for the tests' own checks (as the
        security plugin's admin where it is on)."""
        security = self.nodes[0].security
        if security is not None:
            return httpx.Client(
                base_url=self.url, timeout=30, auth=security.admin, verify=security.context()
            )
        return httpx.Client(base_url=self.url, timeout=30)

    def stop(self) -> None:
        """Stop every node and remove the directory."""
        try:
            for node in self.nodes:
                node.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(
    count: int,
    *,
    roles: Sequence[Sequence[str] | None] = (),
    security: Security | None = None,
) -> OpenSearchCluster:
    """``count`` nodes (1: discovery.type=single-node; more: the first is the only
    cluster-manager-eligible node unless ``roles`` says otherwise), healthy; raise otherwise.
    With ``security``, the security plugin is on (TLS, its users)."""
    reason = opensearch_unavailable()
    if reason is not None:
        raise OpenSearchError(reason)
    home = opensearch_home()
    assert home is not None
    root = Path(tempfile.mkdtemp(prefix="precedent-opensearch-"))
    root.chmod(0o755)  # a node may run as another account (see OpenSearchNode.start)
    name = f"precedent-test-{os.getpid()}-{count}"
    transport = [free_port() for _ in range(count)]
    names = [f"node-{i}" for i in range(count)]
    nodes = []
    for i in range(count):
        node_roles = roles[i] if i < len(roles) else None
        nodes.append(
            OpenSearchNode(
                home,
                root / names[i],
                name=names[i],
                cluster=name,
                transport_port=transport[i],
                seeds=[p for j, p in enumerate(transport) if j != i] if count > 1 else (),
                managers=[names[0]] if count > 1 else (),
                roles=node_roles,
                security=security,
            )
        )
    cluster = OpenSearchCluster(nodes, root)
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_ready(nodes=count)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def opensearch() -> Iterator[OpenSearchCluster]:
    """One single-node OpenSearch for the session (each test uses its own index)."""
    reason = opensearch_unavailable()
    if reason is not None:
        pytest.skip(reason)
    try:
        cluster = start_cluster(1)
    except OpenSearchError as error:
        pytest.fail(str(error))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def opensearch_pair() -> Iterator[OpenSearchCluster]:
    """Two nodes: node-0 the cluster manager (and data), node-1 data only, so that killing
    node-1 leaves a cluster that still has its manager."""
    reason = opensearch_unavailable()
    if reason is not None:
        pytest.skip(reason)
    try:
        cluster = start_cluster(2, roles=[None, ["data", "ingest"]])
    except OpenSearchError as error:
        pytest.fail(str(error))
    yield cluster
    cluster.stop()
