"""Every relative link in the README and docs/ points at a file that exists, and every
``#anchor`` at a heading of that file (GitHub's anchor rule: lower case, punctuation dropped)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "sandbox" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    found, fence = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_links_resolve(page: Path) -> None:
    broken = []
    for link in _LINK.findall(page.read_text()):
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link}: no such heading")
    assert not broken, broken
