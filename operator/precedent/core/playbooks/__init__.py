"""Playbook confidence and selection (seed 004, BR-AI-057), one module per concern.

::

    confidence = 0.4 × semantic + 0.4 × label match + 0.2 × historical success

* :mod:`~precedent.core.playbooks.confidence` — the formula, its weights, smoothed history;
* :mod:`~precedent.core.playbooks.labels` — label normalisation and the label-match part;
* :mod:`~precedent.core.playbooks.query` — the catalog query, its answer, the catalog port;
* :mod:`~precedent.core.playbooks.model` — the selection models (``seed``, ``default``…);
* :mod:`~precedent.core.playbooks.index` — the in-memory catalog that scores every playbook;
* :mod:`~precedent.core.playbooks.decision` — which playbooks are listed, the pick, the
  ``manual_investigation`` recommendation.

Core values are typed (``ConfidenceParts.label_match``); the wire names (``labelMatch``) are
given where the wire models are built.
"""

from precedent.core.playbooks.confidence import (
    WEIGHT_SUM_TOLERANCE,
    ConfidenceParts,
    ConfidenceWeights,
    SuccessPrior,
    check_confidence_weights,
    combine,
    evidence,
    historical_success,
)
from precedent.core.playbooks.decision import (
    MAX_ALTERNATIVES,
    MAX_RATIONALE,
    MAX_SUGGESTION,
    NEAR_MISS,
    SelectionMethod,
    decide,
    qualifying,
    unavailable,
)
from precedent.core.playbooks.index import CatalogIndex
from precedent.core.playbooks.labels import (
    ACTION,
    DEFAULT_LABEL_RULE,
    INCIDENT_TYPE,
    LABEL_MATCH,
    LABEL_MISMATCH,
    LABEL_UNPINNED,
    NO_LABELS,
    SEED_LABEL_RULE,
    WILDCARD,
    LabelRule,
    LabelScores,
    LabelTable,
    action_label,
    action_labels,
    normalize_label_key,
    normalize_label_value,
    parse_label,
    playbook_labels,
)
from precedent.core.playbooks.model import (
    DEFAULT_SELECTION_MODEL,
    SEED_SELECTION_MODEL,
    SELECTION_MODELS,
    SelectionModel,
    SelectionModelName,
    playbook_text,
)
from precedent.core.playbooks.query import (
    DEFAULT_MAX_RESULTS,
    DEFAULT_MIN_CONFIDENCE,
    MAX_DESCRIPTION_BYTES,
    MAX_RESULTS_LIMIT,
    CatalogAnswer,
    PlaybookCatalog,
    PlaybookQuery,
    ScoredPlaybook,
)

__all__ = [
    "ACTION",
    "DEFAULT_LABEL_RULE",
    "DEFAULT_MAX_RESULTS",
    "DEFAULT_MIN_CONFIDENCE",
    "DEFAULT_SELECTION_MODEL",
    "INCIDENT_TYPE",
    "LABEL_MATCH",
    "LABEL_MISMATCH",
    "LABEL_UNPINNED",
    "MAX_ALTERNATIVES",
    "MAX_DESCRIPTION_BYTES",
    "MAX_RATIONALE",
    "MAX_RESULTS_LIMIT",
    "MAX_SUGGESTION",
    "NEAR_MISS",
    "NO_LABELS",
    "SEED_LABEL_RULE",
    "SEED_SELECTION_MODEL",
    "SELECTION_MODELS",
    "WEIGHT_SUM_TOLERANCE",
    "WILDCARD",
    "CatalogAnswer",
    "CatalogIndex",
    "ConfidenceParts",
    "ConfidenceWeights",
    "LabelRule",
    "LabelScores",
    "LabelTable",
    "PlaybookCatalog",
    "PlaybookQuery",
    "ScoredPlaybook",
    "SelectionMethod",
    "SelectionModel",
    "SelectionModelName",
    "SuccessPrior",
    "action_label",
    "action_labels",
    "check_confidence_weights",
    "combine",
    "decide",
    "evidence",
    "historical_success",
    "normalize_label_key",
    "normalize_label_value",
    "parse_label",
    "playbook_labels",
    "playbook_text",
    "qualifying",
    "unavailable",
]
