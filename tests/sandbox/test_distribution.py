"""The sandbox as its own distribution: the product's wheel, the CRD rule, the child process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import click
import httpx
import pytest
import yaml
from click.testing import CliRunner

from precedent.demo import cell_text
from precedent.sandbox_process import (
    SandboxProcess,
    find_crds_dir,
    installed_crds_dir,
    sandbox_command,
)
from tests.sandbox.conftest import CRDS

REPO = Path(__file__).resolve().parents[2]
GROUP = "/apis/precedent.dev/v1alpha1"
ALL_KINDS = ["Incident", "Playbook", "RemediationApproval", "RemediationRequest"]


def _wait_for(path: Path, process: subprocess.Popen[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"exited early: {process.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {path} after {timeout} s")
        time.sleep(0.05)


def _run_until_ready(
    argv: list[str], cwd: Path, env: dict[str, str]
) -> tuple[dict[str, str], list[str], str]:
    """Start ``argv``, read its ready file, list the precedent.dev kinds served, stop it."""
    ready = cwd / "ready.json"
    process = subprocess.Popen(
        [*argv, "--kubeconfig", str(cwd / "kubeconfig"), "--ready-file", str(ready)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(ready, process)
        info = json.loads(ready.read_text())
        response = httpx.get(f"{info['url']}{GROUP}", timeout=10)
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert not ready.exists(), "the ready file outlives the server"
    assert info["kubeconfig"] == str((cwd / "kubeconfig").resolve())
    listing = response.json() if response.status_code == 200 else {"resources": []}
    kinds = sorted(r["kind"] for r in listing["resources"] if "/" not in r["name"])
    return info, kinds, out


def _one_crd(directory: Path) -> Path:
    directory.mkdir(parents=True)
    shutil.copy(CRDS / "playbooks.yaml", directory / "playbooks.yaml")
    return directory


def test_product_wheel_carries_the_crds_but_neither_the_sandbox_nor_cel(tmp_path: Path) -> None:
    # Built from a copy holding what the Dockerfile copies, so the checkout gets no build/.
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "operator", source / "operator", ignore=ignore)
    shutil.copytree(REPO / "crds", source / "crds")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", ".", "--no-deps", "-w", str(tmp_path / "w")],
        cwd=source,
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "w").glob("precedent-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    crds = sorted(Path(n).name for n in names if "/data/share/precedent/crds/" in n)
    assert crds == sorted(p.name for p in CRDS.glob("*.yaml"))
    assert not [n for n in names if "sandbox" in n and not n.endswith("sandbox_process.py")]
    requires = [
        line.split(":", 1)[1].strip().lower()
        for line in metadata.decode().splitlines()
        if line.startswith("Requires-Dist:")
    ]
    assert requires, "no Requires-Dist read from the metadata"
    assert not [r for r in requires if r.startswith(("cel-python", "precedent-sandbox"))]


def test_sandbox_command_crds_rule(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "precedent_sandbox"]
    env = {k: v for k, v in os.environ.items() if k != "PRECEDENT_CRDS_DIR"}
    # Nothing given and no ./crds: it starts with no CRDs (the group is not served).
    bare = tmp_path / "bare"
    bare.mkdir()
    _, kinds, _ = _run_until_ready(argv, bare, env)
    assert kinds == []
    # ./crds when present.
    local = tmp_path / "local"
    _one_crd(local / "crds")
    _, kinds, _ = _run_until_ready(argv, local, env)
    assert kinds == ["Playbook"]
    # $PRECEDENT_CRDS_DIR over ./crds; --crds over both.
    _, kinds, _ = _run_until_ready(argv, local, {**env, "PRECEDENT_CRDS_DIR": str(CRDS)})
    assert kinds == ALL_KINDS
    only = _one_crd(tmp_path / "only")
    _, kinds, _ = _run_until_ready(
        [*argv, "--crds", str(only)], local, {**env, "PRECEDENT_CRDS_DIR": str(CRDS)}
    )
    assert kinds == ["Playbook"]


def test_product_sandbox_command_falls_back_to_the_installed_crds(tmp_path: Path) -> None:
    # No --crds, no variable, no ./crds: the copy installed with the product (here: editable).
    env = {k: v for k, v in os.environ.items() if k != "PRECEDENT_CRDS_DIR"}
    info, kinds, out = _run_until_ready(
        [sys.executable, "-m", "precedent.cli", "sandbox"], tmp_path, env
    )
    assert kinds == ALL_KINDS
    assert f"listening on {info['url']}" in out


def test_find_crds_dir_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    installed = installed_crds_dir()
    assert installed is not None
    assert sorted(p.name for p in installed.glob("*.yaml")) == sorted(
        p.name for p in CRDS.glob("*.yaml")
    )
    assert find_crds_dir(None) == installed
    (tmp_path / "crds").mkdir()
    assert find_crds_dir(None) == Path("crds")
    assert find_crds_dir(tmp_path / "given") == tmp_path / "given"


def test_missing_sandbox_is_one_line_saying_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What an environment without the sandbox package looks like to the import system.
    monkeypatch.setitem(sys.modules, "precedent_sandbox", None)
    result = CliRunner().invoke(sandbox_command, ["--crds", str(CRDS)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "pip install ./sandbox" in lines[0]
    assert "make install" in lines[0]


def test_sandbox_process_serves_then_stops(tmp_path: Path) -> None:
    with SandboxProcess(CRDS, tmp_path) as sandbox:
        assert httpx.get(f"{sandbox.url}{GROUP}/playbooks", timeout=10).status_code == 200
        config = yaml.safe_load(sandbox.kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == sandbox.url
        url = sandbox.url
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/version", timeout=2)


def test_sandbox_process_reports_a_bad_crd_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "crds"
    bad.mkdir()
    (bad / "broken.yaml").write_text("kind: CustomResourceDefinition\nspec: [\n")
    with pytest.raises(click.ClickException) as caught, SandboxProcess(bad, tmp_path / "run"):
        pass
    message = caught.value.message
    assert message.startswith("the sandbox API server did not start: Error: CRDs in ")
    assert "\n" not in message


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (85.0, "85"),
        (0.82, "0.82"),
        ({"b": 1.0, "a": "x"}, "map[a:x b:1]"),
        (["x", 2.5], "[x 2.5]"),
        ("Denied", "Denied"),
    ],
)
def test_cell_text_prints_as_kubectl(value: object, text: str) -> None:
    assert cell_text(value) == text
