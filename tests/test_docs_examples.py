"""The command examples on the front page and in the reference pages are the real output of
the real command, so they cannot go stale: each ``$ precedent …`` line in a ``console`` block
that shows output is run (in a subprocess, from the repository root, with the clock fixed by
``PRECEDENT_AS_OF`` as the pages say) and its output compared line by line. A line ``…`` ends
what is compared (an abridged example).

To refresh the examples after a change that is meant to change them:
``PRECEDENT_DOCS_UPDATE=1 pytest tests/test_docs_examples.py``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/cli.md", "docs/risk-score.md", "docs/selection.md"]
AS_OF = "2026-11-25T00:00:00Z"
_BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Example:
    page: str
    command: str
    shown: list[str]

    @property
    def id(self) -> str:
        return f"{self.page}: {self.command[:60]}"


def _examples(page: str) -> list[Example]:
    found = []
    for block in _BLOCK.finditer((REPO / page).read_text()):
        lines = block[1].splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("$ precedent ") or re.search(r"[|>&\\]", line):
                continue
            shown = []
            for out in lines[i + 1 :]:
                if out.startswith("$ "):
                    break
                shown.append(out)
            if shown:
                found.append(Example(page, line[2:].split("  #")[0].strip(), shown))
    return found


EXAMPLES = [example for page in PAGES for example in _examples(page)]


def _run(command: str) -> list[str]:
    argv = shlex.split(command)
    env = {**os.environ, "PRECEDENT_AS_OF": AS_OF, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "precedent.cli", *argv[1:]],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    return done.stdout.rstrip("\n").splitlines()


def _compared(shown: list[str]) -> list[str]:
    return shown[: shown.index("…")] if "…" in shown else shown


def test_the_pages_have_examples_to_check() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_an_example_is_the_commands_real_output(example: Example) -> None:
    real = _run(example.command)
    shown = _compared(example.shown)
    if os.environ.get("PRECEDENT_DOCS_UPDATE") == "1" and real[: len(shown)] != shown:
        path = REPO / example.page
        old = "\n".join([f"$ {example.command}", *example.shown])
        text = path.read_text()
        if old not in text:  # a command with a trailing comment: keep the comment
            pytest.skip(f"could not find the block of {example.id} to rewrite")
        keep = ["…"] if "…" in example.shown else []
        new_output = real[: len(shown)] if keep else real
        path.write_text(text.replace(old, "\n".join([f"$ {example.command}", *new_output, *keep])))
        pytest.skip(f"rewrote {example.id}")
    assert real[: len(shown)] == shown
