"""kopf handlers — the only module that imports kopf.

Run with ``kopf run -m precedent.handlers --all-namespaces``. Each handler parses the body,
calls the service, and writes the answer into ``status``; errors map to kopf's: bad input →
``Stalled`` + ``kopf.PermanentError`` (no retry loop), an unavailable dependency →
``kopf.TemporaryError`` with a bounded delay.

kopf keeps its own bookkeeping under ``status.kopf`` rather than in annotations, so the
operator never writes to a request's metadata or spec: status-only writes, as its RBAC says.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import kopf
import prometheus_client

from precedent.core.conditions import ConditionUpdate, merge_conditions
from precedent.errors import DependencyError, InputError
from precedent.models import API_GROUP, Assessment, Decision
from precedent.service import PrecedentService
from precedent.settings import load_settings

VERSION = "v1alpha1"
REQUESTS = (API_GROUP, VERSION, "remediationrequests")
INCIDENTS = (API_GROUP, VERSION, "incidents")
PLAYBOOKS = (API_GROUP, VERSION, "playbooks")

# Retry delay for an unavailable dependency: bounded, so a request is never parked for long.
DEPENDENCY_RETRY_SECONDS = 15


@kopf.on.startup(id="configure")
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Build dependencies once and keep them in ``memo``; store kopf state in status."""
    try:
        config = load_settings()
    except InputError as exc:
        raise kopf.PermanentError(f"invalid configuration: {exc}") from None
    settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.kopf.progress")
    settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(
        field="status.kopf.last-handled-configuration"
    )
    # Handlers post their own Events; log lines below WARNING stay in the log only.
    settings.posting.level = logging.WARNING
    settings.networking.request_timeout = 30
    memo.service = PrecedentService.from_settings(config)
    memo.config = config
    if config.metrics_port:
        # Its own port, apart from kopf's liveness endpoint; prometheus-client serves a thread.
        prometheus_client.start_http_server(config.metrics_port)


@kopf.on.cleanup(id="close")
async def close(memo: kopf.Memo, **_: Any) -> None:
    """Release the catalog client's connections on shutdown."""
    service: PrecedentService | None = getattr(memo, "service", None)
    if service is not None:
        await service.aclose()


@kopf.on.login(id="login")
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In-cluster service account first, else the kubeconfig ($KUBECONFIG), read at login time."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


# -- history and catalog ----------------------------------------------------------------------
# Index handlers run for every object of the initial listing before any other handler runs, so
# no request is scored against a half-loaded history after a restart.


@kopf.index(*INCIDENTS, id="incidents")
def index_incident(
    name: str, spec: kopf.Spec, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> dict[str, str]:
    """Keep the in-memory history in step with Incident objects."""
    service: PrecedentService = memo.service
    try:
        incident = service.upsert_incident(name, spec)
    except InputError as exc:
        logger.warning("ignoring invalid incident: %s", exc)
        return {}
    return {name: incident.id}


@kopf.on.event(*INCIDENTS, id="incident-deleted", when=lambda type, **_: type == "DELETED")
def incident_deleted(name: str, memo: kopf.Memo, **_: Any) -> None:
    """Drop a deleted Incident from the history."""
    memo.service.remove_incident(name)


@kopf.index(*PLAYBOOKS, id="playbooks")
def index_playbook(
    name: str, spec: kopf.Spec, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> dict[str, str]:
    """Keep the in-memory catalog in step with Playbook objects."""
    service: PrecedentService = memo.service
    try:
        playbook = service.upsert_playbook(name, spec)
    except InputError as exc:
        logger.warning("ignoring invalid playbook: %s", exc)
        return {}
    return {name: playbook.version}


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
    executions, successes = int(history.get("executions", 0)), int(history.get("successes", 0))
    service: PrecedentService = memo.service
    wanted = {
        "executions": executions,
        "successes": successes,
        "successRate": round(service.success_rate(successes, executions), 4),
        "observedGeneration": int(meta.get("generation") or 1),
    }
    if any(status.get(key) != value for key, value in wanted.items()):
        patch.status.update(wanted)


@kopf.on.event(*PLAYBOOKS, id="playbook-deleted", when=lambda type, **_: type == "DELETED")
def playbook_deleted(name: str, memo: kopf.Memo, **_: Any) -> None:
    """Drop a deleted Playbook from the catalog."""
    memo.service.remove_playbook(name)


# -- requests ---------------------------------------------------------------------------------


def _already_answered(body: kopf.Body) -> bool:
    status = body.get("status") or {}
    if status.get("observedGeneration") != body.get("metadata", {}).get("generation"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


@kopf.on.resume(*REQUESTS, id="assess")
@kopf.on.create(*REQUESTS, id="assess")
async def assess_request(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    patch: kopf.Patch,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    """Score a RemediationRequest and write the assessment into its status."""
    if _already_answered(body):
        return  # a restart re-lists everything; an answered request is left alone
    service: PrecedentService = memo.service
    generation = int(meta.get("generation") or 1)
    previous = status.get("conditions") or []
    now = datetime.now(UTC)
    try:
        # The creation time anchors "recent" so that re-running the handler gives the same answer.
        created = meta.get("creationTimestamp")
        anchor = datetime.fromisoformat(created.replace("Z", "+00:00")) if created else now
        assessment = await service.assess_async(spec, now=anchor)
    except InputError as exc:
        message = f"invalid spec: {exc}"
        patch.status["observedGeneration"] = generation
        patch.status["conditions"] = merge_conditions(
            previous,
            [
                ConditionUpdate("Ready", "False", "InvalidSpec", message),
                ConditionUpdate("Reconciling", "False", "InvalidSpec"),
                ConditionUpdate("Stalled", "True", "InvalidSpec", message),
            ],
            generation=generation,
            now=now,
        )
        kopf.warn(body, reason="InvalidSpec", message=message)
        raise kopf.PermanentError(message) from None
    except DependencyError as exc:
        message = f"waiting for a dependency: {exc}"
        patch.status["conditions"] = merge_conditions(
            previous,
            [
                ConditionUpdate("Ready", "False", "DependencyUnavailable", message),
                ConditionUpdate("Reconciling", "True", "DependencyUnavailable", message),
                ConditionUpdate("Stalled", "False", "DependencyUnavailable"),
            ],
            generation=generation,
            now=now,
        )
        raise kopf.TemporaryError(message, delay=DEPENDENCY_RETRY_SECONDS) from None

    summary = _summary(assessment)
    patch.status.update(assessment.model_dump(mode="json", by_alias=True, exclude_none=True))
    patch.status["observedGeneration"] = generation
    patch.status["conditions"] = merge_conditions(
        previous,
        [
            ConditionUpdate("Ready", "True", "Assessed", summary),
            ConditionUpdate("Reconciling", "False", "Assessed"),
            ConditionUpdate("Stalled", "False", "Assessed"),
        ],
        generation=generation,
        now=now,
    )
    kind = "Warning" if assessment.risk.decision is Decision.DENIED else "Normal"
    kopf.event(body, type=kind, reason=assessment.risk.decision.value, message=summary)
    logger.info("%s", summary)


def _summary(assessment: Assessment) -> str:
    risk = assessment.risk
    text = f"risk {risk.band.value} ({risk.score:g}), {risk.decision.value}"
    if risk.most_relevant_incident:
        text += f"; most relevant incident {risk.most_relevant_incident}"
    if assessment.playbook:
        text += (
            f"; playbook {assessment.playbook.id} {assessment.playbook.version}"
            f" (confidence {assessment.playbook.confidence:.2f})"
        )
    elif assessment.recommendation:
        text += f"; {assessment.recommendation.action}: {assessment.recommendation.reason}"
    return text


@kopf.on.probe(id="history")
def probe_history(memo: kopf.Memo, **_: Any) -> int:
    """Liveness/readiness detail at /healthz: incidents in the current snapshot."""
    service: PrecedentService = memo.service
    return service.history_size()
