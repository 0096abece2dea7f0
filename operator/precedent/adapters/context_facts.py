"""Where things run, read from files: Namespace manifests and the environment mapping.

The operator reads the mapping from ``PRECEDENT_ENVIRONMENT_MAPPING`` (a file, e.g. mounted
from a ConfigMap) and follows Namespaces with a watch; ``precedent score -f`` reads both from
manifests, so a CI pre-check given the cluster's facts gives the operator's answer.

The mapping is one YAML document::

    kind: EnvironmentMapping
    rules:
      - resourceId: "/subscriptions/*/resourceGroups/rg-prod/*"
        environment: production
      - cluster: "aks-staging-*"
        environment: staging

Other kinds in the given files (Deployments, Services …) are skipped, so ``-f data/shop``
takes the shop's Namespaces from the same directory ``precedent graph`` reads.

One file may describe several clusters (a fleet, or a labelled set spanning clusters, where
``payments`` is production in one cluster and staging in another): a Namespace manifest
annotated ``precedent.dev/cluster: NAME`` is a namespace of cluster NAME only, read when the
facts are for that cluster (``--cluster NAME``) and skipped otherwise; the mapping's rules
say which cluster they are for with their ``cluster`` pattern.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from precedent.adapters.loader import iter_documents
from precedent.core.context import ContextFacts, EnvironmentRule, parse_rules
from precedent.errors import InputError, LoadError

__all__ = ["CLUSTER_ANNOTATION", "MAPPING_KIND", "load_facts", "load_mapping"]

MAPPING_KIND = "EnvironmentMapping"
CLUSTER_ANNOTATION = "precedent.dev/cluster"
"""On a Namespace manifest: the cluster it belongs to (absent: any cluster)."""


def load_mapping(path: Path) -> list[EnvironmentRule]:
    """The rules of the mapping file at ``path``; InputError names the file and the rule."""
    rules: list[EnvironmentRule] = []
    for doc in iter_documents([path]):
        if doc.kind != MAPPING_KIND:
            raise doc.error(f"expected kind {MAPPING_KIND}")
        try:
            rules.extend(parse_rules(doc.body, doc.where))
        except ValueError as exc:
            raise InputError(str(exc)) from None
    return _numbered(rules)


def load_facts(
    paths: Iterable[str | Path],
    *,
    default: str = "production",
    cluster: str | None = None,
    rules: Iterable[EnvironmentRule] = (),
) -> ContextFacts:
    """Facts from Namespace manifests and EnvironmentMapping documents in ``paths``."""
    facts = ContextFacts(default=default, cluster=cluster, rules=list(rules))
    found: list[EnvironmentRule] = []
    # Where each namespace was given, and its labels: a second manifest of the same namespace
    # that labels it otherwise is refused, never decided by the order of the files.
    given: dict[str, tuple[str, dict[str, Any]]] = {}
    try:
        for doc in iter_documents(paths):
            if doc.kind == "Namespace" and doc.name:
                meta = doc.body.get("metadata") or {}
                if not isinstance(meta, dict):
                    meta = {}
                annotations = meta.get("annotations")
                owner = (
                    annotations.get(CLUSTER_ANNOTATION) if isinstance(annotations, dict) else None
                )
                if owner is not None and (
                    cluster is None or str(owner).strip().lower() != cluster.strip().lower()
                ):
                    continue  # another cluster's namespace of the same name
                labels = meta.get("labels")
                labels = labels if isinstance(labels, dict) else {}
                first = given.setdefault(doc.name, (doc.where, labels))
                if first[1] != labels:
                    raise InputError(
                        f"{doc.where}: Namespace {doc.name} is also in {first[0]} with other "
                        f"labels ({_labels(first[1])} there, {_labels(labels)} here): give "
                        "each namespace once"
                    )
                facts.observe_namespace(doc.name, labels)
            elif doc.kind == MAPPING_KIND:
                found.extend(parse_rules(doc.body, doc.where))
    except (LoadError, ValueError) as exc:
        raise InputError(str(exc)) from None
    facts.rules = _numbered([*facts.rules, *found])
    return facts


def _labels(labels: dict[str, Any]) -> str:
    pairs = sorted(f"{key}={value}" for key, value in labels.items())
    return ", ".join(pairs) or "no labels"


def _numbered(rules: list[EnvironmentRule]) -> list[EnvironmentRule]:
    return [
        EnvironmentRule(
            environment=r.environment,
            resource_id=r.resource_id,
            name=r.name,
            namespace=r.namespace,
            cluster=r.cluster,
            index=i,
        )
        for i, r in enumerate(rules, start=1)
    ]
