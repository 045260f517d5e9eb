"""``linalg.multi_dot``: a chain of matrix products in the order that costs the fewest
multiplications (the classic matrix-chain order, as PyTorch's), each a :func:`matmul`, so its
gradient is theirs."""

from __future__ import annotations

from collections.abc import Sequence

from ember.errors import DTypeError, ShapeError, not_a_tensor_error
from ember.ops.linalg import matmul
from ember.tensor import Tensor

__all__ = ["multi_dot"]


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """``tensors[0] @ tensors[1] @ …`` in the order of products that costs the fewest
    multiplications (as PyTorch's); the first and last may be vectors, the others are matrices.

    Example:
        >>> ember.linalg.multi_dot([ember.ones(3), ember.ones(3, 4), ember.ones(4)])
        tensor(12.)
    """
    tensors = list(tensors)
    mats = _chain_matrices(tensors)
    sizes = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    out = _chain_product(mats, _chain_splits(sizes), 0, len(mats) - 1)
    if tensors[-1].ndim == 1:
        out = out.squeeze(-1)
    return out.squeeze(0) if tensors[0].ndim == 1 else out


def _chain_matrices(tensors: list[Tensor]) -> list[Tensor]:
    """multi_dot's operands checked (count, ranks, dtype, inner sizes) and made matrices: a
    first vector a row, a last one a column."""
    n = len(tensors)
    if n < 2:
        raise ShapeError(f"linalg.multi_dot: expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise not_a_tensor_error("linalg.multi_dot", f"tensors[{i}]", t)
        ends = i in (0, n - 1)
        if t.ndim not in ((1, 2) if ends else (2,)):
            allowed = "1-D or 2-D" if ends else "2-D"
            raise ShapeError(f"linalg.multi_dot: tensor {i} must be {allowed} but has shape "
                             f"{tuple(t.shape)}. Hint: only the first and last may be vectors; "
                             "use matmul for batched products")
        if t.dtype != tensors[0].dtype:
            raise DTypeError(f"linalg.multi_dot: all tensors must have the same dtype, but "
                             f"tensor 0 is {tensors[0].dtype.name} and tensor {i} "
                             f"{t.dtype.name}")
    mats = list(tensors)
    if mats[0].ndim == 1:
        mats[0] = mats[0].unsqueeze(0)
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise ShapeError(f"linalg.multi_dot: tensors {i} and {i + 1} with shapes "
                             f"{tuple(tensors[i].shape)} and {tuple(tensors[i + 1].shape)} "
                             "cannot be multiplied")
    return mats


def _chain_splits(sizes: list[int]) -> list[list[int]]:
    """The classic matrix-chain order for matrices ``i`` of shape ``(sizes[i], sizes[i+1])``:
    ``split[i][j]`` is the ``k`` at which the cheapest product of matrices ``i..j`` splits
    into ``(i..k) @ (k+1..j)``."""
    n = len(sizes) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1], k)
                for k in range(i, j))
    if n == 3:  # (PyTorch's own rule for three: (A B) C unless A (B C) costs less; a tie too)
        a, b, c, d = sizes
        split[0][2] = 0 if a * c * (b + d) > b * d * (a + c) else 1
    return split


def _chain_product(mats: list[Tensor], split: list[list[int]], i: int, j: int) -> Tensor:
    """The product of ``mats[i..j]`` in the order ``split`` gives."""
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_chain_product(mats, split, i, k), _chain_product(mats, split, k + 1, j))
