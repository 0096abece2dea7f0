"""``kubectl precedent`` against the sandbox and the real operator, as the kubeconfig's user."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from precedent.plugin import main
from tests.integration.conftest import Cluster, condition, eventually
from tests.integration.test_approvals import approved_condition, request

pytestmark = pytest.mark.integration


def plugin(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_approve_explain_and_outcome(cluster: Cluster) -> None:
    assert cluster.create(request("tls")).status_code == 201
    with cluster.operator():
        approved_condition(cluster, "tls", "Pending")
        code, out, err = plugin("explain", "rr/tls")
        assert code == 0, err
        assert "risk:       medium" in out
        assert "approval Pending" in out
        code, out, err = plugin("approve", "rr/tls", "--reason", "window open")
        assert code == 0, err
        # The sandbox serves no SelfSubjectReview: the approver is the kubeconfig's user.
        assert "approve rr/tls as system:admin" in out
        answer = approved_condition(cluster, "tls", "Approved")
        code, out, err = plugin("explain", "rr/tls")
        assert code == 0, err
        assert "approval Approved by system:admin" in out
        assert "- Accepted (Approved:" in out
        code, out, err = plugin("outcome", "rr/tls", "--result", "failed", "--message", "boom")
        assert code == 0, err
        handled = eventually(
            lambda: (o := cluster.get_request("tls"))["status"].get("outcome") and o
        )
    assert answer["status"]["policy"]["approval"]["by"] == "system:admin"
    assert handled["spec"]["outcome"]["result"] == "failed"
    assert condition(handled, "Approved")["status"] == "True"  # type: ignore[index]


def test_errors_are_one_line(cluster: Cluster) -> None:
    code, _, err = plugin("approve", "rr/nope", "--reason", "x")
    assert code == 1
    assert err.strip().count("\n") == 0
    assert "remediationrequest default/nope not found" in err
    code, _, err = plugin("explain", "deploy/nope")
    assert code == 1
    assert "expected rr/NAME" in err
