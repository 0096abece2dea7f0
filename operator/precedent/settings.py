"""Configuration: environment variables prefixed ``PRECEDENT_``, read into one settings object."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Every setting, with its default; ``PRECEDENT_<NAME>`` overrides it."""

    model_config = SettingsConfigDict(env_prefix="PRECEDENT_", extra="ignore")

    history_path: Path | None = Field(
        default=Path("data/incidents"),
        description="Incident YAML file or directory loaded at start-up; empty: none "
        "(the operator then uses only Incident objects from the cluster).",
    )
    similarity_mode: Literal["rules", "semantic", "hybrid"] = Field(
        default="rules", description="How similarity is computed: rules, semantic or hybrid."
    )
    similarity_threshold: float = Field(
        default=0.30, ge=0, le=1, description="Minimum similarity for an incident to count."
    )
    top_similar: int = Field(
        default=5, ge=1, le=50, description="Similar incidents listed in the status."
    )

    @field_validator("history_path", mode="before")
    @classmethod
    def _empty_means_none(cls, value: object) -> object:
        # PRECEDENT_HISTORY_PATH="" must mean "no file history", not the current directory.
        return None if value == "" else value

    policy_mode: Literal["enforce", "audit"] = Field(
        default="enforce",
        description="enforce: escalated requests wait for approval; audit: record only.",
    )
