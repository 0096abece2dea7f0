"""Finding Service names in pod-template values (env, args, command, ConfigMap data).

A value names a Service when it holds one of the names cluster DNS resolves, in a place where a
host goes:

==========================================  ===================================  ==============
form                                        where it counts                      confidence
==========================================  ===================================  ==============
``svc.ns.svc.cluster.local`` / ``svc.ns.svc``  anywhere in the value (a whole token)  FQDN
``svc.ns``                                  URL host, host:port, or whole value  NAMESPACED
``svc``                                     URL host or host:port                HOST
``svc``                                     the whole value, host-like key       EXACT_HOST_KEY
``svc``                                     the whole value, any other key       EXACT
==========================================  ===================================  ==============

The guards against false positives: a bare name never matches inside a longer token
(``LOG_LEVEL=api-verbose`` does not name ``api``), nor as a word in prose (``"disable the cache
for tests"`` does not name ``cache``), nor in a URL's path or query (``http://x/cache``); a
``svc.ns`` or bare name only counts if that Service exists (the graph checks), so
``config.yaml`` names nothing unless a Service ``config`` lives in a namespace ``yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from precedent.core.graph.model import Confidence, EdgeType

__all__ = ["HostRef", "references_in_args", "references_in_value", "verb_of_key"]

# A Service name is a DNS-1035 label (starts with a letter); namespaces and cluster domains
# are DNS-1123 labels.
_FIRST = r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?"
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST = rf"{_FIRST}(?:\.{_LABEL})*"
# What may follow a host: end, a port, a path, a query, or a separator. Never a letter, digit,
# '-', '_' or '.', so "api" does not match inside "api-verbose" or "api.yaml.bak".
_AFTER = r"(?=$|[:/?#\s,;'\"()\[\]{}<>|=])"

_URL = re.compile(rf"[a-z][a-z0-9+.-]*://(?:[^@/\s]*@)?({_HOST}){_AFTER}", re.IGNORECASE)
_HOST_PORT = re.compile(rf"(?<![\w.\-/:])({_HOST}):\d{{1,5}}(?![\w.])", re.IGNORECASE)
_CLUSTER_DNS = re.compile(
    rf"(?<![\w.\-])({_FIRST})\.({_LABEL})\.svc(?:\.{_LABEL})*{_AFTER}", re.IGNORECASE
)
_WHOLE = re.compile(rf"{_HOST}", re.IGNORECASE)

_HOST_KEY_WORDS = frozenset(
    [
        "HOST",
        "HOSTNAME",
        "HOSTS",
        "ADDR",
        "ADDRESS",
        "URL",
        "URI",
        "URLS",
        "ENDPOINT",
        "ENDPOINTS",
        "SERVER",
        "SERVERS",
        "SERVICE",
        "DSN",
        "BROKER",
        "BROKERS",
        "UPSTREAM",
        "BACKEND",
        "TARGET",
        "SVC",
        "PEER",
        "PEERS",
        "REMOTE",
    ]
)
_VERBS: tuple[tuple[frozenset[str], EdgeType], ...] = (
    (
        frozenset(["SUBSCRIBE", "SUBSCRIBER", "SUBSCRIPTION", "CONSUME", "CONSUMER", "LISTEN"]),
        EdgeType.SUBSCRIBES,
    ),
    (frozenset(["PUBLISH", "PUBLISHER", "PRODUCE", "PRODUCER", "EMIT"]), EdgeType.PUBLISHES),
    (frozenset(["READ", "READER", "REPLICA", "RO", "READONLY"]), EdgeType.READS_FROM),
    (frozenset(["WRITE", "WRITER", "PRIMARY", "RW", "MASTER"]), EdgeType.WRITES_TO),
)
_KEY_SPLIT = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True, slots=True)
class HostRef:
    """A name a value gives to a Service: ``namespace`` is None for a bare name (the caller's
    namespace applies)."""

    name: str
    """The Service's name, lower-case."""
    namespace: str | None
    """Its namespace when the value says it."""
    confidence: float
    """From :class:`~precedent.core.graph.model.Confidence`, by form."""


def _key_words(key: str | None) -> set[str]:
    return {w.upper() for w in _KEY_SPLIT.split(key or "") if w}


def verb_of_key(key: str | None) -> EdgeType | None:
    """The edge type an env/flag name implies (``QUEUE_CONSUMER_URL`` → subscribes), if any."""
    words = _key_words(key)
    for vocabulary, verb in _VERBS:
        if words & vocabulary:
            return verb
    return None


def _classify(host: str, bare_confidence: float) -> HostRef | None:
    parts = host.lower().split(".")
    if len(parts) == 1:
        return HostRef(parts[0], None, bare_confidence)
    if len(parts) == 2:
        return HostRef(parts[0], parts[1], Confidence.NAMESPACED)
    if parts[2] == "svc":
        return HostRef(parts[0], parts[1], Confidence.FQDN)
    return None  # a host outside cluster DNS (api.stripe.com)


def references_in_value(value: str, key: str | None = None) -> list[HostRef]:
    """Every Service reference in ``value`` (the value of env var/flag ``key``), strongest form
    kept per name, in order of first appearance."""
    found: dict[tuple[str, str | None], HostRef] = {}

    def keep(ref: HostRef | None) -> None:
        if ref is None:
            return
        old = found.get((ref.name, ref.namespace))
        if old is None or ref.confidence > old.confidence:
            found[(ref.name, ref.namespace)] = ref

    for match in _CLUSTER_DNS.finditer(value):
        keep(HostRef(match.group(1).lower(), match.group(2).lower(), Confidence.FQDN))
    for pattern in (_URL, _HOST_PORT):
        for match in pattern.finditer(value):
            keep(_classify(match.group(1), Confidence.HOST))
    stripped = value.strip()
    if _WHOLE.fullmatch(stripped):
        exact = Confidence.EXACT_HOST_KEY if _key_words(key) & _HOST_KEY_WORDS else Confidence.EXACT
        keep(_classify(stripped, exact))
    return list(found.values())


def _arg_values(args: Sequence[str]) -> Iterator[tuple[str | None, str]]:
    """(flag, value) pairs: ``--db=ledger``, ``--db ledger``, or (None, arg)."""
    previous_flag: str | None = None
    for arg in args:
        if arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
            yield flag.lstrip("-"), value
            previous_flag = None
        elif arg.startswith("-"):
            previous_flag = arg.lstrip("-")
        else:
            yield previous_flag, arg
            previous_flag = None


def references_in_args(args: Sequence[str]) -> list[tuple[str, HostRef]]:
    """References in a container's command/args, each with the argument it came from."""
    out: list[tuple[str, HostRef]] = []
    for flag, value in _arg_values(args):
        shown = f"--{flag} {value}" if flag else value
        out.extend((shown, ref) for ref in references_in_value(value, flag))
    return out
