"""Precedent with its assessment replayed: what kopf's handling of Precedent's requests costs.

The operator's own handlers (``precedent.handlers``), except that ``Assessor.assess`` answers a
request with the assessment it made for the first request of the same action, instead of
scoring it again. Everything else runs as in Precedent: the handlers and their filters, the
status built and signed for each request, the Event, kopf's patch and diff base. The bench
(``BENCH_OPERATOR_REPLAY=1``) runs it next to the two others: Precedent's throughput with an
assessment that costs (almost) nothing, the bound its handling alone sets on the ratio.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from precedent.handlers import *  # noqa: F403 - the operator's handlers, registered with kopf
from precedent.models import Assessment
from precedent.services.assessment import Assessor

_assess = Assessor.assess
_made: dict[str, Assessment] = {}


async def _replayed(
    self: Assessor,
    spec: Mapping[str, Any],
    *,
    now: datetime | None = None,
    namespace: str | None = None,
) -> Assessment:
    action = str(spec.get("action"))
    found = _made.get(action)
    if found is None:
        found = _made[action] = await _assess(self, spec, now=now, namespace=namespace)
    return found


Assessor.assess = _replayed  # type: ignore[method-assign]
