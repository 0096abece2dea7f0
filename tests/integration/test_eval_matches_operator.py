"""``precedent eval`` measures the ranking the operator writes into ``similarIncidents``."""

from __future__ import annotations

from datetime import datetime

import pytest

from precedent.adapters.evaluation import EvalQuery
from precedent.adapters.loader import iter_documents
from precedent.core.policy import ActionRegistry
from precedent.core.readings import searched_as
from precedent.services.assessment import parse_request_spec
from precedent.services.evaluation import rank_for_query
from precedent.settings import Settings
from precedent.wiring import build_service
from tests.integration.conftest import DATA, Cluster

pytestmark = pytest.mark.integration


def test_eval_ranks_like_the_operators_similar_incidents(cluster: Cluster) -> None:
    bodies = [doc.body for doc in iter_documents([DATA / "requests"])]
    for body in bodies:
        assert cluster.create(body).status_code == 201
    with cluster.operator():
        answered = [cluster.wait_ready(b["metadata"]["name"]) for b in bodies]

    # The same history the cluster holds, read from files as `precedent eval` reads it.
    scorer = build_service(
        Settings(history_path=DATA / "incidents", catalog=""), require_history=True
    ).assessor.scorer
    compared = 0
    for obj in answered:
        listed = [s["id"] for s in obj["status"].get("similarIncidents", [])]
        spec = parse_request_spec(obj["spec"])
        query = EvalQuery(0, searched_as(spec, ActionRegistry()), "", frozenset({"-"}), frozenset())
        created = datetime.fromisoformat(
            obj["metadata"]["creationTimestamp"].replace("Z", "+00:00")
        )
        ranked = rank_for_query(scorer, query, depth=len(listed), now=created)
        assert ranked == listed, obj["metadata"]["name"]
        compared += bool(listed)
    assert compared >= 10  # most example requests have precedents to compare
