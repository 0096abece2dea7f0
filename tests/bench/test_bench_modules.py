"""Every benchmark module imports: `make bench` runs them all, and a name one of them takes
from another (the operator launcher, the watch) must still exist after a change."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

MODULES = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))


@pytest.mark.parametrize("module", MODULES)
def test_the_benchmark_module_imports_and_has_a_main(module: str) -> None:
    loaded = importlib.import_module(f"tests.bench.{module}")
    assert callable(getattr(loaded, "main", None)), f"{module} has no main()"


def test_the_operator_benchmark_serves_the_namespaces_the_deployment_does() -> None:
    # "Default settings" are the shipped ones: the benchmark's kopf scope is the Deployment's.
    import yaml

    from tests.bench.bench_operator import REPO, SCOPE

    deployment = yaml.safe_load((REPO / "manifests" / "deployment.yaml").read_text())
    containers = deployment["spec"]["template"]["spec"]["containers"]
    args = next(c["args"] for c in containers if c["name"] == "operator")
    scopes = [a for a in args if a.startswith("--namespace") or a == "--all-namespaces"]
    assert scopes == [SCOPE]


def test_the_operator_benchmark_installs_what_the_image_installs() -> None:
    # RSS and CPU are the image's: the same locked packages, no dev group, the product as a
    # wheel, bytecode compiled. The Dockerfile and the benchmark must not drift apart.
    import inspect

    from tests.bench import bench_operator
    from tests.bench.bench_operator import REPO

    dockerfile = (REPO / "Dockerfile").read_text()
    assert "UV_COMPILE_BYTECODE=1" in dockerfile
    assert "uv sync --frozen --no-dev --no-editable" in dockerfile
    source = inspect.getsource(bench_operator.runtime_python)
    for flag in ("--no-dev", "--no-editable", "--compile-bytecode"):
        assert f'"{flag}"' in source
    assert '"--all-extras"' not in source
    assert '"--extra"' not in source
    # The compiled core too, as the image installs it beside the product.
    assert "COPY --from=native /wheels /wheels" in dockerfile
    assert "NATIVE_WHEELS" in source


def test_the_operator_benchmark_can_run_the_development_environment() -> None:
    import sys

    from tests.bench.bench_operator import runtime_python

    assert runtime_python("dev")[0] == sys.executable
    with pytest.raises(SystemExit, match="BENCH_OPERATOR_ENV"):
        runtime_python("prod")


def test_the_fair_no_op_writes_a_status_precedent_would_write() -> None:
    # The fair no-op's status is one of Precedent's answers: it must still read as one (the
    # model forbids unknown fields), Ready, with the parts an answer has, so that the bench
    # compares what an answer costs to write and not a smaller object.
    import json

    from precedent.models import Assessment, Condition
    from tests.bench.bench_operator import REPO

    raw = json.loads((REPO / "tests" / "bench" / "fair_status.json").read_text())
    conditions = [Condition.model_validate(c) for c in raw.pop("conditions")]
    raw.pop("observedGeneration")
    assert raw.pop("mark").startswith("hmac-sha256:")  # the status mark, signed per answer
    assessment = Assessment.model_validate(raw)  # the CRD stores its fields at the top level
    assert assessment.risk is not None
    assert assessment.recommendation is not None
    assert any(c.type == "Ready" and c.status == "True" for c in conditions)
    assert len(json.dumps(raw, separators=(",", ":"))) > 4000
