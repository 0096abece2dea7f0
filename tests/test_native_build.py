"""How the compiled core is built: from pinned inputs, the same in make and in the image."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT


def _lock_entry(name: str) -> tuple[str, set[str]]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    (entry,) = [p for p in lock["package"] if p["name"] == name]
    hashes = {w["hash"] for w in entry.get("wheels", [])}
    if "sdist" in entry:
        hashes.add(entry["sdist"]["hash"])
    return entry["version"], hashes


def test_the_image_builds_with_the_maturin_uv_lock_holds() -> None:
    version, hashes = _lock_entry("maturin")
    text = (ROOT / "tools" / "maturin.txt").read_text()
    pinned = re.findall(r"^maturin==(\S+)", text, re.MULTILINE)
    expected = "\n".join(f"    --hash={h} \\" for h in sorted(hashes))
    assert pinned == [version], f"tools/maturin.txt: maturin=={version} with\n{expected}"
    assert set(re.findall(r"--hash=(sha256:[0-9a-f]+)", text)) == hashes, expected


def test_the_crates_are_locked_and_built_locked() -> None:
    cargo = tomllib.loads((ROOT / "native" / "Cargo.toml").read_text())
    lock = tomllib.loads((ROOT / "native" / "Cargo.lock").read_text())
    locked = {p["name"] for p in lock["package"]}
    assert set(cargo["dependencies"]) <= locked
    assert all("checksum" in p for p in lock["package"] if p.get("source"))
    for where in ("Makefile", "Dockerfile"):
        assert re.search(r"maturin build [^\n]*--locked", (ROOT / where).read_text()), where
