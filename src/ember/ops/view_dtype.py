"""``Tensor.view(dtype)``: the same memory read as another dtype, as PyTorch's. Elements of
another size rescale the last dimension (an int16 tensor of shape (2, 4) seen as int32 is
(2, 2)); the result shares memory and version counter with the input and, as in PyTorch, is
not differentiable (not even to the same dtype)."""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.errors import ShapeError
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.storage import storage_offset
from ember.tensor import Tensor


@primitive
class ViewDtype(Primitive):
    """The input's memory reinterpreted as ``dtype`` (its last dim rescaled by the ratio of
    element sizes)."""

    name = "view_dtype"
    view = True
    differentiable = False
    save_inputs = False

    def forward(self, xp, a, *, dtype):
        return a.view(dtype.np)

    def infer(self, a, *, dtype):
        size, new = a.dtype.itemsize, dtype.itemsize
        shape = tuple(a.shape)
        if size != new:
            shape = shape[:-1] + (shape[-1] * size // new,)
        return TensorSpec(shape, dtype)


def view_dtype(x: Tensor, dtype: Any) -> Tensor:
    """``x``'s memory read as ``dtype``; PyTorch's rules and errors for other element sizes.

    Example:
        >>> ember.tensor([1.0]).view(ember.int32)
        tensor([1065353216], dtype=ember.int32)
    """
    dtype = dtypes.to_dtype(dtype)
    size, new = x.dtype.itemsize, dtype.itemsize
    if size != new:
        what = f"to view {x.dtype.name} as {dtype.name} (different element sizes)"
        ratio = max(size, new) // min(size, new)
        if x.ndim == 0:
            raise ShapeError(f"view: self.dim() cannot be 0 {what}. Hint: reshape it to (1,) "
                             f"first")
        empty = x.numel() == 0  # (no memory to misread: its strides say nothing)
        if x.stride(-1) != 1 and not empty:
            raise ShapeError(f"view: self.stride(-1) must be 1 {what}, but got "
                             f"{x.stride(-1)}. Hint: call .contiguous() first")
        if new > size:
            for name, value in (("size(-1)", x.shape[-1]),
                                ("storage_offset()", storage_offset(x))):
                if value % ratio:
                    raise ShapeError(f"view: self.{name} must be divisible by {ratio} {what}, "
                                     f"but got {value}")
            for d, s in enumerate(x.stride()[:-1]):
                if s % ratio and not empty:
                    raise ShapeError(f"view: self.stride({d}) must be divisible by {ratio} "
                                     f"{what}, but got {s}")
    return apply(ViewDtype, x, dtype=dtype)
