"""Watch streaming: one open watch as newline-delimited JSON over a chunked HTTP response.

:func:`serve_watch` opens the watch on the store, writes the initial events (and the
``initial-events-end`` bookmark when asked), then whatever the watcher queues until the
timeout, the client leaving, or the server closing it. Periodic BOOKMARKs are sent when
``allowWatchBookmarks`` is set. A too-old ``resourceVersion`` is answered like the real
server: HTTP 200, then one ERROR event carrying the 410 Status.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web

from precedent_sandbox import errors as api_errors
from precedent_sandbox.errors import ApiError
from precedent_sandbox.meta import FieldSelector, LabelSelector
from precedent_sandbox.objects import Stored, encode
from precedent_sandbox.registry import ResourceType
from precedent_sandbox.render import JSON, Output, flag, object_bytes, partial, table_of
from precedent_sandbox.store import Store
from precedent_sandbox.watch import Event, Watcher

__all__ = ["serve_watch"]


async def serve_watch(
    request: web.Request,
    store: Store,
    rtype: ResourceType,
    version: str,
    namespace: str | None,
    labels: LabelSelector,
    fields: FieldSelector,
    *,
    bookmark_interval: float,
    watch_timeout: float,
) -> web.StreamResponse:
    """Answer a ``?watch=true`` request; returns once the stream has ended."""
    query = request.query
    output = Output(request.headers.get("Accept", ""))
    bookmarks = flag(query.get("allowWatchBookmarks"))
    send_initial = flag(query.get("sendInitialEvents"))
    try:
        timeout = float(query.get("timeoutSeconds") or watch_timeout)
    except ValueError:
        raise api_errors.bad_request("timeoutSeconds must be a number") from None
    response = web.StreamResponse(status=200, headers={"Content-Type": JSON})
    response.enable_chunked_encoding()
    try:
        watcher, initial = store.watch(
            rtype,
            namespace,
            labels,
            fields,
            query.get("resourceVersion"),
            send_initial=send_initial,
        )
    except ApiError as error:
        if error.code != 410:
            raise
        # Like the real server: HTTP 200, then one ERROR event carrying the 410 Status.
        await response.prepare(request)
        await response.write(encode({"type": "ERROR", "object": error.status()}) + b"\n")
        await response.write_eof()
        return response
    lines = _Lines(request, store, rtype, version, output)
    try:
        await response.prepare(request)
        chunks = [lines.event(kind, e) for kind, e in initial]
        if send_initial and bookmarks:
            chunks.append(lines.bookmark(initial_end=True))
        if chunks:
            await response.write(b"".join(chunks))
        await _stream(response, watcher, lines, bookmarks, timeout, bookmark_interval)
    except (ConnectionResetError, ConnectionError):
        pass  # the client went away; nothing to tell it
    finally:
        store.unwatch(rtype, watcher)
    with contextlib.suppress(ConnectionResetError, ConnectionError):
        await response.write_eof()
    return response


async def _stream(
    response: web.StreamResponse,
    watcher: Watcher,
    lines: _Lines,
    bookmarks: bool,
    timeout: float,
    bookmark_interval: float,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    next_bookmark = loop.time() + bookmark_interval
    while True:
        if not watcher.pending and not watcher.closed:
            wait = min(deadline, next_bookmark if bookmarks else deadline) - loop.time()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watcher.wake.wait(), wait)
        watcher.wake.clear()
        # Everything queued since the last write goes out as one chunk.
        batch, watcher.pending = watcher.pending, []
        chunks = [lines.event(kind, e) for kind, e in batch]
        now = loop.time()
        finished = watcher.closed or now >= deadline
        if bookmarks and (now >= next_bookmark or finished):
            chunks.append(lines.bookmark())
            next_bookmark = now + bookmark_interval
        if chunks:
            await response.write(b"".join(chunks))
        if finished:
            return


class _Lines:
    """Encodes one watch's events in the form and version its client asked for."""

    def __init__(
        self,
        request: web.Request,
        store: Store,
        rtype: ResourceType,
        version: str,
        output: Output,
    ) -> None:
        self.request = request
        self.store = store
        self.rtype = rtype
        self.version = version
        self.output = output

    def event(self, kind: str, event: Event) -> bytes:
        """One ``{"type":…,"object":…}`` line; plain JSON reuses the event's shared bytes."""
        rtype, version, output = self.rtype, self.version, self.output
        if output.kind == "json" and version == rtype.version:
            return event.line(kind)
        stored = Stored.__new__(Stored)
        stored.obj, stored.raw, stored.rv = event.obj, event.raw, event.rv
        if output.kind == "table":
            table = table_of(
                self.request,
                rtype,
                version,
                [stored],
                {"resourceVersion": str(event.rv)},
                output,
            )
            return encode({"type": kind, "object": table}) + b"\n"
        if output.kind == "partial":
            return encode({"type": kind, "object": partial(event.obj)}) + b"\n"
        return (
            b'{"type":"'
            + kind.encode()
            + b'","object":'
            + object_bytes(rtype, version, stored)
            + b"}\n"
        )

    def bookmark(self, *, initial_end: bool = False) -> bytes:
        """A BOOKMARK at the store's current resourceVersion."""
        meta: dict[str, Any] = {"resourceVersion": str(self.store.rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        rtype = self.rtype
        body = {
            "kind": rtype.kind,
            "apiVersion": rtype.api_version(self.version),
            "metadata": meta,
        }
        return encode({"type": "BOOKMARK", "object": body}) + b"\n"
