"""``kubectl precedent``: explain, approve, reject, apply and report on RemediationRequests.

A kubectl plugin (the ``kubectl-precedent`` console script on ``PATH``) that talks to the
cluster as the user, through their kubeconfig and the ``kubernetes`` client: what it may do is
what RBAC and the admission policies let that user do. ``approve`` and ``reject`` create a
RemediationApproval whose approver is the current user (asked of the API server with a
SelfSubjectReview; the kubeconfig's user name where that API is not served) and whose access
level is the request's; admission checks both anyway. Errors are one line: not found, or
forbidden with the API server's message naming the rule that refused it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn, cast

import click
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from precedent.core.change import ApplyCall, apply_call, live_target_of, target_moved
from precedent.core.kinds import KIND_PATHS
from precedent.core.normalize import canonical_resource_type
from precedent.core.printable import printable_tree
from precedent.errors import describe_validation
from precedent.models import ObservedTarget, RemediationRequestSpec
from precedent.output import render_documents

__all__ = ["main"]

GROUP = "precedent.dev"
VERSION = "v1alpha1"
REQUESTS = "remediationrequests"
APPROVALS = "remediationapprovals"


class Session:
    """The user's kubeconfig: an API client, the current namespace and the user's name."""

    def __init__(
        self, context: str | None, namespace: str | None, kubeconfig: str | None = None
    ) -> None:
        try:
            # --kubeconfig, else $KUBECONFIG read now (the client reads it once, at import).
            path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
            config.load_kube_config(config_file=path, context=context)  # type: ignore[no-untyped-call]
            contexts, current = config.list_kube_config_contexts(path)  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as exc:
            fail(f"cannot load the kubeconfig: {exc}")
        chosen = (
            next((c for c in contexts if c["name"] == context), current) if context else current
        )
        details = (chosen or {}).get("context") or {}
        self.namespace = namespace or details.get("namespace") or "default"
        self._kubeconfig_user = str(details.get("user") or "")
        self.api = client.ApiClient()
        self.objects = client.CustomObjectsApi(self.api)

    def username(self) -> str:
        """Who the API server says we are (SelfSubjectReview), else the kubeconfig's user."""
        try:
            review = client.AuthenticationV1Api(self.api).create_self_subject_review(
                client.V1SelfSubjectReview(
                    api_version="authentication.k8s.io/v1", kind="SelfSubjectReview"
                )
            )
            info = review.status.user_info if review.status else None
            name = info.username if info else None
            if name:
                return str(name)
        except ApiException as exc:
            if exc.status not in (404, 405):  # not served (older servers, the sandbox)
                fail(api_message(exc, "SelfSubjectReview"))
        if not self._kubeconfig_user:
            fail("cannot tell who you are: no SelfSubjectReview API and no kubeconfig user")
        return self._kubeconfig_user

    def request(self, name: str) -> dict[str, Any]:
        """GET the RemediationRequest, or exit with one line."""
        try:
            found = self.objects.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, REQUESTS, name
            )
            return dict(cast("dict[str, Any]", found))
        except ApiException as exc:
            fail(api_message(exc, f"remediationrequest {self.namespace}/{name}"))

    def approvals_for(self, name: str) -> list[dict[str, Any]]:
        """The RemediationApprovals naming the request (empty when the user may not list)."""
        try:
            listed = self.objects.list_namespaced_custom_object(
                GROUP, VERSION, self.namespace, APPROVALS
            )
            items: list[dict[str, Any]] = cast("dict[str, Any]", listed)["items"]
        except ApiException:
            return []
        return [a for a in items if (a.get("spec") or {}).get("requestRef", {}).get("name") == name]


def fail(message: str) -> NoReturn:
    """Print one line to stderr and exit 1."""
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def api_message(exc: ApiException, what: str) -> str:
    """One line from an API error: the server's own message (it names the refusing rule)."""
    try:
        message = str(json.loads(exc.body or "{}").get("message") or "")
    except ValueError:
        message = ""
    message = " ".join((message or str(exc.reason or "")).split())
    if exc.status == 404:
        return f"{what} not found" + (f": {message}" if "not found" not in message else "")
    if exc.status == 403:
        return f"forbidden: {message}"
    return f"{what}: HTTP {exc.status}: {message}"


def request_name(ref: str) -> str:
    """``rr/NAME``, ``remediationrequest/NAME`` or ``NAME``."""
    kind, _, name = ref.rpartition("/")
    if kind and kind.lower() not in ("rr", "remediationrequest", "remediationrequests"):
        fail(f"{ref}: expected rr/NAME")
    if not name:
        fail(f"{ref}: expected rr/NAME")
    return name


_META = "precedent.plugin"
"""Where the global flags land (``ctx.meta`` is shared by the group and its command)."""

OUTPUTS = ("table", "wide", "json", "yaml", "name")


def _remember(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    # Given before the command and again after it, the later one wins.
    if value is not None and param.name is not None:
        ctx.meta.setdefault(_META, {})[param.name] = value


def global_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """kubectl's global flags, on the group and on every command, so they are accepted anywhere
    on the line: ``kubectl precedent explain rr/x -n staging`` is ``kubectl precedent -n staging
    explain rr/x``. Their values are kept in ``ctx.meta`` (read with :func:`_flag`)."""
    flags = [
        ("-n", "--namespace", {"metavar": "NS", "help": "Namespace (default: the context's)."}),
        ("--context", {"metavar": "NAME", "help": "kubeconfig context (default: the current)."}),
        ("--kubeconfig", {"metavar": "PATH", "help": "kubeconfig file (default: $KUBECONFIG)."}),
        (
            "-o",
            "--output",
            {
                "type": click.Choice(OUTPUTS),
                "help": "table (default) or wide: the readable view; json or yaml: the object; "
                "name: kind/name.",
            },
        ),
    ]
    for *names, attrs in reversed(flags):
        option = click.option(
            *cast("list[str]", names),
            expose_value=False,
            callback=_remember,
            **cast("dict[str, Any]", attrs),
        )
        command = option(command)
    return command


def _flag(ctx: click.Context, name: str) -> str | None:
    value = ctx.meta.get(_META, {}).get(name)
    return str(value) if value is not None else None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@global_flags
def main() -> None:
    """kubectl precedent: explain, approve, reject and report on RemediationRequests.

    kubectl's flags -n/--namespace, --context, --kubeconfig and -o/--output go before or after
    the command."""


def _session(ctx: click.Context) -> Session:
    session = Session(_flag(ctx, "context"), _flag(ctx, "namespace"), _flag(ctx, "kubeconfig"))
    ctx.call_on_close(session.api.close)  # its connection pool, when the command is done
    return session


@main.command()
@click.argument("ref")
@global_flags
@click.pass_context
def explain(ctx: click.Context, ref: str) -> None:
    """Risk, factors, similar incidents, playbook, policy and approvals of rr/NAME."""
    session = _session(ctx)
    name = request_name(ref)
    body = session.request(name)
    if not _printed(ctx, body):
        # Whatever anyone wrote into the request or its approvals is shown, never executed by
        # the terminal: control characters are escaped before the view is built (json and yaml
        # escape them by themselves).
        click.echo(render(printable_tree(body), printable_tree(session.approvals_for(name))))


def _printed(ctx: click.Context, obj: dict[str, Any]) -> bool:
    """Print ``obj`` as ``-o json|yaml|name`` asked; False for the readable view (table, wide)."""
    output = _flag(ctx, "output") or "table"
    if output in ("table", "wide"):
        return False
    if output == "name":
        kind = str(obj.get("kind", "")).lower()
        click.echo(f"{kind}.{GROUP}/{obj.get('metadata', {}).get('name')}")
    else:
        click.echo(render_documents([obj], output))
    return True


def render(body: dict[str, Any], approvals: list[dict[str, Any]]) -> str:
    """The explain view of one request (and its approvals)."""
    meta, spec, status = body.get("metadata", {}), body.get("spec", {}), body.get("status") or {}
    target = spec.get("target", {})
    lines = [
        f"RemediationRequest {meta.get('namespace')}/{meta.get('name')}",
        f"  action:     {spec.get('action')} on {target.get('kind')}/{target.get('name')}",
        f"  requester:  {spec.get('requester') or '(not recorded)'}",
    ]
    risk = status.get("risk")
    if not risk:
        stalled = [c for c in status.get("conditions", []) if c.get("type") == "Stalled"]
        note = stalled[0].get("message") if stalled and stalled[0].get("status") == "True" else ""
        lines.append(f"  not assessed yet{': ' + note if note else ''}")
        return "\n".join(lines)
    lines.append(f"  risk:       {risk.get('band')} ({risk.get('score')}) → {risk.get('decision')}")
    for factor in risk.get("factors", []):
        lines.append(
            f"    {factor.get('contribution'):+} {factor.get('name')}: {factor.get('detail')}"
        )
    lines.append(f"  reasoning:  {risk.get('reasoning')}")
    change = status.get("change")
    if change:
        read = ", ".join(change.get("readings") or []) or change.get("effect")
        lines.append(
            f"  change:     {change.get('summary')} (read as {read}; answered for "
            f"{change.get('effect')})"
        )
        if change.get("hash"):
            lines.append(f"              {change['hash']} (what an approval is for)")
    similar = _reasoning_order(status.get("similarIncidents", []), risk.get("mostRelevantIncident"))
    if similar:
        lines.append("  similar incidents:")
        for item in similar:
            strongest = "strongest, " if item.get("id") == risk.get("mostRelevantIncident") else ""
            lines.append(
                f"    {item.get('id')} ({strongest}{item.get('severity')}, similarity "
                f"{item.get('similarity'):.2f}): {item.get('title')}"
            )
    playbook = status.get("playbook")
    if playbook:
        lines.append(
            f"  playbook:   {playbook.get('id')} {playbook.get('version')} "
            f"(confidence {playbook.get('confidence'):.2f}): {playbook.get('rationale')}"
        )
    elif status.get("recommendation"):
        lines.append(f"  playbook:   none - {status['recommendation'].get('reason')}")
    lines.extend(_blast_lines(status.get("blastRadius")))
    policy = status.get("policy") or {}
    approval = policy.get("approval") or {}
    lines.append(
        f"  policy:     {policy.get('accessLevel')} action; approval "
        f"{approval.get('state', 'not required')}"
        + (
            f" by {approval.get('by')} at {approval.get('at')}: {approval.get('reason')}"
            if approval.get("by")
            else ""
        )
    )
    if policy.get("reason"):
        lines.append(f"              {policy['reason']}")
    condition = next((c for c in status.get("conditions", []) if c.get("type") == "Approved"), None)
    if condition:
        lines.append(
            f"  Approved:   {condition.get('status')} ({condition.get('reason')}): "
            f"{condition.get('message')}"
        )
    if approvals:
        lines.append("  approvals:")
        for item in approvals:
            a_spec, a_status = item.get("spec", {}), item.get("status") or {}
            lines.append(
                f"    {item['metadata']['name']}: {a_spec.get('decision')} by "
                f"{a_spec.get('approver')} - {a_status.get('state', 'not judged yet')}"
                + (f" ({a_status.get('reason')}: {a_status.get('message')})" if a_status else "")
            )
    return "\n".join(lines)


def _reasoning_order(similar: list[dict[str, Any]], strongest: Any) -> list[dict[str, Any]]:
    """The similar incidents as the reasoning reads: the strongest precedent (the risk's
    ``mostRelevantIncident``) first, then the others in the status's order."""
    return sorted(similar, key=lambda item: item.get("id") != strongest)


def _blast_lines(blast: dict[str, Any] | None) -> list[str]:
    """The blast-radius part of the explain view (nothing when the graph is off)."""
    if not blast:
        return []
    lines = [f"  blast radius: {blast.get('summary')}"]
    if blast.get("upstreamWorkloads"):
        lines.append(f"    depend on it: {', '.join(blast['upstreamWorkloads'])}")
    if blast.get("criticalServices"):
        lines.append(f"    critical upstream: {', '.join(blast['criticalServices'])}")
    for path in blast.get("topPaths") or []:
        lines.append(f"    path: {path}")
    for hint in blast.get("hints") or []:
        lines.append(f"    hint: {hint}")
    return lines


def _decide(
    ctx: click.Context,
    ref: str,
    decision: str,
    reason: str,
    expires_in: int | None,
    groups: tuple[str, ...],
) -> None:
    session = _session(ctx)
    name = request_name(ref)
    if not reason.strip():
        fail("--reason: say why")
    body = session.request(name)
    level = ((body.get("status") or {}).get("policy") or {}).get("accessLevel")
    if not level:
        fail(f"remediationrequest {session.namespace}/{name} has not been assessed yet")
    spec: dict[str, Any] = {
        "requestRef": {"name": name, "uid": body["metadata"]["uid"]},
        "decision": decision,
        "reason": reason.strip(),
        "approver": session.username(),
        "accessLevel": level,
    }
    if groups:
        spec["approverGroups"] = list(groups)
    if expires_in:
        until = datetime.now(UTC) + timedelta(minutes=expires_in)
        spec["expiresAt"] = until.strftime("%Y-%m-%dT%H:%M:%SZ")
    approval = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RemediationApproval",
        "metadata": {"generateName": f"{name}-{decision}-"},
        "spec": spec,
    }
    try:
        created = cast(
            "dict[str, Any]",
            session.objects.create_namespaced_custom_object(
                GROUP, VERSION, session.namespace, APPROVALS, approval
            ),
        )
    except ApiException as exc:
        fail(api_message(exc, f"remediationapproval for {name}"))
    if _printed(ctx, created):
        return
    click.echo(
        f"remediationapproval.precedent.dev/{created['metadata']['name']} created "
        f"({decision} rr/{name} as {spec['approver']})"
    )


_reason = click.option("--reason", required=True, help="Why (required).")
_expires = click.option(
    "--expires-in", type=click.IntRange(min=1), default=None, help="Minutes it stays valid."
)
_groups = click.option(
    "--group", "groups", multiple=True, help="A group of yours to claim (e.g. break-glass)."
)


@main.command()
@click.argument("ref")
@global_flags
@_reason
@_expires
@_groups
@click.pass_context
def approve(
    ctx: click.Context, ref: str, reason: str, expires_in: int | None, groups: tuple[str, ...]
) -> None:
    """Approve rr/NAME: create a RemediationApproval as the current user."""
    _decide(ctx, ref, "approve", reason, expires_in, groups)


@main.command()
@click.argument("ref")
@global_flags
@_reason
@click.pass_context
def reject(ctx: click.Context, ref: str, reason: str) -> None:
    """Reject rr/NAME: create a RemediationApproval that denies it."""
    _decide(ctx, ref, "reject", reason, None, ())


@main.command()
@click.argument("ref")
@global_flags
@click.option("--result", type=click.Choice(["succeeded", "failed", "partial"]), required=True)
@click.option("--message", default="", help="What happened.")
@click.option("--playbook", default=None, help="The playbook that ran (its id).")
@click.pass_context
def outcome(ctx: click.Context, ref: str, result: str, message: str, playbook: str | None) -> None:
    """Report how the action on rr/NAME went (spec.outcome, set once)."""
    session = _session(ctx)
    name = request_name(ref)
    reported: dict[str, Any] = {
        "result": result,
        "message": message,
        "finishedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if playbook:
        reported["playbook"] = {"id": playbook}
    try:
        patched = session.objects.patch_namespaced_custom_object(
            GROUP, VERSION, session.namespace, REQUESTS, name, {"spec": {"outcome": reported}}
        )
    except ApiException as exc:
        fail(api_message(exc, f"remediationrequest {session.namespace}/{name}"))
    if not _printed(ctx, cast("dict[str, Any]", patched)):
        click.echo(f"remediationrequest.precedent.dev/{name} outcome reported: {result}")


def _call(session: Session, call: ApplyCall, *, dry_run: bool = False) -> Any:
    """Send one call with the user's credentials; the decoded JSON answer (ApiException for an
    error status, as the client's own methods raise)."""
    method, url, headers, body, post = session.api.param_serialize(
        method=call.method,
        resource_path=call.path,
        query_params=[("dryRun", "All")] if dry_run else None,
        header_params={"Content-Type": call.content_type, "Accept": "application/json"},
        body=call.body,
        auth_settings=["BearerToken"],
    )
    response = session.api.call_api(method, url, header_params=headers, body=body, post_params=post)
    response.read()  # type: ignore[no-untyped-call]
    if not 200 <= response.status < 300:
        raise ApiException(http_resp=response)
    return json.loads(response.data or b"{}")


def _get_path(session: Session, path: str) -> dict[str, Any] | None:
    try:
        found = _call(session, ApplyCall("GET", path, None, "application/json", f"get {path}"))
    except ApiException as exc:
        if exc.status == 404:
            return None
        fail(api_message(exc, path))
    return dict(cast("dict[str, Any]", found))


def _may_run(body: dict[str, Any]) -> str | None:
    """Why the request's answer does not let it run now (None: it does)."""
    status = body.get("status") or {}
    meta = body.get("metadata") or {}
    if status.get("observedGeneration") != meta.get("generation"):
        return "its answer is not for the current spec yet (observedGeneration); wait for Ready"
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    approved = conditions.get("Approved") or {}
    if approved.get("status") != "True":
        reason = approved.get("reason") or "NotAssessed"
        decision = (status.get("risk") or {}).get("decision") or "no decision"
        return f"it may not run: {decision}, Approved condition {reason}"
    return None


@main.command("apply")
@click.argument("ref")
@global_flags
@click.option(
    "--dry-run",
    is_flag=True,
    help="Check everything and send the change as a server-side dry run; change nothing.",
)
@click.pass_context
def apply_change(ctx: click.Context, ref: str, dry_run: bool) -> None:
    """Apply exactly the approved spec.change of rr/NAME to its target, as you, and report the
    outcome. Refused when the request may not run, when its answer was for another change, when
    it already ran, or when the target moved since the answer (replicas or image changed, or
    the object was replaced): then create a new request, which is answered for the target as it
    is now."""
    session = _session(ctx)
    name = request_name(ref)
    body = session.request(name)
    spec = body.get("spec") or {}
    where = f"remediationrequest {session.namespace}/{name}"
    if not spec.get("change"):
        fail(f"{where}: has no spec.change; apply runs only a structured change")
    try:
        parsed = RemediationRequestSpec.model_validate(spec)
    except ValidationError as exc:
        fail(f"{where}: {describe_validation(exc, 'spec')}")
    change = parsed.change
    assert change is not None
    if spec.get("outcome"):
        ran = spec["outcome"].get("result")
        fail(f"{where}: already ran (spec.outcome {ran}); an approved change runs once")
    why = _may_run(body)
    if why is not None:
        fail(f"{where}: {why}")
    judged = (body.get("status") or {}).get("change") or {}
    if judged.get("hash") != change.digest():
        fail(
            f"{where}: the answer is for change {judged.get('hash') or 'none'}, "
            f"spec.change is {change.digest()}: nothing approved this change"
        )
    target = parsed.target
    namespace = target.namespace or (
        session.namespace
        if KIND_PATHS.get(canonical_resource_type(target.kind), ("", "", True))[2]
        else None
    )
    try:
        call = apply_call(change, target.kind, target.name, namespace)
    except ValueError as exc:
        fail(f"{where}: {exc}")
    base = call.path.removesuffix("/scale")
    live = _get_path(session, base)
    now = live_target_of(live, target.kind, target.name, namespace)
    observed = ObservedTarget.model_validate(judged["observed"]) if judged.get("observed") else None
    moved = target_moved(observed, now, change)
    if moved is not None:
        asked = _ask_again(session, name)
        fail(
            f"{where}: refused: {moved} since the answer, which judged the change against the "
            "target as it was. "
            + (
                "The operator answers it again for the target as it is now (approvals made "
                "before no longer apply): wait for Ready and apply again"
                if asked
                else "Create a new RemediationRequest for the target as it is now"
            )
        )
    try:
        _call(session, call, dry_run=dry_run)
    except ApiException as exc:
        message = api_message(exc, f"{target.kind} {target.name}")
        if not dry_run:
            _report(session, name, "failed", f"{call.what}: {message}"[:1024])
        fail(f"{call.what}: {message}")
    if dry_run:
        click.echo(f"{call.what}: allowed (server dry run); nothing changed")
        return
    _report(session, name, "succeeded", f"applied: {call.what}"[:1024])
    click.echo(f"{call.what}: applied; remediationrequest.precedent.dev/{name} outcome succeeded")


def _ask_again(session: Session, name: str) -> bool:
    """Ask the operator for a new answer (annotation precedent.dev/reassess); False when the
    user may not annotate the request."""
    moment = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        session.objects.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            session.namespace,
            REQUESTS,
            name,
            {"metadata": {"annotations": {"precedent.dev/reassess": moment}}},
        )
    except ApiException as exc:
        click.echo(f"warning: {api_message(exc, f'remediationrequest {name}')}", err=True)
        return False
    return True


def _report(session: Session, name: str, result: str, message: str) -> None:
    reported = {
        "result": result,
        "message": message,
        "finishedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    try:
        session.objects.patch_namespaced_custom_object(
            GROUP, VERSION, session.namespace, REQUESTS, name, {"spec": {"outcome": reported}}
        )
    except ApiException as exc:
        click.echo(
            f"warning: the outcome was not recorded: "
            f"{api_message(exc, f'remediationrequest {session.namespace}/{name}')}",
            err=True,
        )
