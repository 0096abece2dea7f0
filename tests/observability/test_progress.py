"""Progress bars on the long CLI jobs: drawn on stderr when it is a terminal, never otherwise."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from tests.observability.conftest import REPO

INDEX = [sys.executable, "-m", "precedent.cli", "index", "--history", "data/incidents"]


def run(stderr_tty: bool) -> tuple[str, str]:
    """Run ``precedent index``: stdout on a pipe, stderr on a pty or a pipe."""
    env = {**os.environ, "PRECEDENT_EMBEDDER": "lexical", "COLUMNS": "100"}
    if not stderr_tty:
        done = subprocess.run(INDEX, cwd=REPO, env=env, capture_output=True, text=True, check=True)
        return done.stdout, done.stderr
    leader, follower = pty.openpty()
    with subprocess.Popen(
        INDEX, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=follower, text=True
    ) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        stdout = proc.stdout.read() if proc.stdout else ""
        assert proc.wait() == 0
    os.close(leader)
    return stdout, b"".join(chunks).decode(errors="replace")


def test_progress_bar_on_a_terminal_only() -> None:
    piped_out, piped_err = run(stderr_tty=False)
    tty_out, tty_err = run(stderr_tty=True)
    assert "embedding" not in piped_err
    assert "embedding" in tty_err
    assert "100%" in tty_err
    # The report on stdout is the same either way.
    assert piped_out == tty_out
    assert "vectors:" in tty_out
