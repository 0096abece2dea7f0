"""The operator runs without the Kubernetes client (the ``kubectl`` extra), which its image
leaves out: kopf imports that client whenever it is installed, about 12 MiB of the operator's
memory for nothing it uses. The commands that need it say how to install it, in one line.

Each case runs a fresh interpreter in which ``import kubernetes`` fails, as in the image.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WITHOUT_CLIENT = textwrap.dedent(
    """
    import sys

    class NoKubernetesClient:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "kubernetes":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoKubernetesClient())
    """
)


def run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_CLIENT + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_the_operator_and_its_wiring_import_without_the_client() -> None:
    done = run(
        """
        import kopf
        import precedent.handlers
        import precedent.cli
        assert "kubernetes" not in sys.modules, sorted(m for m in sys.modules if "kube" in m)
        print("ok")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_plugin_says_how_to_install_the_client() -> None:
    done = run("from precedent.plugin_entry import main\nsys.argv = ['kubectl-precedent']\nmain()")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'precedent[kubectl]'" in lines[0]


def test_a_live_graph_says_how_to_install_the_client() -> None:
    done = run(
        "from precedent.cli import main\nsys.argv = ['precedent', 'graph']\nmain()",
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'precedent[kubectl]'" in lines[0]
