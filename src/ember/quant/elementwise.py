"""Quantized elementwise ops and concatenation on :class:`QuantizedTensor`s, as PyTorch's CPU
kernels (``quantized::add``, ``add_relu``, ``mul``, ``add_scalar``, ``mul_scalar``, ``cat``)
compute them; what ``QFunctional`` runs. Per-tensor ``quint8`` or ``qint8`` operands, all of
one dtype, which the result keeps.

- ``add``: each input dequantized (``(q - zero_point) * scale`` in float32), summed (ReLU),
  quantized to the output's parameters. ATen's vector body takes blocks of 64 elements of
  each row of its loop (:mod:`ember.quant.loops` says which elements): there the zero point
  is added after rounding, ``nearbyint(x * (1 / scale)) + zero_point``; the other elements go
  through the scalar kernel, which rounds ``x * (1 / scale) + zero_point`` (fbgemm's
  ``Quantize``). The two differ on exact ties, and beyond int32 (see
  :func:`kernels.quantize_rounded`: there the vector body may wrap to the other end).
- ``mul``: ``(a - za) * (b - zb)`` exactly, times ``multiplier = a_scale * b_scale *
  (1 / out_scale)`` in float32, rounded, plus the output zero point (beyond int32 the two
  kernels differ again: :func:`kernels.requantize_int`).
- ``add_scalar`` moves the zero point by ``nearbyint(c / scale)`` (or, when that leaves the
  integer range, widens the scale so that it pins to the range's end, and requantizes);
  ``mul_scalar`` scales the scale by ``|c|`` (a negative ``c`` mirrors the integers).
- ``cat`` concatenates the dequantized inputs and quantizes them to the output's parameters;
  ``matmul`` (``quantized::matmul``) multiplies them as float32 matrices (NumPy's BLAS where
  PyTorch has its own: the same bits while the float32 sums are exact) and quantizes.
- ``unary`` (hardswish, leaky ReLU, ELU) dequantizes, applies the function in float32 and
  quantizes, with ``add``'s split between the vector body and the scalar kernel (each
  kernel lays its output out its own way: :data:`ember.quant.loops.UNARY_LAYOUTS`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.ops.creation import from_numpy
from ember.quant import kernels
from ember.quant.loops import Loop
from ember.quant.qtensor import QuantizedTensor
from ember.quant.qtypes import QDType, qint8, quint8

__all__ = ["add", "mul", "add_scalar", "mul_scalar", "cat", "matmul", "unary"]

_F32 = np.float32
_EIGHT = (quint8, qint8)


def _check(op: str, *xs: QuantizedTensor) -> QDType:
    """The one 8-bit quantized dtype of the per-tensor operands ``xs``."""
    for x in xs:
        if not isinstance(x, QuantizedTensor) or x._axis is not None or x.dtype not in _EIGHT:
            shown = (f"a {x.qscheme()!r} quantized tensor of {x.dtype!r}"
                     if isinstance(x, QuantizedTensor) else f"a {type(x).__name__}")
            raise DTypeError(f"quantized {op}: expected per-tensor ember.quint8 or ember.qint8 "
                             f"quantized tensors, got {shown}. Hint: quantize the input with "
                             "a QuantStub (or ember.quantize_per_tensor)")
    kinds = sorted({repr(x.dtype) for x in xs})
    if len(kinds) > 1:
        raise DTypeError(f"quantized {op}: the operands should have one dtype, got "
                         f"{' and '.join(kinds)}. Hint: quantize them to the same dtype")
    return xs[0].dtype


def _range(qdtype: QDType) -> tuple[int, int, type]:
    """The bounds and NumPy storage ``kernels`` take for ``qdtype``."""
    return qdtype.min, qdtype.max, qdtype.storage.np


def _broadcast(op: str, a: QuantizedTensor, b: QuantizedTensor) -> list[np.ndarray]:
    """The integers of ``a`` and ``b`` broadcast to one shape."""
    x, y = a._int.numpy(), b._int.numpy()
    if x.shape == y.shape:
        return [x, y]
    try:
        return np.broadcast_arrays(x, y)
    except ValueError as e:
        raise ShapeError(f"quantized {op}: the shapes {tuple(a.shape)} and {tuple(b.shape)} "
                         "do not broadcast") from e


def _result(q: np.ndarray, qdtype: QDType, scale: float, zero_point: int) -> QuantizedTensor:
    return QuantizedTensor(from_numpy(np.asarray(q).astype(qdtype.storage.np, copy=False)),
                           qdtype, float(scale), int(zero_point))


def _dequantize_vector(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """ATen's vectorized dequantization: ``fma(scale, q, scale * -zero_point)`` (exact in
    float64, then rounded once; callers silence the overflow of huge scales)."""
    premul = np.float64(_F32(scale) * _F32(-zero_point))
    return (q.astype(np.float64) * np.float64(_F32(scale)) + premul).astype(_F32)


def add(a: QuantizedTensor, b: QuantizedTensor, scale: float, zero_point: int,
        relu: bool = False) -> QuantizedTensor:
    """``a + b`` (then ReLU with ``relu``) quantized to ``scale`` and ``zero_point``."""
    op = "add_relu" if relu else "add"
    qdtype = _check(op, a, b)
    qa, qb = _broadcast(op, a, b)
    loop = Loop.binary(a._int.numpy(), qa, qb, resized=True)
    (va, vb), (sa, sb) = loop.split(qa, qb)
    with np.errstate(over="ignore", invalid="ignore"):
        vector = (_dequantize_vector(va, a._scale, a._zero_point)
                  + _dequantize_vector(vb, b._scale, b._zero_point))
        scalar = (kernels.dequantize(sa, a._scale, a._zero_point)
                  + kernels.dequantize(sb, b._scale, b._zero_point))
    if relu:
        vector, scalar = np.maximum(vector, _F32(0)), np.maximum(scalar, _F32(0))
    out = _quantize_blocks(loop, vector, scalar, qdtype, scale, zero_point,
                           _F32(1) / _F32(scale))
    return _result(out, qdtype, scale, zero_point)


def _quantize_blocks(loop: Loop, vector: np.ndarray, scalar: np.ndarray, qdtype: QDType,
                     scale: float, zero_point: int, inv_scale: np.float32) -> np.ndarray:
    """The ``qdtype`` integers of ``vector`` (the elements ATen's vectorized loop takes:
    ``nearbyint(x * inv_scale)``, then the zero point added, :func:`kernels.quantize_rounded`)
    and of ``scalar`` (its scalar kernel's, :func:`kernels.quantize`, NaN to 0) joined by
    ``loop``."""
    bounds = _range(qdtype)
    none = np.empty(0, bounds[2])  # (an empty part skips its kernel's fixed cost)
    return loop.join(kernels.quantize_rounded(vector, inv_scale, zero_point, *bounds)
                     if vector.size else none,
                     kernels.quantize(scalar, scale, zero_point, *bounds, nan_to=0)
                     if scalar.size else none)


def unary(op: str, x: QuantizedTensor, fn: Callable[[np.ndarray], np.ndarray], scale: float,
          zero_point: int, inv_scale: np.float32) -> QuantizedTensor:
    """``fn`` (float32 arrays in and out) of ``x``'s values quantized to ``scale`` and
    ``zero_point``, as ATen's vectorized unary kernels (``quantized::hardswish``,
    ``leaky_relu``, ``elu``) compute it: the elements of its vector body dequantized as
    ``fma(scale, q, scale * -zero_point)``, the others as ``(q - zero_point) * scale``, then
    quantized as in :func:`add`, the vector body's with the kernel's ``inv_scale``."""
    qdtype = _check(op, x)
    q = x._int.numpy()
    loop = Loop.unary(op, q)
    (vq,), (sq,) = loop.split(q)
    with np.errstate(over="ignore", invalid="ignore"):
        vector = fn(_dequantize_vector(vq, x._scale, x._zero_point))
        scalar = fn(kernels.dequantize(sq, x._scale, x._zero_point))
    out = _quantize_blocks(loop, vector, scalar, qdtype, scale, zero_point, inv_scale)
    return _result(out, qdtype, scale, zero_point)


def mul(a: QuantizedTensor, b: QuantizedTensor, scale: float, zero_point: int,
        relu: bool = False) -> QuantizedTensor:
    """``a * b`` (then ReLU with ``relu``) quantized to ``scale`` and ``zero_point``."""
    op = "mul_relu" if relu else "mul"
    qdtype = _check(op, a, b)
    qa, qb = _broadcast(op, a, b)
    loop = Loop.binary(a._int.numpy(), qa, qb, resized=False)
    multiplier = _F32(a._scale) * _F32(b._scale) * (_F32(1) / _F32(scale))
    bounds = _range(qdtype)
    if _agree(a, b, qdtype, multiplier):
        acc = ((loop.flat(qa).astype(np.int64) - a._zero_point)
               * (loop.flat(qb).astype(np.int64) - b._zero_point))
        q = loop.lay(kernels.requantize_int(acc, multiplier, zero_point, *bounds))
    else:  # (beyond int32 the vector body and the scalar kernel part ways)
        (va, vb), (sa, sb) = loop.split(qa, qb)
        q = loop.join(*(kernels.requantize_int(
            (x.astype(np.int64) - a._zero_point) * (y.astype(np.int64) - b._zero_point),
            multiplier, zero_point, *bounds, vector=vector)
            for x, y, vector in ((va, vb, True), (sa, sb, False))))
    return _result(np.maximum(q, zero_point) if relu else q, qdtype, scale, zero_point)


def _agree(a: QuantizedTensor, b: QuantizedTensor, qdtype: QDType,
           multiplier: np.float32) -> bool:
    """Whether every ``(qa - za) * (qb - zb) * multiplier`` stays below 2**30, where ATen's
    vector body and scalar kernel agree: told by the dtype's range, else by the integers'."""
    def reach(x: QuantizedTensor, low: int, high: int) -> int:  # (the largest |q - za|)
        return max(abs(low - x._zero_point), abs(high - x._zero_point))

    def ends(x: QuantizedTensor) -> tuple[int, int]:
        q = x._int.numpy()
        return (int(q.min()), int(q.max())) if q.size else (x._zero_point, x._zero_point)

    bounds = (qdtype.min, qdtype.max)
    return (reach(a, *bounds) * reach(b, *bounds) * float(multiplier) < 2**30
            or reach(a, *ends(a)) * reach(b, *ends(b)) * float(multiplier) < 2**30)


def add_scalar(a: QuantizedTensor, other: float) -> QuantizedTensor:
    """``a + other``; the output's parameters follow from ``a``'s and ``other``'s (PyTorch's
    ``quantized::add_scalar``)."""
    qdtype = _check("add_scalar", a)
    s, z = a._scale, a._zero_point
    low, high = qdtype.min, qdtype.max
    shift = np.rint(float(other) / s)
    if not -(2**31) <= shift <= 2**31 - 1:  # (PyTorch passes it to its kernel as an int32)
        raise ArgumentError(f"quantized add_scalar: {other} is {shift} steps of the scale {s}, "
                            "outside the int32 range PyTorch's kernel takes")
    shifted = z - int(shift)  # the zero point that adds ``other``
    pinned = min(max(shifted, low), high)
    new_scale = s if pinned == shifted else (
        (high - shifted if shifted < low else shifted - low) / (high - low) * s)
    acc = a._int.numpy().astype(np.int64) - shifted
    multiplier = _F32(s) * (_F32(1) / _F32(new_scale))
    q = kernels.requantize_int(acc, multiplier, pinned, *_range(qdtype))
    return _result(q, qdtype, new_scale, pinned)


def mul_scalar(a: QuantizedTensor, other: float) -> QuantizedTensor:
    """``a * other``: the same integers with the scale times ``|other|`` (mirrored for a
    negative ``other``; all zeros, scale 1, for zero), as PyTorch's
    ``quantized::mul_scalar``."""
    qdtype = _check("mul_scalar", a)
    other = float(other)
    q = a._int.numpy()
    if other == 0.0:
        return _result(np.zeros_like(q), qdtype, 1.0, 0)
    if other > 0:
        return _result(q, qdtype, a._scale * other, a._zero_point)
    low, high = qdtype.min, qdtype.max
    return _result(high - (q.astype(np.int64) - low), qdtype, a._scale * -other,
                   high - (a._zero_point - low))


def cat(tensors: Sequence[QuantizedTensor], dim: int, scale: float,
        zero_point: int) -> QuantizedTensor:
    """The inputs, dequantized and concatenated along ``dim``, quantized to ``scale`` and
    ``zero_point``."""
    if not tensors:
        raise ArgumentError("quantized cat: expected a non-empty sequence of tensors")
    qdtype = _check("cat", *tensors)
    floats = [kernels.dequantize(t._int.numpy(), t._scale, t._zero_point) for t in tensors]
    try:
        joined = np.concatenate(floats, axis=dim)
    except (ValueError, np.exceptions.AxisError) as e:
        shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
        raise ArgumentError(f"quantized cat: cannot concatenate shapes {shapes} along dim {dim}"
                            ) from e
    return _result(kernels.quantize(joined, scale, zero_point, *_range(qdtype)), qdtype, scale,
                   zero_point)


def matmul(a: QuantizedTensor, b: QuantizedTensor, scale: float,
           zero_point: int) -> QuantizedTensor:
    """``a @ b`` of the dequantized inputs (any ranks ``matmul`` takes), quantized to ``scale``
    and ``zero_point`` in the inputs' dtype."""
    qdtype = _check("matmul", a, b)
    x, y = (kernels.dequantize(t._int.numpy(), t._scale, t._zero_point) for t in (a, b))
    try:
        product = np.matmul(x, y)
    except ValueError as e:
        raise ShapeError(f"quantized matmul: cannot multiply shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)} (as matmul: at least 1-d, inner sizes equal)") from e
    return _result(kernels.quantize(product, scale, zero_point, *_range(qdtype)), qdtype, scale,
                   zero_point)
