"""TLS for an authenticating sandbox: kubectl (client-go) sends bearer tokens only to
``https://`` servers, so a sandbox with a token file serves HTTPS.

A certificate and key can be given (``--tls-cert-file``/``--tls-private-key-file``, as
kube-apiserver takes them); otherwise a self-signed one for ``localhost``/``127.0.0.1``/``::1``
is made with the ``openssl`` command, valid for a day, and the kubeconfig trusts it
(``certificate-authority-data``).
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TlsFiles", "generate_self_signed", "server_context"]


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """A PEM certificate and its private key."""

    cert: Path
    """The certificate (also the CA a client trusts, when self-signed)."""
    key: Path
    """The private key."""


def generate_self_signed(directory: Path, host: str) -> TlsFiles:
    """A self-signed certificate for loopback (and ``host``) in ``directory``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise OSError(
            "serving HTTPS needs the openssl command to make a certificate, or "
            "--tls-cert-file and --tls-private-key-file"
        )
    cert, key = directory / "sandbox.crt", directory / "sandbox.key"
    names = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::", ""):
        names.append(
            f"IP:{host}"
            if host.replace(".", "").replace(":", "").isalnum() and any(c.isdigit() for c in host)
            else f"DNS:{host}"
        )
    completed = subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=precedent-sandbox",
            "-addext",
            "subjectAltName=" + ",".join(names),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise OSError(f"openssl could not make a certificate: {completed.stderr.strip()}")
    return TlsFiles(cert, key)


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """The server's SSL context."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(files.cert), str(files.key))
    return context


def temporary_directory() -> tempfile.TemporaryDirectory[str]:
    """Where a generated certificate lives while the sandbox runs."""
    return tempfile.TemporaryDirectory(prefix="precedent-sandbox-tls-")
