"""The operator as a cluster runs it, on a real kube-apiserver: installed by the README's
commands word for word, run as in manifests/deployment.yaml (``--namespace=*``, peering, the
status key from the Secret) under a token the API server issued to its ServiceAccount, with the
demo's requests applied by a requester. Then the operator and the API server are restarted
mid-run: nothing is lost, every request is answered once, each Event is posted once, and the
watches the restart expired (410 Gone) are listed again.

Only the real server can answer these: the sandbox has no ServiceAccount tokens and keeps no
watch cache that a restart empties.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from precedent_sandbox.control_plane import ControlPlane, User
from tests.backends import (
    fresh_control_plane,
    installed_policies_in_force,
    real_server_unavailable,
)
from tests.e2e.test_install_readme import INSTALL, REPO, readme_commands
from tests.helpers import eventually

pytestmark = pytest.mark.e2e

USERS = {"rita-token": User("rita", ("sre",)), "erin-token": User("erin", ("automation",))}
REQUESTS = sorted((REPO / "data" / "requests").glob("*.yaml"))


class Cluster:
    """A real control plane with Precedent installed; kubectl as the admin or a user."""

    def __init__(self, server: ControlPlane, home: Path) -> None:
        self.server = server
        self.home = home
        self.admin = server.write_kubeconfig(home / "admin")

    def kubectl(
        self, *args: str, user: str | None = None, check: bool = True, **options: Any
    ) -> subprocess.CompletedProcess[str]:
        config = self.admin if user is None else self.home / user
        if user is not None and not config.exists():
            self.server.write_kubeconfig(config, user=user)
        result = subprocess.run(
            [str(self.server.kubectl), "--kubeconfig", str(config), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=REPO,
            **options,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}:\n{result.stdout}\n{result.stderr}")
        return result

    def shell(self, command: str) -> None:
        """A README command: ``kubectl`` is this cluster's, as the admin; ``$(…)`` runs."""
        env = {
            **os.environ,
            "KUBECONFIG": str(self.admin),
            "PATH": f"{self.server.kubectl.parent}{os.pathsep}{os.environ['PATH']}",
        }
        done = subprocess.run(
            ["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"

    def requests(self) -> dict[str, dict[str, Any]]:
        listed = json.loads(self.kubectl("get", "rr", "-A", "-o", "json").stdout)["items"]
        return {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in listed}


class Operator:
    """``kopf run`` as the Deployment runs it, under the ServiceAccount's own token."""

    def __init__(self, cluster: Cluster, log: Path) -> None:
        token = cluster.kubectl(
            "create", "token", "precedent", "-n", "precedent-system", "--duration=2h"
        ).stdout.strip()
        self.kubeconfig = cluster.server.write_kubeconfig(cluster.home / "operator", token=token)
        key = cluster.kubectl(
            "get",
            "secret",
            "precedent-status-key",
            "-n",
            "precedent-system",
            "-o",
            "go-template={{.data.key | base64decode}}",
        ).stdout
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PRECEDENT_HISTORY_PATH": "",
            "PRECEDENT_CATALOG": "",
            "PRECEDENT_METRICS_PORT": "0",
            "PRECEDENT_STATUS_KEY": key,
            "PRECEDENT_INDEX_DIR": str(cluster.home / "index"),
            "PRECEDENT_PEERING_LIFETIME_SECONDS": "30",
        }
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        deployment = yaml.safe_load((REPO / "manifests" / "deployment.yaml").read_text())
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        # --verbose: kopf says at debug level when a watch is answered 410 Gone and restarts.
        args = [*(a for a in args if not a.startswith("--liveness")), "--verbose"]
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kopf", *args],
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture(scope="module")
def installed(real_etcd: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = real_server_unavailable()
    if reason is not None or os.environ.get("PRECEDENT_TEST_KUBECONFIG"):
        pytest.skip(reason or "restarts the API server: only on the built control plane")
    home = tmp_path_factory.mktemp("real-operator")
    server = fresh_control_plane(real_etcd, USERS, home / "control-plane", controller_manager=True)
    try:
        cluster = Cluster(server, home)
        commands = readme_commands()
        assert commands[: len(INSTALL)] == INSTALL
        for command in commands:
            cluster.shell(command)
        installed_policies_in_force(server)
        for namespace in ("shop", "search", "payments", "checkout", "data"):
            cluster.kubectl("create", "namespace", namespace, check=False)
        cluster.kubectl(
            "create",
            "clusterrolebinding",
            "rita-requests",
            "--clusterrole=precedent-requester",
            "--user=rita",
        )
        yield cluster
    finally:
        server.stop()


def answered(cluster: Cluster, names: set[str]) -> dict[str, dict[str, Any]]:
    """Wait until every request of ``names`` is Ready; return them all."""

    def ready() -> dict[str, dict[str, Any]] | None:
        found = cluster.requests()
        done = {
            n
            for n in names
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (found.get(n, {}).get("status") or {}).get("conditions") or []
            )
        }
        return found if done == names else None

    return dict(eventually(ready, timeout=180))


def events_by_object(cluster: Cluster) -> Counter[tuple[str, str, str]]:
    items = json.loads(cluster.kubectl("get", "events", "-A", "-o", "json").stdout)["items"]
    return Counter(
        (e["involvedObject"].get("namespace", ""), e["involvedObject"]["name"], e["reason"])
        for e in items
        if e["involvedObject"].get("kind") == "RemediationRequest"
    )


def test_the_operator_answers_survives_restarts_and_relists(
    installed: Cluster, tmp_path: Path
) -> None:
    cluster = installed
    operator = Operator(cluster, tmp_path / "operator.log")
    # The demo's requests, applied by a requester (the API server records them as rita's).
    for path in REQUESTS:
        cluster.kubectl("apply", "-f", str(path), user="rita")
    names = set(cluster.requests())
    assert len(names) >= 18
    operator.start()
    try:
        first = answered(cluster, names)
        assert {o["spec"]["requester"] for o in first.values()} == {"rita"}
        assert {o["status"]["risk"]["decision"] for o in first.values()} >= {
            "Approved",
            "Escalated",
        }
        time.sleep(2)  # let the Events of the answers land
        events = events_by_object(cluster)
        assert events
        assert max(events.values()) == 1, events

        # The operator stops; requests keep coming; a new operator answers them, and only them.
        operator.stop()
        extra = next(yaml.safe_load_all((REPO / "data" / "requests" / "shop.yaml").read_text()))
        extra["metadata"]["name"] = "while-down"
        (tmp_path / "down.yaml").write_text(yaml.safe_dump(extra))
        cluster.kubectl("create", "-f", str(tmp_path / "down.yaml"), user="rita")
        operator.start()
        after = answered(cluster, names | {f"{extra['metadata']['namespace']}/while-down"})
        for name in names:  # answered once: the status the first operator wrote stands
            assert after[name]["status"]["risk"] == first[name]["status"]["risk"], name

        # The API server restarts under the running operator, and etcd's history is compacted
        # meanwhile (as kube-apiserver does every 5 minutes): resuming a watch from its last
        # resourceVersion is answered 410 Gone; kopf lists again and the next request is
        # answered.
        steady = operator.output()
        cluster.server.stop_apiserver()
        cluster.server.etcd.compact()
        cluster.server.start_apiserver()
        extra["metadata"]["name"] = "after-restart"
        (tmp_path / "restart.yaml").write_text(yaml.safe_dump(extra))
        # Right after /readyz a real API server answers 503 for a moment, while admission
        # resolves the CRD kinds its policies name: a client retries.
        eventually(
            lambda: (
                cluster.kubectl(
                    "create", "-f", str(tmp_path / "restart.yaml"), user="rita", check=False
                ).returncode
                == 0
            ),
            timeout=60,
        )
        final = answered(
            cluster,
            names
            | {
                f"{extra['metadata']['namespace']}/while-down",
                f"{extra['metadata']['namespace']}/after-restart",
            },
        )
        assert len(final) == len(names) + 2
        time.sleep(2)
        events = events_by_object(cluster)
        assert max(events.values()) == 1, [k for k, v in events.items() if v > 1]
    finally:
        operator.stop()
    # Under the shipped RBAC nothing the operator asks for is refused. (While a restarted
    # kube-apiserver fills its RBAC cache it answers 403 for a moment; kopf retries those.)
    assert "Forbidden" not in steady, steady[-3000:]
    assert "Not enough permissions" not in steady, steady[-3000:]
    log = operator.output()
    assert "Traceback" not in log, log[-3000:]
    assert "Restarting the watch-stream for remediationrequests" in log[len(steady) :]
