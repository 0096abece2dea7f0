"""A mark only the operator can produce, so that a status it did not write is never trusted.

Anyone who may write ``remediationrequests/status`` could otherwise pre-approve a request
("Approved, score 0") before the operator sees it, and a restarted operator would leave that
answer alone. The operator therefore signs what it writes: an HMAC-SHA256, keyed by a secret
only the operator reads (``PRECEDENT_STATUS_KEY``, from a Kubernetes Secret), over the
request's uid and the answer (decision, band, score, approval, input hash, the verified
context it was given in, the ``Approved`` condition executors wait on: its status, reason
and message, and the hash of the change it judged, ``status.change.hash``, when there is
one). The spec is immutable but for ``spec.outcome``, which is not an input of the
assessment, so an answer stands across generations. A request counts as answered only when
its status carries a valid mark; anything else is assessed again and overwritten.

Without a configured key the operator draws a random one at start: marks then hold for the
life of the process, and every request is re-assessed after a restart. That is allowed in
audit-only mode only; in enforce mode the operator refuses to start without a key.

A status whose ``Approved`` condition does not match its mark (someone without the key
patched it) is not this operator's answer: the request is assessed again, and the condition
written again, as soon as the operator sees the change (:meth:`StatusSigner.forged`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from typing import Any

__all__ = ["StatusSigner"]


def _number(value: Any) -> str:
    # The API server may hand back 100 for the 100.0 that was written: sign the value, not
    # its spelling.
    return f"{float(value):.6g}" if isinstance(value, int | float) else str(value)


def _canonical(value: Any) -> str:
    # policy.approval is an object ({state, by, at, reason, approval}); the API server may
    # return its keys in another order than they were written: sign the content, sorted.
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _approved_condition(status: Mapping[str, Any]) -> str:
    """The part of the ``Approved`` condition an executor reads: status, reason, message."""
    for item in status.get("conditions") or []:
        if isinstance(item, Mapping) and item.get("type") == "Approved":
            return _canonical({k: str(item.get(k, "")) for k in ("status", "reason", "message")})
    return ""


class StatusSigner:
    """Signs and verifies the ``status.mark`` of RemediationRequests."""

    def __init__(self, key: bytes | None = None) -> None:
        self.ephemeral = key is None
        self._key = key if key is not None else secrets.token_bytes(32)

    @staticmethod
    def _message(uid: str, status: Mapping[str, Any]) -> bytes:
        risk = status.get("risk") or {}
        parts: tuple[str, ...] = (
            uid,
            str(risk.get("decision", "")),
            str(risk.get("band", "")),
            _number(risk.get("score")),
            str(status.get("inputHash", "")),
            _canonical((status.get("policy") or {}).get("approval")),
            _approved_condition(status),
            str((status.get("context") or {}).get("facts") or ""),
        )
        change = status.get("change") or {}
        if isinstance(change, Mapping) and change.get("hash"):
            # The change the answer is for: signed when there is one, so answers without a
            # change keep their marks.
            parts = (*parts, str(change["hash"]))
        return "\0".join(parts).encode()

    def sign(self, uid: str, status: Mapping[str, Any]) -> str:
        """The mark for a status the operator is about to write."""
        digest = hmac.new(self._key, self._message(uid, status), hashlib.sha256)
        return f"hmac-sha256:{digest.hexdigest()}"

    def answered(self, body: Mapping[str, Any]) -> bool:
        """Whether the object's status is this operator's answer (see the module docstring)."""
        status = body.get("status") or {}
        metadata = body.get("metadata") or {}
        mark = status.get("mark")
        if not isinstance(mark, str):
            return False
        ready = any(
            isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        expected = self.sign(str(metadata.get("uid", "")), status)
        return ready and hmac.compare_digest(mark, expected)

    def forged(self, body: Mapping[str, Any]) -> bool:
        """Whether the status says the request may run (``Approved`` True) without this
        operator's valid mark vouching for it: a condition the operator did not write."""
        status = body.get("status") or {}
        approved = any(
            isinstance(c, Mapping) and c.get("type") == "Approved" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        return approved and not self.answered(body)
