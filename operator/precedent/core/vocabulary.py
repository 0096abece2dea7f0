"""Operations vocabulary: the many ways people name the same change, folded to one concept.

"lower the replica count", "scale in" and ``reduce_replicas`` name one action; so do "bounce
the pods", "recycle" and "rolling restart". Word and character n-grams cannot see that, so the
lexical embedder adds one concept feature (``~scale-down``) for every phrase of a concept found
in a text, on the incident side and the request side alike. The phrases are the action verbs
and nouns of Kubernetes change requests and post-mortems; they are patterns over lower-case
words (``\\w*`` allows inflections: "scaled", "scaling"), at most a few words apart.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Mapping

__all__ = ["ACTION_CONCEPTS", "CONCEPTS", "TRIGGERS", "concepts"]

_GAP = r"(?:\s+\w+){0,3}?\s+"  # up to three words between a verb and its object

_PHRASES: Mapping[str, tuple[str, ...]] = {
    "scale-down": (
        rf"scal\w*{_GAP}(?:down|in)\b",
        r"scale[\s_-]?(?:down|in)\b",
        r"downscal\w*",
        rf"(?:reduc|lower|cut|shrink|trim|decreas|remov)\w*{_GAP}(?:replica|pod|node|instance|broker|consumer)s?\b",
        r"fewer\s+(?:replica|pod|node|instance)s?\b",
        r"(?:shrink|shrank|shrunk)\w*",
        r"scale\w*\s+to\s+(?:zero|0|1|one)\b",
    ),
    "scale-up": (
        rf"scal\w*{_GAP}(?:up|out)\b",
        r"scale[\s_-]?(?:up|out)\b",
        r"upscal\w*|upsiz\w*",
        rf"(?:increas|rais|add|grow)\w*{_GAP}(?:replica|pod|node|instance)s?\b",
        r"more\s+(?:replica|pod|node|instance)s?\b",
        r"resiz\w*",
    ),
    "restart": (
        r"restart\w*",
        r"reboot\w*",
        r"bounc\w*",
        r"recycl\w*",
        r"\bcycl(?:e|ed|ing)\b",
        r"\broll(?:ed|ing)?\s+(?:the\s+)?(?:pods?|brokers?|nodes?|restart)\b",
        r"kill\w*\s+(?:the\s+)?pods?",
    ),
    "rollback": (
        r"roll\w*\s*back\w*",
        r"rollback\w*",
        r"revert\w*",
        r"\bundo\w*|\bundid\b|\bundone\b",
        r"previous\s+(?:version|revision|release)",
    ),
    "rollout": (
        r"roll\w*\s*out\w*",
        r"rollout\w*",
        r"deploy(?:ed|ing|s|ment\s+of)?\b",
        r"releas\w*",
        r"canary\w*",
        r"\bship\w*",
    ),
    "delete": (
        r"delet\w*",
        r"remov\w*",
        r"clean\w*\s*up\w*|cleanup\w*",
        r"uninstall\w*",
        r"prun\w*",
        r"destroy\w*",
    ),
    "drain": (
        r"drain\w*",
        r"cordon\w*",
        r"evacuat\w*",
        r"evict\w*",
        r"maintenance",
    ),
    "certificate": (
        r"certificat\w*",
        r"\bcerts?\b",
        r"\btls\b|\bssl\b|\bx509\b",
        r"\bca\s*bundle\b|\bcabundle\b",
        r"truststore\w*",
    ),
    "credential-rotation": (
        r"rotat\w*",
        r"passwords?",
        r"credentials?",
        r"api\s+keys?",
        r"signing\s+keys?",
    ),
    "config-change": (
        r"config\w*",
        r"settings?",
        r"feature\s+flags?|\bflags?\b",
        r"env\w*\s+var\w*|environment",
        r"annotation\w*",
    ),
    "failover": (
        r"fail\w*\s*over\w*",
        r"switchover\w*",
        r"promot\w*",
        r"primary|replica\s+lag\w*",
    ),
    "dns": (
        r"\bdns\b",
        r"coredns|kube-dns",
        r"resolv\w*",
        r"nxdomain|servfail",
    ),
    "firewall": (
        r"firewall\w*",
        r"\bnsg\b|security\s+groups?",
        r"network\s*polic\w*|netpol\w*",
        r"deny\s+rules?|block\s+rules?",
        r"egress|ingress\s+rules?",
    ),
    "resource-limits": (
        r"limits?\b",
        r"requests?\s+(?:for\s+)?(?:cpu|memory)",
        r"(?:cpu|memory)\s+(?:limit|request)s?",
        r"throttl\w*",
        r"oom\w*|out\s+of\s+memory",
    ),
    "upgrade": (
        r"upgrad\w*",
        r"node\s+image",
        r"new\s+image",
        r"surge",
    ),
    # Nouns: the same object under its kubectl short name, its API kind and its spoken name.
    "autoscaler": (
        r"autoscal\w*",
        r"\bhpas?\b",
        r"horizontal\s*pod\s*autoscal\w*",
        r"\bkeda\b",
        r"scaledobjects?",
    ),
    "node-pool": (
        r"node\s*pools?",
        r"agent\s*pools?",
        r"node\s*groups?",
        r"machine\s*sets?",
        r"\bvmss\b|scale\s+sets?",
    ),
    "flapping": (
        r"flap\w*",
        r"oscillat\w*",
        r"thrash\w*",
        r"up\s+and\s+down",
        r"yo-?yo\w*",
    ),
    "crash-loop": (
        r"crash\s*loop\w*",
        r"crashloopbackoff",
        r"keeps?\s+restarting|restart\s+loops?",
    ),
    "disk-full": (
        r"disk\s+(?:full|pressure)",
        r"no\s+space\s+left",
        r"fill\w*\s+(?:up\s+)?(?:the\s+)?(?:disk|volume)s?",
        r"(?:disk|volume)s?\s+(?:filled|ran\s+out)",
    ),
    "single-replica": (
        r"(?:single|one|1)[\s-]+(?:replica|pod|instance)s?\b",
        r"minreplicas\s*(?:of\s*)?1\b",
    ),
}

CONCEPTS: Mapping[str, re.Pattern[str]] = {
    name: re.compile("|".join(f"(?:{p})" for p in patterns)) for name, patterns in _PHRASES.items()
}
"""Concept name → one compiled pattern over lower-case text."""

# Literal words-parts that every match of a concept contains (one of them at least): a text
# that has none cannot match, so its pattern is not run. A text names a handful of concepts,
# and a substring test is far cheaper than a regular-expression scan, so this leaves about one
# scan in five. tests/core/test_embedder_pinned.py derives each phrase's required literals
# from its pattern and checks that these cover them.
TRIGGERS: Mapping[str, tuple[str, ...]] = {
    "scale-down": (
        "scal",
        "reduc",
        "lower",
        "cut",
        "shrink",
        "shrank",
        "shrunk",
        "trim",
        "decreas",
        "remov",
        "fewer",
    ),
    "scale-up": ("scal", "upsiz", "increas", "rais", "add", "grow", "more", "resiz"),
    "restart": ("restart", "reboot", "bounc", "cycl", "roll", "kill"),
    "rollback": ("roll", "revert", "und", "previous"),
    "rollout": ("roll", "deploy", "releas", "canary", "ship"),
    "delete": ("delet", "remov", "clean", "uninstall", "prun", "destroy"),
    "drain": ("drain", "cordon", "evacuat", "evict", "maintenance"),
    "certificate": ("cert", "tls", "ssl", "x509", "bundle", "truststore"),
    "credential-rotation": ("rotat", "password", "credential", "key"),
    "config-change": ("config", "setting", "flag", "env", "annotation"),
    "failover": ("fail", "switchover", "promot", "primary", "lag"),
    "dns": ("dns", "resolv", "nxdomain", "servfail"),
    "firewall": (
        "firewall",
        "nsg",
        "secur",
        "polic",
        "netpol",
        "deny",
        "block",
        "egress",
        "ingress",
    ),
    "resource-limits": ("limit", "request", "throttl", "oom", "memory"),
    "upgrade": ("upgrad", "image", "surge"),
    "autoscaler": ("autoscal", "hpa", "keda", "scaledobject"),
    "node-pool": ("pool", "group", "machine", "vmss", "scale"),
    "flapping": ("flap", "oscillat", "thrash", "down", "yo"),
    "crash-loop": ("crash", "restart"),
    "disk-full": ("disk", "space", "fill", "volume"),
    "single-replica": ("replica", "pod", "instance"),
}
"""Concept name → literals one of which every match of its pattern contains."""


def _trigger_bits(triggers: Mapping[str, tuple[str, ...]]) -> tuple[tuple[str, int], ...]:
    """Each distinct trigger with the bits of the concepts it may start (concept order).

    A trigger that contains another one is folded into it (a text holding ``scale`` holds
    ``scal``): a weaker test, never a missed match, and fewer substring tests per word.
    """
    every = sorted({t for found in triggers.values() for t in found})
    for trigger in every:
        # Triggers are looked for inside single words of the flattened text.
        if not trigger.isalnum() or trigger != trigger.lower():
            raise ValueError(f"trigger {trigger!r} must be lower-case letters and digits")
    inner = {t: min((p for p in every if p in t), key=len) for t in every}
    bits: dict[str, int] = {}
    for position, found in enumerate(triggers.values()):
        for trigger in found:
            bits[inner[trigger]] = bits.get(inner[trigger], 0) | (1 << position)
    return tuple(bits.items())


_TRIGGER_BITS = _trigger_bits(TRIGGERS)
_MATCHERS: tuple[tuple[str, str, re.Pattern[str], int], ...] = tuple(
    (name, f"~{name}", CONCEPTS[name], 1 << position) for position, name in enumerate(_PHRASES)
)

# Word → the bits of the concepts whose triggers it contains. A trigger has no separator, so
# a text holds it exactly when one of its words does; words repeat across texts, so each
# word's triggers are looked for once (bounded like the embedder's n-gram cache).
_WORD_BITS: dict[str, int] = {}
_WORD_BITS_LIMIT = 200_000
# ``only`` → the bits of those concepts.
_ONLY_BITS: dict[frozenset[str], int] = {}


def _word_bits(word: str) -> int:
    found = 0
    for trigger, bits in _TRIGGER_BITS:
        if trigger in word:
            found |= bits
    if len(_WORD_BITS) < _WORD_BITS_LIMIT:
        _WORD_BITS[word] = found
    return found


def _only_bits(only: frozenset[str]) -> int:
    found = _ONLY_BITS.get(only)
    if found is None:
        found = 0
        for name, _, _, bit in _MATCHERS:
            if name in only:
                found |= bit
        if len(_ONLY_BITS) < 64:
            _ONLY_BITS[only] = found
    return found


_SEPARATORS = re.compile(r"[^a-z0-9]+")


ACTION_CONCEPTS: frozenset[str] = frozenset(
    {
        "scale-down",
        "scale-up",
        "restart",
        "rollback",
        "rollout",
        "delete",
        "drain",
        "credential-rotation",
        "failover",
        "upgrade",
    }
)
"""The concepts that name a change (verbs), as opposed to what it touches (nouns, topics)."""


def concepts(text: str, *, only: frozenset[str] | None = None) -> list[str]:
    """Concept features of ``text``: ``~name`` once per phrase occurrence, in concept order
    (``only``: just these concepts)."""
    flat = _SEPARATORS.sub(" ", text.lower())
    # Which concepts can match at all: the triggers of the text's distinct words.
    words = set(flat.split())
    known = list(map(_WORD_BITS.get, words))
    if None in known:
        known = [_word_bits(w) if b is None else b for w, b in zip(words, known, strict=True)]
    candidates: int = functools.reduce(operator.or_, known, 0)
    if only is not None:
        candidates &= _only_bits(only)
    found: list[str] = []
    if not candidates:
        return found
    for _, feature, pattern, bit in _MATCHERS:
        if candidates & bit:
            hits = len(pattern.findall(flat))
            if hits:
                found.extend([feature] * hits)
    return found
