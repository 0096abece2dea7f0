"""The operator's mark: a status it did not write is never taken for its answer."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from precedent.services.integrity import StatusSigner
from precedent.settings import Settings
from precedent.wiring import build_service

SPEC = {"action": "drain_node", "target": {"kind": "Node", "name": "node-7"}}  # Escalated


def answered_body(signer: StatusSigner, generation: int = 1) -> dict[str, Any]:
    settings = Settings(history_path="", catalog="")
    assessor = build_service(settings, mode="rules", follows_cluster=True).assessor
    assessor.signer = signer  # the signer under test in place of the configured one
    update = asyncio.run(
        assessor.reconcile(
            SPEC, uid="uid-1", generation=generation, previous=None, now=datetime.now(UTC)
        )
    )
    return {
        "metadata": {"uid": "uid-1", "generation": generation},
        "spec": SPEC,
        "status": update.patch(),
    }


def test_the_operators_own_answer_counts_as_answered() -> None:
    signer = StatusSigner(b"k" * 32)
    assert signer.answered(answered_body(signer))


def test_a_forged_or_edited_status_does_not() -> None:
    signer = StatusSigner(b"k" * 32)
    body = answered_body(signer)
    assert body["status"]["risk"]["decision"] == "Escalated"
    body["status"]["risk"]["decision"] = "Approved"  # someone with status write access
    body["status"]["risk"]["score"] = 0
    assert not signer.answered(body)
    del body["status"]["mark"]
    assert not signer.answered(body)


def test_another_key_or_another_object_does_not() -> None:
    signer = StatusSigner(b"k" * 32)
    body = answered_body(signer)
    assert not StatusSigner(b"x" * 32).answered(body)
    assert not signer.answered({**body, "metadata": {"uid": "uid-2", "generation": 1}})
    # Reporting the outcome bumps the generation; the answer still stands.
    assert signer.answered({**body, "metadata": {"uid": "uid-1", "generation": 2}})


def test_without_a_key_each_process_signs_differently() -> None:
    first, second = StatusSigner(), StatusSigner()
    assert first.ephemeral
    assert first.answered(answered_body(first))
    assert not second.answered(answered_body(first))
