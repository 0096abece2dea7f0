"""Retrieval-quality report: ``python -m tests.eval`` (``make eval``)."""
