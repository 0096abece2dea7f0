"""The ``kubectl-precedent`` console script: the plugin (:mod:`precedent.plugin`), or one line
saying how to install the Kubernetes client it talks to the cluster with (the ``kubectl``
extra; the operator's image does not carry it)."""

from __future__ import annotations

import sys

from precedent.errors import KUBECTL_EXTRA

__all__ = ["main"]


def main() -> None:
    """Run ``kubectl precedent``."""
    try:
        from precedent.plugin import main as plugin
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "kubernetes":
            raise
        print(f"error: kubectl precedent: {KUBECTL_EXTRA}", file=sys.stderr)
        sys.exit(1)
    plugin()
