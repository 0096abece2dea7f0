"""``precedent-sandbox``: run the sandbox API server until SIGINT or SIGTERM.

The CRDs registered at start come from the first of: ``--crds DIR``, ``$PRECEDENT_CRDS_DIR``,
``./crds`` if that directory exists; otherwise it starts with none (``kubectl apply -f`` can
register them later). ``--ready-file PATH`` is written once it listens, for a parent process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from pathlib import Path

import click
import yaml

from precedent_sandbox.auth import TokenFileError
from precedent_sandbox.errors import ApiError
from precedent_sandbox.runner import AUTHORIZATION_MODES, Sandbox

__all__ = ["CRDS_ENV", "find_crds_dir", "main", "sandbox_command"]

DEFAULT_KUBECONFIG = Path(".precedent/sandbox/kubeconfig")
CRDS_ENV = "PRECEDENT_CRDS_DIR"


def find_crds_dir(option: Path | None) -> Path | None:
    """The CRD directory: ``option`` (``--crds`` or ``$PRECEDENT_CRDS_DIR``), else ``./crds``."""
    if option is not None:
        return option
    local = Path("crds")
    return local if local.is_dir() else None


def write_ready_file(path: Path, sandbox: Sandbox, kubeconfig: Path) -> None:
    """Write ``{"url", "kubeconfig", "pid"}`` to ``path`` atomically (a reader never sees half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    body = {"url": sandbox.url, "kubeconfig": str(kubeconfig.resolve()), "pid": os.getpid()}
    partial.write_text(json.dumps(body) + "\n", encoding="utf-8")
    partial.replace(path)


async def _serve(sandbox: Sandbox, kubeconfig: Path, ready_file: Path | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await sandbox.start()
    try:
        written = sandbox.write_kubeconfig(kubeconfig)
        if ready_file is not None:
            write_ready_file(ready_file, sandbox, written)
        click.echo(
            f"sandbox API server listening on {sandbox.url}; kubeconfig: {written} "
            f"(export KUBECONFIG={written})"
        )
        await stop.wait()
    finally:
        await sandbox.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        if ready_file is not None:
            # A stale file would point the next reader at a port nobody listens on.
            ready_file.unlink(missing_ok=True)
    click.echo("sandbox API server stopped")


@click.command("precedent-sandbox", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="0: a free port."
)
@click.option(
    "--crds",
    "crds_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    envvar=CRDS_ENV,
    help=f"Directory of CRD YAML registered at start. Default: ${CRDS_ENV}, else ./crds if "
    "present, else none.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_KUBECONFIG,
    show_default=True,
    help="Where to write a kubeconfig that points at the sandbox.",
)
@click.option(
    "--ready-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='Write {"url", "kubeconfig", "pid"} as JSON here once listening (removed on stop).',
)
@click.option(
    "--token-auth-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='Authenticate bearer tokens from this CSV (token,user,uid,"group1,group2"), as '
    "kube-apiserver does; turns RBAC on. The kubeconfig gets one context per user.",
)
@click.option(
    "--authorization-mode",
    type=click.Choice(AUTHORIZATION_MODES),
    default=None,
    help="RBAC or AlwaysAllow. Default: RBAC with --token-auth-file, else AlwaysAllow.",
)
@click.option(
    "--tls-cert-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Serve HTTPS with this PEM certificate (default with --token-auth-file: a "
    "self-signed one made with openssl).",
)
@click.option(
    "--tls-private-key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The private key of --tls-cert-file.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log every request.")
def sandbox_command(
    host: str,
    port: int,
    crds_dir: Path | None,
    kubeconfig: Path,
    ready_file: Path | None,
    token_auth_file: Path | None,
    authorization_mode: str | None,
    tls_cert_file: Path | None,
    tls_private_key_file: Path | None,
    verbose: bool,
) -> None:
    """Serve an in-memory Kubernetes API on loopback for kubectl and the operator."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    found = find_crds_dir(crds_dir)
    try:
        sandbox = Sandbox(
            found,
            host=host,
            port=port,
            access_log=verbose,
            token_auth_file=token_auth_file,
            authorization_mode=authorization_mode,
            tls_cert_file=tls_cert_file,
            tls_private_key_file=tls_private_key_file,
        )
    except TokenFileError as error:
        raise click.ClickException(str(error)) from None
    except ApiError as error:
        raise click.ClickException(f"CRDs in {found}: {error.message}") from None
    except (yaml.YAMLError, OSError) as error:
        reason = str(error).replace("\n", " ")
        raise click.ClickException(f"CRDs in {found}: {reason}") from None
    try:
        asyncio.run(_serve(sandbox, kubeconfig, ready_file))
    except OSError as error:  # the port is taken, the kubeconfig cannot be written, …
        raise click.ClickException(str(error)) from None


def main() -> None:
    """Console-script entry point."""
    sandbox_command()
