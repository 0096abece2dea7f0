"""``precedent score`` as a CI gate: which decisions fail it, the exit codes, the JUnit report.

Exit codes (documented in the README and ``precedent score -h``):

* 0 — every request passed (or no ``--fail-on`` was given);
* 1 — bad input or configuration (one ``error:`` line on stderr);
* 2 — usage error (an unknown option or value; click's own code);
* 3 — the gate failed: at least one request's decision is ``--fail-on`` or stricter.

The report is JUnit XML because it is what CI systems read as test results without a plugin
of ours: GitLab (``artifacts:reports:junit``), Jenkins, Azure Pipelines, Tekton and CircleCI
show it natively, and GitHub through any JUnit report action. One test case per request
(class name = its namespace); a request the gate stops is a ``<failure>`` whose message is its
decision and score, with the reasoning as the text.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from precedent.adapters.loader import NamedRequest
from precedent.core.printable import printable
from precedent.models import Assessment, Decision

__all__ = ["EXIT_GATE", "EXIT_INPUT", "EXIT_OK", "EXIT_USAGE", "gate_fails", "write_junit"]

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_GATE = 3

_STRICTNESS = {Decision.APPROVED: 0, Decision.ESCALATED: 1, Decision.DENIED: 2}
_FAIL_ON = {"escalated": Decision.ESCALATED, "denied": Decision.DENIED}


def gate_fails(assessment: Assessment, fail_on: str) -> bool:
    """Whether the request's decision is ``fail_on`` (``escalated`` | ``denied``) or stricter."""
    return _STRICTNESS[assessment.risk.decision] >= _STRICTNESS[_FAIL_ON[fail_on]]


def junit_report(
    results: Sequence[tuple[NamedRequest, Assessment]], fail_on: str | None
) -> ET.ElementTree:
    """One ``<testsuite>`` with a ``<testcase>`` per request."""
    failures = sum(1 for _, a in results if fail_on and gate_fails(a, fail_on))
    suite = ET.Element(
        "testsuite",
        name="precedent score",
        tests=str(len(results)),
        failures=str(failures),
        errors="0",
        skipped="0",
    )
    for req, a in results:
        case = ET.SubElement(
            suite, "testcase", classname=req.namespace or "default", name=req.name, file=req.source
        )
        summary = (
            f"{a.risk.decision.value}: risk {a.risk.score:g} ({a.risk.band.value}), "
            f"action {req.spec.action}"
        )
        if fail_on and gate_fails(a, fail_on):
            failure = ET.SubElement(
                case, "failure", message=printable(summary), type=f"fail-on-{fail_on}"
            )
            failure.text = printable(a.risk.reasoning.text)
        out = ET.SubElement(case, "system-out")
        out.text = printable(f"{summary}. {a.risk.reasoning.text}")
    suites = ET.Element("testsuites", tests=str(len(results)), failures=str(failures))
    suites.append(suite)
    return ET.ElementTree(suites)


def write_junit(
    path: str | Path, results: Sequence[tuple[NamedRequest, Assessment]], fail_on: str | None
) -> None:
    """Write the JUnit XML report to ``path`` (UTF-8, with an XML declaration)."""
    tree = junit_report(results, fail_on)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
