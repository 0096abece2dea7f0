"""Every benchmark module imports: `make bench` runs them all, and a name one of them takes
from another (the operator launcher, the watch) must still exist after a change."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

MODULES = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))


@pytest.mark.parametrize("module", MODULES)
def test_the_benchmark_module_imports_and_has_a_main(module: str) -> None:
    loaded = importlib.import_module(f"tests.bench.{module}")
    assert callable(getattr(loaded, "main", None)), f"{module} has no main()"
