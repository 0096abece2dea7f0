"""Operations vocabulary: the many ways people name the same change, folded to one concept.

"lower the replica count", "scale in" and ``reduce_replicas`` name one action; so do "bounce
the pods", "recycle" and "rolling restart". Word and character n-grams cannot see that, so the
lexical embedder adds one concept feature (``~scale-down``) for every phrase of a concept found
in a text, on the incident side and the request side alike. The phrases are the action verbs
and nouns of Kubernetes change requests and post-mortems; they are patterns over lower-case
words (``\\w*`` allows inflections: "scaled", "scaling"), at most a few words apart.
"""

from __future__ import annotations

import importlib
import itertools
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ACTION_CONCEPTS", "CONCEPTS", "TRIGGERS", "concepts", "settle_words", "word_concepts"]

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


def _spaces(items: Any) -> int | None:
    """The most spaces a match of the parsed sequence ``items`` can hold in a flattened text
    (words of ``[a-z0-9]`` between single spaces); None when it has no bound or a construct
    this does not know. An over-estimate is safe (a wider window), an under-estimate is not.
    """
    constants = importlib.import_module("re._constants")
    word_only = {constants.CATEGORY_WORD, constants.CATEGORY_DIGIT}
    total = 0
    for op, arg in items:
        if op is constants.LITERAL:
            found: int | None = int(chr(arg).isspace())
        elif op is constants.IN:
            # A set that holds only letters, digits and word categories never takes a space.
            found = int(
                not all(
                    (kind is constants.LITERAL and not chr(value).isspace())
                    or (kind is constants.RANGE and not value[0] <= 32 <= value[1])
                    or (kind is constants.CATEGORY and value in word_only)
                    for kind, value in arg
                )
            )
        elif op is constants.CATEGORY:
            found = int(arg not in word_only)
        elif op is constants.AT:
            found = 0  # zero-width
        elif op is constants.SUBPATTERN:
            found = _spaces(arg[-1])
        elif op is constants.BRANCH:
            branches = [_spaces(b) for b in arg[1]]
            found = None if None in branches else max(b for b in branches if b is not None)
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT):
            _, high, sub = arg
            inner = _spaces(sub)
            if inner is None:
                found = None
            elif inner == 0:
                found = 0
            elif _separator_only(list(sub)):
                # Consecutive characters none of which is a letter or digit: one space at most.
                found = 1
            elif high == constants.MAXREPEAT:
                found = None
            else:
                found = high * inner
        else:
            found = None
        if found is None:
            return None
        total += found
    return total


def _separator_only(items: Any) -> bool:
    """Whether ``items`` is one character that is never a letter or a digit (``\\s``,
    ``[\\s_-]``)."""
    constants = importlib.import_module("re._constants")
    if len(items) != 1:
        return False
    op, arg = items[0]
    if op is constants.LITERAL:
        return not chr(arg).isalnum()
    if op is constants.CATEGORY:
        return bool(arg is constants.CATEGORY_SPACE)
    if op is constants.IN:
        return all(
            (kind is constants.LITERAL and not chr(value).isalnum())
            or (kind is constants.CATEGORY and value is constants.CATEGORY_SPACE)
            for kind, value in arg
        )
    return False


def _nullable(items: Any) -> bool:
    """Whether the parsed sequence ``items`` can match the empty string (True if unsure)."""
    constants = importlib.import_module("re._constants")
    for op, arg in items:
        if op in (constants.LITERAL, constants.IN, constants.CATEGORY, constants.NOT_LITERAL):
            return False
        if op is constants.SUBPATTERN and not _nullable(arg[-1]):
            return False
        if op is constants.BRANCH and not any(_nullable(b) for b in arg[1]):
            return False
        repeated = op in (constants.MAX_REPEAT, constants.MIN_REPEAT)
        if repeated and arg[0] >= 1 and not _nullable(arg[2]):
            return False
    return True


def _edge_space(items: Any, last: bool = False) -> bool:
    """Whether a match of ``items`` can begin (``last``: end) with a space (True if unsure)."""
    constants = importlib.import_module("re._constants")
    for item in reversed(items) if last else items:
        op, arg = item
        if op is constants.AT:
            continue
        if op is constants.SUBPATTERN:
            found = _edge_space(arg[-1], last)
        elif op is constants.BRANCH:
            found = any(_edge_space(b, last) for b in arg[1])
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT):
            found = _edge_space(arg[2], last)
        else:
            spaces = _spaces([item])
            found = spaces is None or spaces > 0
        if found:
            return True
        if not _nullable([item]):
            return False
    return False


def _reach(pattern: re.Pattern[str]) -> int | None:
    """How many words on either side of a word holding a trigger a match can reach (the
    most spaces one match can hold); None: the whole text is scanned (no bound, or a match
    may begin or end with a space, which a window cut at its words would lose)."""
    parser = importlib.import_module("re._parser")
    parsed = list(parser.parse(pattern.pattern))
    if _edge_space(parsed) or _edge_space(parsed, last=True):
        return None
    return _spaces(parsed)


_REACH: tuple[int | None, ...] = tuple(_reach(pattern) for _, _, pattern, _ in _MATCHERS)

# Word → the concepts whose triggers it contains. A trigger has no separator, so a text holds
# it exactly when one of its words does; words repeat across texts, so each word's triggers
# are looked for once (bounded like the embedder's n-gram cache).
_WORD_CONCEPTS_LIMIT = 200_000


class _WordConcepts(dict[str, tuple[int, ...]]):
    """Word → the positions (concept order) of the concepts whose triggers it contains; a
    word not here is looked at on the look-up (and kept while there are fewer than
    ``bound``)."""

    bound = _WORD_CONCEPTS_LIMIT

    def __missing__(self, word: str) -> tuple[int, ...]:
        bits = 0
        for trigger, concepts_bits in _TRIGGER_BITS:
            if trigger in word:
                bits |= concepts_bits
        found = tuple(position for position in range(len(_MATCHERS)) if bits >> position & 1)
        if len(self) < self.bound:
            self[word] = found
        return found


def settle_words(margin: int) -> None:
    """The history's words are looked at: keep at most ``margin`` more (requests' one-off
    words, ids and numbers, are looked at each time instead; see
    ``LexicalEmbedder.settle``)."""
    _WORD_CONCEPTS.bound = min(_WORD_CONCEPTS.bound, len(_WORD_CONCEPTS) + margin)


_WORD_CONCEPTS = _WordConcepts()
# ``only`` → the bits of those concepts.
_ONLY_BITS: dict[frozenset[str], int] = {}
# Per concept: a window of words → how many matches its pattern finds there. Windows repeat
# across texts ("scale down the"), so most scans are one look-up (bounded).
_WINDOW_COUNTS: tuple[dict[str, int], ...] = tuple({} for _ in _MATCHERS)
_WINDOW_COUNTS_LIMIT = 5_000


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


_WORD = re.compile(r"[a-z0-9]+")


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
    return word_concepts(_WORD.findall(text.lower()), only=only)


def word_concepts(words: list[str], *, only: frozenset[str] | None = None) -> list[str]:
    """``concepts`` of a text whose lower-case words (``[a-z0-9]+``, in order, stopwords
    kept) are ``words``.

    The counts are those of one ``findall`` of each concept's pattern over the flattened text
    (the words between single spaces; separators at its ends change nothing, as no match
    holds one). Every match holds one of the concept's triggers inside a word and at most
    ``reach`` spaces, so it lies within ``reach`` words of a word holding a trigger: the
    pattern is run only on those windows, overlapping ones merged. A match touches no
    character outside its window, ``\\b`` sees a space or an end at a window's edges either
    way, and no match crosses from one merged window into the next, so each window's matches
    are the whole text's matches there.
    """
    # The words holding each candidate concept's triggers (most words hold none).
    held = list(map(_WORD_CONCEPTS.__getitem__, words))
    where: dict[int, list[int]] = {}
    for index in itertools.compress(range(len(held)), held):
        for position in held[index]:
            at = where.get(position)
            if at is None:
                where[position] = [index]
            else:
                at.append(index)
    features: list[str] = []
    if not where:
        return features
    allowed = _only_bits(only) if only is not None else -1
    for position in sorted(where):
        _, feature, pattern, bit = _MATCHERS[position]
        if not allowed & bit:
            continue
        at, reach = where[position], _REACH[position]
        if len(at) == 1 and reach is not None:  # one word holds the triggers: one window
            windows = [" ".join(words[max(at[0] - reach, 0) : at[0] + reach + 1])]
        else:
            windows = _windows(words, at, reach)
        counts = _WINDOW_COUNTS[position]
        hits = 0
        for window in windows:
            found_hits = counts.get(window)
            if found_hits is None:
                found_hits = len(pattern.findall(window))
                if len(counts) < _WINDOW_COUNTS_LIMIT:
                    counts[window] = found_hits
            hits += found_hits
        if hits:
            features.extend([feature] * hits)
    return features


def _windows(words: list[str], at: list[int], reach: int | None) -> list[str]:
    """The stretches of the flattened text (``words`` between single spaces) within ``reach``
    words of the words at ``at`` (ascending), overlapping or touching stretches merged; the
    whole text when they cover every word or ``reach`` is None."""
    if reach is None:
        return [" ".join(words)]
    stretches: list[tuple[int, int]] = []
    start, end = at[0] - reach, at[0] + reach
    for index in at[1:]:
        if index - reach > end + 1:
            stretches.append((start, end))
            start = index - reach
        end = index + reach
    stretches.append((start, end))
    return [" ".join(words[max(a, 0) : b + 1]) for a, b in stretches]
