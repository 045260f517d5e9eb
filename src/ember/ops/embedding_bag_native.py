"""``ember.embedding_bag``: PyTorch's top-level ``torch.embedding_bag`` with ATen's signature
(mode as an int: 0 sum, 1 mean, 2 max) and its four outputs. The first, the bags, comes from
:func:`ember.nn.functional.embedding_bag` (so values and gradients are the same); the other
three are what PyTorch's CPU kernel saves for its backward, with no gradient, int32 when
``indices`` and ``offsets`` both are, else int64:

- ``offset2bag``: each index's bag (empty for mode sum of float32/float16/bfloat16 weights
  without ``padding_idx``, as PyTorch's fast path leaves it);
- ``bag_size``: each bag's number of indices other than ``padding_idx`` (zeros for sum);
- ``max_indices``: mode max, the (B, D) row of ``weight`` each maximum came from (0 for an
  empty bag); mode mean, ``bag_size`` again; mode sum, zeros.
"""

from __future__ import annotations

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError
from ember.ops.creation import from_numpy
from ember.ops.embedding import _BAG_MODES
from ember.ops.embedding import embedding_bag as functional_embedding_bag
from ember.tensor import Tensor

__all__ = ["embedding_bag"]

_FAST_SUM_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16)


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None
                  ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(output, offset2bag, bag_size, max_indices)`` of bags of ``weight``'s rows picked by
    the 1-D ``indices``, bag b starting at ``offsets[b]``; ``output`` is
    ``F.embedding_bag(indices, weight, offsets, mode=("sum", "mean", "max")[mode], ...)``.

    Example:
        >>> w = ember.tensor([[1.0, 5.0], [3.0, 2.0], [0.0, 4.0]])
        >>> out, offset2bag, bag_size, max_indices = ember.embedding_bag(
        ...     w, ember.tensor([0, 1, 2]), ember.tensor([0, 2]), mode=2)
        >>> out, bag_size, max_indices
        (tensor([[3., 5.],
                [0., 4.]]), tensor([2, 1]), tensor([[1, 0],
                [2, 2]]))
    """
    if mode not in (0, 1, 2):
        raise ArgumentError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got "
                            f"{mode!r}")
    if not isinstance(offsets, Tensor) or indices.ndim != 1:
        raise TypeError(f"embedding_bag: takes 1-D indices and a tensor of offsets, got indices "
                        f"of shape {tuple(indices.shape)} and offsets {type(offsets).__name__}. "
                        "Hint: F.embedding_bag takes 2-D inputs without offsets")
    # (PyTorch's kernel ignores scale_grad_by_freq for max; only F.embedding_bag refuses it)
    output = functional_embedding_bag(indices, weight, offsets, None, 2.0,
                                      scale_grad_by_freq and mode != 2, _BAG_MODES[mode],
                                      sparse, per_sample_weights, include_last_offset,
                                      padding_idx)
    index = indices.numpy().astype(np.int64)
    starts = offsets.numpy().astype(np.int64)
    if include_last_offset:
        starts = starts[:-1]
    bags = len(starts)
    bag_of = np.searchsorted(starts, np.arange(len(index)), side="right") - 1
    kept = np.ones(len(index), bool) if padding_idx is None else \
        index != padding_idx % weight.shape[0]
    sizes = np.bincount(bag_of[kept], minlength=bags)[:bags]
    # (int32 when indices and offsets both are, as PyTorch's kernel; else int64)
    index_dtype = np.promote_types(indices.dtype.np, offsets.dtype.np)

    def outputs(*arrays: np.ndarray) -> tuple[Tensor, ...]:
        return output, *(from_numpy(a.astype(index_dtype)).to(weight.device) for a in arrays)

    if mode == 0:
        none = np.zeros(bags, np.int64)
        fast = padding_idx is None and weight.dtype in _FAST_SUM_DTYPES
        offset2bag = np.zeros(0, np.int64) if fast else bag_of
        return outputs(offset2bag, none, none)
    if mode == 1:
        return outputs(bag_of, sizes, sizes)
    rows = weight.detach().numpy()
    max_indices = np.zeros((bags, rows.shape[1]), np.int64)
    for b in range(bags):
        members = index[(bag_of == b) & kept]
        if len(members):  # (NaN as the kernel: a NaN first stays, a later one is passed)
            values = rows[members]
            gone = np.isnan(values)
            first = np.where(gone[0], 0, np.where(gone, -np.inf, values).argmax(0))
            max_indices[b] = members[first]
    return outputs(bag_of, sizes, max_indices)
