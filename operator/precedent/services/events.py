"""Decision Events posted at least once, and never twice for the same answer.

kopf queues the Events it posts and a killed process loses the queue, so a request answered
just before a crash could have no decision Event. The operator therefore posts its Events
itself, before the status is written, under a name derived from what it announces (the
request's uid, the event's reason and message): after a restart the same answer produces the
same name, the API server answers 409, and nothing is posted twice — a Stalled request does not
repeat its Warning on every restart either.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from precedent.errors import PrecedentError
from precedent.services.status import EventNote

__all__ = ["EventPoster", "EventWriter", "event_name"]

logger = logging.getLogger(__name__)

COMPONENT = "precedent"


class EventWriter(Protocol):
    """Creates core/v1 Events (the Kubernetes API adapter)."""

    async def create_event(
        self, namespace: str, body: Mapping[str, Any]
    ) -> Literal["created", "exists"]:
        """POST an Event; ``exists`` when one of that name is already there."""
        ...


def event_name(object_name: str, uid: str, note: EventNote) -> str:
    """A name that is the same whenever the same answer is announced for the same object."""
    digest = hashlib.sha256(f"{uid}\0{note.reason}\0{note.message}".encode()).hexdigest()[:16]
    return f"{object_name[:200]}.{digest}"


class EventPoster:
    """Posts an object's Event once (deterministic name), before its status is written."""

    def __init__(self, writer: EventWriter) -> None:
        self.writer = writer

    async def post(self, obj: Mapping[str, Any], note: EventNote) -> bool:
        """Post ``note`` on ``obj``; False if the API server could not be reached (the caller
        falls back to best effort)."""
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "default")
        name = str(metadata.get("name", ""))
        uid = str(metadata.get("uid", ""))
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name(name, uid, note), "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": name,
                "namespace": namespace,
                "uid": uid,
            },
            "reason": note.reason,
            "message": note.message[:1024],
            "type": note.type,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.writer.create_event(namespace, body)
        except PrecedentError as exc:
            logger.warning(
                "could not post the %s Event on %s/%s: %s", note.reason, namespace, name, exc
            )
            return False
        return True
