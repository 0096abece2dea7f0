"""``precedent demo``: the whole product on one machine, no cluster needed.

Starts the sandbox API server (the ``precedent-sandbox`` package, as a child process) with the
CRDs found as :mod:`precedent.sandbox_process` describes, applies the bundled incidents and
playbooks, runs the real operator (``kopf run -m precedent.handlers``) as a child process,
applies the example requests, waits until every one is Ready, and shows the answers with the
commands people use: ``kubectl get rr -A``, ``kubectl precedent explain``, an outcome reported
with ``kubectl patch`` and an approval with ``kubectl precedent approve``. Every ``$ kubectl``
line printed is a command the demo ran, with its output (with no ``kubectl`` on PATH: the
command alone, and the demo does the same through the API). Then it stops everything, or with
``--keep`` leaves the sandbox and the operator running until Ctrl-C. Ctrl-C (or SIGTERM: a
``kill``, ``timeout`` or a cancelled job) at any point stops the operator and the sandbox
before returning.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import httpx
import yaml

from precedent.adapters.loader import iter_documents
from precedent.output import format_table
from precedent.sandbox_process import CRDS_ENV, SandboxProcess, find_crds_dir

__all__ = ["cell_text", "demo_command", "object_path", "table_rows"]

TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
PLURALS = {
    "Incident": "incidents",
    "Playbook": "playbooks",
    "RemediationRequest": "remediationrequests",
}

# The built-in kinds of the demo shop (data/shop): kind → (API prefix, plural, namespaced).
BUILTIN_PATHS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Service": ("/api/v1", "services", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "Ingress": ("/apis/networking.k8s.io/v1", "ingresses", True),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies", True),
    "HorizontalPodAutoscaler": ("/apis/autoscaling/v2", "horizontalpodautoscalers", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
}

SHOP_DIR = "shop"
"""The demo shop's manifests under the data directory (issue 15: blast radius in answers)."""


def object_path(kind: str, namespace: str | None, name: str | None = None) -> str:
    """The REST path of a Precedent object or a demo-shop kind (collection when ``name`` is
    None)."""
    ns = f"/namespaces/{namespace}" if namespace else ""
    if kind in BUILTIN_PATHS:
        base, plural, _ = BUILTIN_PATHS[kind]
    else:
        base, plural = "/apis/precedent.dev/v1alpha1", PLURALS[kind]
    path = f"{base}{ns}/{plural}"
    return f"{path}/{name}" if name else path


def _namespaced(kind: str) -> bool:
    if kind in BUILTIN_PATHS:
        return BUILTIN_PATHS[kind][2]
    return kind == "RemediationRequest"


def apply(client: httpx.Client, paths: Sequence[Path]) -> list[tuple[str, str | None, str]]:
    """Create every document under ``paths``; returns (kind, namespace, name) of each."""
    created = []
    for doc in iter_documents(paths):
        namespace = (doc.namespace or "default") if _namespaced(doc.kind) else None
        if doc.kind not in PLURALS and doc.kind not in BUILTIN_PATHS:
            raise click.ClickException(f"{doc.where}: kind {doc.kind} is not one the demo applies")
        response = client.post(object_path(doc.kind, namespace), json=doc.body)
        if response.status_code == 409:  # already there from an earlier apply
            continue
        if response.status_code >= 400:
            message = response.json().get("message", response.text)
            raise click.ClickException(f"{doc.where}: {message}")
        created.append((doc.kind, namespace, doc.name))
    return created


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {
        c.get("type", ""): c.get("status", "")
        for c in (obj.get("status") or {}).get("conditions") or []
    }


def wait_until_settled(client: httpx.Client, names: set[str], timeout: float) -> dict[str, str]:
    """Poll until every request is Ready or Stalled; returns name → final condition."""
    deadline = time.monotonic() + timeout
    settled: dict[str, str] = {}
    while time.monotonic() < deadline:
        items = client.get(object_path("RemediationRequest", None)).json()["items"]
        for item in items:
            name = item["metadata"]["name"]
            conditions = _conditions(item)
            if conditions.get("Ready") == "True":
                settled[name] = "Ready"
            elif conditions.get("Stalled") == "True":
                settled[name] = "Stalled"
        if names <= settled.keys():
            return settled
        time.sleep(0.2)
    missing = ", ".join(sorted(names - settled.keys()))
    raise click.ClickException(f"not settled after {timeout:.0f} s: {missing}")


def cell_text(value: Any) -> str:
    """A table cell as kubectl prints it (Go's formatting of the decoded JSON value)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        # JSON numbers decode as float64 in Go: whole numbers print without a decimal point.
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{cell_text(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(cell_text(v) for v in value) + "]"
    return str(value)


def table_rows(table: dict[str, Any], *, namespace_column: bool = False) -> str:
    """Render a meta.k8s.io Table as kubectl does (priority-0 columns)."""
    columns = [
        (i, c["name"].upper())
        for i, c in enumerate(table["columnDefinitions"])
        if c.get("priority", 0) == 0
    ]
    headers = (["NAMESPACE"] if namespace_column else []) + [name for _, name in columns]
    rows = []
    for row in table["rows"]:
        cells = [
            ("<none>" if row["cells"][i] in (None, "") else cell_text(row["cells"][i]))
            for i, _ in columns
        ]
        if namespace_column:
            cells.insert(0, row.get("object", {}).get("metadata", {}).get("namespace", ""))
        rows.append(cells)
    return format_table(headers, rows)


@click.command("demo")
@click.option(
    "--data",
    "data_dir",
    default="data",
    show_default=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Bundled data directory.",
)
@click.option(
    "--crds",
    "crds_dir",
    default=None,
    envvar=CRDS_ENV,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help=f"CRD directory. Default: ${CRDS_ENV}, else ./crds if present, else the copy "
    "installed with Precedent.",
)
@click.option(
    "--show",
    default="restart-shop-payment-api",
    show_default=True,
    help="Request whose full status is printed.",
)
@click.option(
    "--timeout",
    default=120.0,
    show_default=True,
    help="Seconds to wait for every request to settle.",
)
@click.option(
    "--kubeconfig",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help=(
        "Run against this cluster (its current context, a cluster administrator) instead of "
        "the sandbox: e.g. `make cluster`'s real control plane, kind or a test cluster. The "
        "CRDs are created if missing; what the demo creates stays."
    ),
)
@click.option(
    "--keep",
    is_flag=True,
    help=(
        "Leave the sandbox and the operator running (until Ctrl-C or SIGTERM), to try kubectl "
        "on them."
    ),
)
def demo_command(
    data_dir: Path,
    crds_dir: Path | None,
    show: str,
    timeout: float,
    kubeconfig: Path | None,
    keep: bool,
) -> None:
    """Run the sandbox (or use a cluster), the real operator and the bundled data; print the
    answers."""
    found = find_crds_dir(crds_dir)
    if found is None:
        raise click.ClickException(f"no CRD directory: pass --crds DIR or set ${CRDS_ENV}")
    # SIGTERM stops the demo as Ctrl-C does, through the same clean-up: the sandbox and the
    # operator are its children, and would outlive it otherwise.
    signal.signal(signal.SIGTERM, _interrupt)
    with (
        tempfile.TemporaryDirectory(prefix="precedent-demo-") as tmp,
        _api_server(found, Path(tmp), kubeconfig) as sandbox,
    ):
        shell = Kubectl(sandbox.kubeconfig)
        with sandbox.client() as client:
            if kubeconfig is not None:
                install_crds(client, found, timeout)
            history = apply(client, [data_dir / "incidents", data_dir / "playbooks"])
            click.echo(f"applied {len(history)} incidents and playbooks")
            if (data_dir / SHOP_DIR).is_dir():
                shop = apply(client, [data_dir / SHOP_DIR])
                click.echo(f"applied the demo shop (data/shop): {len(shop)} objects")
            operator = _start_operator(sandbox.kubeconfig, Path(tmp) / "operator.log")
            try:
                requests = apply(client, [data_dir / "requests"])
                click.echo(
                    f"applied {len(requests)} remediation requests; waiting for the operator…"
                )
                started = time.monotonic()
                settled = wait_until_settled(client, {n for _, _, n in requests}, timeout)
                ready = sum(1 for s in settled.values() if s == "Ready")
                click.echo(f"{ready}/{len(settled)} Ready in {time.monotonic() - started:.1f} s")
                if not shell.run("get", "rr", "-A"):
                    table = client.get(
                        object_path("RemediationRequest", None), headers={"Accept": TABLE_ACCEPT}
                    ).json()
                    click.echo(table_rows(table, namespace_column=True))
                _show_blast_radius(client, requests)
                _explain(shell, requests, show)
                # Approved first: an outcome counts only for an approved action.
                _approve_escalated(client, shell, requests, timeout)
                _report_outcome(client, shell, requests, timeout)
                if keep:
                    _keep_running(Path(sandbox.kubeconfig), show)
            finally:
                _stop(operator)
    click.echo(
        "\nstopped the operator and the sandbox"
        if kubeconfig is None
        else "\nstopped the operator; what the demo created stays in the cluster"
    )


class ClusterServer:
    """A cluster from a kubeconfig: its current context's server, CA and credentials (a
    token, or a client certificate and key; exec plugins are not read)."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        try:
            config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8")) or {}
            current = config["current-context"]
            context = _named(config, "contexts", current)["context"]
            cluster = _named(config, "clusters", context["cluster"])["cluster"]
            user = _named(config, "users", context["user"])["user"] or {}
        except (OSError, yaml.YAMLError, KeyError, TypeError) as error:
            raise click.ClickException(
                f"{kubeconfig}: not a kubeconfig with a current context ({error})"
            ) from None
        self.url = str(cluster["server"])
        self._files = tempfile.TemporaryDirectory(prefix="precedent-demo-tls-")
        files = Path(self._files.name)
        self.verify: bool | str = not cluster.get("insecure-skip-tls-verify", False)
        ca = _material(cluster, "certificate-authority", files / "ca.crt")
        if ca is not None and self.verify:
            self.verify = str(ca)
        cert = _material(user, "client-certificate", files / "client.crt")
        key = _material(user, "client-key", files / "client.key")
        self.cert = (str(cert), str(key)) if cert is not None and key is not None else None
        self.headers = {"Authorization": f"Bearer {user['token']}"} if user.get("token") else {}
        if "exec" in user or "auth-provider" in user:
            raise click.ClickException(
                f"{kubeconfig}: the user of context {current!r} gets its credentials from a "
                "plugin, which the demo does not run; use a token or a client certificate"
            )

    def client(self) -> httpx.Client:
        context = (
            ssl.create_default_context(cafile=self.verify)
            if isinstance(self.verify, str)
            else self.verify
        )
        if self.cert is not None and isinstance(context, ssl.SSLContext):
            context.load_cert_chain(*self.cert)
        return httpx.Client(base_url=self.url, timeout=30, verify=context, headers=self.headers)

    def __enter__(self) -> ClusterServer:
        click.echo(f"cluster API server (from {self.kubeconfig}): {self.url}")
        return self

    def __exit__(self, *_: object) -> None:
        self._files.cleanup()


def _named(config: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    for entry in config.get(section) or []:
        if entry.get("name") == name:
            return dict(entry)
    raise KeyError(f"{section} has no entry {name!r}")


def _material(entry: dict[str, Any], key: str, path: Path) -> Path | None:
    """A PEM given inline (``KEY-data``, base64) or as a file (``KEY``)."""
    if entry.get(f"{key}-data"):
        path.write_bytes(base64.b64decode(entry[f"{key}-data"]))
        return path
    return Path(entry[key]) if entry.get(key) else None


@contextmanager
def _api_server(crds: Path, tmp: Path, kubeconfig: Path | None) -> Iterator[Any]:
    """The sandbox as a child process, or the cluster of ``kubeconfig``."""
    if kubeconfig is not None:
        with ClusterServer(kubeconfig) as server:
            yield server
        return
    with SandboxProcess(crds, tmp) as sandbox:
        click.echo(f"sandbox API server: {sandbox.url}")
        yield _Sandbox(sandbox)


class _Sandbox:
    def __init__(self, process: SandboxProcess) -> None:
        self.process = process
        self.kubeconfig = process.kubeconfig
        self.url = process.url

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)


def install_crds(client: httpx.Client, directory: Path, timeout: float) -> None:
    """Create the CRDs of ``directory`` that the cluster lacks and wait until each is served
    (a real API server serves a new kind a moment after it reports Established)."""
    served: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            version = next(v["name"] for v in spec["versions"] if v.get("served", True))
            served.append(f"/apis/{spec['group']}/{version}/{spec['names']['plural']}")
            answer = client.post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=doc
            )
            if answer.status_code not in (201, 409):
                message = answer.json().get("message", answer.text)
                raise click.ClickException(f"{path}: {message}")
    deadline = time.monotonic() + timeout
    for resource in served:
        while client.get(resource).status_code != 200:
            if time.monotonic() > deadline:
                raise click.ClickException(f"{resource} not served within {timeout:.0f} s")
            time.sleep(0.2)


class Kubectl:
    """Runs ``kubectl`` (and its precedent plugin, from this installation) against the sandbox,
    printing ``$ kubectl ARGS`` and the real output. Without kubectl on PATH it prints the
    command alone and :meth:`run` returns False, so the caller does the same through the API."""

    def __init__(self, kubeconfig: Path) -> None:
        self.binary = shutil.which("kubectl")
        here = str(Path(sys.executable).parent)  # kubectl-precedent, installed with Precedent
        self.env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "PATH": here + os.pathsep + os.environ.get("PATH", ""),
        }

    def run(self, *args: str, check: bool = True) -> bool:
        """Run and print ``kubectl ARGS``; False (after printing the command) without kubectl."""
        click.echo(f"\n$ kubectl {shlex.join(args)}")
        if self.binary is None:
            click.echo("(kubectl is not on PATH: not run; the demo does the same through the API)")
            return False
        done = subprocess.run(
            [self.binary, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        shown = (done.stdout + done.stderr).rstrip()
        if shown:
            click.echo(shown)
        if check and done.returncode != 0:
            raise click.ClickException(f"kubectl {args[0]} failed (exit {done.returncode})")
        return True


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _keep_running(kubeconfig: Path, show: str) -> None:
    """--keep: say how to use the sandbox, then wait for Ctrl-C."""
    click.echo(
        "\nthe sandbox and the operator keep running (--keep). In another terminal:\n"
        f"  export KUBECONFIG={kubeconfig}\n"
        "  kubectl get rr -A\n"
        f"  kubectl precedent explain rr/{show}\n"
        "press Ctrl-C here to stop them."
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return


# The approved request whose run fails (outcomes count only for an approved action).
OUTCOME_REQUEST = "update-config-sql-prod"
OUTCOME_PLAYBOOK = "azure-sql-server-parameter-change"


def _playbook_counts(client: httpx.Client, name: str) -> str:
    status = client.get(object_path("Playbook", None, name)).json().get("status") or {}
    return (
        f"executions {status.get('executions', '?')}, successes {status.get('successes', '?')}, "
        f"success rate {status.get('successRate', '?')}"
    )


def _report_outcome(
    client: httpx.Client,
    shell: Kubectl,
    requests: list[tuple[str, str | None, str]],
    timeout: float,
) -> None:
    """The outcome loop: the executor of the approved request reports a failed run; counts
    move, an Incident appears."""
    target = next(((ns, n) for _, ns, n in requests if n == OUTCOME_REQUEST), None)
    if target is None:
        return
    namespace, name = target
    before = _playbook_counts(client, OUTCOME_PLAYBOOK)
    outcome = {
        "result": "failed",
        "playbook": {"id": OUTCOME_PLAYBOOK, "version": "v1.0"},
        "message": "a legacy reporting client still negotiated TLS 1.1 and lost its connection",
    }
    patch = json.dumps({"spec": {"outcome": outcome}}, separators=(",", ":"))
    ran = shell.run("patch", "rr", name, "-n", str(namespace), "--type", "merge", "-p", patch)
    if not ran:
        response = client.patch(
            object_path("RemediationRequest", namespace, name),
            json={"spec": {"outcome": outcome}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        if response.status_code >= 400:
            raise click.ClickException(f"reporting the outcome: {response.json().get('message')}")
    deadline = time.monotonic() + timeout
    handled: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = client.get(object_path("RemediationRequest", namespace, name)).json()
        handled = (obj.get("status") or {}).get("outcome") or {}
        if handled.get("incident"):
            break
        time.sleep(0.2)
    else:
        raise click.ClickException(f"the outcome of {name} was not handled in {timeout:.0f} s")
    click.echo(f"\nplaybook {OUTCOME_PLAYBOOK}: before {before}")
    click.echo(f"playbook {OUTCOME_PLAYBOOK}: after  {_playbook_counts(client, OUTCOME_PLAYBOOK)}")
    incident = client.get(object_path("Incident", None, handled["incident"])).json()
    spec = incident.get("spec") or {}
    click.echo(
        f"new Incident {handled['incident']}: {spec.get('title')} "
        f"({spec.get('severity')}, {spec.get('outcome')})"
    )


APPROVAL_REQUEST = "update-config-sql-prod"


def _approve_escalated(
    client: httpx.Client,
    shell: Kubectl,
    requests: list[tuple[str, str | None, str]],
    timeout: float,
) -> None:
    """The approval workflow: a human approves an Escalated request with the kubectl plugin."""
    target = next(((ns, n) for _, ns, n in requests if n == APPROVAL_REQUEST), None)
    if target is None:
        return
    namespace, name = target
    reason = "change window CHG-2231; the reporting clients were upgraded to TLS 1.2"
    args = ["approve", f"rr/{name}", "-n", str(namespace), "--reason", reason]
    if not shell.run("precedent", *args):
        plugin = subprocess.run(
            [sys.executable, "-c", "from precedent.plugin import main; main()", *args],
            env=shell.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if plugin.returncode != 0:
            raise click.ClickException(f"approving {name} failed: {plugin.stderr.strip()}")
    wait = ["wait", "--for=condition=Approved", f"rr/{name}", "-n", str(namespace)]
    if not shell.run(*wait, f"--timeout={timeout:.0f}s"):
        deadline = time.monotonic() + timeout
        path = object_path("RemediationRequest", namespace, name)
        while _conditions(client.get(path).json()).get("Approved") != "True":
            if time.monotonic() > deadline:
                raise click.ClickException(f"{name} was not approved in {timeout:.0f} s")
            time.sleep(0.2)
    obj = client.get(object_path("RemediationRequest", namespace, name)).json()
    approval = ((obj.get("status") or {}).get("policy") or {}).get("approval") or {}
    click.echo(
        f"\n{name}: decision {obj['status']['risk']['decision']}, approved by {approval.get('by')}"
    )


def _start_operator(kubeconfig: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PRECEDENT_HISTORY_PATH": "",
        "PRECEDENT_CATALOG": "",
        "PRECEDENT_METRICS_PORT": "0",
        # The key of the status mark, as the precedent-status-key Secret gives it in a cluster:
        # enforce mode refuses to start without one. A fresh key per demo run.
        "PRECEDENT_STATUS_KEY": os.environ.get("PRECEDENT_STATUS_KEY") or secrets.token_hex(32),
    }
    with log.open("wb") as sink:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kopf",
                "run",
                "-m",
                "precedent.handlers",
                "--all-namespaces",
                "--standalone",
            ],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _show_blast_radius(client: httpx.Client, requests: list[tuple[str, str | None, str]]) -> None:
    """Each answer's blast radius (the shop's requests have one in the graph) and, where the
    blast radius changed the decision, the policy's reason (the paths: in explain)."""
    click.echo("\nblast radius of each target (status.blastRadius.summary):")
    for kind, namespace, name in requests:
        status = client.get(object_path(kind, namespace, name)).json().get("status") or {}
        blast = status.get("blastRadius") or {}
        if not blast.get("inGraph"):
            continue
        decision = (status.get("risk") or {}).get("decision", "?")
        reason = (status.get("policy") or {}).get("reason") or ""
        why = f" ({reason})" if reason.startswith("blast radius") else ""
        click.echo(f"  {name}: {decision}{why}\n    {blast.get('summary')}")


def _explain(shell: Kubectl, requests: list[tuple[str, str | None, str]], show: str) -> None:
    """One request's answer as ``kubectl precedent explain`` prints it."""
    target = next(((ns, n) for _, ns, n in requests if n == show), None)
    if target is None and requests:
        target = (requests[0][1], requests[0][2])
    if target is None:
        return
    namespace, name = target
    args = ["explain", f"rr/{name}", "-n", str(namespace)]
    if not shell.run("precedent", *args):
        plugin = subprocess.run(
            [sys.executable, "-c", "from precedent.plugin import main; main()", *args],
            env=shell.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        click.echo((plugin.stdout + plugin.stderr).rstrip())
