"""The guard's certificates: a CA, a serving certificate it signs for the Service name and
loopback, and the webhook configuration pointed at the operator (adapters.guard_tls)."""

from __future__ import annotations

import asyncio
import base64
import ssl
from pathlib import Path
from typing import Any

from cryptography import x509

from precedent.adapters.guard_tls import issue_serving, make_ca, point_configuration


def test_the_serving_certificate_is_trusted_through_the_ca_for_its_names(tmp_path: Path) -> None:
    ca_cert, ca_key = make_ca()
    cert, key = issue_serving(
        ca_cert, ca_key, ["precedent-guard.precedent-system.svc", "127.0.0.1"]
    )
    sans = (
        x509.load_pem_x509_certificate(cert)
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )
    assert sans.get_values_for_type(x509.DNSName) == ["precedent-guard.precedent-system.svc"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")  # a valid pair
    client = ssl.create_default_context(cadata=ca_cert.decode())
    assert client.get_ca_certs()[0]["subject"] == ((("commonName", "precedent-guard-ca"),),)


class FakeApi:
    def __init__(self, found: dict[str, Any] | None) -> None:
        self.found = found
        self.patched: dict[str, Any] | None = None

    async def get_object(self, path: str) -> dict[str, Any] | None:
        return self.found

    async def patch_object(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.patched = body
        return body


def test_the_configuration_is_pointed_at_the_operator() -> None:
    config = {
        "metadata": {"resourceVersion": "5"},
        "webhooks": [
            {
                "name": "scale-enforce.guard.precedent.dev",
                "clientConfig": {"service": {"name": "precedent-guard", "path": "/guard-enforce"}},
            }
        ],
    }
    api = FakeApi(config)
    pointed = asyncio.run(point_configuration(api, "precedent-guard", b"CA", "https://127.0.0.1:9"))  # type: ignore[arg-type]
    assert pointed == 1
    assert api.patched is not None
    (hook,) = api.patched["webhooks"]
    assert hook["clientConfig"] == {
        "url": "https://127.0.0.1:9/guard-enforce",
        "caBundle": base64.b64encode(b"CA").decode(),
    }
    assert api.patched["metadata"] == {"resourceVersion": "5"}
    # In the cluster (no URL) the Service stays; with cert-manager (no CA) nothing but the URL.
    api = FakeApi(config)
    asyncio.run(point_configuration(api, "precedent-guard", b"CA", None))  # type: ignore[arg-type]
    assert api.patched is not None
    assert api.patched["webhooks"][0]["clientConfig"]["service"]["path"] == "/guard-enforce"
    assert asyncio.run(point_configuration(FakeApi(None), "x", b"CA", None)) == 0  # type: ignore[arg-type]
