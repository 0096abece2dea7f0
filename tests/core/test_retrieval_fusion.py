"""The retrieval parts that carry over to an unseen history: the vocabulary's noun concepts,
the vocabulary in the sparse (BM25) leg, and seed 002's vector term in people's ranking."""

from __future__ import annotations

import pytest

from precedent.core.embedding import Bm25Match
from precedent.core.historical import evaluate_history, risk_model_named
from precedent.core.normalize import normalize_request
from precedent.core.snapshot import History
from precedent.core.vocabulary import concepts
from precedent.models import Incident, RemediationRequestSpec


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        ("HPA maxReplicas", "~autoscaler"),
        ("the horizontal pod autoscaler", "~autoscaler"),
        ("cluster-autoscaler", "~autoscaler"),
        ("agent pool", "~node-pool"),
        ("the nodepool", "~node-pool"),
        ("replicas keep going up and down", "~flapping"),
        ("the HPA oscillated", "~flapping"),
        ("pods in CrashLoopBackOff", "~crash-loop"),
        ("no space left on device", "~disk-full"),
        ("scaled to a single replica", "~single-replica"),
    ],
)
def test_nouns_fold_to_one_concept(text: str, concept: str) -> None:
    """The kubectl short name, the API kind and the spoken name of one object agree."""
    assert concept in concepts(text)


def test_bm25_leg_sees_the_vocabulary() -> None:
    """ "lower the replica count" shares no word with "scale-down", yet matches it through
    the concept term; without the vocabulary the sparse leg scores it 0."""
    docs = {
        "down": "Premature scale-down of the payment API",
        "restart": "Restart of payment-api dropped in-flight requests",
        "dns": "CoreDNS ConfigMap typo broke name resolution",
    }
    with_vocabulary, words_only = Bm25Match(), Bm25Match(vocabulary=False)
    for doc_id, text in docs.items():
        with_vocabulary.add(doc_id, text)
        words_only.add(doc_id, text)
    ids = list(docs)
    query = "lower the replica count of orders"
    scored = dict(zip(ids, with_vocabulary.match(query, ids).tolist(), strict=True))
    assert scored["down"] > 0
    assert scored["down"] > scored["restart"]
    assert words_only.match(query, ids).tolist() == [0.0, 0.0, 0.0]


def _drain(i: int) -> Incident:
    return Incident.model_validate(
        {
            "id": f"INC-{i}",
            "title": f"drain {i}",
            "action": "drain_node",
            "resource": {"type": "Node", "name": f"node-{i}"},
            "severity": "high",
            "tags": ["drain"],
            "outcome": "resolved",
        }
    )


@pytest.mark.parametrize("risk_model", ["default", "seed"])
def test_rule_ties_are_ordered_by_the_vector_similarity(risk_model: str) -> None:
    """Two drains tie on the rules (0.8) and on every metadata field; in hybrid mode the one
    the vector index finds closer is listed first (seed 002's vector term), whatever their
    order in the history. The listed similarity stays max(rule, semantic)."""
    history = History([_drain(1), _drain(2)])
    spec = RemediationRequestSpec.model_validate(
        {"action": "drain_node", "target": {"kind": "Node", "name": "node-9"}}
    )
    action = normalize_request(spec)
    result = evaluate_history(
        history,
        action,
        mode="hybrid",
        semantic={0: 0.35, 1: 0.75},
        model=risk_model_named(risk_model),
    )
    assert [s.id for s in result.similar] == ["INC-2", "INC-1"]
    assert [s.similarity for s in result.similar] == pytest.approx([0.8, 0.8])
    assert result.similar[0].relevance > result.similar[1].relevance


def test_bm25_leg_leaves_topic_concepts_to_the_words() -> None:
    """Only action concepts enter the sparse leg: "dns" and "coredns" share the ``~dns``
    topic, but a second, folded match would lift a read-only DNS check towards every DNS
    incident; the words already match where they are the same."""
    match = Bm25Match()
    match.add("coredns", "CoreDNS restart left stale conntrack entries")
    match.add("other", "Checkout latency rose after a rollout")
    assert match.match("run a dns check", ["coredns", "other"]).tolist() == [0.0, 0.0]
    assert match.match("bounce the pods", ["coredns", "other"])[0] > 0
