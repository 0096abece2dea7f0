"""The guard's use case: answer one admission request for a change to a guarded namespace.

A change (core.guard) is admitted when an answered RemediationRequest approves exactly it
(:func:`~precedent.core.guard.covers`, and the operator's status mark): its use is then
written into that request's status (``status.guard``) under the resourceVersion it was read
at, so one approval admits one change even with two operator replicas answering. A user in the
break-glass group is admitted and recorded. In a ``warn`` namespace the change is admitted with
a warning. Otherwise it is refused with the request to create and the answer it would get now.
Records (break-glass, warn) are a Warning Event on the target, a metric and a
RemediationRequest labelled ``precedent.dev/guard-record`` that the operator answers like any
other: ``kubectl get rr -l precedent.dev/guard-record`` lists them with their would-be answers.

Answers come from memory (the requests the operator follows, by target); a miss reads the
namespace's requests once from the API server (a request approved a moment ago).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from precedent.core.conditions import rfc3339
from precedent.core.guard import GuardedChange, GuardMode, ask_command, covers, request_for
from precedent.errors import PrecedentError
from precedent.models import Assessment

__all__ = ["Guard", "GuardAnswer", "GuardCluster", "GuardOutcome"]

logger = logging.getLogger(__name__)

GuardOutcome = Literal["covered", "break-glass", "warned", "refused"]

RECORD_LABEL = "precedent.dev/guard-record"
"""Label of the RemediationRequests that record a break-glass or warned change."""


@dataclass(frozen=True, slots=True)
class GuardAnswer:
    """What admission answers."""

    outcome: GuardOutcome
    allowed: bool
    message: str = ""
    warnings: tuple[str, ...] = ()
    request: str | None = None
    """``namespace/name`` of the request that approved it."""


class GuardCluster(Protocol):
    """What the guard reads and writes in the cluster."""

    async def requests_in(self, namespace: str) -> list[dict[str, Any]]:
        """Every RemediationRequest of ``namespace`` (a live read)."""
        ...

    async def mark_used(
        self, namespace: str, name: str, resource_version: str, used: Mapping[str, Any]
    ) -> None:
        """Write ``status.guard`` if the request is unchanged since ``resource_version``
        (DependencyError otherwise)."""
        ...

    async def record(self, change: GuardedChange, body: Mapping[str, Any], event: str) -> None:
        """Create the record request ``body`` and a Warning Event ``event`` on the target."""
        ...


class Guard:
    """Answers admission requests for guarded namespaces (see the module docstring)."""

    def __init__(
        self,
        *,
        cluster: GuardCluster,
        answered: Callable[[Mapping[str, Any]], bool],
        would_be: Callable[[Mapping[str, Any], str], Awaitable[Assessment]],
        break_glass_group: str | None,
        counted: Callable[[str, GuardOutcome], None] = lambda mode, outcome: None,
    ) -> None:
        self._cluster = cluster
        self._answered = answered
        self._would_be = would_be
        self._break_glass = break_glass_group
        self._counted = counted
        self._records: set[asyncio.Task[None]] = set()

    async def review(
        self,
        change: GuardedChange,
        *,
        mode: GuardMode,
        user: str,
        groups: Sequence[str],
        old: Mapping[str, Any] | None,
        dry_run: bool,
        known: Sequence[Mapping[str, Any]] = (),
    ) -> GuardAnswer:
        """The answer for ``change`` in a namespace guarded in ``mode``; ``known`` are the
        requests for its target the operator holds in memory."""
        answer = await self._review(change, mode, user, groups, old, dry_run, known)
        self._counted(mode, answer.outcome)
        return answer

    async def _review(
        self,
        change: GuardedChange,
        mode: GuardMode,
        user: str,
        groups: Sequence[str],
        old: Mapping[str, Any] | None,
        dry_run: bool,
        known: Sequence[Mapping[str, Any]],
    ) -> GuardAnswer:
        namespace = change.namespace or ""
        found = self._covering(known, change, old)
        live = False
        if found is None:
            found, live = await self._live(change, old), True
        if found is not None:
            if dry_run:
                return GuardAnswer("covered", True, request=_name(found))
            admitted = await self._use(found, user)
            if admitted is None and not live:
                # What memory held was stale (a standby replica, or the use was just recorded
                # by the other replica): read the request again and try once more.
                found = await self._live(change, old)
                admitted = await self._use(found, user) if found is not None else None
            if admitted is not None:
                return GuardAnswer("covered", True, request=admitted)
            if found is not None:
                return GuardAnswer(
                    "refused",
                    False,
                    f"precedent guard: {change.summary} is approved by RemediationRequest "
                    f"{_name(found)}, but its use could not be recorded (another change used "
                    "it a moment ago, or the API server did not answer); try again",
                )
        would = await self._would_be(request_for(change, user)["spec"], namespace)
        risk = would.risk
        verdict = (
            f"as a RemediationRequest now it would be {risk.decision} (risk {risk.score:g} "
            f"{risk.band}"
            + (f", {risk.most_relevant_incident}" if risk.most_relevant_incident else "")
            + ")"
        )
        if self._break_glass and self._break_glass in groups:
            self._record(change, user, "break-glass", verdict, dry_run)
            return GuardAnswer(
                "break-glass",
                True,
                warnings=(
                    f"precedent guard: admitted under break-glass ({self._break_glass}) and "
                    f"recorded: {change.summary}; {verdict}",
                ),
            )
        if mode == "warn":
            self._record(change, user, "warn", verdict, dry_run)
            return GuardAnswer(
                "warned",
                True,
                warnings=(
                    f"precedent guard (warn): {change.summary} has no approved "
                    f"RemediationRequest; {verdict}",
                ),
            )
        ask = ask_command(request_for(change, user))
        return GuardAnswer(
            "refused",
            False,
            f"precedent guard: {change.summary} in a guarded namespace needs an approved "
            f"RemediationRequest for exactly this change; {verdict}. Ask with: {ask}",
        )

    async def _live(
        self, change: GuardedChange, old: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        """The covering request among the namespace's requests as the API server has them."""
        try:
            listed = await self._cluster.requests_in(change.home)
        except PrecedentError as exc:
            logger.warning("guard: requests of %s not read: %s", change.home, exc)
            return None
        return self._covering(listed, change, old)

    async def _use(self, request: Mapping[str, Any], user: str) -> str | None:
        """Record the request's use under the version read; its name, or None when the
        request changed since (or the write failed)."""
        meta = request.get("metadata") or {}
        used = {"admittedAt": rfc3339(datetime.now(UTC)), "user": user[:253]}
        try:
            await self._cluster.mark_used(
                str(meta.get("namespace")),
                str(meta.get("name")),
                str(meta.get("resourceVersion")),
                used,
            )
        except PrecedentError as exc:
            logger.info("guard: the use of %s was not recorded: %s", _name(request), exc)
            return None
        return _name(request)

    def _covering(
        self,
        requests: Sequence[Mapping[str, Any]],
        change: GuardedChange,
        old: Mapping[str, Any] | None,
    ) -> Mapping[str, Any] | None:
        for request in requests:
            if covers(request, change, old) is None and self._answered(request):
                return request
        return None

    def _record(
        self, change: GuardedChange, user: str, kind: str, verdict: str, dry_run: bool
    ) -> None:
        if dry_run:
            return
        body = request_for(change, user)
        spec = body["spec"]
        del spec["change"]  # a record, not something to run: apply refuses it
        spec["description"] = (
            f"{'Break-glass' if kind == 'break-glass' else 'Warned'} direct change by {user}: "
            f"{change.summary}"
        )[:8192]
        body["metadata"]["labels"] = {RECORD_LABEL: kind}
        body["metadata"]["annotations"] = {"precedent.dev/guard-user": user[:253]}
        event = f"{kind} direct change by {user}: {change.summary}; {verdict}"[:1024]

        async def record() -> None:
            try:
                await self._cluster.record(change, body, event)
            except PrecedentError as exc:
                logger.error("guard: the %s record of %s was not written: %s", kind, change, exc)

        task = asyncio.get_running_loop().create_task(record())
        self._records.add(task)
        task.add_done_callback(self._records.discard)


def _name(request: Mapping[str, Any]) -> str:
    meta = request.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"
