"""Property-based tests of the live server from its own OpenAPI document (schemathesis).

Every operation gets generated requests, valid ones and (for the search body) invalid ones;
each answer must be no 5xx, conform to the document (status, content type, schema), and every
error must be ``application/problem+json``. Bounded: a few hundred examples in all.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import CheckContext, not_a_server_error
from schemathesis.core.failures import Failure
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.integration.api.conftest import Api

pytestmark = pytest.mark.integration

EXAMPLES = {"searchIncidents": 100, "queryPlaybooks": 50}
"""Examples per operation (per generation mode); the other operations take no input."""


def problem_json(ctx: CheckContext, response: Any, case: Any) -> bool | None:
    """Every 4xx/5xx answer is an RFC 9457 problem document."""
    if response.status_code >= 400:
        media = response.headers.get("content-type", [""])[0]
        if not media.startswith("application/problem+json"):
            raise Failure(
                operation=case.operation.label,
                title="Error without problem+json",
                message=f"{response.status_code} answered with {media!r}",
            )
    return None


def accepted(ctx: CheckContext, response: Any, case: Any) -> bool | None:
    """A search the document calls valid is answered 200 (the schema is as strict as the
    handler, so the generator explores real searches, not only refusals)."""
    if response.status_code != 200:
        raise Failure(
            operation=case.operation.label,
            title="Valid search refused",
            message=f"{response.status_code} for {case.body!r}: {response.text[:200]}",
        )
    return None


def exercise(api: Api, operation: Any, mode: GenerationMode, examples: int, strict: bool) -> None:
    """Send ``examples`` generated requests to one operation and check every answer."""
    extra = [problem_json, accepted] if strict else [problem_json]

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        case = data.draw(operation.as_strategy(generation_mode=mode))
        case.call_and_validate(
            base_url=api.url,
            checks=[
                not_a_server_error,
                status_code_conformance,
                content_type_conformance,
                response_schema_conformance,
            ],
            additional_checks=extra,
        )

    run()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_live_server_keeps_its_document(api: Api, mode: GenerationMode) -> None:
    document = api.client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(document)
    ran = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        label = operation.definition.raw.get("operationId", "")
        if mode is GenerationMode.NEGATIVE and label not in EXAMPLES:
            continue  # no input to get wrong
        strict = mode is GenerationMode.POSITIVE and label == "searchIncidents"
        exercise(api, operation, mode, EXAMPLES.get(label, 3), strict)
        ran += 1
    assert ran >= 2
