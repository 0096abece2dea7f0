"""Shared paths and the promtool / prometheus binaries (Debian's ``prometheus`` package)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "manifests" / "monitoring"
RULES = MONITORING / "rules" / "precedent.rules.yaml"
INSTALL_HINT = "install it with `apt-get install -y prometheus` (Debian/Ubuntu; see .ci/run)"


def binary(name: str) -> str:
    """The path of ``name`` on PATH, or skip the test saying how to install it."""
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed: {INSTALL_HINT}")
    return found


def readme_anchors() -> set[str]:
    """The anchors GitHub gives the headings of the monitoring page (the alerts' runbooks):
    lower case, punctuation dropped."""
    anchors = set()
    for line in (REPO / "docs" / "monitoring.md").read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors
