"""Metric labels taken from input stay bounded: 10,000 made-up incident types, or a catalog
answering with 10,000 made-up playbook ids, make a bounded number of series."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from precedent.adapters.catalog_local import LocalPlaybookCatalog
from precedent.core.playbooks import CatalogAnswer, PlaybookQuery, ScoredPlaybook
from precedent.metrics import MAX_LABEL_VALUES, OTHER, BoundedLabel, Metrics
from precedent.services import PlaybookSelector

CATALOG = Path(__file__).resolve().parents[1] / "data" / "playbooks"
SELECTIONS = "ai_playbook_selections_total"


def series(metrics: Metrics) -> list[dict[str, str]]:
    """The label sets of every ai_playbook_selections_total series."""
    return [
        sample.labels
        for family in metrics.registry.collect()
        if family.name == SELECTIONS.removesuffix("_total")
        for sample in family.samples
        if sample.name == SELECTIONS
    ]


def query(incident_type: str, text: str = "OOMKilled pod keeps restarting") -> PlaybookQuery:
    return PlaybookQuery.create(text, [("incident-type", incident_type)], min_confidence=0.5)


async def test_ten_thousand_incident_types_make_a_bounded_number_of_series() -> None:
    metrics = Metrics(CollectorRegistry())
    local = LocalPlaybookCatalog.from_paths([CATALOG])
    async with PlaybookSelector(
        local, metrics=metrics, min_confidence=0.5, declares=local.declares_incident_type
    ) as selector:
        await selector.select_query(query("pod-oom-killer"))  # one the catalog declares
        for n in range(10_000):
            await selector.select_query(query(f"made-up-{n}"))
    found = series(metrics)
    types = {labels["incident_type"] for labels in found}
    assert types == {"pod-oom-killer", OTHER}
    assert len(found) <= 2 * (len(local) + 1)  # types × (playbooks + manual_investigation)
    total = sum(metrics.registry.get_sample_value(SELECTIONS, labels) or 0 for labels in found)
    assert total == 10_001  # bounded, yet nothing lost


class MadeUpCatalog:
    """A catalog port that answers every query with a playbook id never seen before."""

    kind = "http"
    name = "made-up catalog"

    def __init__(self) -> None:
        self.count = 0

    async def search(self, query: PlaybookQuery, *, budget: float | None = None) -> CatalogAnswer:
        self.count += 1
        playbook = ScoredPlaybook(
            id=f"pb-{self.count}", version="v1", description="d", confidence=0.9
        )
        return CatalogAnswer(candidates=(playbook,), total=1, source=self.name)

    async def aclose(self) -> None:
        pass


async def test_ten_thousand_playbook_ids_from_a_catalog_are_capped() -> None:
    metrics = Metrics(CollectorRegistry())
    selector = PlaybookSelector(MadeUpCatalog(), metrics=metrics, min_confidence=0.5)
    for n in range(10_000):
        await selector.select_query(query("pod-oom-killer", f"text {n}"))
    ids = {labels["playbook_id"] for labels in series(metrics)}
    assert len(ids) == MAX_LABEL_VALUES + 1
    assert OTHER in ids


def test_a_bounded_label_admits_known_values_up_to_its_limit() -> None:
    label = BoundedLabel(limit=2, always=frozenset({"unknown"}))
    assert label("a", known=True) == "a"
    assert label("x", known=False) == OTHER
    assert label("b", known=True) == "b"
    assert label("c", known=True) == OTHER  # the limit is reached
    assert label("a", known=True) == "a"  # admitted before
    assert label("unknown", known=False) == "unknown"
