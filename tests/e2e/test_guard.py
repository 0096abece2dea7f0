"""The guard on the real API server, as real kubectl users: a direct scale-down of a guarded
production Deployment is refused with how to ask; an approved request admits exactly its change
once; break-glass is admitted and recorded; warn admits with a warning; an unguarded namespace
is untouched; with the operator stopped, risky changes to enforce namespaces are refused and
everything else is admitted.

The operator runs outside the cluster, as in the other real-server tests: the webhook
configuration installed by the README is pointed at it (PRECEDENT_GUARD_URL) with its CA.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from precedent_sandbox.control_plane import User
from tests.backends import (
    fresh_control_plane,
    installed_policies_in_force,
    real_server_unavailable,
)
from tests.e2e.test_install_readme import INSTALL, readme_commands
from tests.e2e.test_real_operator import Cluster, Operator, answered
from tests.helpers import eventually

pytestmark = pytest.mark.e2e

USERS = {
    "rita-token": User("rita", ("sre",)),
    "erin-token": User("erin", ("automation",)),
    "alma-token": User("alma", ("sre", "sre-oncall")),
}
BREAK_GLASS = "sre-oncall"
README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def deployment(namespace: str, replicas: int = 10) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "checkout", "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "checkout"}},
                "template": {
                    "metadata": {"labels": {"app": "checkout"}},
                    "spec": {
                        "containers": [
                            {"name": "checkout", "image": "registry.example.com/checkout:1.0"}
                        ]
                    },
                },
            },
        }
    )


def scale_request(name: str, replicas: int) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "precedent.dev/v1alpha1",
            "kind": "RemediationRequest",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {
                "action": "scale_down",
                "target": {"kind": "Deployment", "name": "checkout", "namespace": "shop"},
                "description": f"Scale checkout down to {replicas} replicas",
                "change": {"replicas": replicas},
            },
        }
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def installed(real_etcd: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = real_server_unavailable()
    if reason is not None or os.environ.get("PRECEDENT_TEST_KUBECONFIG"):
        pytest.skip(
            reason or "runs the operator's webhook on loopback: only on the built control plane"
        )
    home = tmp_path_factory.mktemp("guard")
    server = fresh_control_plane(real_etcd, USERS, home / "control-plane", controller_manager=True)
    try:
        cluster = Cluster(server, home)
        commands = readme_commands()
        assert commands[: len(INSTALL)] == INSTALL
        for command in commands:
            cluster.shell(command)
        installed_policies_in_force(server)
        # No history: the answers come from the changes and the floors alone.
        cluster.kubectl("delete", "incidents", "--all")
        for namespace, guard in (("shop", "enforce"), ("web", "warn"), ("plain", None)):
            cluster.kubectl("create", "namespace", namespace)
            labels = ["precedent.dev/environment=production"]
            if guard:
                labels.append(f"precedent.dev/guard={guard}")
            cluster.kubectl("label", "namespace", namespace, *labels)
            cluster.kubectl("apply", "-f", "-", input=deployment(namespace))
            cluster.kubectl(
                "create",
                "rolebinding",
                "erin-edits",
                "--clusterrole=edit",
                "--user=erin",
                "-n",
                namespace,
            )
            cluster.kubectl(
                "create",
                "rolebinding",
                "alma-edits",
                "--clusterrole=edit",
                "--user=alma",
                "-n",
                namespace,
            )
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


def replicas(cluster: Cluster, namespace: str = "shop") -> int:
    return int(
        cluster.kubectl(
            "get", "deploy", "checkout", "-n", namespace, "-o", "jsonpath={.spec.replicas}"
        ).stdout
    )


def replica_set_follows(cluster: Cluster, count: int, namespace: str = "shop") -> None:
    """Wait until the Deployment controller has brought checkout's ReplicaSet to ``count``
    (its update of the ReplicaSet passes the guard: Kubernetes' own controllers are not
    guarded)."""

    seen: list[list[Any]] = [[]]

    def follows() -> bool | None:
        listed = json.loads(
            cluster.kubectl("get", "rs", "-n", namespace, "-l", "app=checkout", "-o", "json").stdout
        )["items"]
        seen[0] = [r["spec"].get("replicas") for r in listed]
        return seen[0] == [count] or None

    try:
        eventually(follows, timeout=60)
    except AssertionError:
        events = cluster.kubectl("get", "events", "-n", namespace).stdout
        shown = f"ReplicaSets of checkout: {seen[0]}, not [{count}]"
        raise AssertionError(f"{shown}\n{events}") from None


def ceiling(cluster: Cluster, user: str, count: int) -> subprocess.CompletedProcess[str]:
    """Set checkout's HorizontalPodAutoscaler's maxReplicas, as ``user``."""
    patch = json.dumps({"spec": {"maxReplicas": count}})
    return cluster.kubectl(
        "patch", "hpa/checkout", "-n", "shop", "--type=merge", "-p", patch, user=user, check=False
    )


def scale(
    cluster: Cluster, user: str, count: int, namespace: str = "shop"
) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl(
        "scale", "deploy/checkout", "-n", namespace, f"--replicas={count}", user=user, check=False
    )


def test_the_guard_on_the_real_api_server(installed: Cluster, tmp_path: Path) -> None:
    cluster = installed
    port = free_port()
    operator = Operator(cluster, tmp_path / "operator.log")
    operator.env.update(
        {
            "PRECEDENT_GUARD_PORT": str(port),
            "PRECEDENT_GUARD_URL": f"https://127.0.0.1:{port}",
            "PRECEDENT_BREAK_GLASS_GROUP": BREAK_GLASS,
        }
    )
    operator.start()
    try:

        def pointed() -> bool | None:
            config = json.loads(
                cluster.kubectl(
                    "get", "validatingwebhookconfiguration", "precedent-guard", "-o", "json"
                ).stdout
            )
            hooks = config["webhooks"]
            ok = all(
                h["clientConfig"].get("caBundle")
                and h["clientConfig"].get("url", "").startswith(f"https://127.0.0.1:{port}/")
                for h in hooks
            )
            return ok or None

        try:
            eventually(pointed, timeout=120)
        except AssertionError:
            dump = cluster.kubectl(
                "get", "validatingwebhookconfiguration", "precedent-guard", "-o", "yaml"
            ).stdout
            (tmp_path / "config.yaml").write_text(dump)
            raise AssertionError(dump[:3000]) from None

        # 1. A direct scale-down of a guarded production Deployment: refused, with how to ask.
        def refused_by_guard() -> subprocess.CompletedProcess[str] | None:
            done = scale(cluster, "erin", 2)
            return done if "precedent guard" in done.stderr else None

        direct = eventually(refused_by_guard, timeout=120)
        # The README's "Guarding direct changes" shows these outputs word for word.
        assert direct.stderr.strip() in README, direct.stderr
        assert direct.returncode != 0
        assert "needs an approved RemediationRequest" in direct.stderr, direct.stderr
        assert "kubectl create -f -" in direct.stderr, direct.stderr
        assert "change: {replicas: 2}" in direct.stderr, direct.stderr
        assert replicas(cluster) == 10
        # Deleting it takes all its capacity at once: guarded too.
        deleted = cluster.kubectl(
            "delete", "deploy/checkout", "-n", "shop", user="erin", check=False
        )
        assert deleted.returncode != 0, deleted.stdout
        assert "needs an approved RemediationRequest" in deleted.stderr, deleted.stderr
        assert "change: {delete: {propagationPolicy: Background}}" in deleted.stderr, deleted.stderr
        assert replicas(cluster) == 10
        # Lowering its autoscaler's ceiling would have the HPA scale it down: guarded too.
        hpa = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "checkout", "namespace": "shop"},
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "checkout",
                },
                "minReplicas": 2,
                "maxReplicas": 20,
            },
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(hpa))
        lowered = ceiling(cluster, "erin", 2)
        assert lowered.returncode != 0, lowered.stdout
        assert "lower the maxReplicas of HorizontalPodAutoscaler checkout" in lowered.stderr
        assert "change: {patch: {spec: {maxReplicas: 2}}}" in lowered.stderr, lowered.stderr
        raised = ceiling(cluster, "erin", 30)
        assert raised.returncode == 0, raised.stderr
        cluster.kubectl("delete", "hpa/checkout", "-n", "shop")

        # 2. An approved request admits exactly its change, once.
        cluster.kubectl("apply", "-f", "-", input=scale_request("checkout-to-8", 8), user="rita")
        found = answered(cluster, {"shop/checkout-to-8"})["shop/checkout-to-8"]
        assert found["status"]["risk"]["decision"] == "Approved", found["status"]
        other = scale(cluster, "erin", 7)  # a different change under the same approval
        assert other.returncode != 0, other.stdout
        assert "precedent guard" in other.stderr
        allowed = scale(cluster, "erin", 8)
        assert allowed.returncode == 0, allowed.stderr
        assert replicas(cluster) == 8
        replica_set_follows(cluster, 8)
        used = json.loads(
            cluster.kubectl("get", "rr", "checkout-to-8", "-n", "shop", "-o", "json").stdout
        )
        assert used["status"]["guard"]["user"] == "erin", used["status"]
        cluster.kubectl("scale", "deploy/checkout", "-n", "shop", "--replicas=10")  # up: free
        again = scale(cluster, "erin", 8)
        assert again.returncode != 0, again.stdout
        assert replicas(cluster) == 10

        # 2b. The executor's `kubectl precedent apply` goes through the same guard, once.
        cluster.kubectl("apply", "-f", "-", input=scale_request("checkout-to-9", 9), user="rita")
        nine = answered(cluster, {"shop/checkout-to-9"})["shop/checkout-to-9"]
        assert nine["status"]["risk"]["decision"] == "Approved", nine["status"]
        plugin = [
            str(cluster.server.kubectl),
            "precedent",
            "apply",
            "rr/checkout-to-9",
            "-n",
            "shop",
            "--kubeconfig",
            str(cluster.server.write_kubeconfig(cluster.home / "erin-plugin", user="erin")),
        ]
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        applied = subprocess.run(
            plugin, capture_output=True, text=True, check=False, env={**os.environ, "PATH": path}
        )
        assert applied.returncode == 0, applied.stderr
        assert replicas(cluster) == 9
        cluster.kubectl("scale", "deploy/checkout", "-n", "shop", "--replicas=10")
        replay = scale(cluster, "erin", 9)  # the same change again, by hand: used already
        assert replay.returncode != 0, replay.stdout
        assert replicas(cluster) == 10

        # 3. Break-glass: admitted, with a warning, and recorded.
        glass = scale(cluster, "alma", 3)
        assert (glass.stdout + glass.stderr).strip() in README, glass.stdout + glass.stderr
        assert glass.returncode == 0, glass.stderr
        assert "break-glass" in glass.stderr, glass.stderr
        assert replicas(cluster) == 3

        def recorded() -> list[dict[str, Any]] | None:
            items = json.loads(
                cluster.kubectl(
                    "get",
                    "rr",
                    "-n",
                    "shop",
                    "-l",
                    "precedent.dev/guard-record=break-glass",
                    "-o",
                    "json",
                ).stdout
            )["items"]
            return items or None

        (record,) = eventually(recorded, timeout=60)
        assert record["metadata"]["annotations"]["precedent.dev/guard-user"] == "alma"
        events = cluster.kubectl(
            "get",
            "events",
            "-n",
            "shop",
            "--field-selector",
            "reason=GuardBreakGlass",
            "-o",
            "name",
        ).stdout
        assert events.strip(), "no GuardBreakGlass Event"

        # 4. warn: admitted, with the warning kubectl prints.
        warned = scale(cluster, "erin", 2, "web")
        assert (warned.stdout + warned.stderr).strip() in README, warned.stderr
        assert warned.returncode == 0, warned.stderr
        assert "precedent guard (warn)" in warned.stderr, warned.stderr
        assert replicas(cluster, "web") == 2

        # 5. An unguarded namespace is untouched.
        plain = scale(cluster, "erin", 1, "plain")
        assert plain.returncode == 0, plain.stderr
        assert "precedent" not in plain.stderr
    finally:
        operator.stop()

    # 6. The operator stopped: risky changes to enforce namespaces are refused, the rest admitted.
    down = scale(cluster, "erin", 1)
    assert "failed calling webhook" in down.stderr, down.stderr
    assert down.returncode != 0
    assert replicas(cluster) == 3
    up = scale(cluster, "erin", 6)
    assert up.returncode == 0, up.stderr
    labelled = cluster.kubectl(
        "label", "deploy/checkout", "-n", "shop", "team=payments", user="erin", check=False
    )
    assert labelled.returncode == 0, labelled.stderr
    warn_down = scale(cluster, "erin", 1, "web")
    assert warn_down.returncode == 0, warn_down.stderr  # warn fails open
    log = operator.output()
    assert "Traceback" not in log, log[-3000:]
