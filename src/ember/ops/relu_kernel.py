"""relu and its gradient (and sign, frac, rsqrt: :func:`_one_pass`) on NumPy arrays: numba's
one-pass loops (:mod:`ember.ops.relu_numba`) over the arrays' memory as flat blocks, where
they apply (float32 or float64 arrays of over 16 384 elements, of one shape and one dense
layout, channels-last included, which the result keeps); NumPy's calls otherwise (``where``
on a random mask is branchy and ~4× slower than ``v · mask``, which is exact when ``v`` is
finite).

Measured on 2 cores, float32: 2¹⁸ elements 98 → 24 µs, 2²⁰ 389 → 88 µs. The blocks go to
both cores from 2²² elements (below, waking a thread costs more than it saves)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.relu_numba")

_SMALL = 1 << 14  # elements: NumPy's call is as fast, without numba's dispatch (~7 µs)
_SHARE = 1 << 21  # elements a piece takes at least


def flat_blocks(*arrays: Any) -> list[Any] | None:
    """1-D views of the memory of arrays of one shape, dtype and dense layout, element i of
    each the same position; None if they have none."""
    first = arrays[0]
    if any(a.shape != first.shape for a in arrays[1:]):
        return None
    if all(a.flags.c_contiguous for a in arrays):
        return [a.reshape(-1) for a in arrays]
    if any(a.strides != first.strides for a in arrays[1:]):
        return None
    flat = [a.ravel(order="K") for a in arrays]  # a view where the layout is dense, else a copy
    return flat if all(np.may_share_memory(f, a) for f, a in zip(flat, arrays, strict=True)) \
        else None


def slope_grad(xp: Any, module: str, name: str, arrays: tuple, numbers: tuple,
               small: int = _SMALL) -> Any:
    """The backward of a piecewise-linear activation (elu's, leaky_relu's, hardtanh's), from
    ``arrays``: the upstream gradient ``v``, the activation's input or output and any more the
    kernel reads, one numba pass of kernel ``name`` of ``module`` (a registered kernel module)
    with the float ``numbers`` (a broadcast ``v`` is copied first); None where NumPy's calls
    run it (``small`` elements or fewer, another dtype or layout, numba off)."""
    v = arrays[0]
    if xp is not np or v.size <= small or v.dtype not in (np.float32, np.float64) or \
            any(a.dtype != v.dtype for a in arrays[1:]) or not compiled.numba_enabled():
        return None
    if 0 in v.strides and v.shape == arrays[1].shape:  # (a broadcast, as sum's backward
        out = np.empty_like(arrays[1])  # gives: one copy in the layout of the array it meets,
        np.copyto(out, v)  # which the pass then overwrites element by element; NumPy's calls
        arrays = (out, *arrays[1:])  # made five passes)
    else:
        out = np.empty_like(v)
    flat = flat_blocks(*arrays, out)
    kernels = compiled.load(module)  # (None where they fail to load: numba is off then)
    if flat is None or kernels is None:
        return None
    parallel.over_rows(getattr(kernels, name), flat, _SHARE,
                       *(v.dtype.type(n) for n in numbers))
    return out


def _kernels(xp: Any, a: Any) -> Any:
    if xp is not np or a.size <= _SMALL or a.dtype not in (np.float32, np.float64) or \
            not compiled.numba_enabled():
        return None
    return compiled.load(_KERNELS)


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` start at one address (the cheap test first)."""
    return np.may_share_memory(a, b) and a.ctypes.data == b.ctypes.data


def _run(kernels: Any, name: str, *flat: Any) -> bool:
    """Runs kernel ``name`` on flat inputs and output (the last), or its variant for an output
    that is one of the inputs; False where the output overlaps an input otherwise."""
    *inputs, out = flat
    same = [_same(f, out) for f in inputs]
    if not any(same):
        if any(np.may_share_memory(f, out) for f in inputs):
            return False
        parallel.over_rows(getattr(kernels, name), flat, _SHARE)
    elif len(inputs) == 1:
        parallel.over_rows(kernels.relu_in_place, (out,), _SHARE)
    else:
        parallel.over_rows(kernels.relu_grad_into_v if same[0] else kernels.relu_grad_into_y,
                           inputs, _SHARE)
    return True


def _one_pass(xp: Any, name: str, a: Any) -> Any:
    """Unary kernel ``name``'s one pass over ``a`` into a new array of its layout; None where
    it does not apply (see :func:`_kernels`, a layout that is not dense)."""
    kernels = _kernels(xp, a)
    if kernels is None:
        return None
    out = np.empty_like(a)
    flat = flat_blocks(a, out)
    return out if flat is not None and _run(kernels, name, *flat) else None


def relu_array(xp: Any, a: Any, out: Any = None) -> Any:
    """``max(0, a)`` (NaN and -0.0 kept, as PyTorch's relu), into ``out`` if given (it may be
    ``a``), else a new array in ``a``'s layout.

    Example:
        >>> relu_array(np, np.array([-1.0, 2.0]))
        array([0., 2.])
    """
    kernels = _kernels(xp, a)
    if kernels is not None:
        target = np.empty_like(a) if out is None else out
        flat = flat_blocks(a, target) if target.dtype == a.dtype else None
        if flat is not None and _run(kernels, "relu", *flat):
            return target
    # (on a tie NumPy's float16 loop gives its first operand, the others their second: the
    # order that keeps -0.0)
    return xp.maximum(a, 0, out=out) if a.dtype == xp.float16 else xp.maximum(0, a, out=out)


def relu_grad_array(xp: Any, v: Any, y: Any, out: Any = None) -> Any:
    """``v``, or 0 where ``y`` ≤ 0 (a NaN of ``y`` passes ``v``, as PyTorch's gradient), into
    ``out`` if given (it may be ``v``), else a new array in ``v``'s layout.

    Example:
        >>> relu_grad_array(np, np.array([5.0, 6.0]), np.array([0.0, 2.0]))
        array([0., 6.])
    """
    kernels = _kernels(xp, v)
    if kernels is not None and y.dtype == v.dtype:
        target = np.empty_like(v) if out is None else out
        flat = flat_blocks(v, y, target) if target.dtype == v.dtype else None
        if flat is not None and _run(kernels, "relu_grad", *flat):
            return target
    keep = xp.logical_not(y <= 0)
    if v.dtype.kind == "f" and v.shape == y.shape and bool(xp.isfinite(v).all()):
        return xp.multiply(v, keep, out=out, dtype=v.dtype)  # exact: v is finite
    if out is None:
        return xp.where(keep, v, xp.zeros((), v.dtype))
    xp.copyto(out, xp.where(keep, v, xp.zeros((), v.dtype)))
    return out


def sign_array(xp: Any, a: Any) -> Any:
    """The sign of a float32/float64 array as ``(a > 0) - (a < 0)``: 1, -1, or +0.0 at ±0 and
    NaN (PyTorch's sign(nan) is 0), in ``a``'s layout where it is dense; numba's one pass where
    it applies (the same values: 10^6 float32 593 -> 114 µs, load 7), else those NumPy calls (0.65x
    the time of np.sign and its NaN check, on large float32 arrays).

    Example:
        >>> sign_array(np, np.array([-2.0, -0.0, np.nan, 3.0]))
        array([-1.,  0.,  0.,  1.])
    """
    out = _one_pass(xp, "sign", a)
    if out is not None:
        return out
    out = (a > 0).astype(a.dtype)
    out -= a < 0
    return out


def frac_array(xp: Any, a: Any) -> Any:
    """``a - trunc(a)`` of a float array (NaN at ±inf), in ``a``'s layout where it is dense:
    numba's one pass where it applies (the same values; 10^6 float32 173 -> 87 µs), else
    NumPy's two calls into one buffer.

    Example:
        >>> frac_array(np, np.array([1.25, -1.25, 3.0]))
        array([ 0.25, -0.25,  0.  ])
    """
    out = _one_pass(xp, "frac", a)
    if out is not None:
        return out
    whole = xp.trunc(a)
    if getattr(whole, "ndim", 0) == 0:  # (a NumPy scalar: no buffer to write into)
        return a - whole
    return xp.subtract(a, whole, out=whole)


def rsqrt_array(xp: Any, a: Any) -> Any:
    """``1 / sqrt(a)``: over ``_SMALL`` elements numba's one pass where it applies, else
    NumPy's ``sqrt`` and ``reciprocal`` into one buffer; NumPy's two calls below (the same
    values: each step is correctly rounded; 10^6 float32 680 -> 327 µs, load 7.4).

    Example:
        >>> rsqrt_array(np, np.array([4.0, 0.25]))
        array([0.5, 2. ])
    """
    if a.size <= _SMALL:
        return xp.reciprocal(xp.sqrt(a))
    out = _one_pass(xp, "rsqrt", a)
    if out is not None:
        return out
    root = xp.sqrt(a)
    return xp.reciprocal(root, out=root)
