"""What the operator's start-up sets for the rest of its life, checked on the running operator
(kopf's KopfRunner, in this process) once it has answered a request: kopf's per-object
workers let go of an answered request after WORKER_IDLE_SECONDS, and the heap start-up built
is frozen out of the garbage collector with its thresholds raised (precedent.adapters.heap)."""

from __future__ import annotations

import gc

import kopf
import pytest
from kopf.testing import KopfRunner

from precedent.adapters.heap import COLLECTOR_THRESHOLDS
from precedent.handlers import WORKER_IDLE_SECONDS
from tests.integration.conftest import Cluster
from tests.integration.test_operator import seed_requests

pytestmark = pytest.mark.integration


def test_the_running_operator_keeps_workers_briefly_and_its_start_up_heap_frozen(
    cluster: Cluster,
) -> None:
    thresholds = gc.get_threshold()
    gc.unfreeze()
    settings = kopf.OperatorSettings()
    args = ["run", "-m", "precedent.handlers", "--all-namespaces", "--standalone"]
    try:
        with KopfRunner(args, timeout=60, settings=settings) as runner:
            body = seed_requests()[0]
            assert cluster.create(body).status_code == 201
            cluster.wait_ready(body["metadata"]["name"])
            frozen = gc.get_freeze_count()
            collector = gc.get_threshold()
        assert runner.exception is None or isinstance(runner.exception, SystemExit)
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert settings.queueing.idle_timeout == WORKER_IDLE_SECONDS < 5.0  # kopf's default: 5 s
    # The history, the index and the modules: many thousands of objects, not a few.
    assert frozen > 10_000
    assert collector == COLLECTOR_THRESHOLDS
