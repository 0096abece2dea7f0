"""`precedent eval selection`: the labelled set through the operator's selector."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from precedent.cli import main

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "tests" / "data" / "selection" / "requests.yaml"
CATALOG = ROOT / "data" / "playbooks"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["eval", "selection", *args])
    return result.exit_code, result.output


def test_every_model_side_by_side_with_intervals() -> None:
    code, out = run(str(SET), "--catalog", str(CATALOG))
    assert code == 0, out
    assert out.startswith("106 labelled requests")
    for name in ("seed", "action-label", "selective", "embedded-actions", "default"):
        assert f"selection model {name}\n" in out
    assert "WRONG CONFIDENT" in out
    assert "%  [" in out or "% [" in out


def test_json_counts_agree_with_the_labels() -> None:
    code, out = run(
        str(SET),
        "--catalog",
        str(CATALOG),
        "--selection-model",
        "seed",
        "--selection-model",
        "default",
        "-o",
        "json",
    )
    assert code == 0, out
    doc = json.loads(out)
    assert set(doc) == {"seed", "default"}
    for model in doc.values():
        assert model["all"]["accuracy"]["total"] == 106
        assert model["holdout"]["accuracy"]["total"] == 30
        assert model["tune"]["accuracy"]["total"] == 76
        # 20 requests are labelled manual_investigation: the manual rate is over the other 86.
        assert model["all"]["manualWhenOneFits"]["total"] == 86
        rate = model["all"]["wrongConfident"]
        assert rate["low"] <= rate["value"] <= rate["high"]
    # The default model was chosen for fewer wrong confident answers than the seed's.
    assert (
        doc["default"]["all"]["wrongConfident"]["hits"]
        < doc["seed"]["all"]["wrongConfident"]["hits"]
    )


def test_a_request_without_the_annotation_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "set.yaml"
    bad.write_text(
        "apiVersion: precedent.dev/v1alpha1\nkind: RemediationRequest\n"
        "metadata: {name: r}\nspec: {action: rollback, target: {kind: Deployment, name: a}}\n"
    )
    code, out = run(str(bad))
    assert code != 0
    assert "precedent.dev/acceptable-playbooks" in out
    assert "Traceback" not in out
