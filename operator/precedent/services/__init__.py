"""The use cases: assess a request, select a playbook, keep the history current.

Handlers and the CLI call these; these call the core (pure) and the adapters (I/O).
"""

from precedent.services.assessment import (
    AssessmentSettings,
    Assessor,
    IncidentScorer,
    NormalizedRequest,
    parse_request_spec,
)
from precedent.services.history import HistoryStore
from precedent.services.outcomes import OutcomeLedger, OutcomeService
from precedent.services.selection import PlaybookChoice, PlaybookSelector
from precedent.services.status import EventNote, StatusUpdate

__all__ = [
    "AssessmentSettings",
    "Assessor",
    "EventNote",
    "HistoryStore",
    "IncidentScorer",
    "NormalizedRequest",
    "OutcomeLedger",
    "OutcomeService",
    "PlaybookChoice",
    "PlaybookSelector",
    "StatusUpdate",
    "parse_request_spec",
]
