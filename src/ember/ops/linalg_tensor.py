"""``linalg.tensorinv`` and ``linalg.tensorsolve``: the inverse and the solve of a tensor seen
as the square matrix of its leading by its trailing dimensions (``numpy.linalg``'s
definitions). Composites of ``inv`` and ``solve``, so they differentiate through those.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ember.errors import ArgumentError, ShapeError
from ember.ops.linalg_solve import check_float, inv, solve
from ember.ops.reduce import normalize_dim
from ember.tensor import Tensor

__all__: list[str] = []


def tensorinv(input: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` for :func:`tensordot` over ``ind`` dims: with ``A`` read as the
    matrix of its first ``ind`` dims by the rest (which must be square), the result has shape
    ``A.shape[ind:] + A.shape[:ind]``.

    Example:
        >>> A = ember.eye(4).reshape(4, 2, 2) * 2
        >>> ember.linalg.tensorinv(A, ind=1).shape
        ember.Size([2, 2, 4])
    """
    A = input  # (PyTorch's keyword name)
    if ind <= 0:
        raise ArgumentError(f"linalg.tensorinv: expected a strictly positive integer for 'ind', "
                            f"but got {ind}")
    check_float("linalg.tensorinv", A, complex_ok=True)
    m, n = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if m != n:
        raise ShapeError(f"linalg.tensorinv: expected A of shape {tuple(A.shape)} to satisfy "
                         f"the requirement prod(A.shape[ind:]) == prod(A.shape[:ind]), but got "
                         f"{n} != {m}")
    return inv(A.reshape(m, m)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


def tensorsolve(input: Tensor, other: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``: ``A`` read as the matrix of its first
    ``B.ndim`` dims (``B``'s elements) by the rest (``X``'s, so ``X.shape`` is
    ``A.shape[B.ndim:]``). ``dims``: dims of ``A`` to move to the end first.

    Example:
        >>> A = ember.eye(6).reshape(2, 3, 6)
        >>> ember.linalg.tensorsolve(A, ember.ones(2, 3)).shape
        ember.Size([6])
    """
    A, B = input, other  # (PyTorch's keyword names)
    op = "linalg.tensorsolve"
    check_float(op, A, B, complex_ok=True)
    if dims is not None:
        moved = [normalize_dim(d, A.ndim, op) for d in dims]
        keep = [d for d in range(A.ndim) if d not in moved]
        A = A.permute(*keep, *moved)
    x_shape = tuple(A.shape[B.ndim:])
    n = math.prod(x_shape)
    if n != B.numel() or math.prod(A.shape[:B.ndim]) != n:
        raise ShapeError(f"{op}: expected A of shape {tuple(A.shape)} to be square as the "
                         f"matrix of its first B.ndim = {B.ndim} dims by the rest, with B "
                         f"(shape {tuple(B.shape)}) as many elements, but got prod(A.shape"
                         f"[B.ndim:]) = {n}, prod(A.shape[:B.ndim]) = "
                         f"{math.prod(A.shape[:B.ndim])} and B.numel() = {B.numel()}")
    return solve(A.reshape(n, n), B.reshape(n)).reshape(x_shape)
