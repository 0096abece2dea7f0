"""A per-incident column of a history snapshot, carried over from the snapshot before.

A history changes by replacing incidents, never by changing one, so the snapshot built after a
change can copy what the one before worked out for every incident object both hold
(``source``: for each incident, that object's row in the snapshot before, -1 if it was not
there) and work out only the new incidents' (``precedent.core.snapshot.History``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from precedent.models import Incident

__all__ = ["carried_column"]


def carried_column(
    incidents: Sequence[Incident],
    value: Callable[[Incident], Any],
    dtype: Any,
    held: npt.NDArray[Any] | None,
    source: npt.NDArray[np.int64] | None,
) -> npt.NDArray[Any]:
    """``value`` of each incident as one array; with ``held`` (the snapshot before's column)
    and ``source``, the rows of the incidents it holds are copied and only the others worked
    out, in order of position."""
    if held is None or source is None:
        return np.array([value(i) for i in incidents], dtype=dtype)
    out = np.empty(len(incidents), dtype=dtype)
    reused = source >= 0
    out[reused] = held[source[reused]]
    for pos in np.flatnonzero(~reused).tolist():
        out[pos] = value(incidents[pos])
    return out
