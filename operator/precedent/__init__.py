"""Precedent: scores remediation requests against incident history and picks a playbook."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("precedent")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
