"""A flood in one namespace does not hold up another: the real operator against the sandbox.

Two hundred requests wait in namespace ``a-flood`` and one in ``z-quiet`` when the operator
starts, so kopf's initial listing hands it all of them at once, the quiet one last (the
sandbox lists by namespace, then name). Namespaces take turns for the answering slots, so the
quiet request is answered among the first few dozen; in arrival order it would be answered
after at least 168 of the flood (200 less the slots already taken). The order is the order in
which the answers reached the API server, read from a watch: no clock is involved.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.test_trust_facts import namespace

pytestmark = pytest.mark.integration

FLOOD = 200
PATH = "/apis/precedent.dev/v1alpha1/remediationrequests"


def request(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "precedent.dev/v1alpha1",
        "kind": "RemediationRequest",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "action": "scale_deployment",
            "target": {"kind": "Deployment", "name": f"web-{name}", "namespace": ns},
            "description": "Scale the web tier up for the evening traffic.",
            "requester": "rita",
        },
    }


class AnswerOrder:
    """Names of requests in the order their first answer (a status with a mark) was written."""

    def __init__(self, base_url: str, resource_version: str) -> None:
        self.names: list[str] = []
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(5, read=None))
        self._params = {"watch": "true", "resourceVersion": resource_version}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> AnswerOrder:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._client.close()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            with self._client.stream("GET", PATH, params=self._params) as response:
                for line in response.iter_lines():
                    if self._stop.is_set():
                        return
                    if line:
                        self._note(json.loads(line).get("object") or {})
        except httpx.HTTPError:
            if not self._stop.is_set():
                raise

    def _note(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if (obj.get("status") or {}).get("mark") and key not in self._seen:
            self._seen.add(key)
            self.names.append(key)


def test_a_flood_in_one_namespace_does_not_hold_up_another(cluster: Cluster) -> None:
    namespace(cluster, "a-flood", "staging")
    namespace(cluster, "z-quiet", "staging")
    for i in range(FLOOD):
        created = cluster.client.post(
            "/apis/precedent.dev/v1alpha1/namespaces/a-flood/remediationrequests",
            json=request(f"flood-{i:03d}", "a-flood"),
        )
        assert created.status_code == 201, created.text
    created = cluster.client.post(
        "/apis/precedent.dev/v1alpha1/namespaces/z-quiet/remediationrequests",
        json=request("quiet", "z-quiet"),
    )
    assert created.status_code == 201, created.text
    listed = cluster.client.get(PATH).json()
    items = listed["items"]
    listed_order = [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in items]
    # The premise: the quiet request reaches the operator last.
    assert listed_order[-1] == "z-quiet/quiet"

    since = listed["metadata"]["resourceVersion"]
    with (
        AnswerOrder(str(cluster.client.base_url), since) as order,
        cluster.operator(stop_timeout=120),
    ):
        eventually(lambda: len(order.names) == FLOOD + 1, timeout=300)
    position = order.names.index("z-quiet/quiet")
    assert position < 50, f"the quiet request was answered after {position} flood requests"
