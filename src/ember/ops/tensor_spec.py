"""A tensor's shape and dtype without its data: what ``infer`` rules read and return."""

from __future__ import annotations

from typing import NamedTuple

from ember.dtypes import DType
from ember.errors import describe
from ember.tensor import Tensor


class TensorSpec(NamedTuple):
    """A tensor's shape and dtype, without data: what ``infer`` rules read and return."""

    shape: tuple[int, ...]
    dtype: DType

    def __str__(self) -> str:
        return describe(self.shape, self.dtype)


def spec(t: Tensor) -> TensorSpec:
    """The :class:`TensorSpec` of a tensor (or of anything with ``shape`` and ``dtype``)."""
    return TensorSpec(tuple(t.shape), t.dtype)
