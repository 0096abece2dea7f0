"""Errors as RFC 9457 problem documents (``application/problem+json``), for every HTTP route.

One shape for the Context API and the incident search API: ``type``, ``title``, ``status``,
``detail``, ``instance`` and, when one input is at fault, ``invalid-params`` naming it.
"""

from __future__ import annotations

import json

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PROBLEM_BASE", "PROBLEM_JSON", "InvalidParam", "Problem", "ProblemError"]

PROBLEM_BASE = "https://precedent.dev/problems/"
PROBLEM_JSON = "application/problem+json"


class InvalidParam(BaseModel):
    """One input at fault: its name (a dotted path into a JSON body) and why."""

    name: str = Field(description="Query parameter or body field, e.g. top_k or target.kind.")
    reason: str = Field(description="What is wrong with it.")


class Problem(BaseModel):
    """An RFC 9457 problem document."""

    model_config = ConfigDict(populate_by_name=True)

    type: str = Field(description="URI naming the kind of problem.")
    title: str = Field(description="Short summary of the kind of problem.")
    status: int = Field(ge=400, le=599, description="The HTTP status code.")
    detail: str = Field(description="What went wrong with this request.")
    instance: str = Field(description="The request path.")
    invalid_params: list[InvalidParam] | None = Field(
        default=None,
        alias="invalid-params",
        description="The input at fault, when there is one.",
    )


class ProblemError(Exception):
    """An error answered with a problem document."""

    def __init__(
        self, status: int, slug: str, title: str, detail: str, parameter: str | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.parameter = parameter

    def document(self, instance: str) -> Problem:
        """The problem document for a request to ``instance``."""
        return Problem(
            type=PROBLEM_BASE + self.slug,
            title=self.title,
            status=self.status,
            detail=self.detail,
            instance=instance,
            invalid_params=[InvalidParam(name=self.parameter, reason=self.detail)]
            if self.parameter is not None
            else None,
        )

    def response(self, instance: str) -> web.Response:
        """The ``application/problem+json`` response."""
        body = self.document(instance).model_dump(mode="json", by_alias=True, exclude_none=True)
        return web.Response(
            status=self.status, text=json.dumps(body), content_type=PROBLEM_JSON, charset="utf-8"
        )
