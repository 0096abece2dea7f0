"""``precedent sandbox``: run the sandbox API server until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path

import click

from precedent_sandbox.server import DEFAULT_CRDS_DIR, Sandbox

__all__ = ["sandbox_command"]

DEFAULT_KUBECONFIG = Path(".precedent/sandbox/kubeconfig")


def _default_crds() -> Path | None:
    # The repository's crds/ when run from a checkout; otherwise ./crds if there is one.
    if DEFAULT_CRDS_DIR.is_dir():
        return DEFAULT_CRDS_DIR
    local = Path("crds")
    return local if local.is_dir() else None


async def _serve(sandbox: Sandbox, kubeconfig: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await sandbox.start()
    try:
        written = sandbox.write_kubeconfig(kubeconfig)
        click.echo(
            f"sandbox API server listening on {sandbox.url}; kubeconfig: {written} "
            f"(export KUBECONFIG={written})"
        )
        await stop.wait()
    finally:
        await sandbox.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    click.echo("sandbox API server stopped")


@click.command("sandbox")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="0: a free port."
)
@click.option(
    "--crds",
    "crds_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Directory of CRD YAML registered at start. Default: the repository's crds/.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_KUBECONFIG,
    show_default=True,
    help="Where to write a kubeconfig that points at the sandbox.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log every request.")
def sandbox_command(
    host: str, port: int, crds_dir: Path | None, kubeconfig: Path, verbose: bool
) -> None:
    """Serve an in-memory Kubernetes API on loopback for kubectl and the operator."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    sandbox = Sandbox(
        crds_dir if crds_dir is not None else _default_crds(),
        host=host,
        port=port,
        access_log=verbose,
    )
    asyncio.run(_serve(sandbox, kubeconfig))
