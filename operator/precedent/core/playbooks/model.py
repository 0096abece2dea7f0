"""Selection models: which refinements of seed 004's confidence the catalog scores with.

The formula (0.4 × semantic + 0.4 × label match + 0.2 × historical) is the same in every
model; what differs is what the label part counts (:class:`~precedent.core.playbooks.labels.
LabelRule`) and what is embedded for a playbook's semantic part. ``seed`` is seed 004 as
written; ``default`` is what the labelled selection set (``tests/data/selection``) supports.
The other models are the steps between the two, kept so ``precedent eval selection`` can
show what each one contributes. ``PRECEDENT_SELECTION_MODEL`` chooses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from precedent.core.playbooks.labels import LabelRule
from precedent.core.playbooks.profile import profile_text
from precedent.models import Playbook

__all__ = [
    "DEFAULT_SELECTION_MODEL",
    "SEED_SELECTION_MODEL",
    "SELECTION_MODELS",
    "SelectionModel",
    "SelectionModelName",
    "playbook_text",
]

SelectionModelName = Literal[
    "seed",
    "action-label",
    "selective",
    "embedded-actions",
    "action-selective",
    "unstated-unknown",
    "profile",
    "concepts",
    "default",
]


@dataclass(frozen=True, slots=True)
class SelectionModel:
    """How a playbook's label and semantic parts are computed."""

    name: str
    """The model's name (``PRECEDENT_SELECTION_MODEL``)."""
    labels: LabelRule = field(default_factory=LabelRule)
    """What the label part counts."""
    embed_actions: bool = False
    """Embed a playbook's actions in words before its description (else the description)."""
    profile: bool = False
    """Embed a playbook's whole profile (description, id, actions, incident types, steps,
    served requests: :func:`~precedent.core.playbooks.profile.profile_text`)."""
    concepts: bool = False
    """Score the selection concepts too (:mod:`precedent.core.playbooks.phrases`): the
    semantic part is the better of the embedder's cosine and the concept similarity; an
    unstated incident type is inferred from the text; a new playbook is offered only for
    the request's kind of object."""
    hold_back: bool = False
    """Hold back a playbook that scores well but does not fit (:meth:`~precedent.core.
    playbooks.index.CatalogIndex.search`): one that changes things for a request that asks
    for no change, and the best-scored playbook when a near runner-up is written for a
    failure or object the request names and it is not."""


def playbook_text(playbook: Playbook, model: SelectionModel) -> str:
    """What is embedded for a playbook: its description, after its actions in words when the
    model says so (the request side always starts with its action in words)."""
    if model.profile:
        return profile_text(playbook)
    if not model.embed_actions or not playbook.actions:
        return playbook.description
    actions = ", ".join(a.replace("_", " ") for a in playbook.actions)
    return f"{actions}. {playbook.description}"


SEED_SELECTION_MODEL = SelectionModel(
    "seed", LabelRule(action=False, selective=False, unstated=False)
)
"""Seed 004 as written: the mean over the request's labels, the description embedded."""

SELECTION_MODELS: Mapping[str, SelectionModel] = {
    m.name: m
    for m in (
        SEED_SELECTION_MODEL,
        SelectionModel("action-label", LabelRule(action=True, selective=False, unstated=False)),
        SelectionModel("selective", LabelRule(action=False, selective=True, unstated=False)),
        SelectionModel(
            "embedded-actions",
            LabelRule(action=True, selective=False, unstated=False),
            embed_actions=True,
        ),
        SelectionModel("action-selective", LabelRule(action=True, selective=True, unstated=False)),
        SelectionModel("unstated-unknown", LabelRule(action=True, selective=True, unstated=True)),
        SelectionModel(
            "profile", LabelRule(action=True, selective=True, unstated=True), profile=True
        ),
        SelectionModel(
            "concepts",
            LabelRule(action=True, selective=True, unstated=True, infer=True),
            profile=True,
            concepts=True,
        ),
        SelectionModel(
            "default",
            LabelRule(action=True, selective=True, unstated=True, infer=True),
            profile=True,
            concepts=True,
            hold_back=True,
        ),
    )
}
"""Every model by name, seed first."""

DEFAULT_SELECTION_MODEL = SELECTION_MODELS["default"]
"""The model the operator scores with unless configured otherwise."""
