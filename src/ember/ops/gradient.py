"""``gradient``: the derivative of sampled values along each dimension by finite
differences, PyTorch's (and NumPy's) way.

Inside, central differences that are second-order accurate also for unevenly spaced samples:
with steps ``l`` and ``r`` to the neighbours,
``f' ≈ (-r/(l(l+r))) f₋ + ((r-l)/(lr)) f + (l/(r(l+r))) f₊``. At the two ends, one-sided
differences of first order (``edge_order=1``) or second order (``edge_order=2``). Spacing is
one number (or 0-d tensor) for every dimension, one per dimension, or one 1-D tensor of sample
coordinates per dimension. A composite, differentiable in the values and the coordinates.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from ember import dtypes
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, type_name
from ember.ops.dims import normalize_dim
from ember.ops.join import cat
from ember.tensor import Tensor

__all__ = ["gradient"]

Step = float | Tensor  # a uniform step, or the steps between coordinates, shaped to broadcast


def _along(x: Tensor, dim: int, start: int, stop: int | None) -> Tensor:
    return x[(slice(None),) * dim + (slice(start, stop),)]


def _steps(spacing: Any, dims: tuple[int, ...], input: Tensor) -> list[Step]:
    """For each dim of ``dims``: its uniform step, or its coordinate differences as a tensor
    shaped to broadcast along that dim."""
    if spacing is None:  # (as PyTorch's: unit steps)
        spacing = 1
    one = not isinstance(spacing, (list, tuple))
    if one and isinstance(spacing, Tensor):
        if spacing.ndim != 0:
            raise TypeError(f"gradient: spacing must be a number, a list of numbers or a list "
                            f"of 1-D coordinate tensors, got one tensor of shape "
                            f"{tuple(spacing.shape)}. Hint: pass [coordinates]")
        spacing = spacing.item()  # a 0-d tensor is a number, as in PyTorch
    if not one and len(spacing) != len(dims):
        raise ShapeError(f"gradient: expected spacing to be unspecified, a scalar, or a list of "
                         f"length {len(dims)} (one per dim of {list(dims)}), but got a list of "
                         f"length {len(spacing)}")
    out: list[Step] = []
    for i, d in enumerate(dims):
        s = spacing if one else spacing[i]
        if not isinstance(s, Tensor):
            if not isinstance(s, numbers.Real):
                raise ArgumentTypeError(f"gradient: spacing must be a number, a list of numbers "
                                        f"or a list of 1-D coordinate tensors, got "
                                        f"{type_name(s)}")
            out.append(float(s))
            continue
        if s.ndim != 1:
            raise ShapeError(f"gradient: expected each element of spacing to have one "
                             f"dimension (the coordinates along its dim), but got one of shape "
                             f"{tuple(s.shape)}")
        if s.shape[0] != input.shape[d]:
            raise ShapeError(f"gradient: the coordinates along dim {d} have {s.shape[0]} "
                             f"entries, but the input has {input.shape[d]} there")
        diffs = s[1:] - s[:-1]  # (float coordinates promote the samples, as in PyTorch)
        if not (diffs.dtype.is_floating_point or diffs.dtype.is_complex):
            diffs = diffs.to(dtypes.get_default_dtype())
        out.append(diffs.reshape((-1,) + (1,) * (input.ndim - 1 - d)))
    return out


def _part(h: Step, start: int, stop: int | None) -> Step:
    """Steps ``start:stop`` (their first axis is the dim they run along)."""
    return h if isinstance(h, float) else h[start:stop]


def _derivative(f: Tensor, dim: int, h: Step, edge_order: int) -> Tensor:
    def at(start: int, stop: int | None) -> Tensor:
        return _along(f, dim, start, stop)

    left, right = _part(h, 0, -1), _part(h, 1, None)  # steps before/after each inner
    inner = (at(0, -2) * (-right / (left * (left + right)))
             + at(1, -1) * ((right - left) / (left * right))
             + at(2, None) * (left / (right * (left + right))))
    if edge_order == 1:
        first = (at(1, 2) - at(0, 1)) / _part(h, 0, 1)
        last = (at(-1, None) - at(-2, -1)) / _part(h, -1, None)
    else:
        a, b = _part(h, 0, 1), _part(h, 1, 2)  # the first two steps
        first = (at(0, 1) * (-(2 * a + b) / (a * (a + b))) + at(1, 2) * ((a + b) / (a * b))
                 + at(2, 3) * (-a / (b * (a + b))))
        a, b = _part(h, -2, -1), _part(h, -1, None)  # the last two steps
        last = (at(-3, -2) * (b / (a * (a + b))) + at(-2, -1) * (-(a + b) / (a * b))
                + at(-1, None) * ((2 * b + a) / (b * (a + b))))
    return cat([first, inner, last], dim)


def gradient(input: Tensor, *,
             spacing: float | Sequence[float] | Sequence[Tensor] | None = 1,
             dim: int | Sequence[int] | None = None, edge_order: int = 1
             ) -> tuple[Tensor, ...]:
    """The derivative of ``input``'s samples along each dim of ``dim`` (every dim when None),
    one tensor per dim. ``spacing``: the step between samples (one number, or one per dim), or
    one 1-D tensor of sample coordinates per dim. ``edge_order`` (1 or 2): the accuracy at the
    ends. Integer inputs give floating results.

    Example:
        >>> ember.gradient(ember.tensor([1.0, 4.0, 9.0, 16.0]))
        (tensor([3., 4., 6., 7.]),)
        >>> ember.gradient(ember.tensor([1.0, 4.0, 9.0, 16.0]), spacing=2.0, edge_order=2)
        (tensor([1., 2., 3., 4.]),)
    """
    if edge_order not in (1, 2):
        raise ArgumentError(f"gradient: only edge_order=1 and edge_order=2 are supported, got "
                            f"{edge_order}")
    if input.ndim == 0:
        return ()
    named = range(input.ndim) if dim is None else (dim,) if isinstance(dim, int) else dim
    dims = tuple(normalize_dim(d, input.ndim, "gradient") for d in named)
    if len(set(dims)) != len(dims):
        raise ShapeError(f"gradient: dim {list(dims)} names a dimension more than once")
    if input.dtype is dtypes.bool_:
        raise DTypeError("gradient: differences of a bool tensor are not defined (as in "
                         "PyTorch). Hint: convert it first, e.g. .float()")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(dtypes.get_default_dtype())
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise ShapeError(f"gradient: expected each dimension size to be at least "
                             f"edge_order+1 = {edge_order + 1}, but dim {d} of shape "
                             f"{tuple(input.shape)} has {input.shape[d]}")
    steps = _steps(spacing, dims, input)
    return tuple(_derivative(input, d, h, edge_order) for d, h in zip(dims, steps))
