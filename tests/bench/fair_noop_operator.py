"""A fair no-op kopf operator: what any operator that must answer a request costs.

It does no assessment, but writes what an answer is made of: a status of the size of
Precedent's (``fair_status.json``, one of Precedent's answers to a bench request, with its
Ready condition and observed generation set per request) and one Event per request, posted
through its own API client before the status is written, as Precedent posts its decision
Event. kopf keeps its state in the status as it does for Precedent, with kopf's own diff base
(the whole object; Precedent's keeps the spec, labels and annotations only): what a plain kopf
operator does. The bare no-op (``noop_operator.py``) writes a Ready condition only; the ratio
to this one is the one the performance target is stated against.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import kopf

from tests.bench.noop_settings import keep_state_in_status

STATUS = json.loads((Path(__file__).with_name("fair_status.json")).read_text(encoding="utf-8"))


class _Client:
    """An aiohttp session logged in as kopf logs in (a kubeconfig's server, token and CA)."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.server = ""

    async def open(self, info: kopf.ConnectionInfo) -> None:
        headers = {"Authorization": f"Bearer {info.token}"} if info.token else {}
        ssl: Any = False
        if info.ca_path or info.ca_data:
            import ssl as ssl_module

            context = ssl_module.create_default_context(cafile=info.ca_path)
            if info.ca_data:  # the kubeconfig's certificate-authority-data, base64
                context.load_verify_locations(cadata=base64.b64decode(info.ca_data).decode())
            if info.insecure:
                context.check_hostname = False
                context.verify_mode = ssl_module.CERT_NONE
            ssl = context
        self.server = info.server.rstrip("/")
        self.session = aiohttp.ClientSession(
            headers=headers, connector=aiohttp.TCPConnector(ssl=ssl, limit=32)
        )

    async def post_event(self, body: kopf.Body, message: str) -> None:
        assert self.session is not None
        meta = body.meta
        namespace = str(meta.namespace or "default")
        digest = hashlib.sha256(f"{meta.uid}\0Assessed\0{message}".encode()).hexdigest()[:16]
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.name}.{digest}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": body.get("apiVersion"),
                "kind": body.get("kind"),
                "name": meta.name,
                "namespace": namespace,
                "uid": meta.uid,
            },
            "reason": "Assessed",
            "message": message[:1024],
            "type": "Normal",
            "source": {"component": "fair-noop"},
            "reportingComponent": "fair-noop",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        url = f"{self.server}/api/v1/namespaces/{namespace}/events"
        async with self.session.post(url, json=event) as response:
            if response.status not in (201, 409):
                raise kopf.TemporaryError(f"Event not posted: HTTP {response.status}", delay=1)

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()


CLIENT = _Client()


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Same bookkeeping as Precedent: kopf state in status, no annotations; its own client."""
    keep_state_in_status(settings)
    info = kopf.login_with_kubeconfig(settings=settings)
    if info is None:
        raise kopf.PermanentError("no credentials")
    await CLIENT.open(info)


@kopf.on.cleanup()
async def close(**_: Any) -> None:
    await CLIENT.close()


@kopf.on.create("precedent.dev", "v1alpha1", "remediationrequests", id="assess")
async def answer(body: kopf.Body, patch: kopf.Patch, meta: kopf.Meta, **_: Any) -> None:
    """Post one Event, then write a status of Precedent's size, without assessing."""
    status = copy.deepcopy(STATUS)
    status["observedGeneration"] = meta.get("generation", 1)
    message = str(status.get("message") or "answered")
    await CLIENT.post_event(body, message)
    patch.status.update(status)
