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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, cast

import kopf
import prometheus_client

from precedent.adapters.kube_api import ApiConnection, KubeApi
from precedent.core.context import ContextFacts
from precedent.errors import DependencyError, InputError, PrecedentError
from precedent.logging_json import configure_logging, log_format_from_environment
from precedent.models import API_GROUP, PlaybookHistory
from precedent.services import AssessmentService, OutcomeService
from precedent.services.approvals import ApprovalService, parse_approval_spec
from precedent.services.blast_radius import BlastRadiusService
from precedent.services.events import EventPoster
from precedent.services.fair_queue import FairSlots
from precedent.services.mirror import ObjectMirror
from precedent.services.observability import DecisionRecorder, RequestName
from precedent.services.outcomes import RequestRef
from precedent.services.status import StatusUpdate
from precedent.settings import load_settings
from precedent.wiring import build_approvals, build_outcomes, build_service

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
# Objects per page of kopf's initial listing: each page is a short request, so listing
# thousands of requests after a restart never runs into the request timeout (a timed-out
# listing starts over, and no handler runs until it completes).
LIST_CHUNK_SIZE = 500

# `kopf run` set up logging before importing this module: from here on every line is in the
# format asked for (the settings, read at startup, confirm it or refuse with a JSON line).
configure_logging(log_format_from_environment())


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


@kopf.on.startup(id="configure")
async def configure(
    settings: kopf.OperatorSettings, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> None:
    """Build dependencies once and keep them in ``memo``; store kopf state in status; build or
    load the vector index. A configuration that cannot be loaded stops the operator."""
    memo.index_ready = False
    try:
        config = load_settings()
        if config.policy.mode == "enforce" and config.policy.status_key is None:
            # Without a key no answer survives a restart: every request would be assessed
            # again against today's history, and a forged status could not be told apart.
            raise InputError(
                "PRECEDENT_STATUS_KEY is not set: enforce mode needs the key of the status "
                "mark (the precedent-status-key Secret)"
            )
        service = build_service(config, follows_cluster=True)
    except PrecedentError as exc:
        _stop(f"invalid configuration: {exc}")
    except (OSError, MemoryError) as exc:
        _stop(f"cannot load the configuration: {exc}")
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
    settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.kopf.progress")
    settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(
        field="status.kopf.last-handled-configuration"
    )
    # Handlers post their own Events; log lines below WARNING stay in the log only.
    settings.posting.level = logging.WARNING
    settings.networking.request_timeout = 30
    settings.watching.chunk_size = LIST_CHUNK_SIZE
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
        report = await asyncio.to_thread(service.prepare_index)
    except PrecedentError as exc:
        _stop(f"vector index: {exc}")
    logger.info("%s in %.1f s", report, time.perf_counter() - started)
    memo.config = config
    # What the watch applied, compared with a full list now and then (see resync below).
    memo.incident_mirror = ObjectMirror[str]("incidents")
    memo.playbook_mirror = ObjectMirror[str]("playbooks")
    # Namespaces whose environment label changed, for the handler that answers again.
    memo.relabelled = set()
    memo.shared = {}
    memo.recorder = DecisionRecorder(service)
    if service.signer.ephemeral:
        logging.getLogger(__name__).warning(
            "PRECEDENT_STATUS_KEY is not set (audit-only mode): statuses are signed with a "
            "per-process key, so every request is assessed again after a restart"
        )
    # Last: the other activities and every handler take ``memo.service`` as "configured".
    memo.service = service
    memo.index_ready = True


def _connection(info: kopf.ConnectionInfo) -> ApiConnection:
    verify: Any = info.as_ssl_context() if info.server.startswith("https:") else True
    return ApiConnection(server=info.server, headers=info.as_http_headers(), verify=verify)


def _login_now(settings: kopf.OperatorSettings, logger: kopf.Logger) -> kopf.ConnectionInfo:
    info = kopf.login_with_service_account(settings=settings, logger=logger)
    info = info or kopf.login_with_kubeconfig(settings=settings, logger=logger)
    if info is None:
        raise kopf.PermanentError("no credentials: neither a service account nor a kubeconfig")
    return info


@kopf.on.startup(id="outcomes")
async def configure_outcomes(
    settings: kopf.OperatorSettings, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> None:
    """Outcome handling, with an API client logged in as kopf logs in (it creates Incidents
    and writes Playbook counts, which kopf's own client does not do)."""
    _configured(memo)

    async def login() -> ApiConnection:
        return _connection(_login_now(settings, logger))

    # One client for the process: kopf runs this again after a TemporaryError below, and a
    # second client would leave the first one's connections open.
    api: KubeApi | None = getattr(memo, "kube_api", None)
    if api is None:
        api = KubeApi(await login(), login=login, connections=EVENT_POSTS_AT_ONCE)
        memo.kube_api = api
    memo.events = EventPoster(api)
    memo.event_slots = FairSlots(EVENT_POSTS_AT_ONCE)
    memo.outcomes = build_outcomes(memo.config.catalog, memo.service, cluster=api)
    # Every reported outcome counts before the first playbook's status is written: startup
    # handlers finish before any watch starts (see observe_outcome).
    try:
        for obj in await api.list_cluster_objects("remediationrequests"):
            meta = obj.get("metadata") or {}
            try:
                memo.outcomes.observe(
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
    # Approvals read and patch the request they point at through the same client.
    memo.approvals = build_approvals(memo.config.policy, memo.service, requests=api)
    if memo.config.operator.resync_seconds > 0:
        memo.resync_task = asyncio.create_task(_resync_forever(memo, logger), name="resync")


@kopf.on.cleanup(id="close")
async def close(memo: kopf.Memo, **_: Any) -> None:
    """Stop the resync and release the clients' connections on shutdown."""
    task: asyncio.Task[None] | None = getattr(memo, "resync_task", None)
    if task is not None:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except Exception:  # whatever ended the resync, shutting down goes on (no retry loop)
            logging.getLogger(__name__).exception("the resync task ended with an error")
    service: AssessmentService | None = getattr(memo, "service", None)
    api: KubeApi | None = getattr(memo, "kube_api", None)
    try:
        if service is not None:
            await service.aclose()
    finally:
        if api is not None:
            await api.aclose()


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
    service: AssessmentService = memo.service
    mirror: ObjectMirror[str] = memo.incident_mirror
    created = str(meta.get("creationTimestamp") or "")
    try:
        incident = mirror.apply(
            name,
            str(meta.get("resourceVersion", "")),
            lambda: service.upsert_incident(name, spec, created=created),
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
    service: AssessmentService = memo.service
    update = service.incident_status(
        name,
        body.get("spec") or {},
        generation=int(meta.get("generation") or 1),
        previous=status.get("conditions"),
        now=datetime.now(UTC),
    )
    if update.changed:
        patch.status.update(update.fields)
        if update.event is not None:
            kopf.event(
                body,
                type=update.event.type,
                reason=update.event.reason,
                message=update.event.message,
            )


@kopf.on.event(*INCIDENTS, id="incident-deleted", when=lambda type, **_: type == "DELETED")
def incident_deleted(name: str, memo: kopf.Memo, **_: Any) -> None:
    """Drop a deleted Incident from the history."""
    mirror: ObjectMirror[str] = memo.incident_mirror
    mirror.remove(name, lambda: memo.service.remove_incident(name))


@kopf.index(*PLAYBOOKS, id="playbooks")
def index_playbook(
    name: str, spec: kopf.Spec, meta: kopf.Meta, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> dict[str, str]:
    """Keep the in-memory catalog in step with Playbook objects."""
    mirror: ObjectMirror[str] = memo.playbook_mirror
    try:
        version = mirror.apply(
            name, str(meta.get("resourceVersion", "")), lambda: _upsert_playbook(memo, name, spec)
        )
    except InputError as exc:  # dropped from the catalog, not kept in its last valid form
        logger.warning("ignoring invalid playbook: %s", exc)
        return {}
    return {name: version}


def _upsert_playbook(memo: kopf.Memo, name: str, spec: Any) -> str:
    service: AssessmentService = memo.service
    outcomes: OutcomeService = memo.outcomes
    try:
        playbook = service.upsert_playbook(name, spec)
    except InputError:
        _remove_playbook(memo, name)
        raise
    # The catalog scores with the live counts: the prior plus the reported outcomes.
    outcomes.playbook_changed(playbook)
    return playbook.version


def _remove_playbook(memo: kopf.Memo, name: str) -> None:
    memo.service.remove_playbook(name)
    memo.outcomes.playbook_removed(name)


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
    outcomes: OutcomeService = memo.outcomes
    wanted = {
        **outcomes.playbook_status(str(meta.get("name")), prior),
        "observedGeneration": int(meta.get("generation") or 1),
    }
    if any(status.get(key) != value for key, value in wanted.items()):
        patch.status.update(wanted)


@kopf.on.event(*PLAYBOOKS, id="playbook-deleted", when=lambda type, **_: type == "DELETED")
def playbook_deleted(name: str, memo: kopf.Memo, **_: Any) -> None:
    """Drop a deleted Playbook from the catalog."""
    mirror: ObjectMirror[str] = memo.playbook_mirror
    mirror.remove(name, lambda: _remove_playbook(memo, name))


async def _resync_forever(memo: kopf.Memo, logger: kopf.Logger) -> None:
    """List Incidents, Playbooks and Namespaces every ``resync_seconds`` and make memory
    equal the lists.

    kopf's re-list (after a broken stream or 410 Gone) never drops what the new list lacks,
    and a watch resumed against a restored API server never delivers those deletions; a list
    now and then does (see precedent.services.mirror).
    """
    service: AssessmentService = memo.service
    api: KubeApi = memo.kube_api

    def upsert_incident(obj: Any) -> None:
        meta = obj.get("metadata") or {}
        created = str(meta.get("creationTimestamp") or "")
        service.upsert_incident(str(meta["name"]), obj.get("spec"), created=created)

    def upsert_playbook(obj: Any) -> None:
        _upsert_playbook(memo, str(obj["metadata"]["name"]), obj.get("spec"))

    kinds = (
        (memo.incident_mirror, upsert_incident, service.remove_incident),
        (memo.playbook_mirror, upsert_playbook, lambda name: _remove_playbook(memo, name)),
    )
    while True:
        await asyncio.sleep(memo.config.operator.resync_seconds)
        await _resync_namespaces(memo, logger)
        for mirror, upsert, delete in kinds:
            mark = mirror.mark()
            try:
                items = await api.list_cluster_objects(mirror.kind)
            except PrecedentError as exc:  # the API server is away: the next round tries again
                logger.warning("resync of %s skipped: %s", mirror.kind, exc)
                continue
            listed = {str(o["metadata"]["name"]): o for o in items if o.get("metadata")}
            plan = mirror.resync(listed, mark, upsert=upsert, delete=delete)
            if plan:
                logger.info(
                    "resync of %s: %d taken from the API, %d gone from it (%s)",
                    mirror.kind,
                    len(plan.applied),
                    len(plan.removed),
                    ", ".join(plan.removed[:10]) or "-",
                )


async def _resync_namespaces(memo: kopf.Memo, logger: kopf.Logger) -> None:
    """Make the Namespaces' labels in memory equal a full list, as for Incidents: a relabel
    or a deletion the watch never delivered (a restored API server) is seen here, and the
    requests aimed at those namespaces are answered again."""
    service: AssessmentService = memo.service
    facts = service.facts
    approvals = memo.shared.get("approvals")
    if facts is None or approvals is None:
        return
    try:
        items = await memo.kube_api.list_objects("/api/v1", "namespaces")
    except PrecedentError as exc:  # the API server is away: the next round tries again
        logger.warning("resync of namespaces skipped: %s", exc)
        return
    listed = [
        (str(meta["name"]), meta.get("labels"))
        for meta in (o.get("metadata") or {} for o in items)
        if meta.get("name")
    ]
    changed = facts.replace_namespaces(listed)
    memo.relabelled.difference_update(changed)
    if changed:
        logger.info("resync of namespaces: the environment of %s changed", ", ".join(changed))
        await _answer_again(memo, logger, set(changed), approvals)


# -- requests ---------------------------------------------------------------------------------


def _timestamp(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _answered(body: kopf.Body, memo: kopf.Memo) -> bool:
    """This operator's answer (a valid mark), given in facts that still hold: its target's
    namespace was not relabelled since (a request that ran keeps its answer)."""
    service: AssessmentService = memo.service
    if not service.signer.answered(body):
        return False
    spec = body.get("spec") or {}
    if spec.get("outcome"):
        return True
    namespace = (body.get("metadata") or {}).get("namespace")
    return not service.facts_changed(spec, namespace, body.get("status") or {})


def _not_answered(body: kopf.Body, memo: kopf.Memo, **_: Any) -> bool:
    # A request this operator answered (a valid mark) is not even handed to the handler: a
    # restart resumes thousands of them, and each would cost a handler run and two log lines.
    return not _answered(body, memo)


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
    if _answered(body, memo):
        return  # answered by this operator: a restart re-lists everything and leaves it alone
    update = await _answer_and_post(body, spec, status, meta, memo, retry, kwargs["approvals"])
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
    memo: kopf.Memo,
    retry: int,
    approvals: kopf.Index[tuple[str, str], dict[str, Any]],
) -> StatusUpdate:
    """The status a request should have now (assessed, with its approvals applied)."""
    service: AssessmentService = memo.service
    # Approvals already made for it (re-listed after a restart) are applied again. kopf passes
    # each index as a keyword named by its id (see index_approval below).
    approval_service: ApprovalService = memo.approvals
    key = (str(meta.get("namespace")), str(meta.get("name")))
    now = datetime.now(UTC)
    # The creation time anchors "recent" so that re-running the handler gives the same answer.
    started = time.perf_counter()
    update = await service.reconcile(
        spec,
        uid=str(meta.get("uid", "")),
        generation=int(meta.get("generation") or 1),
        previous=status.get("conditions"),
        now=now,
        anchor=_timestamp(meta.get("creationTimestamp")),
        attempt=retry + 1,
        approve=approval_service.applier(body, list(approvals.get(key, [])), now),
        prior=dict(status),
        namespace=str(meta.get("namespace") or ""),
    )
    recorder: DecisionRecorder = memo.recorder
    name = RequestName(str(meta.get("uid", "")), str(meta.get("namespace")), str(meta.get("name")))
    recorder.reconciled(name, str(spec.get("action", "")), update, time.perf_counter() - started)
    return update


async def _answer_and_post(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    memo: kopf.Memo,
    retry: int,
    approvals: kopf.Index[tuple[str, str], dict[str, Any]],
) -> StatusUpdate:
    """:func:`_answer`, then its Event. At most EVENT_POSTS_AT_ONCE requests are answered at
    once, and namespaces take turns for those slots (and for the scoring thread), so a flood in
    one namespace does not hold up the others."""
    slots: FairSlots = memo.event_slots
    async with slots.hold(str(meta.get("namespace") or "")):
        update = await _answer(body, spec, status, meta, memo, retry, approvals)
        # Posted before the status is written, under a name only this answer produces: a
        # crash in between re-assesses and re-posts (409: once); a crash after leaves both.
        posted = await _post_decision(body, update, memo)
    _post_notes(body, update, posted)
    return update


async def _post_decision(body: kopf.Body, update: StatusUpdate, memo: kopf.Memo) -> bool:
    """The answer's Event through the operator's own client; False when it could not be
    posted there (kopf then posts it, see :func:`_post_notes`)."""
    if update.event is None:
        return True
    events: EventPoster = memo.events
    return await events.post(body, update.event)


def _post_notes(body: kopf.Body, update: StatusUpdate, posted: bool) -> None:
    """kopf posts the answer's Event when the client could not, and every extra note."""
    if update.event is not None and not posted:
        kopf.event(
            body,
            type=update.event.type,
            reason=update.event.reason,
            message=update.event.message,
        )
    for extra in update.notes:
        kopf.event(body, type=extra.type, reason=extra.reason, message=extra.message)


def _forged(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> bool:
    # A change while the operator runs (the initial listing is the resume handler's): the
    # status says Approved but this operator's mark does not vouch for it.
    service: AssessmentService = memo.service
    return type is not None and type != "DELETED" and service.signer.forged(body)


@kopf.on.event(*REQUESTS, id="forged-approval", when=_forged)
async def correct_forged_approval(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    patch: kopf.Patch,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **kwargs: Any,
) -> None:
    """Someone without the operator's key wrote ``Approved`` True: assess again and write the
    operator's own answer over it (a signed status), with a Warning Event."""
    logger.warning("the Approved condition was not written by this operator: assessing again")
    # The prior status may be forged too: it only ever makes the new answer stricter.
    update = await _answer_and_post(body, spec, status, meta, memo, 0, kwargs["approvals"])
    kopf.event(
        body,
        type="Warning",
        reason="ForgedStatus",
        message="the Approved condition was written without the operator's mark; "
        "it was replaced by the operator's answer",
    )
    patch.status.update(update.patch())


# -- reported outcomes ------------------------------------------------------------------------
# The ledger of reported outcomes is read from a list of every request at start-up (before any
# handler runs) and kept current by the event handler below. Not a kopf index: kopf holds every
# handler back until each indexed object is indexed, and does so at a cost that grows with the
# square of the objects listed — with thousands of answered requests a restart answered
# nothing for minutes (tests/faults/resume_probe.py measures it).


def _outcome_may_change(
    type: str | None, uid: str, spec: kopf.Spec, memo: kopf.Memo, **_: Any
) -> bool:
    # Only a request with an outcome, or one the ledger holds (its outcome could have gone),
    # can change the ledger: the others cost no handler run and no log line per event.
    if type == "DELETED":
        return False
    outcomes: OutcomeService = memo.outcomes
    return bool(spec.get("outcome")) or outcomes.ledger.get(uid) is not None


@kopf.on.event(*REQUESTS, id="outcome-ledger", when=_outcome_may_change)
def observe_outcome(
    uid: str, spec: kopf.Spec, status: kopf.Status, memo: kopf.Memo, **_: Any
) -> None:
    """Keep the ledger of accepted outcomes (by request uid) in step with the requests."""
    outcomes: OutcomeService = memo.outcomes
    outcomes.observe(uid, spec, status)


@kopf.on.event(*REQUESTS, id="outcome-deleted", when=lambda type, **_: type == "DELETED")
async def outcome_deleted(uid: str, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """A deleted request's outcome stops counting; its playbook's status is recounted."""
    recorder: DecisionRecorder = memo.recorder
    recorder.deleted(uid)  # a deleted request no longer counts as Stalled
    outcomes: OutcomeService = memo.outcomes
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
    outcomes: OutcomeService = memo.outcomes
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
    kopf.event(
        body, type=handled.event.type, reason=handled.event.reason, message=handled.event.message
    )
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
    approvals: ApprovalService = memo.approvals
    try:
        handled = await approvals.handle(body, now=datetime.now(UTC))
    except DependencyError as exc:
        raise kopf.TemporaryError(str(exc), delay=APPROVAL_RETRY_SECONDS) from None
    if handled.status is None:
        raise kopf.TemporaryError(handled.verdict.message, delay=APPROVAL_RETRY_SECONDS)
    patch.status.update(handled.status)
    if handled.event is not None:
        note = handled.event
        kopf.event(body, type=note.type, reason=note.reason, message=note.message)
    if handled.request is not None and handled.verdict.state == "Accepted":
        request_meta = handled.request.get("metadata") or {}
        created = _timestamp(request_meta.get("creationTimestamp"))
        recorder: DecisionRecorder = memo.recorder
        recorder.approval_decided(
            str(request_meta.get("uid", "")),
            (datetime.now(UTC) - created).total_seconds() if created else None,
        )
    if handled.request is not None and handled.request_event is not None:
        note = handled.request_event
        reference = kopf.Body(cast("kopf.RawBody", handled.request))
        kopf.event(reference, type=note.type, reason=note.reason, message=note.message)
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
    approvals: ApprovalService = memo.approvals
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
            note = handled.event
            kopf.event(body, type=note.type, reason=note.reason, message=note.message)
        if handled.request is not None and handled.request_event is not None:
            note = handled.request_event
            reference = kopf.Body(cast("kopf.RawBody", handled.request))
            kopf.event(reference, type=note.type, reason=note.reason, message=note.message)
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
    facts: ContextFacts | None = memo.service.facts
    if facts is not None and facts.observe_namespace(name, dict(labels)):
        memo.relabelled.add(name)


@kopf.on.event("", "v1", "namespaces", id="namespace-relabelled")
async def namespace_relabelled(
    type: str | None, name: str, memo: kopf.Memo, logger: kopf.Logger, **kwargs: Any
) -> None:
    """A Namespace's environment changed (relabelled, or deleted): the requests answered in
    the old facts are answered again (never more permissively without an approval).

    Indexes run before this handler for the same event. The initial listing needs nothing
    here: each answer's ``status.context.facts`` is compared with the facts when its request
    is resumed (``_answered``)."""
    facts: ContextFacts | None = memo.service.facts
    relabelled: set[str] = memo.relabelled
    # The periodic list of namespaces answers again with the same index (a live view; kopf
    # hands each object a shallow copy of the memo, so it is kept in a shared dict).
    memo.shared["approvals"] = kwargs["approvals"]
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
    await _answer_again(memo, logger, {name}, kwargs["approvals"])


async def _answer_again(
    memo: kopf.Memo,
    logger: kopf.Logger,
    namespaces: set[str],
    approvals: kopf.Index[tuple[str, str], dict[str, Any]],
) -> None:
    """Answer again every answered request whose answer was given in facts that no longer
    hold, after ``namespaces`` changed (a request that ran keeps its answer)."""
    service: AssessmentService = memo.service
    api: KubeApi | None = getattr(memo, "kube_api", None)
    if api is None:
        return
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
        if not service.signer.answered(body) or _answered(body, memo):
            continue
        update = await _answer(body, spec, body.status, meta, memo, 0, approvals)
        try:
            version = str(meta.get("resourceVersion"))
            await api.patch_request_status(
                str(meta.namespace), str(meta.name), update.patch(), version
            )
        except PrecedentError as exc:  # changed meanwhile: its own handler answers it
            logger.warning("request %s/%s not answered again: %s", meta.namespace, meta.name, exc)
            continue
        posted = await _post_decision(body, update, memo)
        context = (update.patch().get("context") or {}).get("facts")
        # Outside a handler (this runs in the resync task) kopf's own Event queue may not be
        # reachable: the answer stands, the extra Events are then only logged.
        try:
            _post_notes(body, update, posted)
            kopf.event(
                body,
                type="Normal",
                reason="ContextChanged",
                message=f"the facts about the target changed (now: {context}); answered again",
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
    blast: BlastRadiusService | None = memo.service.blast
    if blast is not None:
        blast.observe(str(resource.kind), None, body)


def graph_object_deleted(
    body: kopf.Body, resource: kopf.Resource, memo: kopf.Memo, **_: Any
) -> None:
    """An object of a kind the graph reads was deleted: remove it."""
    blast: BlastRadiusService | None = memo.service.blast
    if blast is not None:
        blast.observe(str(resource.kind), "DELETED", body)


async def _resync_graph_forever(memo: kopf.Memo, logger: kopf.Logger) -> None:
    """List the graph's kinds every ``graph.resync_seconds`` and make the graph equal
    the lists: kopf's re-list never drops what the new list lacks, and a watch resumed against
    a restored API server never delivers those deletions (the history's rule, the same way)."""
    blast: BlastRadiusService = memo.service.blast
    while True:
        await asyncio.sleep(memo.config.graph.resync_seconds)
        api: KubeApi = memo.kube_api
        for group, version, plural, kind in GRAPH_RESOURCES:
            prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
            mark = blast.mark()
            try:
                items = await api.list_objects(prefix, plural)
            except PrecedentError as exc:  # the API server is away: the next round tries again
                logger.warning("graph resync of %s skipped: %s", plural, exc)
                continue
            result = blast.resync(kind, items, mark)
            if result:
                logger.info(
                    "graph resync of %s: %d taken from the API, %d gone from it",
                    plural,
                    len(result.applied),
                    len(result.removed),
                )


@kopf.on.startup(id="graph-resync")
async def start_graph_resync(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """Start the periodic full list of the graph's kinds (when the graph and it are on)."""
    _configured(memo)
    if memo.service.blast is not None and memo.config.graph.resync_seconds > 0:
        memo.graph_resync = asyncio.create_task(
            _resync_graph_forever(memo, logger), name="graph-resync"
        )


@kopf.on.cleanup(id="graph-resync")
async def stop_graph_resync(memo: kopf.Memo, **_: Any) -> None:
    """Stop the periodic full list."""
    task: asyncio.Task[None] | None = getattr(memo, "graph_resync", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


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


def _configured(memo: kopf.Memo) -> AssessmentService:
    """The service ``configure`` built; a permanent error (not a retry every 60 s) if there is
    none, which only happens when configure did not finish."""
    service: AssessmentService | None = getattr(memo, "service", None)
    if service is None:
        raise kopf.PermanentError("not configured: the configure activity did not finish")
    return service


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
    return _configured(memo).history_size()


@kopf.on.probe(id="playbooks")
def probe_playbooks(memo: kopf.Memo, **_: Any) -> int:
    """Liveness/readiness detail at /healthz: playbooks in the in-process catalog."""
    return len(_configured(memo).catalog)
