"""The fault suite starts each test from a collected heap.

A socket an earlier suite left for the garbage collector (seen once in a full run: a client
socket to a server of an earlier test, collected while the unwritable-cache test ran) is
reported as a ResourceWarning by whichever test happens to be running when the collector gets
to it, and ``filterwarnings = error`` makes that test fail for something it did not do. So the
heap is collected before each fault test, and what that collection finds is reported as a
warning of this fixture rather than charged to the test that follows.
"""

from __future__ import annotations

import gc
import warnings

import pytest


@pytest.fixture(autouse=True)
def collected_heap() -> None:
    """Collect garbage left by earlier tests before a fault test starts."""
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    for warning in found:
        # Shown with the test's captured output if it fails, not charged to it.
        print(f"left by an earlier test: {warning.message}")
