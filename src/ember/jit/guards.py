"""Values that Python read while tracing (``int(buffer)``, ``t.tolist()`` of a tensor the
function does not write): the graph holds them as constants, so a call made after such a tensor
changed traces again instead of running the old graph.

A change is seen by the tensor's version counter, which every in-place write through Ember
moves (``copy_``, ``load_state_dict``, an optimizer step). Memory also held by a NumPy array
(``from_numpy``, ``.numpy()``) can change without moving it, so it is compared by value (a
small tensor's values are kept for that, should NumPy come to share it after the trace).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.tensor import Tensor

_SMALL = 1 << 12  # elements: a copy kept, for when NumPy comes to share the memory later


class ValueGuard:
    """A tensor whose value a trace read, as it was then.

    Example:
        >>> guard = ValueGuard(model.steps, "model.steps", source)
        >>> guard.holds()   # False once model.steps was written
    """

    __slots__ = ("tensor", "label", "where", "array", "count", "values")

    def __init__(self, tensor: Tensor, label: str, where: Any) -> None:
        self.tensor, self.label, self.where = tensor, label, where
        self.array = tensor._data
        vc = tensor._vc.source  # (a ``.data`` alias's writes and its tensor's both move it)
        self.count = vc.value + vc.aliased  # (its writes and .data's)
        small = tensor._data.size <= _SMALL
        self.values = host_copy(tensor) if vc.shared or small else None

    def holds(self) -> bool:
        """Whether the tensor still holds the array and the values it had."""
        t = self.tensor
        if t._data is not self.array:
            return False
        vc = t._vc.source
        if not vc.shared:
            return vc.value + vc.aliased == self.count
        return self.values is not None and np.array_equal(host_copy(t), self.values)

    def reason(self) -> str:
        """Why the call traces again, in words."""
        at = f" at {self.where}" if self.where is not None else ""
        return f"{self.label} changed (its value was read by Python{at} while tracing)"


def host_copy(t: Tensor) -> np.ndarray:
    """A copy of the tensor's values in host memory.

    Example:
        >>> host_copy(ember.ones(2))
        array([1., 1.], dtype=float32)
    """
    data = t._data
    return data.copy() if isinstance(data, np.ndarray) else t._device.xp.asnumpy(data)
