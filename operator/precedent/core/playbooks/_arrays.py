"""Array types and the grow-by-copy helper shared by the catalog index and its label table."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["BoolArray", "F64Array", "resized"]

BoolArray = npt.NDArray[np.bool_]
F64Array = npt.NDArray[np.float64]

_G = TypeVar("_G", bound=np.generic)


def resized(array: npt.NDArray[_G], capacity: int) -> npt.NDArray[_G]:
    """A zero-padded copy of ``array`` with ``capacity`` rows."""
    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out
