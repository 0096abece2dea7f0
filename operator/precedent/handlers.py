"""kopf handlers — the only module that imports kopf.

Run with ``kopf run -m precedent.handlers --all-namespaces``. Each handler hands the body to
the service layer and writes the status it returns; outcomes map to kopf's: bad input →
``Stalled`` + ``kopf.PermanentError`` (no retry loop), an unavailable dependency →
``kopf.TemporaryError`` with a bounded delay.

kopf keeps its own bookkeeping under ``status.kopf`` rather than in annotations, so the
operator never writes to a request's metadata or spec: status-only writes, as its RBAC says.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, cast

import kopf
import prometheus_client

from precedent.adapters.heap import (
    collector_paused,
    freeze_startup_heap,
    limit_arenas,
    release_free_memory,
    small_tls_buffers,
)
from precedent.adapters.kube_api import ApiConnection, KubeApi
from precedent.core.embedding import native_available
from precedent.core.guard import GuardMode, change_key, change_of, guard_key
from precedent.errors import DependencyError, InputError, PrecedentError
from precedent.logging_json import configure_logging, log_format_from_environment
from precedent.metrics import METRICS
from precedent.models import API_GROUP, PlaybookHistory, creation_time, parse_timestamp
from precedent.services.approvals import ApprovalService, parse_approval_spec
from precedent.services.mirror import ObjectMirror, ResyncPlan
from precedent.services.observability import RequestName
from precedent.services.outcomes import RequestRef
from precedent.services.status import EventNote, StatusUpdate
from precedent.settings import load_settings
from precedent.wiring import OperatorRuntime, build_runtime, prepare_guard

VERSION = "v1alpha1"
REQUESTS = (API_GROUP, VERSION, "remediationrequests")
INCIDENTS = (API_GROUP, VERSION, "incidents")
PLAYBOOKS = (API_GROUP, VERSION, "playbooks")
APPROVALS = (API_GROUP, VERSION, "remediationapprovals")

# Retry delay for an unavailable dependency: bounded, so a request is never parked for long.
DEPENDENCY_RETRY_SECONDS = 15
# Backoff after an unexpected error: 1, 2, 4, 8 s … capped; the service stalls the request
# after a bounded number of attempts.
ERROR_RETRY_MAX_SECONDS = 30
# An approval that arrives before its request is assessed is judged again shortly after.
APPROVAL_RETRY_SECONDS = 2
# Requests being answered (scored, their decision Event posted) at once. A burst of creates runs
# every request's handler at the same time; unbounded, their posts queue for the API client's
# connections past its timeout and fall back to kopf's in-memory queue, which a killed process
# loses. The rest wait one namespace at a time in turn (FairSlots): a flood in one namespace
# does not stand in front of another namespace's request.
EVENT_POSTS_AT_ONCE = 32
# How many times one answer is made again because the facts changed while it was being made.
FACT_CHANGES_FOLLOWED = 3
# Objects per page of kopf's initial listing: each page is a short request, so listing
# thousands of requests after a restart never runs into the request timeout (a timed-out
# listing starts over, and no handler runs until it completes).
LIST_CHUNK_SIZE = 500
# How long kopf keeps a request's worker after its last event. A worker holds the last event it
# handled (the whole request, its assessment included): with kopf's default of 5 s, a burst at
# 220 requests/s kept about 1,000 answered requests in memory (RSS after 3,000 requests at 10k
# incidents 303 → 268 MiB at 1 s, the same CPU per request: docs/performance.md). The echo of
# the operator's own status patch arrives well within it; a later event starts a new worker.
WORKER_IDLE_SECONDS = 1.0

# `kopf run` set up logging before importing this module: from here on every line is in the
# format asked for (the settings, read at startup, confirm it or refuse with a JSON line).
configure_logging(log_format_from_environment())
# Before any thread of the operator allocates: its threads share one malloc arena instead of
# each growing its own (precedent.adapters.heap). Before any connection: each TLS connection's
# read buffer is 32 KiB instead of asyncio's 256 KiB, for every watch stream and API
# connection the operator keeps.
limit_arenas()
small_tls_buffers()


# Exit status of an operator whose configuration cannot be loaded: Kubernetes restarts it
# (CrashLoopBackOff) and shows the one line it printed as the reason.
EXIT_CANNOT_START = 3
# Where the kubelet reads a container's termination message (the pod's terminationMessagePath).
TERMINATION_LOG = Path("/dev/termination-log")


def _stop(reason: str) -> NoReturn:
    """Print one line naming why the operator cannot start, and exit non-zero at once.

    Nothing else is running yet (no watch, no handler), so there is nothing to clean up; a
    startup activity that only failed would leave a process that looks alive and never works.
    """
    line = f"precedent: cannot start: {' '.join(reason.split())}"
    if TERMINATION_LOG.exists():
        with contextlib.suppress(OSError):
            TERMINATION_LOG.write_text(line + "\n", encoding="utf-8")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    os._exit(EXIT_CANNOT_START)


class _SpecDiffBase(kopf.StatusDiffBaseStorage):
    """kopf's diff base in the status, built without copying the status first.

    kopf copies the whole object, then drops its status and system metadata: an answered
    request's status (the assessment) is most of the object, and was deep-copied on every
    event only to be thrown away. The essence is the same (the status and the metadata other
    than labels and annotations never enter it), unless a handler asks for a status or
    metadata field, which kopf then builds as it does."""

    def build(
        self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None
    ) -> kopf.BodyEssence:
        fields = list(extra_fields or [])
        if any(_outside_spec(field) for field in fields):
            return super().build(body=body, extra_fields=fields)
        meta = body.get("metadata") or {}
        lean = {key: value for key, value in body.items() if key not in ("status", "metadata")}
        lean["metadata"] = {key: meta[key] for key in ("labels", "annotations") if key in meta}
        return super().build(body=cast(kopf.Body, lean), extra_fields=fields)


def _outside_spec(field: Any) -> bool:
    path = field.split(".") if isinstance(field, str) else list(field or [])
    return not path or path[0] in ("status", "metadata")


@kopf.on.startup(id="configure")
async def configure(
    settings: kopf.OperatorSettings, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> None:
    """Build the runtime once and keep it in ``memo.runtime``; store kopf state in status;
    build or load the vector index. A configuration that cannot be loaded stops the operator."""
    memo.index_ready = False
    # Nothing start-up builds before the heap is frozen makes a reference cycle to collect
    # (heap.collector_paused): with the collector on, the history just loaded set off a full
    # collection of it while the catalog loaded (0.25 s at 100,000 incidents).
    with collector_paused():
        try:
            config = load_settings()
            if config.policy.mode == "enforce" and config.policy.status_key is None:
                # Without a key no answer survives a restart: every request would be assessed
                # again against today's history, and a forged status could not be told apart.
                raise InputError(
                    "PRECEDENT_STATUS_KEY is not set: enforce mode needs the key of the status "
                    "mark (the precedent-status-key Secret)"
                )

            # The operator's own API client, logged in as kopf logs in: it posts Events, creates
            # Incidents and writes Playbook counts, which kopf's own client does not do.
            async def login() -> ApiConnection:
                return _connection(_login_now(settings, logger))

            api = KubeApi(await login(), login=login, connections=EVENT_POSTS_AT_ONCE)
            memo.api = api  # closed on shutdown even if start-up does not finish
            runtime = build_runtime(config, api, event_posts=EVENT_POSTS_AT_ONCE)
        except PrecedentError as exc:
            _stop(f"invalid configuration: {exc}")
        except (OSError, MemoryError) as exc:
            _stop(f"cannot load the configuration: {exc}")
        # The guard's webhook (every replica serves it; see the guard handlers below).
        try:
            tls = await prepare_guard(config.guard, api)
        except PrecedentError as exc:
            _stop(f"guard: {exc}")
        settings.admission.server = kopf.WebhookServer(
            addr="0.0.0.0",
            port=config.guard.port or None,
            host=config.guard.service,
            certfile=str(tls.certfile),
            pkeyfile=str(tls.keyfile),
        )
        settings.admission.managed = None  # manifests/guard/ is the configuration
        # Peering (ignored with --standalone): a random priority unless one is set, so that two
        # replicas never tie; the lifetime bounds how long a standby waits after a crash.
        settings.peering.priority = (
            config.operator.peering_priority
            if config.operator.peering_priority is not None
            else secrets.randbelow(2**31 - 1)
        )
        settings.peering.lifetime = config.operator.peering_lifetime_seconds
        # The replicas meet in the cluster-scoped ClusterKopfPeering object whatever the namespace
        # flags: the Deployment runs with --namespace=* (one watch stream per namespace, so that a
        # flood of requests in one namespace does not queue another namespace's request behind
        # it in a single stream), which kopf would otherwise pair with a KopfPeering per namespace.
        settings.peering.clusterwide = True
        settings.persistence.progress_storage = kopf.StatusProgressStorage(
            field="status.kopf.progress"
        )
        settings.persistence.diffbase_storage = _SpecDiffBase(
            field="status.kopf.last-handled-configuration"
        )
        # Handlers post their own Events; log lines below WARNING stay in the log only.
        settings.posting.level = logging.WARNING
        settings.networking.request_timeout = 30
        settings.watching.chunk_size = LIST_CHUNK_SIZE
        settings.queueing.idle_timeout = WORKER_IDLE_SECONDS
        observability = config.observability
        configure_logging(observability.log_format)
        if observability.metrics_port:
            # Its own port, apart from kopf's liveness endpoint; prometheus-client serves a thread.
            try:
                prometheus_client.start_http_server(
                    observability.metrics_port, addr=observability.metrics_host
                )
            except OSError as exc:  # kopf would otherwise retry every 60 s, scoring nothing
                reason = os.strerror(exc.errno) if exc.errno else str(exc)
                _stop(
                    "metrics: cannot listen on "
                    f"{observability.metrics_host}:{observability.metrics_port}: {reason}"
                )
        # The vector index is built (or loaded from PRECEDENT_INDEX_DIR) now, off the event loop,
        # so the first request is answered at once; /healthz says not ready until it is.
        started = time.perf_counter()
        try:
            report = await asyncio.to_thread(runtime.assessor.scorer.prepare_index)
        except PrecedentError as exc:
            _stop(f"vector index: {exc}")
        logger.info("%s in %.1f s", report, time.perf_counter() - started)
    logger.info(
        "compiled core (precedent-native): %s",
        "installed" if native_available() else "not installed, the same work runs in Python",
    )
    # Parsing the history and building the index freed most of what they allocated; what is
    # left lives as long as the process, and the garbage collector stops walking it.
    await asyncio.to_thread(freeze_startup_heap)
    await asyncio.to_thread(release_free_memory)
    if runtime.signer.ephemeral:
        logging.getLogger(__name__).warning(
            "PRECEDENT_STATUS_KEY is not set (audit-only mode): statuses are signed with a "
            "per-process key, so every request is assessed again after a restart"
        )
    # Last: the other activities and every handler take ``memo.runtime`` as "configured".
    memo.runtime = runtime
    memo.index_ready = True


def _connection(info: kopf.ConnectionInfo) -> ApiConnection:
    verify: Any = info.as_ssl_context() if info.server.startswith("https:") else True
    return ApiConnection(server=info.server, headers=info.as_http_headers(), verify=verify)


def _login_now(settings: kopf.OperatorSettings, logger: kopf.Logger) -> kopf.ConnectionInfo:
    info = kopf.login_with_service_account(settings=settings, logger=logger)
    info = info or kopf.login_with_kubeconfig(settings=settings, logger=logger)
    if info is None:
        raise InputError("no credentials: neither a service account nor a kubeconfig")
    return info


def _runtime(memo: kopf.Memo) -> OperatorRuntime:
    """The runtime ``configure`` built; a permanent error (not a retry every 60 s) if there is
    none, which only happens when configure did not finish."""
    runtime: OperatorRuntime | None = getattr(memo, "runtime", None)
    if runtime is None:
        raise kopf.PermanentError("not configured: the configure activity did not finish")
    return runtime


def _post(body: Mapping[str, Any], note: EventNote) -> None:
    """Post an Event on ``body`` through kopf (its queue, in the handler's context)."""
    target = body if isinstance(body, kopf.Body) else kopf.Body(cast("kopf.RawBody", body))
    kopf.event(target, type=note.type, reason=note.reason, message=note.message)


@kopf.on.startup(id="outcomes")
async def configure_outcomes(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """Count every reported outcome before the first playbook's status is written (startup
    handlers finish before any watch starts, see request_event); start the resync."""
    runtime = _runtime(memo)
    try:
        for obj in await runtime.api.list_cluster_objects("remediationrequests"):
            meta = obj.get("metadata") or {}
            try:
                runtime.outcomes.observe(
                    str(meta.get("uid", "")), obj.get("spec") or {}, obj.get("status") or {}
                )
            except Exception:  # no single object can stop the operator from starting
                logger.exception(
                    "outcome of RemediationRequest %s/%s not counted",
                    meta.get("namespace"),
                    meta.get("name"),
                )
    except PrecedentError as exc:  # the API server is away: kopf runs this again
        raise kopf.TemporaryError(f"cannot list RemediationRequests: {exc}", delay=5) from None
    if runtime.config.operator.resync_seconds > 0 and "resync" not in runtime.tasks:
        runtime.tasks["resync"] = asyncio.create_task(
            _resync_every(
                runtime.config.operator.resync_seconds,
                _object_listings(runtime),
                logger,
                before=lambda: _resync_namespaces(runtime, logger),
                show_removed=True,
            ),
            name="resync",
        )


@kopf.on.cleanup(id="close")
async def close(memo: kopf.Memo, **_: Any) -> None:
    """Stop the periodic lists and release the clients' connections on shutdown."""
    runtime: OperatorRuntime | None = getattr(memo, "runtime", None)
    if runtime is None:
        api: KubeApi | None = getattr(memo, "api", None)
        if api is not None:  # start-up stopped part-way (after the guard's first calls)
            await api.aclose()
        return
    for name, task in runtime.tasks.items():
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except Exception:  # whatever ended the task, shutting down goes on (no retry loop)
            logging.getLogger(__name__).exception("the %s task ended with an error", name)
    await runtime.aclose()


@kopf.on.login(id="login")
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In-cluster service account first, else the kubeconfig ($KUBECONFIG), read at login time."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


# -- history and catalog ----------------------------------------------------------------------
# Index handlers run for every object of the initial listing before any other handler runs, so
# no request is scored against a half-loaded history after a restart.


@kopf.index(*INCIDENTS, id="incidents")
def index_incident(
    name: str, spec: kopf.Spec, meta: kopf.Meta, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> dict[str, str]:
    """Keep the in-memory history in step with Incident objects."""
    runtime = _runtime(memo)
    created = str(meta.get("creationTimestamp") or "")
    try:
        incident = runtime.incident_mirror.apply(
            name,
            str(meta.get("resourceVersion", "")),
            lambda: runtime.objects.upsert_incident(name, spec, created=created),
        )
    except InputError as exc:  # dropped from the history; incident_status reports it
        logger.warning("ignoring invalid incident: %s", exc)
        return {}
    return {name: incident.id}


@kopf.on.resume(*INCIDENTS, id="incident-status")
@kopf.on.create(*INCIDENTS, id="incident-status")
@kopf.on.update(*INCIDENTS, id="incident-status")
def incident_status(
    body: kopf.Body,
    name: str,
    meta: kopf.Meta,
    status: kopf.Status,
    patch: kopf.Patch,
    memo: kopf.Memo,
    **_: Any,
) -> None:
    """Say on the object whether its incident is in the history (invalid or a duplicate id)."""
    update = _runtime(memo).objects.incident_status(
        name,
        body.get("spec") or {},
        generation=int(meta.get("generation") or 1),
        previous=status.get("conditions"),
        now=datetime.now(UTC),
    )
    if update.changed:
        patch.status.update(update.fields)
        if update.event is not None:
            _post(body, update.event)


@kopf.on.event(*INCIDENTS, id="incident-deleted", when=lambda type, **_: type == "DELETED")
def incident_deleted(name: str, memo: kopf.Memo, **_: Any) -> None:
    """Drop a deleted Incident from the history."""
    runtime = _runtime(memo)
    runtime.incident_mirror.remove(name, lambda: runtime.objects.remove_incident(name))


@kopf.index(*PLAYBOOKS, id="playbooks")
def index_playbook(
    name: str, spec: kopf.Spec, meta: kopf.Meta, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> dict[str, str]:
    """Keep the in-memory catalog in step with Playbook objects."""
    runtime = _runtime(memo)
    try:
        version = runtime.playbook_mirror.apply(
            name,
            str(meta.get("resourceVersion", "")),
            lambda: runtime.objects.upsert_playbook(name, spec).version,
        )
    except InputError as exc:  # dropped from the catalog, not kept in its last valid form
        logger.warning("ignoring invalid playbook: %s", exc)
        return {}
    return {name: version}


@kopf.on.resume(*PLAYBOOKS, id="playbook-status")
@kopf.on.create(*PLAYBOOKS, id="playbook-status")
@kopf.on.update(*PLAYBOOKS, id="playbook-status")
def playbook_status(
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    patch: kopf.Patch,
    memo: kopf.Memo,
    **_: Any,
) -> None:
    """Write the execution counts and the smoothed success rate the selection uses."""
    history = spec.get("history") or {}
    prior = PlaybookHistory(
        executions=int(history.get("executions", 0)), successes=int(history.get("successes", 0))
    )
    # The prior plus every reported outcome naming this playbook, recounted (never +1).
    wanted = {
        **_runtime(memo).outcomes.playbook_status(str(meta.get("name")), prior),
        "observedGeneration": int(meta.get("generation") or 1),
    }
    if any(status.get(key) != value for key, value in wanted.items()):
        patch.status.update(wanted)


@kopf.on.event(*PLAYBOOKS, id="playbook-deleted", when=lambda type, **_: type == "DELETED")
def playbook_deleted(name: str, memo: kopf.Memo, **_: Any) -> None:
    """Drop a deleted Playbook from the catalog."""
    runtime = _runtime(memo)
    runtime.playbook_mirror.remove(name, lambda: runtime.objects.remove_playbook(name))


@dataclass(frozen=True, slots=True)
class _Listing:
    """One kind a periodic full list makes memory equal to."""

    name: str
    """What the log calls it (``incidents``, ``deployments``)."""
    mark: Callable[[], int]
    """Taken just before the list is requested."""
    fetch: Callable[[], Awaitable[list[dict[str, Any]]]]
    """The full list from the API server."""
    apply: Callable[[list[dict[str, Any]], int], ResyncPlan[Any]]
    """Makes memory equal the list (requested after the mark); what it changed."""


async def _resync_every(
    seconds: float,
    listings: Sequence[_Listing],
    logger: kopf.Logger,
    *,
    what: str = "resync",
    before: Callable[[], Awaitable[None]] | None = None,
    show_removed: bool = False,
) -> None:
    """List each kind every ``seconds`` and make memory equal the lists.

    kopf's re-list (after a broken stream or 410 Gone) never drops what the new list lacks,
    and a watch resumed against a restored API server never delivers those deletions; a list
    now and then does (see precedent.services.mirror).
    """
    while True:
        await asyncio.sleep(seconds)
        if before is not None:
            await before()
        for listing in listings:
            mark = listing.mark()
            try:
                items = await listing.fetch()
            except PrecedentError as exc:  # the API server is away: the next round tries again
                logger.warning("%s of %s skipped: %s", what, listing.name, exc)
                continue
            plan = listing.apply(items, mark)
            if plan:
                removed = f" ({', '.join(map(str, plan.removed[:10])) or '-'})"
                logger.info(
                    "%s of %s: %d taken from the API, %d gone from it%s",
                    what,
                    listing.name,
                    len(plan.applied),
                    len(plan.removed),
                    removed if show_removed else "",
                )


def _object_listings(runtime: OperatorRuntime) -> list[_Listing]:
    """Incidents and Playbooks: the history and the catalog equal the lists."""
    objects, api = runtime.objects, runtime.api

    def upsert_incident(obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        created = str(meta.get("creationTimestamp") or "")
        objects.upsert_incident(str(meta["name"]), obj.get("spec"), created=created)  # type: ignore[arg-type]

    def upsert_playbook(obj: Mapping[str, Any]) -> None:
        objects.upsert_playbook(str(obj["metadata"]["name"]), obj.get("spec"))  # type: ignore[arg-type]

    def listing(
        mirror: ObjectMirror[str],
        upsert: Callable[[Mapping[str, Any]], None],
        delete: Callable[[str], None],
    ) -> _Listing:
        def apply(items: list[dict[str, Any]], mark: int) -> ResyncPlan[Any]:
            listed = {str(o["metadata"]["name"]): o for o in items if o.get("metadata")}
            return mirror.resync(listed, mark, upsert=upsert, delete=delete)

        return _Listing(
            mirror.kind, mirror.mark, lambda: api.list_cluster_objects(mirror.kind), apply
        )

    return [
        listing(runtime.incident_mirror, upsert_incident, objects.remove_incident),
        listing(runtime.playbook_mirror, upsert_playbook, objects.remove_playbook),
    ]


async def _resync_namespaces(runtime: OperatorRuntime, logger: kopf.Logger) -> None:
    """Make the Namespaces' labels in memory equal a full list, as for Incidents: a relabel
    or a deletion the watch never delivered (a restored API server) is seen here, and the
    requests aimed at those namespaces are answered again."""
    facts = runtime.facts
    approvals = runtime.approval_index
    if facts is None or approvals is None:
        return
    try:
        items = await runtime.api.list_objects("/api/v1", "namespaces")
    except PrecedentError as exc:  # the API server is away: the next round tries again
        logger.warning("resync of namespaces skipped: %s", exc)
        return
    listed = [
        (str(meta["name"]), meta.get("labels"))
        for meta in (o.get("metadata") or {} for o in items)
        if meta.get("name")
    ]
    changed = facts.replace_namespaces(listed)
    runtime.relabelled.difference_update(changed)
    # A sweep passes by a request being assessed at that moment (it has no answer yet), whose
    # answer may then be written in the old facts: the namespaces swept since the last list
    # are swept once more. Only answers whose facts no longer hold are made again.
    again, runtime.swept = runtime.swept - set(changed), set(changed)
    if changed:
        logger.info("resync of namespaces: the environment of %s changed", ", ".join(changed))
    if changed or again:
        await _answer_again(runtime, logger, set(changed) | again, approvals)


# -- requests ---------------------------------------------------------------------------------


REASSESS = "precedent.dev/reassess"
"""Annotation an executor sets (``kubectl precedent apply``) when the target of a change moved
since its answer: the request is answered again for the target as it is now, and approvals
made before that moment no longer apply to it."""


def _reassess_asked(body: Mapping[str, Any]) -> str | None:
    """The reassess annotation of a request with a change that has not run, when its answer
    has not taken it into account yet (None otherwise)."""
    meta = body.get("metadata") or {}
    asked = (meta.get("annotations") or {}).get(REASSESS)
    spec = body.get("spec") or {}
    if not asked or not spec.get("change") or spec.get("outcome"):
        return None
    change = (body.get("status") or {}).get("change") or {}
    return None if change.get("asked") == asked else str(asked)


def _after_ask(meta: Mapping[str, Any], approvals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The approvals made after the last reassess ask (all of them when there was none): an
    approval was for the target as it was when it was made."""
    asked = (meta.get("annotations") or {}).get(REASSESS)
    if not asked:
        return approvals
    try:
        moment = parse_timestamp(asked, f"metadata.annotations.{REASSESS}")
    except ValueError:
        return []  # an unreadable ask: no earlier approval is known to be for this target
    kept = []
    for approval in approvals:
        made = creation_time(approval.get("metadata") or {})
        # An approval made in the same second as the ask cannot be told to come after it.
        if made is not None and made > moment:
            kept.append(approval)
    return kept


def _answered(body: kopf.Body, runtime: OperatorRuntime) -> bool:
    """This operator's answer (a valid mark), given in facts that still hold: its target's
    namespace was not relabelled since, and no executor asked for a new answer because the
    target moved (a request that ran keeps its answer)."""
    if not runtime.signer.answered(body):
        return False
    spec = body.get("spec") or {}
    if spec.get("outcome"):
        return True
    if _reassess_asked(body) is not None:
        return False
    namespace = (body.get("metadata") or {}).get("namespace")
    return not runtime.assessor.facts_changed(spec, namespace, body.get("status") or {})


def _not_answered(body: kopf.Body, memo: kopf.Memo, **_: Any) -> bool:
    # A request this operator answered (a valid mark) is not even handed to the handler: a
    # restart resumes thousands of them, and each would cost a handler run and two log lines.
    return not _answered(body, _runtime(memo))


@kopf.on.resume(*REQUESTS, id="assess", when=_not_answered)
@kopf.on.create(*REQUESTS, id="assess", when=_not_answered)
async def assess_request(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    patch: kopf.Patch,
    memo: kopf.Memo,
    logger: kopf.Logger,
    retry: int,
    **kwargs: Any,
) -> None:
    """Score a RemediationRequest and write the assessment into its status."""
    runtime = _runtime(memo)
    if _answered(body, runtime):
        return  # answered by this operator: a restart re-lists everything and leaves it alone
    update = await _answer_and_post(body, spec, status, meta, runtime, retry, kwargs["approvals"])
    patch.status.update(update.patch())
    if update.outcome == "invalid":
        raise kopf.PermanentError(update.message)
    if update.outcome == "waiting":
        raise kopf.TemporaryError(update.message, delay=DEPENDENCY_RETRY_SECONDS)
    if update.outcome == "retrying":
        raise kopf.TemporaryError(update.message, delay=min(2**retry, ERROR_RETRY_MAX_SECONDS))
    if update.outcome == "failed":
        raise kopf.PermanentError(update.message)
    logger.info("%s", update.message)


async def _answer(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    runtime: OperatorRuntime,
    retry: int,
    approvals: kopf.Index[tuple[str, str], dict[str, Any]],
) -> StatusUpdate:
    """The status a request should have now (assessed, with its approvals applied)."""
    # Approvals already made for it (re-listed after a restart) are applied again. kopf passes
    # each index as a keyword named by its id (see index_approval below).
    key = (str(meta.get("namespace")), str(meta.get("name")))
    now = datetime.now(UTC)
    # The creation time anchors "recent" so that re-running the handler gives the same answer.
    started = time.perf_counter()
    namespace = str(meta.get("namespace") or "")
    for _ in range(FACT_CHANGES_FOLLOWED):
        update = await runtime.assessor.reconcile(
            spec,
            uid=str(meta.get("uid", "")),
            generation=int(meta.get("generation") or 1),
            previous=status.get("conditions"),
            now=now,
            anchor=creation_time(meta),
            attempt=retry + 1,
            approve=runtime.approvals.applier(
                body, _after_ask(meta, list(approvals.get(key, []))), now
            ),
            prior=dict(status),
            namespace=namespace,
            asked=(meta.get("annotations") or {}).get(REASSESS) if spec.get("change") else None,
        )
        # A Namespace relabelled while this request was being assessed: the handler that
        # answers again the requests of a relabelled namespace passed this one by (it had no
        # answer yet), so the answer is made again in the facts that hold now.
        answer = update.status.assessment
        context = answer.context if answer is not None else None
        written = context.facts if context is not None else None
        if update.outcome != "assessed" or not runtime.assessor.facts_differ(
            spec, namespace, written
        ):
            break
    name = RequestName(str(meta.get("uid", "")), str(meta.get("namespace")), str(meta.get("name")))
    runtime.recorder.reconciled(
        name, str(spec.get("action", "")), update, time.perf_counter() - started
    )
    return update


async def _answer_and_post(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    runtime: OperatorRuntime,
    retry: int,
    approvals: kopf.Index[tuple[str, str], dict[str, Any]],
) -> StatusUpdate:
    """:func:`_answer`, then its Event. At most EVENT_POSTS_AT_ONCE requests are answered at
    once, and namespaces take turns for those slots (and for the scoring thread), so a flood in
    one namespace does not hold up the others."""
    async with runtime.event_slots.hold(str(meta.get("namespace") or "")):
        update = await _answer(body, spec, status, meta, runtime, retry, approvals)
        # Posted before the status is written, under a name only this answer produces: a
        # crash in between re-assesses and re-posts (409: once); a crash after leaves both.
        posted = await _post_decision(body, update, runtime)
    _post_notes(body, update, posted)
    return update


async def _post_decision(body: kopf.Body, update: StatusUpdate, runtime: OperatorRuntime) -> bool:
    """The answer's Event through the operator's own client; False when it could not be
    posted there (kopf then posts it, see :func:`_post_notes`)."""
    if update.event is None:
        return True
    return await runtime.events.post(body, update.event)


def _post_notes(body: kopf.Body, update: StatusUpdate, posted: bool) -> None:
    """kopf posts the answer's Event when the client could not, and every extra note."""
    if update.event is not None and not posted:
        _post(body, update.event)
    for extra in update.notes:
        _post(body, extra)


def _forged(type: str | None, body: kopf.Body, runtime: OperatorRuntime) -> bool:
    # A change while the operator runs (the initial listing is the resume handler's): the
    # status says Approved but this operator's mark does not vouch for it.
    return type is not None and type != "DELETED" and runtime.signer.forged(body)


# -- reported outcomes ------------------------------------------------------------------------
# The ledger of reported outcomes is read from a list of every request at start-up (before any
# handler runs) and kept current by the event handler below. Not a kopf index: kopf holds every
# handler back until each indexed object is indexed, and does so at a cost that grows with the
# square of the objects listed — with thousands of answered requests a restart answered
# nothing for minutes (tests/faults/resume_probe.py measures it).


def _outcome_may_change(
    type: str | None, uid: str, spec: kopf.Spec, runtime: OperatorRuntime
) -> bool:
    # Only a request with an outcome, or one the ledger holds (its outcome could have gone),
    # can change the ledger.
    if type == "DELETED":
        return False
    return bool(spec.get("outcome")) or runtime.outcomes.ledger.get(uid) is not None


def _request_event_matters(
    type: str | None, uid: str, body: kopf.Body, spec: kopf.Spec, memo: kopf.Memo, **_: Any
) -> bool:
    # One filter for the three things an event of a request can call for (kopf builds the
    # keyword arguments once per filter and event): most events call for none of them, and
    # cost no handler run and no log line.
    runtime = _runtime(memo)
    return (
        type == "DELETED"
        or _outcome_may_change(type, uid, spec, runtime)
        or _forged(type, body, runtime)
        or _moved(type, body, runtime)
    )


def _moved(type: str | None, body: kopf.Body, runtime: OperatorRuntime) -> bool:
    # An answered request whose executor found the target moved: answered again here (an
    # unanswered one is answered by the create handler, which reads the annotation).
    return type != "DELETED" and _reassess_asked(body) is not None and runtime.signer.answered(body)


@kopf.on.event(*REQUESTS, id="request-event", when=_request_event_matters)
async def request_event(
    type: str | None,
    uid: str,
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    patch: kopf.Patch,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **kwargs: Any,
) -> None:
    """A deleted request leaves the outcome ledger; a request with an outcome keeps it
    current; a forged ``Approved`` is answered over."""
    runtime = _runtime(memo)
    if type == "DELETED":
        await _outcome_deleted(uid, runtime, logger)
        return
    if _outcome_may_change(type, uid, spec, runtime):
        runtime.outcomes.observe(uid, spec, status)
    if _forged(type, body, runtime):
        await _correct_forged_approval(body, spec, status, meta, patch, runtime, logger, kwargs)
    elif _moved(type, body, runtime):
        logger.info("the target moved since the answer (%s): answering again", REASSESS)
        update = await _answer_and_post(body, spec, status, meta, runtime, 0, kwargs["approvals"])
        patch.status.update(update.patch())
        _post(
            body,
            EventNote(
                "Normal",
                "TargetMoved",
                "an executor found the target changed since the answer; answered again for "
                "the target as it is now (approvals made before no longer apply)",
            ),
        )


async def _correct_forged_approval(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    patch: kopf.Patch,
    runtime: OperatorRuntime,
    logger: kopf.Logger,
    kwargs: Mapping[str, Any],
) -> None:
    """Someone without the operator's key wrote ``Approved`` True: assess again and write the
    operator's own answer over it (a signed status), with a Warning Event."""
    logger.warning("the Approved condition was not written by this operator: assessing again")
    # The prior status may be forged too: it only ever makes the new answer stricter.
    update = await _answer_and_post(body, spec, status, meta, runtime, 0, kwargs["approvals"])
    _post(
        body,
        EventNote(
            "Warning",
            "ForgedStatus",
            "the Approved condition was written without the operator's mark; "
            "it was replaced by the operator's answer",
        ),
    )
    patch.status.update(update.patch())


async def _outcome_deleted(uid: str, runtime: OperatorRuntime, logger: kopf.Logger) -> None:
    """A deleted request's outcome stops counting; its playbook's status is recounted."""
    runtime.recorder.deleted(uid)  # a deleted request no longer counts as Stalled
    outcomes = runtime.outcomes
    for playbook in outcomes.forget(uid):
        try:
            await outcomes.sync_playbook(playbook)
        except PrecedentError as exc:  # the playbook's own handler recounts on its next change
            logger.warning("playbook %s not recounted: %s", playbook, exc)


def _has_outcome(spec: kopf.Spec, **_: Any) -> bool:
    return bool(spec.get("outcome"))


@kopf.on.resume(*REQUESTS, id="outcome", when=_has_outcome)
@kopf.on.create(*REQUESTS, id="outcome", when=_has_outcome)
@kopf.on.update(*REQUESTS, id="outcome", field="spec.outcome", when=_has_outcome)
async def handle_outcome(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    patch: kopf.Patch,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    """Handle a reported outcome once: playbook counts, an Incident on failure, an Event and
    ``status.outcome`` (the mark that stops it being handled again)."""
    outcomes = _runtime(memo).outcomes
    if outcomes.already_handled(status):
        return
    request = RequestRef(
        namespace=str(meta.get("namespace")), name=str(meta.get("name")), uid=str(meta.get("uid"))
    )
    # The assessment may have just been written in this same cycle: read it from the patch.
    current = {**dict(status), **dict(patch.get("status") or {})}
    try:
        handled = await outcomes.handle(
            request,
            spec,
            generation=int(meta.get("generation") or 1),
            status=current,
            now=datetime.now(UTC),
        )
    except InputError as exc:
        raise kopf.PermanentError(f"cannot handle the outcome: {exc}") from None
    except DependencyError as exc:
        raise kopf.TemporaryError(str(exc), delay=DEPENDENCY_RETRY_SECONDS) from None
    patch.status.update(handled.status)
    _post(body, handled.event)
    logger.info("%s", handled.event.message)


# -- approvals ----------------------------------------------------------------------------------
# The index re-lists every RemediationApproval after a restart (before any handler runs), so a
# request assessed again gets its human decision back.


@kopf.index(*APPROVALS, id="approvals")
def index_approval(body: kopf.Body, **_: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """Approvals by (namespace, request name)."""
    return ApprovalService.index_entry(body)


@kopf.on.resume(*APPROVALS, id="approval")
@kopf.on.create(*APPROVALS, id="approval")
async def handle_approval(
    body: kopf.Body,
    status: kopf.Status,
    patch: kopf.Patch,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    """Judge a RemediationApproval once: apply it to its request, or say why it is ignored."""
    if status.get("state"):
        return  # judged already; approvals are immutable
    runtime = _runtime(memo)
    try:
        handled = await runtime.approvals.handle(body, now=datetime.now(UTC))
    except DependencyError as exc:
        raise kopf.TemporaryError(str(exc), delay=APPROVAL_RETRY_SECONDS) from None
    if handled.status is None:
        raise kopf.TemporaryError(handled.verdict.message, delay=APPROVAL_RETRY_SECONDS)
    patch.status.update(handled.status)
    if handled.event is not None:
        _post(body, handled.event)
    if handled.request is not None and handled.verdict.state == "Accepted":
        request_meta = handled.request.get("metadata") or {}
        created = creation_time(request_meta)
        runtime.recorder.approval_decided(
            str(request_meta.get("uid", "")),
            (datetime.now(UTC) - created).total_seconds() if created else None,
        )
    if handled.request is not None and handled.request_event is not None:
        _post(handled.request, handled.request_event)
    logger.info("%s: %s", handled.verdict.reason, handled.verdict.message)


def _accepted_with_expiry(spec: kopf.Spec, status: kopf.Status, **_: Any) -> bool:
    return bool(spec.get("expiresAt")) and status.get("state") == "Accepted"


# A daemon rather than a timer: it runs only for accepted approvals that have an expiresAt
# (the filter), sleeps until exactly that moment instead of polling every request, and kopf
# starts it again for each such approval after a restart (an expiry missed while the operator
# was down is applied at once).
@kopf.daemon(*APPROVALS, id="approval-expiry", when=_accepted_with_expiry, cancellation_timeout=5)
async def approval_expiry(
    body: kopf.Body,
    stopped: kopf.DaemonStopped,
    patch: kopf.Patch,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    """When an accepted approval's expiresAt passes, its request waits again (Expired)."""
    approvals = _runtime(memo).approvals
    try:
        expires = parse_approval_spec(body.get("spec") or {}).expires_at
    except InputError as exc:  # out of range or malformed: the approval is Ignored for it
        logger.warning("approval expiry not followed: %s", exc)
        return
    while not stopped and expires is not None:
        remaining = (expires - datetime.now(UTC)).total_seconds()
        if remaining > 0:
            await stopped.wait(remaining)
            continue
        try:
            handled = await approvals.expire(body, now=datetime.now(UTC))
        except DependencyError as exc:  # a conflicting write or the API away: try again
            logger.warning("approval expiry not applied yet: %s", exc)
            await stopped.wait(APPROVAL_RETRY_SECONDS)
            continue
        if handled is None:
            return  # it no longer decides its request: nothing to take back
        if handled.status is not None:
            patch.status.update(handled.status)
        if handled.event is not None:
            _post(body, handled.event)
        if handled.request is not None and handled.request_event is not None:
            _post(handled.request, handled.request_event)
        logger.info("%s: %s", handled.verdict.reason, handled.verdict.message)
        return


# -- where things run ---------------------------------------------------------------------------
# The environment of a request comes from the label precedent.dev/environment on its target's
# namespace (core.context). Namespaces come in through an index handler, as Incidents do: kopf
# runs it for the whole initial listing before any other handler, so no request is answered
# before the labels are known, and each request reads the labels from memory (no API call).


@kopf.index("", "v1", "namespaces", id="namespace-facts")
def index_namespace(name: str, labels: kopf.Labels, memo: kopf.Memo, **_: Any) -> None:
    """A Namespace was listed, added or relabelled: remember its environment label."""
    runtime = _runtime(memo)
    if runtime.facts is not None and runtime.facts.observe_namespace(name, dict(labels)):
        runtime.relabelled.add(name)


@kopf.on.event("", "v1", "namespaces", id="namespace-relabelled")
async def namespace_relabelled(
    type: str | None, name: str, memo: kopf.Memo, logger: kopf.Logger, **kwargs: Any
) -> None:
    """A Namespace's environment changed (relabelled, or deleted): the requests answered in
    the old facts are answered again (never more permissively without an approval).

    Indexes run before this handler for the same event. The initial listing needs nothing
    here: each answer's ``status.context.facts`` is compared with the facts when its request
    is resumed (``_answered``)."""
    runtime = _runtime(memo)
    facts, relabelled = runtime.facts, runtime.relabelled
    # The periodic list of namespaces answers again with the same index (a live view; kopf
    # hands each object a shallow copy of the memo, which shares the runtime).
    runtime.approval_index = kwargs["approvals"]
    if facts is None:
        return
    if type == "DELETED":
        if not facts.forget_namespace(name):
            return
    elif name not in relabelled:
        return
    relabelled.discard(name)
    if type is None:
        return
    runtime.swept.add(name)
    await _answer_again(runtime, logger, {name}, kwargs["approvals"])


async def _answer_again(
    runtime: OperatorRuntime,
    logger: kopf.Logger,
    namespaces: set[str],
    approvals: kopf.Index[tuple[str, str], dict[str, Any]],
) -> None:
    """Answer again every answered request whose answer was given in facts that no longer
    hold, after ``namespaces`` changed (a request that ran keeps its answer)."""
    api = runtime.api
    try:
        listed = await api.list_cluster_objects("remediationrequests")
    except PrecedentError as exc:  # the API server is away: a restart or resync catches up
        logger.warning("requests in %s not answered again: %s", ", ".join(namespaces), exc)
        return
    for obj in listed:
        body = kopf.Body(cast("kopf.RawBody", obj))
        meta, spec = body.meta, body.spec
        # Whether a request's target lies in one of them is the facts' own rule (a target
        # namespace, a Kubernetes path, or the request's namespace for namespaced kinds):
        # ask whether its answer's facts still hold, a lookup in memory per request.
        if not runtime.signer.answered(body) or _answered(body, runtime):
            continue
        update = await _answer(body, spec, body.status, meta, runtime, 0, approvals)
        try:
            version = str(meta.get("resourceVersion"))
            await api.patch_request_status(
                str(meta.namespace), str(meta.name), update.patch(), version
            )
        except PrecedentError as exc:  # changed meanwhile: its own handler answers it
            logger.warning("request %s/%s not answered again: %s", meta.namespace, meta.name, exc)
            continue
        posted = await _post_decision(body, update, runtime)
        context = (update.patch().get("context") or {}).get("facts")
        # Outside a handler (this runs in the resync task) kopf's own Event queue may not be
        # reachable: the answer stands, the extra Events are then only logged.
        try:
            _post_notes(body, update, posted)
            _post(
                body,
                EventNote(
                    "Normal",
                    "ContextChanged",
                    f"the facts about the target changed (now: {context}); answered again",
                ),
            )
        except LookupError:
            logger.info(
                "request %s/%s answered again (facts now: %s)", meta.namespace, meta.name, context
            )


# -- the dependency graph (issue 15) ------------------------------------------------------------
# kopf's own watches, not a second client: the same login, relisting after 410 Gone, backoff,
# peering pause and namespace flags as every other handler here. Objects come in through index
# handlers, as Incidents do, because kopf runs them for the whole initial listing before any
# other handler: after a restart no request is scored against a half-loaded graph. The index
# stores nothing (None); the graph lives in the service. DELETED events remove objects.
# Read-only: nothing here patches these objects (RBAC grants get/list/watch only).
# PRECEDENT_BLAST_RADIUS=off registers none of them: no watch at all.

GRAPH_RESOURCES = (
    ("apps", "v1", "deployments", "Deployment"),
    ("apps", "v1", "statefulsets", "StatefulSet"),
    ("apps", "v1", "daemonsets", "DaemonSet"),
    ("", "v1", "services", "Service"),
    ("", "v1", "configmaps", "ConfigMap"),
    ("networking.k8s.io", "v1", "ingresses", "Ingress"),
    ("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
    ("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"),
)


def _follows_graph() -> bool:
    try:
        return load_settings().graph.enabled
    except PrecedentError:
        return True  # configure() reports the bad setting and stops the operator


def graph_object(body: kopf.Body, resource: kopf.Resource, memo: kopf.Memo, **_: Any) -> None:
    """An object of a kind the graph reads was listed, added or changed: apply it."""
    blast = _runtime(memo).blast
    if blast is not None:
        blast.observe(str(resource.kind), None, body)


def graph_object_deleted(
    body: kopf.Body, resource: kopf.Resource, memo: kopf.Memo, **_: Any
) -> None:
    """An object of a kind the graph reads was deleted: remove it."""
    blast = _runtime(memo).blast
    if blast is not None:
        blast.observe(str(resource.kind), "DELETED", body)


@kopf.on.startup(id="graph-resync")
async def start_graph_resync(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """Start the periodic full list of the graph's kinds (when the graph and it are on): the
    graph equals the lists (the history's rule, the same way)."""
    runtime = _runtime(memo)
    blast, api = runtime.blast, runtime.api
    seconds = runtime.config.graph.resync_seconds
    if blast is None or seconds <= 0 or "graph-resync" in runtime.tasks:
        return

    def listing(group: str, version: str, plural: str, kind: str) -> _Listing:
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        return _Listing(
            plural,
            blast.mark,
            lambda: api.list_objects(prefix, plural),
            lambda items, mark: blast.resync(kind, items, mark),
        )

    listings = [listing(*resource) for resource in GRAPH_RESOURCES]
    runtime.tasks["graph-resync"] = asyncio.create_task(
        _resync_every(seconds, listings, logger, what="graph resync"), name="graph-resync"
    )


if _follows_graph():
    for _group, _version, _plural, _ in GRAPH_RESOURCES:
        kopf.index(_group, _version, _plural, id=f"graph-{_plural}")(graph_object)
        kopf.on.event(
            _group,
            _version,
            _plural,
            id=f"graph-{_plural}-deleted",
            when=lambda type, **_: type == "DELETED",
        )(graph_object_deleted)


@kopf.on.probe(id="ready")
def probe_ready(memo: kopf.Memo, **_: Any) -> bool:
    """Readiness at /healthz: an error (HTTP 500) until the configuration is loaded and the
    vector index is built or loaded; then true."""
    if not getattr(memo, "index_ready", False):
        raise kopf.PermanentError("not ready: the vector index is being built")
    return True


@kopf.on.probe(id="history")
def probe_history(memo: kopf.Memo, **_: Any) -> int:
    """Liveness/readiness detail at /healthz: incidents in the current snapshot."""
    return _runtime(memo).objects.history_size()


@kopf.on.probe(id="playbooks")
def probe_playbooks(memo: kopf.Memo, **_: Any) -> int:
    """Liveness/readiness detail at /healthz: playbooks in the in-process catalog."""
    return _runtime(memo).objects.playbook_count()


# -- the guard of direct changes (admission) -------------------------------------------------
# kopf serves the webhooks (its server runs in every replica, whatever peering pauses); the
# ValidatingWebhookConfiguration is Precedent's own (manifests/guard/): kopf's managed
# configuration cannot say which namespaces (the precedent.dev/guard label), which changes (CEL
# match conditions), a short timeout, or Fail for enforce and Ignore for warn.

_GUARDED = {
    ("apps", "deployments"): "v1",
    ("apps", "statefulsets"): "v1",
    ("apps", "replicasets"): "v1",
    ("", "persistentvolumeclaims"): "v1",
    ("", "namespaces"): "v1",
    ("rbac.authorization.k8s.io", "rolebindings"): "v1",
    ("autoscaling", "horizontalpodautoscalers"): "v2",
}
"""The resources the webhook configuration may route, each at the version it asks for."""


def _guarded(resource: kopf.Resource) -> bool:
    return _GUARDED.get((resource.group, resource.plural)) == resource.version


def _with_change(spec: kopf.Spec, **_: Any) -> bool:
    return bool(spec.get("change")) and not spec.get("outcome")


@kopf.index(*REQUESTS, id="requests_by_target", when=_with_change)
def index_request_by_target(
    body: kopf.Body, **_: Any
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Requests with a change that has not run, by (target namespace, kind, name): what the
    guard looks up first."""
    return {guard_key(body): dict(body)}


async def _guard(
    mode: GuardMode,
    resource: kopf.Resource,
    subresource: str | None,
    operation: str | None,
    body: kopf.Body,
    old: kopf.Body | None,
    new: kopf.Body | None,
    userinfo: Mapping[str, Any],
    warnings: list[str],
    dryrun: bool,
    memo: kopf.Memo,
    requests_by_target: kopf.Index[tuple[str, str, str], dict[str, Any]],
) -> None:
    runtime: OperatorRuntime | None = getattr(memo, "runtime", None)
    if runtime is None:
        raise kopf.AdmissionError("precedent guard: the operator is starting; try again", code=503)
    meta = body.get("metadata") or {}
    namespace = None if resource.plural == "namespaces" else meta.get("namespace")
    name = str(meta.get("name") or "")
    change = change_of(
        resource.plural, subresource, str(operation or ""), namespace, name, old, new
    )
    if change is None:
        return  # not a change the guard weighs (the match conditions let it through)
    started = time.perf_counter()
    answer = await runtime.guard.review(
        change,
        mode=mode,
        user=str(userinfo.get("username") or ""),
        groups=[str(g) for g in userinfo.get("groups") or []],
        old=dict(old) if old is not None else None,
        dry_run=dryrun,
        known=list(requests_by_target.get(change_key(change), [])),
    )
    METRICS.guard_latency.labels(answer.outcome).observe(time.perf_counter() - started)
    warnings.extend(answer.warnings)
    if not answer.allowed:
        raise kopf.AdmissionError(answer.message, code=403)


@kopf.on.validate(
    _guarded,
    id="guard-enforce",
    subresource="*",
    operations=["CREATE", "UPDATE", "DELETE"],
    side_effects=True,
)
async def guard_enforce(**kwargs: Any) -> None:
    """A risky direct change to a namespace labelled ``precedent.dev/guard: enforce``."""
    await _guard("enforce", **_guard_args(kwargs))


@kopf.on.validate(
    _guarded,
    id="guard-warn",
    subresource="*",
    operations=["CREATE", "UPDATE", "DELETE"],
    side_effects=True,
    ignore_failures=True,
)
async def guard_warn(**kwargs: Any) -> None:
    """A risky direct change to a namespace labelled ``precedent.dev/guard: warn``."""
    await _guard("warn", **_guard_args(kwargs))


def _guard_args(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    names = (
        "resource",
        "subresource",
        "operation",
        "body",
        "old",
        "new",
        "userinfo",
        "warnings",
        "dryrun",
        "memo",
        "requests_by_target",
    )
    return {n: kwargs.get(n) for n in names}
