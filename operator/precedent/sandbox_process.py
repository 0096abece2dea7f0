"""The sandbox API server as a child process: ``precedent sandbox`` and the demo's server.

The sandbox is its own distribution (``precedent-sandbox``, ``pip install ./sandbox``); the
product never imports it and runs ``python -m precedent_sandbox`` instead, reading the URL and
kubeconfig from the ``--ready-file`` the sandbox writes once it listens.

CRDs are found by one rule, the first that applies:

1. ``--crds DIR``;
2. ``$PRECEDENT_CRDS_DIR``;
3. ``./crds`` if that directory exists (a checkout);
4. the copy installed with the product: ``<prefix>/share/precedent/crds`` (a wheel), or the
   checkout's ``crds/`` when the product is installed in editable mode.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import click

__all__ = [
    "CRDS_ENV",
    "SANDBOX_MODULE",
    "SandboxProcess",
    "find_crds_dir",
    "installed_crds_dir",
    "sandbox_argv",
    "sandbox_command",
]

SANDBOX_MODULE = "precedent_sandbox"
CRDS_ENV = "PRECEDENT_CRDS_DIR"
INSTALL_HINT = (
    "the sandbox API server is not installed: run `pip install ./sandbox` in a Precedent "
    "checkout (or `make install`)"
)
# Where the product's build installs crds/ (data-files in pyproject.toml).
_SHARED_CRDS = Path("share") / "precedent" / "crds"


def installed_crds_dir() -> Path | None:
    """The CRDs installed with the product, or the checkout's ``crds/`` (editable install)."""
    candidates = [
        Path(sysconfig.get_path("data")) / _SHARED_CRDS,
        # operator/precedent/sandbox_process.py → the checkout's root.
        Path(__file__).resolve().parents[2] / "crds",
    ]
    return next((path for path in candidates if path.is_dir()), None)


def find_crds_dir(option: Path | None) -> Path | None:
    """The CRD directory by the rule above (``option`` is ``--crds`` or ``$PRECEDENT_CRDS_DIR``)."""
    if option is not None:
        return option
    local = Path("crds")
    return local if local.is_dir() else installed_crds_dir()


def sandbox_argv(*args: str) -> list[str]:
    """The command line running the sandbox with ``args``; one clear error if not installed."""
    if importlib.util.find_spec(SANDBOX_MODULE) is None:
        raise click.ClickException(INSTALL_HINT)
    return [sys.executable, "-m", SANDBOX_MODULE, *args]


class SandboxProcess:
    """``with SandboxProcess(crds_dir, workdir) as sb:`` a sandbox child process on a free port.

    ``sb.url`` and ``sb.kubeconfig`` are read from its ready file; leaving the block stops it
    (SIGINT, then SIGKILL after ``stop_timeout`` s). Its output goes to ``workdir/sandbox.log``.
    """

    def __init__(
        self,
        crds_dir: Path | None,
        workdir: Path,
        *,
        start_timeout: float = 30.0,
        stop_timeout: float = 15.0,
    ) -> None:
        self.crds_dir = crds_dir
        self.workdir = workdir
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.url = ""
        self.kubeconfig = workdir / "kubeconfig"
        self.log = workdir / "sandbox.log"
        self._ready = workdir / "sandbox-ready.json"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> SandboxProcess:
        """Start the child and return once it listens (its ready file exists)."""
        args = ["--port", "0", "--kubeconfig", str(self.kubeconfig)]
        args += ["--ready-file", str(self._ready)]
        if self.crds_dir is not None:
            args += ["--crds", str(self.crds_dir)]
        argv = sandbox_argv(*args)
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as sink:
            self._process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout
        while not self._ready.exists():
            if self._process.poll() is not None:
                raise click.ClickException(
                    f"the sandbox API server did not start: {self._last_log_line()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise click.ClickException(
                    f"the sandbox API server did not start within {self.start_timeout:.0f} s"
                )
            time.sleep(0.05)
        ready: dict[str, Any] = json.loads(self._ready.read_text(encoding="utf-8"))
        self.url = str(ready["url"])
        self.kubeconfig = Path(ready["kubeconfig"])
        return self

    def stop(self) -> None:
        """Stop the child (SIGINT, as Ctrl-C would) and wait for it."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> SandboxProcess:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _last_log_line(self) -> str:
        lines = self.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return lines[-1] if lines else "it exited without output"


@click.command(
    "sandbox",
    # Every option is precedent-sandbox's own (see `precedent sandbox --help`): passed through.
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def sandbox_command(args: tuple[str, ...]) -> None:
    """Serve an in-memory Kubernetes API on loopback (the precedent-sandbox package).

    The arguments go to ``precedent-sandbox``; without ``--crds`` the CRDs are found by
    Precedent's rule (``$PRECEDENT_CRDS_DIR``, ``./crds``, the copy installed with Precedent).
    """
    passed = list(args)
    if not any(a == "--crds" or a.startswith("--crds=") for a in passed):
        found = find_crds_dir(None)
        if found is not None:
            passed += ["--crds", str(found)]
    argv = sandbox_argv(*passed)
    # Replaced by the sandbox: signals, output and the exit code are its own.
    os.execv(argv[0], argv)
