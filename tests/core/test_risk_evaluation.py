"""The band evaluation and the labelled-request loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedent.adapters.loader import load_labelled_requests
from precedent.core.risk_evaluation import BandResult, evaluate_bands, format_confusion
from precedent.errors import LoadError
from precedent.models import Band, Decision

LOW, MEDIUM, HIGH = Band.LOW, Band.MEDIUM, Band.HIGH


def test_counts_accuracy_confusion_and_misses() -> None:
    outcomes = [
        BandResult("a", HIGH, HIGH, 90.0),
        BandResult("b", HIGH, LOW, 10.0, reasoning="nothing matched"),
        BandResult("c", LOW, MEDIUM, 30.0),
        BandResult("d", MEDIUM, MEDIUM, 40.0),
    ]
    evaluation = evaluate_bands(outcomes)
    assert (evaluation.total, evaluation.correct) == (4, 2)
    assert evaluation.accuracy == 0.5
    assert evaluation.within_one == 3
    assert evaluation.under == 1
    assert evaluation.confusion[HIGH][LOW] == 1
    assert evaluation.confusion[LOW][MEDIUM] == 1
    assert [m.name for m in evaluation.misses] == ["b", "c"]
    table = format_confusion(evaluation).splitlines()
    assert table[0].split()[-3:] == ["low", "medium", "high"]
    assert table[3].split() == ["high", "1", "0", "1"]


def test_an_empty_set_has_zero_accuracy() -> None:
    assert evaluate_bands([]).accuracy == 0.0


DOC = """\
apiVersion: precedent.dev/v1alpha1
kind: RemediationRequest
metadata:
  name: r1
  annotations: {annotations}
spec:
  action: restart_service
  target: {{kind: Deployment, name: web}}
"""


def write(tmp_path: Path, annotations: str) -> Path:
    path = tmp_path / "set.yaml"
    path.write_text(DOC.format(annotations=annotations))
    return path


def test_loads_band_decision_and_rationale(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"precedent.dev/expected-band": High, "precedent.dev/expected-decision": denied,'
        ' "precedent.dev/rationale": "same change broke it"}',
    )
    (item,) = load_labelled_requests([path])
    assert item.request.name == "r1"
    assert item.expected_band is Band.HIGH
    assert item.expected_decision is Decision.DENIED
    assert item.rationale == "same change broke it"


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ("{}", "expected-band'\\]: required"),
        ('{"precedent.dev/expected-band": severe}', "expected low, medium or high, found 'severe'"),
        (
            '{"precedent.dev/expected-band": low, "precedent.dev/expected-decision": maybe}',
            "expected Approved, Escalated or Denied",
        ),
    ],
)
def test_bad_labels_are_one_line_naming_the_document(
    tmp_path: Path, annotations: str, message: str
) -> None:
    with pytest.raises(LoadError, match=message) as error:
        load_labelled_requests([write(tmp_path, annotations)])
    assert "document 1 (RemediationRequest r1)" in str(error.value)
    assert "\n" not in str(error.value)
