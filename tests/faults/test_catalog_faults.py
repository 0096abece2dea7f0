"""Catalog faults at operator level: the real operator (its own process) with a remote catalog
(``PRECEDENT_CATALOG=http://…``) that hangs, answers 500, sends a truncated body or drops the
connection. Every request is still Ready, its playbook chosen by the in-process fallback, and
``ai_success_rate_queries_total`` counts exactly the queries that reached the server.

One query per selection (``PRECEDENT_CATALOG_RETRIES=0``) and a breaker that never opens here
make the count exact: each failed selection is one query the server saw, each an ``error``.
The breaker's own refusals (nothing sent, nothing counted) are tested at the adapter level
(tests/integration/catalog).
"""

from __future__ import annotations

import copy
import socket
from pathlib import Path

import httpx
import pytest

from precedent.demo import apply
from tests.faults.catalog_server import FAULTS, faulty_catalog
from tests.faults.rig import (
    REQUESTS,
    operator_process,
    requests_by_name,
    sandbox_process,
    template,
    wait_for,
)
from tests.integration.conftest import DATA, is_true

pytestmark = [pytest.mark.faults, pytest.mark.integration]

PER_FAULT = 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sent_queries(metrics_url: str) -> dict[str, float]:
    """``ai_success_rate_queries_total`` by status, scraped from the operator."""
    found: dict[str, float] = {}
    for line in httpx.get(metrics_url, timeout=10).text.splitlines():
        if line.startswith("ai_success_rate_queries_total{"):
            labels, value = line.rsplit(" ", 1)
            found[labels.split('status="')[1].split('"')[0]] = float(value)
    return found


def test_every_catalog_fault_is_answered_by_the_fallback_and_counted_as_sent(
    tmp_path: Path,
) -> None:
    log = tmp_path / "operator.log"
    port = free_port()
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    with (
        sandbox_process(tmp_path) as sandbox,
        httpx.Client(base_url=sandbox.url, timeout=60) as client,
        faulty_catalog() as catalog,
    ):
        apply(client, [DATA / "incidents", DATA / "playbooks"])
        settings = {
            "PRECEDENT_CATALOG": catalog.url,
            "PRECEDENT_CATALOG_RETRIES": "0",
            "PRECEDENT_BREAKER_FAILURE_THRESHOLD": "1000",
            "PRECEDENT_METRICS_PORT": str(port),
        }
        with operator_process(sandbox.kubeconfig, log, **settings):
            for fault in FAULTS:
                catalog.fault = fault
                names = [f"{fault}-{i}" for i in range(PER_FAULT)]
                for name in names:
                    body = copy.deepcopy(template())
                    body["metadata"]["name"] = name
                    assert client.post(REQUESTS, json=body).status_code == 201

                def ready(names: list[str] = names) -> set[str]:
                    objs = requests_by_name(client)
                    return {n for n in names if n in objs and is_true(objs[n], "Ready")}

                wait_for(
                    lambda names=names: ready(names) == set(names),
                    120,
                    lambda names=names, fault=fault: (
                        f"{fault}: not Ready {sorted(set(names) - ready(names))}"
                    ),
                )
            counted = wait_for(
                lambda: sent_queries(metrics_url),
                30,
                lambda: "no ai_success_rate_queries_total on /metrics",
            )
        final = requests_by_name(client)
    text = log.read_text(errors="replace")

    for fault in FAULTS:
        assert catalog.hits.get(fault, 0) >= PER_FAULT, (fault, catalog.hits)  # really injected
        for i in range(PER_FAULT):
            playbook = final[f"{fault}-{i}"]["status"]["playbook"]
            assert playbook["selectionMethod"] == "fallback", (fault, playbook)
            assert playbook["id"], (fault, playbook)
    # A hanging catalog is cut by the selection deadline (0.5 s by default), not by the
    # 2 s request timeout.
    assert "timed out after 0.5 s" in final["hang-0"]["status"]["playbook"]["rationale"]
    assert counted.get("success", 0) == 0, counted
    assert counted.get("error", 0) == sum(catalog.hits.values()), (counted, catalog.hits)
    assert "Traceback" not in text
    print(
        f"\nfault suite: catalog faults {dict(catalog.hits)} (queries that reached the server); "
        f"{len(FAULTS) * PER_FAULT} requests Ready from the fallback; "
        f"ai_success_rate_queries_total {counted}"
    )
