"""kubectl, as a user runs it, pointed at an API server; the real-server fixtures."""

from __future__ import annotations

import subprocess
from pathlib import Path


class Kubectl:
    """kubectl pointed at one sandbox: ``kubectl("get", "rr")`` → CompletedProcess."""

    def __init__(self, kubeconfig: Path, cache: Path, binary: str = "kubectl") -> None:
        self.base = [binary, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache)]

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=120, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result
