"""A NumPy function of a tensor gives a tensor, as PyTorch's: ``np.sin(t)``, ``np.isnan(t)``,
``np.cumsum(t)`` and NumPy's reductions to one value (``np.argmax(t)``, a 0-d tensor) compute in
NumPy on the tensor's values and wrap the result (``Tensor.__array_wrap__``, sharing its
memory). One difference: a bool result stays bool where PyTorch's turns uint8 (its old
workaround; a uint8 mask indexes as integers). A result of a dtype Ember has not (strings,
dates) stays a NumPy array.

Example:
    >>> np.sqrt(ember.tensor([4.0, 9.0]))
    tensor([2., 3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.ops.creation import from_numpy
from ember.tensor import Tensor, method

__all__: list[str] = []


@method("__array_wrap__")
def _array_wrap(self: Tensor, array: Any, context: Any = None,
                return_scalar: bool = False) -> Any:
    a = np.asarray(array)
    if not dtypes.has_numpy(a.dtype):
        return a[()] if return_scalar else a
    return from_numpy(a if a.flags.writeable else a.copy())
