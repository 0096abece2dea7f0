"""What a change does, whatever verb it is asked under (issue: the change, not the verb).

Every action in the registry has an **effect class** besides its access level: ``scale_down``,
``reduce_replicas`` and ``scale_in`` all remove capacity. The history is compared by effect
class, so a synonym scores as its class's canonical action (the first one the registry lists
for it), and one change gets one answer under any of its names.

A request can say what it does in three places: the verb (``spec.action``), the text
(``spec.description``) and the structured change (``spec.change``). Each gives a **reading**;
when they disagree the request is scored under each reading and the strictest answer is kept
(services.assessment), with a warning naming both. :func:`read_text` finds the effects a
description asks for; it looks for the imperative phrasings people and pipelines use
("reduce checkout from 40 replicas to 12", "scale X down", "delete the PVC", "drain every
node"), and only ever adds readings, so a false match can make an answer stricter, never laxer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "CAPACITY_CHANGE",
    "EFFECT_CLASSES",
    "WRITE_EFFECTS",
    "TextReading",
    "read_text",
]

EFFECT_CLASSES: tuple[str, ...] = (
    "read-only",
    "restart",
    "pod-delete",
    "capacity-down",
    "capacity-up",
    "capacity-change",
    "config-change",
    "secret-change",
    "resources-change",
    "autoscaling-change",
    "storage-change",
    "scheduling-change",
    "image-change",
    "rollback",
    "object-delete",
    "data-delete",
    "privilege-change",
    "network-change",
    "routing-change",
    "node-disruption",
    "failover",
)
"""The effect classes a registry may use. ``capacity-change`` is a replica change whose
direction the verb does not say (``scale_deployment``): it takes it from the change or the text,
and is read as ``capacity-down`` when neither says."""

CAPACITY_CHANGE = "capacity-change"

WRITE_EFFECTS = frozenset(EFFECT_CLASSES) - {"read-only"}
"""Every class that changes something."""


@dataclass(frozen=True, slots=True)
class TextReading:
    """One effect a description asks for, and the words that ask."""

    effect: str
    """The effect class."""
    evidence: str
    """The phrase it was read from (for the warning)."""
    before: int | None = None
    """Replicas before the change, when the text gives them ("from 40 … to 12")."""
    after: int | None = None
    """Replicas after it."""


_WORDS = {
    word: n
    for n, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "hundred": 100}
_NUM = r"(\d{1,6}|" + "|".join(sorted(_WORDS, key=len, reverse=True)) + ")"
_FLAGS = re.IGNORECASE
_FROM_TO = re.compile(
    rf"\bfrom\s+{_NUM}\s*(?:replicas?|pods?|instances?|nodes?)?\s+(?:down\s+|up\s+)?to\s+{_NUM}\b",
    _FLAGS,
)
_CAPACITY_NOUN = r"(?:replicas?|capacity|instances?|pods?|workers?|nodes?)"
# A replica count after "to": "to 3 replicas", "to 0 pods".
_TO_N_REPLICAS = r"\bto\s+" + _NUM + r"\s*(?:replicas?|pods?|instances?)\b"
# A replica count set with no direction said, each read as a decrease by ``_PATTERNS`` and
# sized by ``_TO_COUNT``: "replicas to 0", "replicas: 0", "replica count to zero"; and "scale
# checkout to 0" (a count with no direction word: "scale out … to 10" has one).
_COUNT_NOUN_FIRST = r"\breplica(?:s|\s+count)?\s*(?:to\s+|=\s*|:\s*)" + _NUM + r"\b"
_SCALE_TO_COUNT = (
    r"\bscal(?:e|es|ed|ing)\s+(?:(?!(?:up|out|down|in)\b)[\w./-]+\s+){0,3}?to\s+"
    + _NUM
    + r"\b(?!\s*%)"
)
_TO_COUNT = re.compile(
    rf"{_TO_N_REPLICAS}|{_COUNT_NOUN_FIRST}|{_SCALE_TO_COUNT}",
    _FLAGS,
)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "capacity-down",
        re.compile(
            r"\bscal(?:e|es|ed|ing)\s+(?:[\w./-]+\s+){0,3}?(?:down|in)\b"
            r"|\bdown-?scal\w*"
            r"|\b(?:reduc|decreas|lower|cut|shrink|trim|halv)\w*\b[^.;\n]{0,60}?\b"
            + _CAPACITY_NOUN
            + r"\b"
            r"|--replicas[= ]0\b"
            r"|\bto\s+(?:zero|0)\s+(?:replicas?|pods?|instances?)"
            r"|\b(?:bring|take|turn|dial|wind|ramp|step)\w*\s+(?:[\w./-]+\s+){0,3}?down\b"
            r"|\bdown\s+to\s+" + _NUM + r"\s*" + _CAPACITY_NOUN + r"\b"
            # A replica count set with no direction said: read as a decrease, the riskier.
            r"|\b(?:set|resize|put|pin|change|make|bring|take)\w*\b[^.;\n]{0,50}?"
            + _TO_N_REPLICAS
            + "|"
            + _COUNT_NOUN_FIRST
            + "|"
            + _SCALE_TO_COUNT,
            _FLAGS,
        ),
    ),
    (
        "capacity-up",
        re.compile(
            r"\bscal(?:e|es|ed|ing)\s+(?:[\w./-]+\s+){0,3}?(?:up|out)\b"
            r"|\bup-?scal\w*"
            r"|\b(?:increas|rais|add|doubl)\w*\b[^.;\n]{0,60}?\b" + _CAPACITY_NOUN + r"\b",
            _FLAGS,
        ),
    ),
    (
        "data-delete",
        re.compile(
            r"\b(?:(?:delet|remov|drop|destroy|purg|wip|truncat|clean\s*up|decommission|nuk)\w*"
            # not "retirement", "erasure coding"
            r"|(?:retir|eras)(?:e|es|ed|ing))\b[^.;\n]{0,50}?"
            r"\b(?:pvcs?|persistentvolumeclaims?|persistent\s+volumes?|(?:volume\s+)?claims?|"
            r"volumes?|disks?|"
            r"databases?|db|tables?|buckets?|namespaces?|data|snapshots?|backups?)\b",
            _FLAGS,
        ),
    ),
    (
        "object-delete",
        re.compile(
            r"\b(?:delet|destroy|tear\s+down|uninstall|decommission|nuk)\w*\b"
            # "remove" deletes when what follows is an object ("remove the label" does not).
            r"|\b(?:remov|drop|purg|retir|get\s+rid\s+of)\w*\s+(?:(?:the|this|that|these|those|old|"
            r"stale|unused|orphaned|legacy|[\w.-]+'s)\s+){0,2}(?:[\w.-]+\s+)?"
            r"(?:deployments?|statefulsets?|daemonsets?|replicasets?|services?|jobs?|cronjobs?|"
            r"configmaps?|secrets?|ingress(?:es)?|objects?|resources?|workloads?|releases?|"
            r"charts?|crds?|operators?|apps?|applications?)\b",
            _FLAGS,
        ),
    ),
    (
        "privilege-change",
        re.compile(
            r"\bcluster-?admin\b"
            r"|\b(?:grant|bind|give|escalat)\w*\b[^.;\n]{0,50}?\b"
            r"(?:admin|role|roles|permissions?|privileges?|rbac|iam|owner)\b",
            _FLAGS,
        ),
    ),
    (
        "node-disruption",
        re.compile(
            r"\bdrain\w*\b|\b(?:reboot|replace|recycle)\w*\s+(?:all\s+|every\s+)?"
            r"(?:the\s+)?nodes?\b",
            _FLAGS,
        ),
    ),
    (
        "image-change",
        re.compile(
            r"\b(?:set|change|update|bump|upgrade|switch)\w*\s+(?:the\s+)?image\b"
            r"|\bimage\s+to\b|\broll\s*out\s+(?:version|v\d|image)",
            _FLAGS,
        ),
    ),
    (
        "network-change",
        re.compile(
            r"\b(?:open|close|allow|block|deny)\w*\b[^.;\n]{0,40}?\b(?:port|ingress|egress|"
            r"traffic|firewall|cidr)\b|\bnetwork\s*polic(?:y|ies)\b",
            _FLAGS,
        ),
    ),
    (
        "restart",
        re.compile(r"\b(?:restart|reboot|bounce|recycle|rollout\s+restart)\w*\b", _FLAGS),
    ),
)

# A description often tells what happened before the request (a past deploy, the alert): only
# the sentences that ask for something are read. A sentence is skipped when it is plainly a
# report of the past or of a symptom.
_SENTENCE = re.compile(r"[^.!?;\n]+")
_PAST_REPORT = re.compile(
    r"\b(?:after|since|because|caused|was|were|had|has been|have been|yesterday|last\s+"
    r"(?:week|night|time|deploy)|incident|alert|fired|previously)\b",
    _FLAGS,
)
_ASK = re.compile(
    r"^\s*(?:please\s+|we\s+(?:need|want)\s+to\s+|i\s+want\s+to\s+|let'?s\s+|then\s+|and\s+)?"
    r"(?:\w+\s+){0,2}?(?:reduce|decrease|lower|cut|shrink|trim|halve|scale|downscale|increase|"
    r"raise|add|double|delete|remove|drop|destroy|purge|wipe|truncate|decommission|retire|erase|"
    r"nuke|grant|bind|give|drain|"
    r"cordon|reboot|replace|recycle|set|change|update|bump|upgrade|switch|open|close|allow|"
    r"block|deny|restart|bounce|roll|tear|uninstall|collect|get|describe|capture)\b",
    _FLAGS,
)


# "do not restart", "without deleting", "instead of scaling down": not an ask.
_NEGATED = re.compile(
    r"\b(?:do\s+not|don'?t|never|not|no|without|avoid(?:ing)?|instead\s+of|rather\s+than)"
    r"\s+(?:\w+\s+)?$",
    _FLAGS,
)


def _number(text: str) -> int:
    return _WORDS.get(text.lower(), 0) if not text.isdigit() else int(text)


def read_text(text: str) -> list[TextReading]:
    """The effects ``text`` asks for, each once, in the order of :data:`_PATTERNS`.

    A sentence counts when it asks (it starts with a verb or "please", "we need to", …) or
    does not read as a report of the past; numbers "from A to B" next to a capacity word give
    the direction (and the sizes) of a replica change.
    """
    found: dict[str, TextReading] = {}
    for sentence in _SENTENCE.findall(text or ""):
        if not _ASK.search(sentence) and _PAST_REPORT.search(sentence):
            continue
        for effect, pattern in _PATTERNS:
            match = next(
                (
                    m
                    for m in pattern.finditer(sentence)
                    if not _NEGATED.search(sentence[max(0, m.start() - 24) : m.start()])
                ),
                None,
            )
            if match is None or effect in found:
                continue
            if effect == "object-delete" and "data-delete" in found:
                continue
            found[effect] = TextReading(effect, match.group(0).strip()[:120])
        count = _TO_COUNT.search(sentence)
        held = found.get("capacity-down")
        if count is not None and held is not None and held.after is None:
            found["capacity-down"] = TextReading(
                "capacity-down",
                held.evidence,
                None,
                _number(next(g for g in count.groups() if g is not None)),
            )
        numbers = _FROM_TO.search(sentence)
        if numbers is not None and re.search(_CAPACITY_NOUN, sentence, _FLAGS):
            before, after = _number(numbers.group(1)), _number(numbers.group(2))
            if before != after:
                effect = "capacity-down" if after < before else "capacity-up"
                found[effect] = TextReading(effect, numbers.group(0).strip()[:120], before, after)
                found.pop("capacity-up" if effect == "capacity-down" else "capacity-down", None)
    if "data-delete" in found:
        found.pop("object-delete", None)
    return list(found.values())
