"""The guard webhook's certificates, and the webhook configuration pointed at them.

Where cert-manager provides the serving certificate (``PRECEDENT_GUARD_CERT_DIR`` with
``tls.crt`` and ``tls.key``, and its CA injector filling the configuration's ``caBundle``),
the operator only serves it. Otherwise the operator keeps a small CA in a Secret of its own
namespace (``precedent-guard-ca``; the first replica creates it, the others read it, so every
replica's certificate is trusted by the one ``caBundle``), issues itself a serving certificate
for the webhook's Service name (and loopback), and writes the CA into the
ValidatingWebhookConfiguration's ``caBundle`` — and, for an operator outside the cluster
(``PRECEDENT_GUARD_URL``), the URL the API server calls.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from precedent.adapters.kube_api import KubeApi
from precedent.errors import DependencyError, InputError

__all__ = ["GuardTls", "issue_serving", "make_ca", "point_configuration", "shared_ca"]

logger = logging.getLogger(__name__)

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
CA_DAYS = 3650
SERVING_DAYS = 365


@dataclass(frozen=True, slots=True)
class GuardTls:
    """Files the webhook server serves, and the CA bundle clients verify it with."""

    certfile: Path
    keyfile: Path
    ca_bundle: bytes | None
    """PEM of the CA; None where cert-manager injects it."""


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_ca(now: dt.datetime | None = None) -> tuple[bytes, bytes]:
    """A new CA: (certificate PEM, key PEM)."""
    now = now or dt.datetime.now(dt.UTC)
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "precedent-guard-ca")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def issue_serving(
    ca_cert: bytes, ca_key: bytes, names: Sequence[str], now: dt.datetime | None = None
) -> tuple[bytes, bytes]:
    """A serving certificate for ``names`` (DNS names and IP addresses) signed by the CA."""
    now = now or dt.datetime.now(dt.UTC)
    ca = x509.load_pem_x509_certificate(ca_cert)
    signer = serialization.load_pem_private_key(ca_key, password=None)
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise InputError("the guard CA key is not an EC key")
    key = _key()
    sans: list[x509.GeneralName] = []
    for name in names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=SERVING_DAYS))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(signer, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


async def shared_ca(api: KubeApi, namespace: str, secret: str) -> tuple[bytes, bytes]:
    """The CA in Secret ``namespace/secret``, created by whichever replica comes first."""
    path = f"/api/v1/namespaces/{namespace}/secrets"
    found = await api.get_object(f"{path}/{secret}")
    if found is None:
        cert, key = make_ca()
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {
                "name": secret,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/name": "precedent"},
            },
            "data": {
                "tls.crt": base64.b64encode(cert).decode(),
                "tls.key": base64.b64encode(key).decode(),
            },
        }
        if await api.create_object(path, body) == "created":
            return cert, key
        found = await api.get_object(f"{path}/{secret}")  # another replica was first
        if found is None:
            raise DependencyError(f"the guard CA secret {namespace}/{secret} vanished")
    data = found.get("data") or {}
    try:
        return base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"])
    except (KeyError, ValueError):
        raise InputError(
            f"secret {namespace}/{secret}: expected tls.crt and tls.key (a CA); delete it "
            "and the operator makes a new one"
        ) from None


async def point_configuration(
    api: KubeApi, name: str, ca_bundle: bytes | None, url: str | None
) -> int:
    """Point every webhook of ValidatingWebhookConfiguration ``name`` at this operator: the
    CA bundle (unless cert-manager injects it) and, with ``url``, the URL the API server
    calls (the webhook's ``service.path`` kept as the path). Returns the webhooks pointed;
    0 when the configuration is not installed."""
    found = await api.get_object(f"{WEBHOOKS}/{name}")
    if found is None:
        return 0
    webhooks: list[dict[str, Any]] = [dict(w) for w in found.get("webhooks") or []]
    for webhook in webhooks:
        config: dict[str, Any] = dict(webhook.get("clientConfig") or {})
        path = _path_of(config)
        if url is not None:
            config = {"url": url.rstrip("/") + path}
        if ca_bundle is not None:
            config["caBundle"] = base64.b64encode(ca_bundle).decode()
        webhook["clientConfig"] = config
    body = {
        "metadata": {"resourceVersion": (found.get("metadata") or {}).get("resourceVersion")},
        "webhooks": webhooks,
    }
    await api.patch_object(f"{WEBHOOKS}/{name}", body)
    return len(webhooks)


def _path_of(config: Mapping[str, Any]) -> str:
    service = config.get("service")
    if isinstance(service, Mapping) and service.get("path"):
        return str(service["path"])
    url = str(config.get("url") or "")
    if "://" in url:
        rest = url.split("://", 1)[1]
        return "/" + rest.split("/", 1)[1] if "/" in rest else ""
    return ""
