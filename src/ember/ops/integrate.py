"""Numerical integration and a distance, as compositions: ``trapezoid``,
``cumulative_trapezoid``, ``dist``, and ``chain_matmul`` (PyTorch's deprecated spelling of
``linalg.multi_dot``); ``pdist`` lives with the other distances in :mod:`ember.ops.distance`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.dtypes import bool_, promote_types
from ember.errors import DTypeError, ShapeError
from ember.ops.convert import to_float
from ember.ops.multi_dot import multi_dot
from ember.ops.norms import vector_norm
from ember.ops.reduce import normalize_dim
from ember.ops.scan import cumsum
from ember.ops.shape import dim_of, narrow, reshape, select
from ember.tensor import Tensor, method

__all__ = ["trapezoid", "trapz", "cumulative_trapezoid", "dist", "chain_matmul"]


def _dim(op: str, y: Tensor, x: Any, dx: Any, dim: int) -> int:
    """``dim`` checked against ``y``, after checking that at most one of x and dx is given."""
    if x is not None and dx is not None:
        raise TypeError(f"{op}: give x or dx, not both")
    return dim_of(y, dim, op)


def _refuse_bool(op: str, y: Tensor, x: Any) -> None:
    """Neither sample tensor may be bool (PyTorch refuses them)."""
    if y.dtype == bool_ or (isinstance(x, Tensor) and x.dtype == bool_):
        which = "`x` or `y`" if isinstance(x, Tensor) else "`y`"
        raise DTypeError(f"{op}: received a bool input for {which}, but bool is not supported. "
                         "Hint: convert with .float() first")


def _check_points(op: str, x: Tensor, n: int) -> None:
    """A 1-d ``x`` must give one point per sample."""
    if x.ndim == 1 and x.shape[0] != n:
        raise ShapeError(f"{op}: There must be one `x` value for each sample point, got "
                         f"{x.shape[0]} for {n} samples")


def _areas(op: str, y: Tensor, x: Any, dx: Any, dim: int) -> Tensor:
    """The trapezoids' areas along ``dim`` (one fewer than the samples, at least one)."""
    d = dim_of(y, dim, op)
    n = y.shape[d]
    pairs = narrow(y, d, 1, n - 1) + narrow(y, d, 0, n - 1)
    if x is None or not isinstance(x, Tensor):
        return pairs / 2 * _step(x, dx)
    _check_points(op, x, n)
    if x.ndim == 1:
        view = [1] * y.ndim
        view[d] = n - 1
        diffs = reshape(x[1:] - x[:-1], tuple(view))
    else:
        if x.ndim < y.ndim:  # x lines up with y's last dims, as in broadcasting
            x = reshape(x, (1,) * (y.ndim - x.ndim) + tuple(x.shape))
        xd = normalize_dim(dim, x.ndim, op)
        k = x.shape[xd]
        diffs = narrow(x, xd, 1, k - 1) - narrow(x, xd, 0, k - 1)
    # (PyTorch's order: integer pairs times integer steps wrap as its kernels do, then halve)
    return pairs * diffs / 2


def _step(x: Any, dx: Any) -> Any:
    """The constant spacing: ``dx``, a number ``x``, else 1."""
    return 1 if x is None and dx is None else (dx if dx is not None else x)


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: samples ``y`` at points ``x`` (a tensor, 1-d or
    broadcasting with ``y``), or spaced ``dx`` apart (1 by default; a number ``x`` is ``dx``).

    Example:
        >>> ember.trapezoid(ember.tensor([1.0, 2.0, 3.0]))
        tensor(4.)
        >>> ember.trapezoid(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([0.0, 1.0, 3.0]))
        tensor(6.5000)
    """
    d = _dim("trapezoid", y, x, dx, dim)
    if y.shape[d] == 0:  # (before the bool check, as torch's: a bool y gives False)
        return y.new_zeros(tuple(s for i, s in enumerate(y.shape) if i != d))  # torch's dtype
    _refuse_bool("trapezoid", y, x)
    if not isinstance(x, Tensor):  # (PyTorch's formula for a constant step: its rounding)
        return (y.sum(d) - (select(y, d, 0) + select(y, d, -1)) * 0.5) * _step(x, dx)
    return _areas("trapezoid", y, x, dx, dim).sum(d)


trapz = trapezoid


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """Running :func:`trapezoid` along ``dim``: one value fewer than the samples.

    Example:
        >>> ember.cumulative_trapezoid(ember.tensor([1.0, 2.0, 3.0]))
        tensor([1.5000, 4.0000])
    """
    d = _dim("cumulative_trapezoid", y, x, dx, dim)
    _refuse_bool("cumulative_trapezoid", y, x)
    if y.shape[d] == 0:
        if not isinstance(x, Tensor):
            return to_float(y)
        _check_points("cumulative_trapezoid", x, 0)
        return to_float(y.to(promote_types(y.dtype, x.dtype)))
    return cumsum(_areas("cumulative_trapezoid", y, x, dx, dim), d)


@method()
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast), over all elements.

    Example:
        >>> ember.dist(ember.tensor([0.0, 0.0]), ember.tensor([3.0, 4.0]))
        tensor(5.)
    """
    return vector_norm(input - other, p)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of 2-d matrices, left to right (deprecated in PyTorch in favour of
    ``linalg.multi_dot``, which this calls).

    Example:
        >>> ember.chain_matmul(ember.ones(2, 3), ember.ones(3, 4)).shape
        ember.Size([2, 4])
    """
    if len(matrices) == 1 and isinstance(matrices[0], Sequence):
        matrices = tuple(matrices[0])
    for m in matrices:
        if m.ndim != 2:
            raise ShapeError(f"chain_matmul: expects 2-d matrices, got shape {tuple(m.shape)}")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(list(matrices))
