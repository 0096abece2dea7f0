"""kopf's settings of both no-op operators: its state kept in the status as Precedent keeps it,
no annotations, Events below WARNING not posted. One place, so the two no-ops cannot drift."""

from __future__ import annotations

import logging

import kopf


def keep_state_in_status(settings: kopf.OperatorSettings) -> None:
    settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.kopf.progress")
    settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(
        field="status.kopf.last-handled-configuration"
    )
    settings.posting.level = logging.WARNING
