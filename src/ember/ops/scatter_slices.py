"""Out-of-place writes into a view: ``select_scatter`` and ``slice_scatter`` (``input`` with
``input.select(dim, index)`` or ``input[..., start:end:step]`` replaced by ``src``).

Both are the ``index_put`` primitive with a basic index, so their gradients (``src``'s: the
gradient in the region; ``input``'s: the gradient with the region zeroed) come from its rules.
"""

from __future__ import annotations

from ember.errors import IndexOutOfRange, OpError, ShapeError, refuse_non_tensor, type_name
from ember.ops.dims import normalize_dim
from ember.ops.indexing import FULL, IndexPut, _basic_shape
from ember.ops.int_args import as_int
from ember.ops.primitive import apply
from ember.tensor import Tensor, method

__all__ = ["select_scatter", "slice_scatter"]


def _dim(op: str, input: Tensor, dim: int) -> int:
    if input.ndim == 0:
        raise IndexOutOfRange(f"{op}: cannot be applied to a 0-dim tensor, which has no "
                              f"dimension {dim}. Hint: make it 1-D first, input.reshape(1)")
    return normalize_dim(dim, input.ndim, op)


def _scatter(op: str, input: Tensor, src: Tensor, index: tuple) -> Tensor:
    if not isinstance(input, Tensor):  # (a PyTorch tensor reached src.to(its dtype))
        refuse_non_tensor(op, "input", input)
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}: src must be a tensor, not {type_name(src)}")
    region = _basic_shape(tuple(input.shape), index, op)
    if tuple(src.shape) != region:
        raise ShapeError(f"{op}: expected src to have a size equal to the slice of self. src "
                         f"size = {list(src.shape)}, slice size = {list(region)}")
    return apply(IndexPut, input, src.to(input.dtype), basic=index, dims=(), mode="set")


@method()
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``input.select(dim, index)`` replaced by ``src`` (whose shape
    is that of the selection).

    Example:
        >>> ember.select_scatter(ember.zeros(2, 2), ember.ones(2), 0, 0)
        tensor([[1., 1.],
                [0., 0.]])
    """
    dim, index = _dim("select_scatter", input, dim), as_int(index, "select_scatter", "index")
    n = input.shape[dim]
    if not -n <= index < n:
        raise IndexOutOfRange(f"select_scatter: index {index} out of range for tensor of size "
                              f"{list(input.shape)} at dimension {dim}")
    return _scatter("select_scatter", input, src, (FULL,) * dim + (index % n,))


@method()
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of ``input`` with ``input[..., start:end:step]`` (along ``dim``) replaced by
    ``src`` (whose shape is that of the slice).

    Example:
        >>> ember.slice_scatter(ember.zeros(2, 4), ember.ones(2, 2), 1, 0, 4, 2)
        tensor([[1., 0., 1., 0.],
                [1., 0., 1., 0.]])
    """
    dim, step = _dim("slice_scatter", input, dim), as_int(step, "slice_scatter", "step")
    start, end = (None if v is None else as_int(v, "slice_scatter", what)
                  for v, what in ((start, "start"), (end, "end")))
    if step <= 0:
        raise OpError(f"slice_scatter: slice step must be positive, got {step}")
    start, end, step = slice(start, end, step).indices(input.shape[dim])
    end = max(start, end)
    return _scatter("slice_scatter", input, src, (FULL,) * dim + ((start, end, step),))
