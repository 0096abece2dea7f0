"""``kubectl precedent apply`` on a real kube-apiserver: an executor runs exactly the change an
answer approved, through kubectl's own plugin mechanism and under their own credentials.

Installed by the README's commands, with the operator running as the Deployment runs it: a
requester asks for two scale-downs of a production Deployment; the small one is approved, the
one that removes most of its capacity is escalated by the danger floor. The executor cannot run
the escalated one, runs the approved one once (the replicas change, the outcome is reported),
cannot run it twice, and cannot run an approved change whose target moved since the answer.
Nobody can swap the change of an answered request for another.

Only the real server can answer these: the scale subresource, the built-in ``edit`` role and
the authorizer the admission policies ask are the cluster's own.
"""

from __future__ import annotations

import json
import os
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
from tests.e2e.test_install_readme import INSTALL, REPO, readme_commands
from tests.e2e.test_real_operator import Cluster, Operator, answered
from tests.helpers import eventually

pytestmark = pytest.mark.e2e

USERS = {
    "rita-token": User("rita", ("sre",)),
    "erin-token": User("erin", ("automation",)),
    "alma-token": User("alma", ("sre-leads",)),
}
NAMESPACE = "shop"
README_APPLIED = (
    "scale deployment/checkout to 8: applied; "
    "remediationrequest.precedent.dev/checkout-to-8 outcome succeeded\n"
)
README_AGAIN = (
    "error: remediationrequest shop/checkout-to-8: already ran (spec.outcome succeeded); "
    "an approved change runs once\n"
)

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "checkout", "namespace": NAMESPACE},
    "spec": {
        "replicas": 10,
        "selector": {"matchLabels": {"app": "checkout"}},
        "template": {
            "metadata": {"labels": {"app": "checkout"}},
            "spec": {
                "containers": [{"name": "checkout", "image": "registry.example.com/checkout:1.0"}]
            },
        },
    },
}


def scale_request(name: str, replicas: int, description: str) -> str:
    """A RemediationRequest to set the checkout Deployment's replicas, as YAML."""
    return yaml.safe_dump(
        {
            "apiVersion": "precedent.dev/v1alpha1",
            "kind": "RemediationRequest",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "action": "scale_down",
                "target": {"kind": "Deployment", "name": "checkout", "namespace": NAMESPACE},
                "description": description,
                "change": {"replicas": replicas},
            },
        }
    )


@pytest.fixture(scope="module")
def installed(real_etcd: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = real_server_unavailable()
    if reason is not None or os.environ.get("PRECEDENT_TEST_KUBECONFIG"):
        pytest.skip(reason or "needs a fresh API server: only on the built control plane")
    home = tmp_path_factory.mktemp("change-apply")
    server = fresh_control_plane(real_etcd, USERS, home / "control-plane", controller_manager=True)
    try:
        cluster = Cluster(server, home)
        commands = readme_commands()
        assert commands[: len(INSTALL)] == INSTALL
        for command in commands:
            cluster.shell(command)
        installed_policies_in_force(server)
        # No history: the README's incidents include a critical scale-down of a checkout
        # Deployment, which would deny every request here. What answers them is the change.
        cluster.kubectl("delete", "incidents", "--all")
        cluster.kubectl("create", "namespace", NAMESPACE)
        cluster.kubectl("label", "namespace", NAMESPACE, "precedent.dev/environment=production")
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(DEPLOYMENT))
        cluster.kubectl(
            "create",
            "clusterrolebinding",
            "rita-requests",
            "--clusterrole=precedent-requester",
            "--user=rita",
        )
        cluster.kubectl(
            "create",
            "clusterrolebinding",
            "alma-approves",
            "--clusterrole=precedent-approver",
            "--user=alma",
        )
        cluster.kubectl(
            "create",
            "clusterrolebinding",
            "erin-executes",
            "--clusterrole=precedent-executor",
            "--user=erin",
        )
        # Erin may change what the built-in `edit` role allows, in the shop namespace only:
        # the plugin acts as erin.
        cluster.kubectl(
            "create",
            "rolebinding",
            "erin-edits",
            "--clusterrole=edit",
            "--user=erin",
            "-n",
            NAMESPACE,
        )
        yield cluster
    finally:
        server.stop()


class Executor:
    """``kubectl precedent`` as erin: the server's kubectl finds the plugin on ``PATH``."""

    def __init__(self, cluster: Cluster, user: str = "erin") -> None:
        self.kubectl = cluster.server.kubectl
        self.kubeconfig = cluster.server.write_kubeconfig(
            cluster.home / f"{user}-plugin", user=user
        )
        self.env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }

    def apply(self, name: str) -> subprocess.CompletedProcess[str]:
        return self.plugin("apply", f"rr/{name}")

    def plugin(self, *args: str) -> subprocess.CompletedProcess[str]:
        # kubectl finds a plugin by the words before the first flag, and hands it every flag
        # given after them: the plugin reads --kubeconfig itself.
        return subprocess.run(
            [
                str(self.kubectl),
                "precedent",
                *args,
                "-n",
                NAMESPACE,
                "--kubeconfig",
                str(self.kubeconfig),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=REPO,
            env=self.env,
        )


def replicas(cluster: Cluster) -> str:
    return cluster.kubectl(
        "get", "deploy", "checkout", "-n", NAMESPACE, "-o", "jsonpath={.spec.replicas}"
    ).stdout.strip()


def request(cluster: Cluster, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        cluster.kubectl("get", "rr", name, "-n", NAMESPACE, "-o", "json").stdout
    )
    return found


def test_apply_runs_exactly_the_approved_change_as_the_executor(
    installed: Cluster, tmp_path: Path
) -> None:
    cluster = installed
    operator = Operator(cluster, tmp_path / "operator.log")
    executor = Executor(cluster)
    operator.start()
    try:
        # Two scale-downs of a production Deployment of 10 replicas, asked for by rita.
        for name, count, description in (
            ("checkout-to-8", 8, "Scale checkout from 10 to 8 replicas"),
            ("checkout-to-2", 2, "Scale checkout from 10 to 2 replicas"),
        ):
            cluster.kubectl(
                "apply", "-f", "-", input=scale_request(name, count, description), user="rita"
            )
        found = answered(cluster, {f"{NAMESPACE}/checkout-to-8", f"{NAMESPACE}/checkout-to-2"})
        small, large = found[f"{NAMESPACE}/checkout-to-8"], found[f"{NAMESPACE}/checkout-to-2"]
        assert small["spec"]["requester"] == "rita"
        assert small["status"]["risk"]["decision"] == "Approved", small["status"]
        assert small["status"]["change"]["hash"].startswith("sha256:"), small["status"]
        assert small["status"]["change"]["observed"]["replicas"] == 10, small["status"]
        # Removing 80% of a production workload's capacity is at least medium: not approved.
        assert large["status"]["risk"]["decision"] != "Approved", large["status"]
        assert "floor" in {f["name"] for f in large["status"]["risk"]["factors"]}, large["status"]

        # The escalated change may not run: refused before anything is sent.
        refused = executor.apply("checkout-to-2")
        assert refused.returncode == 1, (refused.stdout, refused.stderr)
        assert "may not run" in refused.stderr, refused.stderr
        assert replicas(cluster) == "10"
        assert "outcome" not in request(cluster, "checkout-to-2")["spec"]

        # The approved change runs, as erin, and its outcome is reported.
        done = executor.apply("checkout-to-8")
        assert done.returncode == 0, (done.stdout, done.stderr)
        # The README's output, word for word.
        assert done.stdout == README_APPLIED, done.stdout
        assert replicas(cluster) == "8"
        ran = request(cluster, "checkout-to-8")
        assert ran["spec"]["outcome"]["result"] == "succeeded", ran["spec"]

        # ... once.
        again = executor.apply("checkout-to-8")
        assert again.returncode == 1, (again.stdout, again.stderr)
        assert again.stderr == README_AGAIN, again.stderr
        assert replicas(cluster) == "8"

        # The target moves between the answer and the run: the approved change is refused.
        cluster.kubectl(
            "apply",
            "-f",
            "-",
            input=scale_request("checkout-to-6", 6, "Scale checkout from 8 to 6 replicas"),
            user="rita",
        )
        six = answered(cluster, {f"{NAMESPACE}/checkout-to-6"})[f"{NAMESPACE}/checkout-to-6"]
        assert six["status"]["risk"]["decision"] == "Approved", six["status"]
        assert six["status"]["change"]["observed"]["replicas"] == 8, six["status"]
        cluster.kubectl("scale", "deploy/checkout", "-n", NAMESPACE, "--replicas=9")
        moved = executor.apply("checkout-to-6")
        assert moved.returncode == 1, (moved.stdout, moved.stderr)
        assert "replicas changed from 8 to 9" in moved.stderr, moved.stderr
        assert replicas(cluster) == "9"
        assert "outcome" not in request(cluster, "checkout-to-6")["spec"]
        assert "answers it again" in moved.stderr, moved.stderr

        # ... and answered again for the target as it is now (9 → 6), then it runs.
        def reanswered(name: str, observed: int) -> dict[str, Any] | None:
            found = request(cluster, name)
            change = (found.get("status") or {}).get("change") or {}
            return found if (change.get("observed") or {}).get("replicas") == observed else None

        six = eventually(lambda: reanswered("checkout-to-6", 9), timeout=120)
        assert six["status"]["change"]["asked"], six["status"]["change"]
        assert six["status"]["risk"]["decision"] == "Approved", six["status"]
        rerun = executor.apply("checkout-to-6")
        assert rerun.returncode == 0, (rerun.stdout, rerun.stderr)
        assert replicas(cluster) == "6"

        # A human approval is for the target as it was: the escalated 10 → 2, approved by alma,
        # now meets 6 replicas. Refused, answered again for 6 → 2, and the earlier approval
        # no longer applies: it waits for a new one.
        approver = Executor(cluster, "alma")
        approved = approver.plugin("approve", "rr/checkout-to-2", "--reason", "batch window CHG-1")
        assert approved.returncode == 0, (approved.stdout, approved.stderr)

        def decision(name: str, wanted: str) -> dict[str, Any] | None:
            found = request(cluster, name)
            return (
                found
                if (found.get("status") or {}).get("risk", {}).get("decision") == wanted
                else None
            )

        eventually(lambda: decision("checkout-to-2", "Approved"), timeout=120)
        stale = executor.apply("checkout-to-2")
        assert stale.returncode == 1, (stale.stdout, stale.stderr)
        assert "replicas changed from 10 to 6" in stale.stderr, stale.stderr
        two = eventually(lambda: reanswered("checkout-to-2", 6), timeout=120)
        assert two["status"]["risk"]["decision"] == "Escalated", two["status"]
        assert replicas(cluster) == "6"
        assert executor.apply("checkout-to-2").returncode == 1

        # One approval, one change: the change of an answered request cannot be swapped.
        swapped = cluster.kubectl(
            "patch",
            "rr",
            "checkout-to-6",
            "-n",
            NAMESPACE,
            "--type",
            "merge",
            "-p",
            json.dumps({"spec": {"change": {"replicas": 1}}}),
            user="rita",
            check=False,
        )
        assert swapped.returncode != 0, swapped.stdout
        assert "spec.change" in swapped.stderr, swapped.stderr
        assert request(cluster, "checkout-to-6")["spec"]["change"] == {"replicas": 6}
    finally:
        operator.stop()
    log = operator.output()
    assert "Traceback" not in log, log[-3000:]
