"""The selection concepts' literal pre-test: a request's concepts are counted as one scan of
every concept's pattern counts them, while most patterns are skipped after a substring test."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import yaml

from precedent.adapters.loader import load_playbooks, load_requests
from precedent.core.literals import necessary_literals
from precedent.core.playbooks.phrases import SELECTION_CONCEPTS, concept_counts
from precedent.core.playbooks.profile import profile_text
from tests.bench.synthetic import titles

ROOT = Path(__file__).resolve().parents[3]


def _scanning_all(text: str) -> dict[str, int]:
    # One scan of every concept's pattern, as the counts were first made: their definition.
    flat = re.sub(r"[^a-z0-9]+", " ", text.lower())
    found = {c.name: len(c.pattern.findall(flat)) for c in SELECTION_CONCEPTS}
    return {name: hits for name, hits in found.items() if hits}


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"oom\s*kill\w*", {"kill"}),  # the longer of two runs
        (r"crash\s*loop|panic", {"crash", "panic"}),
        (r"(?:ab|bb)c+d", {"ab", "bb"}),  # a branch is as good as its shortest literal
        (r"memory\s+(?:limit|allocation)", {"memory"}),
        (r"restart\w*\s+every\s+(?:few|\d+)", {"restart"}),
        (r"(?:x)?\s+\d+", None),  # nothing a match must hold
        (r"\w+", None),
        (r"abc|\d+", None),  # one alternative holds no literal
    ],
)
def test_the_literals_every_match_holds(pattern: str, literals: set[str] | None) -> None:
    found = necessary_literals(re.compile(pattern))
    assert found == (frozenset(literals) if literals is not None else None)


def _phrase_words() -> list[str]:
    words: set[str] = set()
    for concept in SELECTION_CONCEPTS:
        words.update(re.findall(r"[a-z]{2,}|[0-9]+", concept.pattern.pattern))
    return sorted(words)


def _fuzz_texts(count: int) -> list[str]:
    # The phrases' own words, inflected, in random orders with fillers: texts that hit and
    # nearly hit every phrase, with separators the flattening turns into spaces.
    rng = random.Random(24)
    words = _phrase_words()
    fillers = ["the", "a", "of", "pods", "to", "up", "down", "at", "its", "7", "137", "-", "_"]
    texts = []
    for _ in range(count):
        parts = [
            rng.choice(words) + rng.choice(["", "", "s", "ed", "ing"])
            if rng.random() < 0.6
            else rng.choice(fillers)
            for _ in range(rng.randint(1, 30))
        ]
        texts.append(rng.choice([" ", " ", "-", ". "]).join(parts))
    return texts


def _real_texts() -> list[str]:
    texts = [profile_text(p) for p in load_playbooks([ROOT / "data" / "playbooks"])]
    texts += [r.spec.description or "" for r in load_requests([ROOT / "data" / "requests"])]
    for path in sorted((ROOT / "tests" / "data" / "selection").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            for item in doc if isinstance(doc, list) else [doc]:
                if isinstance(item, dict):
                    texts.append(str(item.get("description") or item.get("spec") or ""))
    return texts + titles(500, seed=5)


def test_concepts_count_as_one_scan_of_every_pattern() -> None:
    texts = [*_fuzz_texts(5000), *_real_texts()]
    texts += ["OOM-Killed ÄPI \u212aill", "", "exit code 137", "ﬁrewall résolv DNS"]
    hits = 0
    for text in texts:
        expected = _scanning_all(text)
        assert concept_counts(text) == expected, text
        hits += bool(expected)
    # Not vacuous: most texts name some concept, and every concept is found somewhere.
    assert hits > len(texts) // 2
    found = {name for text in texts for name in concept_counts(text)}
    assert found == {c.name for c in SELECTION_CONCEPTS}


def test_every_match_holds_one_of_its_concepts_literals() -> None:
    # The property the pre-test relies on, checked on the matches themselves.
    texts = _fuzz_texts(3000)
    for concept in SELECTION_CONCEPTS:
        literals = necessary_literals(concept.pattern)
        assert literals is not None, concept.name  # every concept is pre-tested today
        for text in texts:
            flat = re.sub(r"[^a-z0-9]+", " ", text.lower())
            for match in concept.pattern.finditer(flat):
                assert any(lit in match.group(0) for lit in literals), (concept.name, match)
