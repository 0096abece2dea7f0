"""The selection vocabulary: how on-call engineers and alerts name failures, objects and changes.

A request rarely uses a playbook's words. "exit code 137", ``KubeContainerOOMKilled`` and
"oom-killer invoked" all say the same thing as "increases memory limits"; "put the previous
image back" is a rollback; "x509: certificate has expired" names an expired certificate. This
module folds such phrasings into **selection concepts**, of three sorts:

* **failure** concepts name what went wrong, and each points at the ``incident-type`` values
  it implies (``oom`` → ``pod-oom-killer``): a request that does not state its incident type
  gets it *inferred* from its text (:func:`inferred_incident_types`);
* **object** concepts name what a change touches (a certificate, a credential, a node, a
  volume…): a new playbook is never offered for another kind of object than the request's
  (:func:`objects`);
* **change** concepts name what is done (rotate, roll back, drain…).

The concepts are used on the playbook side and the request side alike, by the catalog's
concept part of the semantic score (:mod:`precedent.core.playbooks.profile`). They are
selection-only: the incident retrieval vocabulary (:mod:`precedent.core.vocabulary`) and the
vectors it gives incidents do not change with them.

The phrases were grown from the catalog (``data/playbooks``) and the tune part of the labelled
selection sets (``tests/data/selection``, with ``near-neighbours.yaml`` for the playbooks that
share most of their words), never from their holdout part. Patterns run over
lower-case text whose non-alphanumeric characters are spaces (``exit code 137``,
``kubenodediskpressure``), so CamelCase alert names match inside the word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from precedent.core.literals import necessary_literals

__all__ = [
    "CHANGE",
    "FAILURE",
    "MUTATING_CHANGES",
    "OBJECT",
    "READ_ONLY",
    "READ_ONLY_ACTIONS",
    "SELECTION_CONCEPTS",
    "SelectionConcept",
    "asks_read_only",
    "concept_counts",
    "inferred_incident_types",
    "is_read_only",
    "kind_objects",
    "objects",
]

FAILURE = "failure"
OBJECT = "object"
CHANGE = "change"

_SEPARATORS = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class SelectionConcept:
    """One concept: its sort, its phrases and, for a failure, the incident types it implies."""

    name: str
    sort: str
    pattern: re.Pattern[str]
    incident_types: tuple[str, ...] = ()


def _c(
    name: str, sort: str, phrases: tuple[str, ...], types: tuple[str, ...] = ()
) -> SelectionConcept:
    pattern = re.compile("|".join(f"(?:{p})" for p in phrases))
    return SelectionConcept(name, sort, pattern, types)


_W = r"(?:\s+\w+){0,3}?\s+"  # up to three words in between

SELECTION_CONCEPTS: tuple[SelectionConcept, ...] = (
    # -- failures ------------------------------------------------------------------------------
    _c(
        "oom",
        FAILURE,
        (
            r"oom\s*kill\w*",
            r"oom\s*killer",
            r"out\s+of\s+memory",
            r"\bexit\w*(?:\s+code)?\s+137\b",
            r"memory\s+(?:at|pinned\s+at|hits?|reache\w*)(?:\s+the)?\s+(?:its\s+)?limit",
            r"working\s+set\w*(?:\s+\w+){0,3}\s+(?:at|to)\s+(?:the\s+)?(?:\d+\w*\s+)?limit",
            r"\bheap\b",
            r"memory\s+(?:limit|allocation)",
            r"more\s+memory|\bmem\s+to\b|increas\w*\s+mem\w*",
        ),
        ("pod-oom-killer",),
    ),
    _c(
        "crash-loop",
        FAILURE,
        (
            r"crash\s*loop\w*",
            r"crashloopbackoff",
            r"back\s*off\s+restarting",
            r"restart\w*\s+every\s+(?:few|\d+)",
            r"keeps?\s+restarting|restart\s+loops?",
            r"\bpanic\b",
        ),
        ("crashloop-backoff",),
    ),
    _c(
        "transient-cause",
        FAILURE,
        (
            r"transient|\bblip\b",
            r"connection\s+(?:reset|refused)",
            r"(?:is|are)\s+(?:fine|healthy|back\s+up)(?:\s+again|\s+now)?|healthy\s+again",
            r"stuck\s+dependency|bad\s+node",
        ),
        ("crashloop-backoff",),
    ),
    _c(
        "flag-change",
        FAILURE,
        (
            r"feature\s+flags?|\bflags?\b",
            r"\d+\s*%\s+of\s+(?:users|traffic|requests)",
            r"dark\s+launch",
        ),
        ("config-change",),
    ),
    _c(
        "migration-blocked",
        FAILURE,
        (
            r"migration(?:\s+\w+){0,6}\s+(?:lock\w*|block\w*|hold\w*|stuck|hang\w*|wait\w*)",
            r"(?:alter\s+table|\bddl\b)(?:\s+\w+){0,4}\s+(?:lock\w*|block\w*|hang\w*|stuck|wait\w*)",
            r"(?:hang\w*|stuck|block\w*|wait\w*)\s+on\s+(?:an?\s+|the\s+)?(?:alter\s+table|ddl)",
            r"wait\w*\s+(?:for|on)\s+(?:an?\s+|the\s+)?(?:\w+\s+)?lock",
            r"holds?\s+(?:an?\s+)?(?:\w+\s+){0,2}lock",
            r"queue\w*\s+behind|lock\s+queue",
        ),
        ("bad-rollout", "database-failure"),
    ),
    _c(
        "config-error",
        FAILURE,
        (
            r"\bnot\s+set\b",
            r"missing\s+(?:key|env\w*|variable|value|setting|configmap|secret)",
            r"key\s*error",
            r"invalid\s+(?:value|duration|setting|config\w*)",
            r"invalid\s+\w+\s+for\b",
            r"required\s+env",
            r"(?:key|setting)\s+(?:was\s+)?(?:dropped|renamed|removed|deleted)",
            r"(?:dropped|renamed|removed)\s+the\s+key",
        ),
        ("config-change", "crashloop-backoff"),
    ),
    _c(
        "bad-release",
        FAILURE,
        (
            r"(?:right\s+|since\s+|just\s+)?after\s+(?:the\s+|this\s+|last\s+)?(?:deploy\w*|release|rollout|upgrade)",
            r"since\s+(?:the\s+)?(?:\d+\s+\d+\s+)?(?:deploy\w*|release|rollout)",
            r"\bbad\s+(?:build|release|deploy\w*|version|image|rollout|tag)",
            r"\bbroke\b|\bbroken\b",
            r"previous\s+(?:image|version|revision|build|release|tag)",
            r"last\s+good|known\s+good",
            r"go\s+back|put\w*(?:\s+\w+){0,3}\s+back|flip\w*(?:\s+\w+){0,4}\s+back",
            r"went\s+out",
            r"\brevert\w*",
            r"analysis\s*run|canary|blue\s*green|preview",
        ),
        ("bad-rollout",),
    ),
    _c(
        "cert-expiry",
        FAILURE,
        (
            r"\bx509\b",
            r"certificate\w*(?:\s+\w+){0,3}\s+expir\w*",
            r"cert\w*\s+expir\w*|expir\w*\s+soon",
            r"err\s+cert",
            r"(?:ssl|tls|cert)\w*\s+expires",
            r"not\s+yet\s+valid|unknown\s+authority",
            r"\bacme\b|challenge\w*|\border\s+stuck",
            r"not\s+ready(?:\s+\w+){0,3}\s+issu\w*|\bissuing\b",
        ),
        ("certificate-expiry",),
    ),
    _c(
        "webhook-failure",
        FAILURE,
        (r"failed\s+calling\s+webhook", r"webhook\w*(?:\s+\w+){0,4}\s+(?:x509|certificate|fails?)"),
        ("admission-webhook-failure", "certificate-expiry"),
    ),
    _c(
        "credential-rotation",
        FAILURE,
        (
            rf"(?:rotat|roll|chang|renew|reset|replac)\w*{_W}(?:password|token|credential|api\s+key|key)s?\b",
            rf"(?:password|token|credential|api\s+key)s?{_W}(?:rotat|chang|roll)\w*",
            # a leak of a credential, not of memory or file handles
            rf"(?:password|token|credential|api\s+key|key|secret)s?{_W}(?:leak\w*|exposed)",
            rf"leak\w*{_W}(?:password|token|credential|api\s+key|key|secret)s?\b",
            r"\bexposed\b|public\s+gist|pasted",
            r"\b\d+\s+days\s+old\b",
            r"kill\w*\s+the\s+old|revok\w*",
        ),
        ("secret-rotation",),
    ),
    _c(
        "node-disk-pressure",
        FAILURE,
        (
            r"disk\s*pressure",
            r"ephemeral\s+storage",
            r"\bimagefs\b|\bnodefs\b",
            r"no\s+space\s+left",
            r"containerd(?:\s+\w+){0,3}\s+(?:full|\d+)",
            r"old\s+images|unused\s+images",
            r"filesystem\s*almost\s*out\s*of\s*space|nodefilesystem\w*",
        ),
        ("node-pressure",),
    ),
    _c(
        "node-memory-pressure",
        FAILURE,
        (r"memory\s*pressure", r"pid\s*pressure", r"zombie\w*", r"evicting\s+neighbo\w*"),
        ("node-pressure",),
    ),
    _c(
        "node-maintenance",
        FAILURE,
        (
            r"kernel\s+(?:patch\w*|update\w*|upgrade\w*)|\bpatching\b|\bfirmware\b",
            r"hardware\s+(?:replacement|swap|repair|fault|maintenance)",
            r"(?:planned|scheduled)\s+maintenance|maintenance\s+window",
        ),
        ("node-upgrade",),
    ),
    _c(
        "node-not-ready",
        FAILURE,
        (
            r"not\s*ready",
            r"stopped\s+posting",
            r"unknown\s+status|status\s+unknown",
            r"multi\s+attach",
            r"stuck\s+terminating",
        ),
        ("node-not-ready",),
    ),
    _c(
        "pdb-blocked",
        FAILURE,
        (
            r"disruption\s+budget",
            r"\bpdbs?\b",
            r"cannot\s+evict|error\s+when\s+evicting",
            r"max\s*unavailable\s+0|zero\s+allowed",
        ),
        ("pdb-blocking-drain",),
    ),
    _c(
        "version-upgrade",
        FAILURE,
        (
            r"upgrad\w*",
            r"\bbump\w*(?:\s+\w+){0,3}\s+\d+\s+\d+",
            r"\b1\s+\d\d\b(?:\s+\w+){0,2}\s+1\s+\d\d\b",
            r"out\s+of\s+support|end\s+of\s+life|\beol\b",
            r"node\s+image",
        ),
        ("node-upgrade",),
    ),
    _c(
        "dns-failure",
        FAILURE,
        (
            r"servfail|nxdomain",
            r"lookup\s+\S+(?:\s+\S+){0,6}\s+(?:timeout|no\s+such\s+host)",
            r"(?:fail|unable)\w*\s+to\s+resolve|resolution\s+fail\w*|cannot\s+resolve",
            r"core\s*dns|kube\s*dns",
            r"\bndots\b|search\s+(?:domain|path)s?",
            r"corefile",
        ),
        ("dns-failure",),
    ),
    _c(
        "traffic-blocked",
        FAILURE,
        (
            r"network\s*polic\w*|\bnetpols?\b",
            r"default\s+deny|deny\s+all|deny\s+by\s+default",
            r"(?:connection|dial\s+tcp)(?:\s+\S+){0,8}\s+(?:timed\s+out|timeout)",
            r"\begress\b",
            r"cannot\s+reach|can\s+t\s+reach",
        ),
        ("network-policy",),
    ),
    _c(
        "firewall-rule",
        FAILURE,
        (
            r"\bnsg\b|security\s+group",
            r"firewall\w*",
            r"inbound|outbound",
            r"\bopen\s+(?:tcp|udp|port)|\ballow\s+(?:tcp\s+|udp\s+|port\s+)?\d+",
        ),
        ("network-change",),
    ),
    _c(
        "route-change",
        FAILURE,
        (
            r"\bingress\b",
            r"rewrite|proxy\s+body|annotation\w*",
            r"\broute\w*\s+/|\bpath\b",
            r"\b413\b",
        ),
        ("network-change",),
    ),
    _c(
        "autoscaler-flapping",
        FAILURE,
        (
            r"flap\w*|oscillat\w*|thrash\w*|sawtooth|yo\s*yo",
            r"\b\d+\s+\d+\s+\d+\b(?:\s+\w+){0,2}\s+every",
            r"replicas\s+(?:go|bounce|bouncing|swing\w*)",
            r"add\w*\s+and\s+remov\w*",
            r"hpareplicasmismatch|replicas\s*mismatch",
            r"stabili[sz]ation\s+window",
        ),
        ("hpa-flapping",),
    ),
    _c(
        "metric-missing",
        FAILURE,
        (
            r"external\s+metric\w*|custom\s+metric\w*",
            r"no\s+metrics\s+returned|unable\s+to\s+get(?:\s+\w+){0,2}\s+metric",
            r"unknown\s+\d+",
            r"metrics?\s+adapter|prometheus\s+adapter|\bkeda\b",
        ),
        ("hpa-flapping", "capacity-change"),
    ),
    _c(
        "over-provisioned",
        FAILURE,
        (
            r"\bcost\b|save\s+money|\bidle\b",
            r"\d+\s*%\s+(?:cpu|util\w*)",
            r"outside\s+business\s+hours|overnight|after\s+the\s+(?:sale|campaign)",
            r"\binstead\s+of\b",
            r"(?:lower|reduc|cut|trim)\w*(?:\s+\w+){0,3}\s+replica",
            rf"(?:cut|drop|reduc|lower|shrink)\w*{_W}(?:to\s+)?\d+",
        ),
        ("capacity-change",),
    ),
    _c(
        "cpu-starved",
        FAILURE,
        (
            r"cpu\s*throttl\w*|\bthrottl\w*",
            r"cpu\s+(?:limits?|quota)|(?:rais|bump|increas|lift|doubl)\w*(?:\s+\w+){0,3}\s+cpu\b",
            r"\bcpu\s+starved|\bstarved\b|\bmillicores?\b|\b\d+m\s+(?:cpu\s+)?limit",
        ),
    ),
    _c(
        "consumer-lag",
        FAILURE,
        (
            r"consumer\w*\s*(?:group\s*)?lag\w*",
            r"messages\s+behind|\blag\b",
            r"\bpartitions?\b",
            r"rebalanc\w*",
            r"under\s*replicated|\bisr\b",
        ),
        ("kafka-consumer-lag",),
    ),
    _c(
        "database-down",
        FAILURE,
        (
            r"too\s+many\s+(?:clients|connections)",
            r"\bfatal\b",
            r"primary(?:\s+\w+){0,3}\s+(?:down|unresponsive|fail\w*|disk)",
            r"promot\w*|standby|switch\s*over|fail\s*over",
            r"replication\s+lag|replica\s+lag",
            r"pooler",
        ),
        ("database-failure",),
    ),
    _c(
        "degraded",
        FAILURE,
        (
            r"\bp9\d\b|latency",
            r"\bslow\w*",
            r"stuck\s+threads?|thread\s+dump|deadlock\w*|blocked\s+on",
            r"leak\w*\s+(?:connections?|file|handles?|memory)",
            r"\bhung\b|\bhangs?\b|wedged",
            r"throughput",
            r"stopped\s+(?:consuming|processing|responding)",
        ),
        ("service-degradation",),
    ),
    _c(
        "image-pull",
        FAILURE,
        (
            r"image\s*pull\s*back\s*off|err\s*image\s*pull",
            r"failed\s+to\s+pull",
            r"manifest(?:\s+\S+){0,4}\s+not\s+found",
            r"pull\s+access\s+denied",
            r"registry(?:\s+\w+){0,3}\s+(?:token|credential|secret)",
        ),
        ("image-pull-failure",),
    ),
    _c(
        "volume-full",
        FAILURE,
        (
            r"persistent\s*volume\s*filling\s*up|volume\w*\s+filling",
            r"\bpvcs?\b(?:\s+\S+){0,3}\s+\d+\s*%",
            r"\d+\s*%\s+(?:used|full)",
            r"predicted\s+full|expected\s+to\s+fill|space\s*filling\s*up",
        ),
        ("storage-pressure",),
    ),
    # -- objects -------------------------------------------------------------------------------
    _c(
        "certificate",
        OBJECT,
        (
            r"certificat\w*|\bcerts?\b|\btls\b|\bssl\b|\bx509\b|\bpem\b|\bca\b|cabundle|ca\s+bundle|trust\s*bundle",
        ),
    ),
    _c(
        "credential",
        OBJECT,
        (r"passwords?|credentials?|\btokens?\b|api\s+keys?|\bkeys?\b(?!\s+match)",),
    ),
    _c(
        "database",
        OBJECT,
        (r"database|\bdb\b|postgres\w*|\bpg\b|mysql|mongo\w*|\bsql\b|patroni|cloudnativepg",),
    ),
    _c("redis", OBJECT, (r"redis|sentinel",)),
    _c("kafka", OBJECT, (r"kafka|\bbrokers?\b|consumer\s*groups?|\btopics?\b|partitions?",)),
    _c("node", OBJECT, (r"\bnodes?\b|kubelet|\bhosts?\b",)),
    _c("node-pool", OBJECT, (r"node\s*pools?|agent\s*pools?|\bpool\b|node\s*groups?|\bvmss\b",)),
    _c("vm", OBJECT, (r"\bvms?\b|virtual\s*machines?|\bsku\b|d\d+s\s+v\d",)),
    _c("volume", OBJECT, (r"\bpvcs?\b|persistent\s*volume\w*|\bvolumes?\b|storage\s*class",)),
    _c("dns", OBJECT, (r"\bdns\b|core\s*dns|resolv\w*|nxdomain|servfail|\bndots\b",)),
    _c("network-policy", OBJECT, (r"network\s*polic\w*|\bnetpols?\b|default\s+deny",)),
    _c("firewall", OBJECT, (r"\bnsg\b|security\s+groups?|firewall\w*",)),
    _c("ingress", OBJECT, (r"\bingress\b|\broutes?\b|\bsni\b",)),
    _c("autoscaler", OBJECT, (r"\bhpas?\b|autoscal\w*|\bkeda\b|scaledobject",)),
    _c(
        "config",
        OBJECT,
        (r"configmaps?|\bconfig\b|\benv\b|environment\s+variables?|feature\s+flags?|\bflags?\b",),
    ),
    _c("webhook", OBJECT, (r"webhook\w*|admission",)),
    _c("image", OBJECT, (r"\bimages?\b|registry|\btag\b",)),
    _c(
        "gitops",
        OBJECT,
        (
            r"git\s*ops|argo\s*cd|\bflux\b|helm\s*release|env\s+repo|fleet\s+repo|self\s+heal|auto\s+sync|\bsync\w*",
        ),
    ),
    _c(
        "progressive",
        OBJECT,
        (
            r"argo\s+rollouts?|\brollout\s+abort|canary|blue\s*green|analysis\s*run|stable\s+replica\s*set|preview",
        ),
    ),
    _c(
        "iam",
        OBJECT,
        (
            r"\biam\b|\birsa\b|trust\s+polic\w*|role\s*binding|workload\s+identity|federated|access\s*denied",
        ),
    ),
    _c("statefulset", OBJECT, (r"stateful\s*sets?|\bsts\b",)),
    _c("migration", OBJECT, (r"migrat\w*|schema|\block\w*\b|alter\s+table|\bddl\b",)),
    # -- changes -------------------------------------------------------------------------------
    _c(
        "rollback",
        CHANGE,
        (
            r"roll\w*\s*back|rollback|revert\w*|\bundo\w*|previous\s+(?:image|version|revision|build)|go\s+back|put\w*(?:\s+\w+){0,3}\s+back",
        ),
    ),
    _c(
        "restart",
        CHANGE,
        (r"restart\w*|\bbounc\w*|recycl\w*|\broll\s+(?:the\s+)?pods|\bkick\w*|\breboot\w*",),
    ),
    _c(
        "drain",
        CHANGE,
        (r"\bdrain\w*|cordon\w*|evacuat\w*|move\s+(?:the\s+)?workloads?\s+off|\bmaintenance\b",),
    ),
    _c("rotate", CHANGE, (r"rotat\w*|\brenew\w*|\breissu\w*|\bissue\s+a\s+new",)),
    _c(
        "scale-down",
        CHANGE,
        (r"scal\w*\s+(?:down|in)\b|fewer|\bdrop\s+to\b|\bcut\s+(?:it\s+)?to\b|reduc\w*",),
    ),
    _c(
        "scale-up",
        CHANGE,
        (
            r"scal\w*\s+(?:up|out)\b|more\s+(?:pods|replicas|consumers|nodes)|resiz\w*|bigger|\bfrom\s+\d+\s+to\s+\d+\b",
        ),
    ),
    _c("delete", CHANGE, (r"delet\w*|decommission\w*|\bremov\w*|\bdrop\s+(?:the\s+)?old",)),
    _c("expand", CHANGE, (r"expan\w*|\bgrow\w*|\benlarg\w*",)),
    _c("failover", CHANGE, (r"fail\s*over|switch\s*over|promot\w*",)),
    _c(
        "memory-limit",
        CHANGE,
        (r"memory\s+limits?|more\s+memory|\bmem\b|\bbump\s+mem\w*",),
    ),
    _c(
        "diagnose",
        CHANGE,
        (
            r"(?:collect|gather|captur)\w*(?:\s+\w+){0,3}\s+(?:logs|events|metrics|diagnostics)|for\s+the\s+(?:postmortem|support\s+case|ticket)",
        ),
    ),
    _c(
        "read-only",
        CHANGE,
        (
            r"read\s*only|chang\w*\s+nothing|\bno\s+changes?\b|makes?\s+no\s+changes?",
            r"(?:do\s+not|don\s+t|without)\s+(?:restart|chang|touch|modify|fix)\w*",
            r"before\s+any\w*\s+touch\w*|hands\s+off",
        ),
    ),
    _c(
        "abort",
        CHANGE,
        (
            r"\babort\w*|\bstop\s+it\b|all\s+traffic|send\s+(?:all|every\w*)(?:\s+\w+){0,2}\s+to\s+(?:the\s+)?stable",
        ),
    ),
)
"""Every selection concept, failures first."""

_BY_NAME: Mapping[str, SelectionConcept] = {c.name: c for c in SELECTION_CONCEPTS}

READ_ONLY = "read-only"
"""The concept of a request that asks for no change ("read-only", "do not restart anything")."""
READ_ONLY_ACTIONS = frozenset({"collect_diagnostics"})
"""Actions that change nothing: a playbook listing only these is read-only."""
MUTATING_CHANGES = frozenset(
    {
        "rollback",
        "restart",
        "drain",
        "rotate",
        "scale-down",
        "scale-up",
        "delete",
        "expand",
        "failover",
        "memory-limit",
        "abort",
    }
)
"""The change concepts that name a change to the cluster (``diagnose`` does not)."""

# A request's target kind says what it touches even when its text does not.
_KIND_OBJECTS: Mapping[str, tuple[str, ...]] = {
    "certificate": ("certificate",),
    "certificaterequest": ("certificate",),
    "validatingwebhookconfiguration": ("webhook", "certificate"),
    "mutatingwebhookconfiguration": ("webhook", "certificate"),
    "node": ("node",),
    "agentpool": ("node-pool",),
    "nodepool": ("node-pool",),
    "machineset": ("node-pool",),
    "virtualmachine": ("vm",),
    "virtualmachines": ("vm",),
    "persistentvolumeclaim": ("volume",),
    "persistentvolume": ("volume",),
    "horizontalpodautoscaler": ("autoscaler",),
    "scaledobject": ("autoscaler",),
    "networkpolicy": ("network-policy",),
    "networksecuritygroup": ("firewall",),
    "ingress": ("ingress",),
    "configmap": ("config",),
    "rollout": ("progressive",),
    "application": ("gitops",),
    "helmrelease": ("gitops",),
    "kustomization": ("gitops",),
    "cluster": ("database",),
}


def _flat(text: str) -> str:
    return _SEPARATORS.sub(" ", text.lower())


# Each concept with the literals one of which every match of its pattern holds (None: always
# scanned); a request names a few concepts, so most patterns are skipped after a substring test.
_SCANNED: tuple[tuple[SelectionConcept, frozenset[str] | None], ...] = tuple(
    (concept, necessary_literals(concept.pattern)) for concept in SELECTION_CONCEPTS
)
_LITERALS: tuple[str, ...] = tuple(
    sorted({literal for _, found in _SCANNED if found is not None for literal in found})
)


def concept_counts(text: str) -> dict[str, int]:
    """How often each selection concept's phrases occur in ``text`` (concepts found only)."""
    flat = _flat(text)
    present = {literal for literal in _LITERALS if literal in flat}
    found: dict[str, int] = {}
    for concept, literals in _SCANNED:
        if literals is not None and literals.isdisjoint(present):
            continue
        hits = len(concept.pattern.findall(flat))
        if hits:
            found[concept.name] = hits
    return found


def kind_objects(kind: str) -> tuple[str, ...]:
    """The object concepts a target kind names (``Node`` → ``node``); none for a generic kind
    such as ``Deployment`` or ``Secret``, which says nothing about what the change is for."""
    return _KIND_OBJECTS.get(kind.strip().lower(), ())


def objects(found: Mapping[str, int]) -> frozenset[str]:
    """The object concepts among ``found``."""
    return frozenset(n for n in found if _BY_NAME[n].sort == OBJECT)


def inferred_incident_types(found: Mapping[str, int]) -> tuple[str, ...]:
    """The incident types the failure concepts among ``found`` imply, most mentioned first."""
    scores: dict[str, int] = {}
    for name, hits in found.items():
        concept = _BY_NAME[name]
        for incident in concept.incident_types:
            scores[incident] = scores.get(incident, 0) + hits
    return tuple(sorted(scores, key=lambda t: (-scores[t], t)))


def asks_read_only(found: Mapping[str, int], action: str) -> bool:
    """The request asks for no change: it says so ("read-only", "do not restart anything"), or
    its action changes nothing and its text names no change (a diagnostics request)."""
    if READ_ONLY in found:
        return True
    return action.strip().lower() in READ_ONLY_ACTIONS and not (MUTATING_CHANGES & found.keys())


def is_read_only(actions: Sequence[str]) -> bool:
    """A playbook whose every action changes nothing (none listed: not known, so False)."""
    return bool(actions) and all(a.strip().lower() in READ_ONLY_ACTIONS for a in actions)
