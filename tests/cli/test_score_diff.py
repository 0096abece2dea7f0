"""``precedent score --diff BEFORE AFTER``: a pull request's manifest change gets the guard's
answer, and --fail-on gates it, without anyone writing a request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from precedent.cli import main

AS_OF = "2026-11-28T00:00:00Z"
NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "shop", "labels": {"precedent.dev/environment": "production"}},
}


def deployment(
    replicas: int, image: str = "registry.example.com/checkout:4.12.0"
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "checkout", "namespace": "shop"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "checkout"}},
            "template": {
                "metadata": {"labels": {"app": "checkout"}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def write(path: Path, *docs: dict[str, Any]) -> Path:
    path.mkdir()
    (path / "objects.yaml").write_text(yaml.safe_dump_all(docs))
    return path


def run(*args: str) -> Any:
    return CliRunner().invoke(main, ["score", *args, "--as-of", AS_OF])


def test_a_scale_down_in_a_pull_request_is_denied_and_fails_the_gate(tmp_path: Path) -> None:
    before = write(tmp_path / "before", NAMESPACE, deployment(40))
    after = write(tmp_path / "after", NAMESPACE, deployment(12))
    result = run("--diff", str(before), str(after), "-f", str(before), "--fail-on", "denied")
    assert result.exit_code == 3, result.output
    assert "deployment-checkout" in result.stdout
    assert "Denied" in result.stdout
    assert "INC-2024-3671" in result.stdout


def test_changes_the_guard_does_not_weigh_pass(tmp_path: Path) -> None:
    before = write(tmp_path / "before", NAMESPACE, deployment(4))
    after = write(tmp_path / "after", NAMESPACE, deployment(6))  # a scale-up
    result = run("--diff", str(before), str(after), "--fail-on", "escalated")
    assert result.exit_code == 0, result.output
    assert "no change" in result.output


def test_an_image_change_and_a_delete_are_scored(tmp_path: Path) -> None:
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "orders-data", "namespace": "shop"},
        "spec": {"accessModes": ["ReadWriteOnce"]},
    }
    before = write(tmp_path / "before", NAMESPACE, deployment(4), pvc)
    new_image = deployment(4, "registry.example.com/checkout:5.0.0")
    after = write(tmp_path / "after", NAMESPACE, new_image)
    result = run("--diff", str(before), str(after), "-f", str(before), "-o", "yaml")
    assert result.exit_code == 0, result.output
    items = {i["name"]: i["assessment"] for i in yaml.safe_load(result.stdout)["items"]}
    assert items["deployment-checkout"]["change"]["effect"] == "image-change"
    deleted = items["persistentvolumeclaim-orders-data"]
    assert deleted["change"]["effect"] == "data-delete"
    assert deleted["risk"]["band"] == "high"  # deleting data in production: the floor


def test_requests_and_a_diff_are_one_or_the_other(tmp_path: Path) -> None:
    result = run("x.yaml", "--diff", "a", "b")
    assert result.exit_code == 2
    assert "not both" in result.output
