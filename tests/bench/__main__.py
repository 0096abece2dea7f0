"""Run every benchmark: ``python -m tests.bench [NAME ...]`` (``make bench``).

Each ``tests/bench/bench_*.py`` module has a ``main() -> None`` that prints its own report:
medians, p99s and ratios measured in the same run. Nothing here asserts a wall-clock time.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import tests.bench as package


def main(argv: list[str]) -> int:
    names = sorted(
        m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("bench_")
    )
    wanted = [n for n in names if not argv or any(a in n for a in argv)]
    for name in wanted:
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        importlib.import_module(f"tests.bench.{name}").main()
        print(f"({name} took {time.perf_counter() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
