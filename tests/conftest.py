"""Shared fixtures: paths to the repository's bundled data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return REPO


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The bundled data directory."""
    return DATA
