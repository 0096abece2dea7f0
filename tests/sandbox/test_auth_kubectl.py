"""The real kubectl against an authenticating sandbox: two users, ``auth whoami``,
``auth can-i`` and a refused create; and the product's operator role (manifests/rbac.yaml)
granting what its ServiceAccount needs."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from precedent_sandbox import SandboxThread
from tests.sandbox.conftest import CRDS

REPO = Path(__file__).resolve().parents[2]
SA = "system:serviceaccount:precedent-system:precedent"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    """A sandbox with a token file and a kubeconfig with one context per user."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f'admin-token,admin,1,"system:masters"\nbob-token,bob,2\nsa-token,{SA},3\n')
    with SandboxThread(CRDS, token_auth_file=tokens) as sandbox:
        yield sandbox.write_kubeconfig(tmp_path / "kubeconfig")


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run kubectl with its own discovery cache."""
    cache = kubeconfig.parent / "cache"
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_two_users_whoami_can_i_and_a_refused_create(kubeconfig: Path) -> None:
    whoami = kubectl(
        kubeconfig,
        "--context",
        "bob",
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    )
    assert whoami.stdout == "bob", whoami.stderr
    assert (
        kubectl(kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").stdout
        == "admin"
    )
    assert (
        kubectl(kubeconfig, "--context", "bob", "auth", "can-i", "create", "rr").stdout.strip()
        == "no"
    )
    assert kubectl(kubeconfig, "auth", "can-i", "create", "rr").stdout.strip() == "yes"
    refused = kubectl(
        kubeconfig,
        "--context",
        "bob",
        "create",
        "-f",
        str(REPO / "tests/data/sandbox/request.yaml"),
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith(
        'remediationrequests.precedent.dev is forbidden: User "bob" cannot create resource '
        '"remediationrequests" in API group "precedent.dev" in the namespace "default"'
    )
    wrong = kubectl(kubeconfig, "--token", "nope", "get", "rr")
    assert "You must be logged in to the server (Unauthorized)" in wrong.stderr


def test_the_operator_role_grants_its_service_account_what_it_needs(kubeconfig: Path) -> None:
    applied = kubectl(
        kubeconfig,
        "apply",
        "-f",
        str(REPO / "manifests/namespace.yaml"),
        "-f",
        str(REPO / "manifests/rbac.yaml"),
    )
    assert applied.returncode == 0, applied.stderr
    as_sa = ("--context", SA, "auth", "can-i")
    for check in (
        ("watch", "rr", "-A"),
        ("patch", "rr", "--subresource=status", "-n", "x"),
        ("create", "incidents"),
        ("create", "events", "-n", "default"),
        ("list", "namespaces"),
        ("list", "crd"),
    ):
        assert kubectl(kubeconfig, *as_sa, *check).stdout.strip() == "yes", check
    for check in (("patch", "rr"), ("delete", "rr"), ("create", "rr")):
        assert kubectl(kubeconfig, *as_sa, *check).stdout.strip() == "no", check
