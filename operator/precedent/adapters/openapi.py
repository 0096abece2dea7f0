"""The API server's OpenAPI 3.1 document, served at ``/openapi.json``.

The schemas are generated from the pydantic models the handlers build their answers with
(``ContextApiResponse``, ``SearchRequest``, ``SearchResponse``, ``IndexStatsResponse``,
``Problem``), so the document cannot drift from what is sent; tests validate real responses
against it and run schemathesis against a live server.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from pydantic.json_schema import models_json_schema

from precedent import __version__
from precedent.adapters.catalog_http import COMPONENTS_PARAM, PLAYBOOKS_PATH, ContextApiResponse
from precedent.adapters.problems import PROBLEM_JSON, Problem
from precedent.adapters.search_api import (
    SEARCH_PATH,
    STATS_PATH,
    IndexStatsResponse,
    SearchRequest,
    SearchResponse,
)
from precedent.core.playbooks import MAX_RESULTS_LIMIT

__all__ = ["OPENAPI_PATH", "Health", "openapi_document"]

OPENAPI_PATH = "/openapi.json"


class Health(BaseModel):
    """Liveness, the catalog's size and, with the search API, the history's."""

    status: str = Field(description="ok")
    playbooks: int = Field(ge=0, description="Playbooks in the catalog.")
    embedder: str = Field(description="The catalog's embedder.")
    incidents: int | None = Field(default=None, ge=0, description="Incidents in the history.")
    mode: str | None = Field(default=None, description="Similarity mode of the search.")


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(name)}}}


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {PROBLEM_JSON: {"schema": _ref("Problem")}}}


def _query(name: str, schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": schema, "description": description, **extra}


def _schemas() -> dict[str, Any]:
    _, top = models_json_schema(
        [
            (ContextApiResponse, "serialization"),
            (SearchRequest, "validation"),
            (SearchResponse, "serialization"),
            (IndexStatsResponse, "serialization"),
            (Problem, "serialization"),
            (Health, "serialization"),
        ],
        ref_template="#/components/schemas/{model}",
    )
    schemas: dict[str, Any] = top["$defs"]
    return schemas


def openapi_document(*, search: bool = True) -> dict[str, Any]:
    """The document; ``search`` adds the incident routes (served with a history)."""
    errors = {
        "404": _problem("No such path."),
        "405": _problem("Method not allowed on this path."),
        "500": _problem("The server failed to answer (no internals are shown)."),
    }
    paths: dict[str, Any] = {
        PLAYBOOKS_PATH: {
            "get": {
                "operationId": "queryPlaybooks",
                "summary": "Playbooks for an incident description and labels (seed 004).",
                "parameters": [
                    _query(
                        "description",
                        {"type": "string", "minLength": 1},
                        "Incident text; at most 8 KiB (UTF-8 bytes).",
                        required=True,
                    ),
                    _query(
                        "labels",
                        {"type": "array", "items": {"type": "string"}},
                        "key:value, repeatable.",
                        style="form",
                        explode=True,
                    ),
                    _query(
                        "min_confidence",
                        {"type": "number", "minimum": 0, "maximum": 1},
                        "Default 0.7.",
                    ),
                    _query(
                        "max_results",
                        {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS_LIMIT},
                        "Default 10.",
                    ),
                    _query(
                        "action",
                        {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,62}$"},
                        "The request's action (e.g. rollback): counted as an implicit label.",
                    ),
                    _query(
                        COMPONENTS_PARAM,
                        {"type": "string", "enum": ["true", "false"]},
                        "Add each playbook's confidence parts.",
                    ),
                ],
                "responses": {
                    "200": _json("ContextApiResponse", "Playbooks best first."),
                    "400": _problem("A parameter is missing or invalid (named)."),
                    "413": _problem("The description is over 8 KiB."),
                    **errors,
                },
            }
        },
        "/healthz": {
            "get": {
                "operationId": "health",
                "summary": "Liveness.",
                "responses": {"200": _json("Health", "Serving."), **errors},
            }
        },
        "/metrics": {
            "get": {
                "operationId": "metrics",
                "summary": "Prometheus text exposition.",
                "responses": {
                    "200": {
                        "description": "Metrics.",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **errors,
                },
            }
        },
        OPENAPI_PATH: {
            "get": {
                "operationId": "openapi",
                "summary": "This document.",
                "responses": {
                    "200": {
                        "description": "OpenAPI 3.1.",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    **errors,
                },
            }
        },
    }
    if search:
        paths[SEARCH_PATH] = {
            "post": {
                "operationId": "searchIncidents",
                "summary": "Past incidents like a text or a request, ranked as the operator "
                "ranks them (seed 002).",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("SearchRequest")}},
                },
                "responses": {
                    "200": _json("SearchResponse", "Ranked incidents."),
                    "400": _problem("Bad JSON, an empty query or an invalid field (named)."),
                    "413": _problem("The body is over 64 KiB."),
                    **errors,
                },
            }
        }
        paths[STATS_PATH] = {
            "get": {
                "operationId": "incidentIndexStats",
                "summary": "What the incident index holds.",
                "responses": {"200": _json("IndexStatsResponse", "Index stats."), **errors},
            }
        }
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Precedent API",
            "version": __version__,
            "description": "The Context API (playbooks) and the incident search API.",
        },
        "paths": paths,
        "components": {"schemas": _schemas()},
    }
