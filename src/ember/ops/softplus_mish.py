"""softplus and mish as primitives; softplus's backward is one op (``softplus_grad``), and
mish's derivative one too (``mish_slope``), so mish's backward keeps only the input, as
PyTorch's (the composite ``x * tanh(softplus(x))`` kept its input and the tanh's output,
twice the memory). Their functions are in :mod:`ember.ops.activations`. float32 logaddexp
(:func:`logaddexp32`) shares softplus's kernels: 10^6 elements 15.1 -> 2.7 ms of CPU (PyTorch
1.7; load 7). It is computed in float64 and rounded once: within 0.5 ulp + 3e-16·max(|a|, |b|)
(the float64 sum's own cancellation), so correctly rounded but where the result is near 0,
``exp(a) + exp(b)`` about 1; NumPy's and PyTorch's float32 loops lose every digit there (up to
100% off: ``logaddexp(-0.32783896, -1.274678)`` is 4.549e-15, PyTorch's 0)."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.layouts import stride_order
from ember.ops.binary32_kernel import float32_pass
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.select import select_array
from ember.ops.unary import Unary, in_float32, sigmoid, sigmoid_array, tanh

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.softplus_numba")

_SMALL = 4096  # elements below which logaddexp's scalar loop costs less than seven calls
_CHUNK = 16384  # float32 elements a block works on at a time: its float64 buffers stay in L2
_BLOCK = 1 << 18  # least elements per share of the cores


def log1p_exp(xp: Any, s: Any) -> Any:
    """``log(1 + exp(s))`` of a float32/float64 array, as ``max(s, 0) + log1p(exp(-|s|))``
    (float32 computed in float64 and rounded once): NumPy's ``logaddexp(0, s)`` is a scalar
    loop, 4-9x slower at 256x256, and within 1.5 ulp in float32 where this rounds correctly.
    A small float32 array takes ``logaddexp`` in float64 (three calls, not seven: 3 against
    6.7 µs at 4x4; rounded to float32, the same values); a large one, or any with numba,
    :func:`softplus32`."""
    if xp is np and s.dtype == np.float32 and s.ndim and (s.size >= _SMALL or _numba()):
        return softplus32(s, 1.0, math.inf)
    if s.dtype == xp.float32 and s.size < _SMALL:
        wide = _empty_like((s,), np.float64)
        wide[...] = s
        return xp.logaddexp(0, wide).astype(xp.float32)
    wide = _empty_like((s,), np.float64 if s.dtype == np.float32 else s.dtype)
    wide[...] = s
    return _log1p_exp_in_place(xp, wide).astype(s.dtype, copy=False)


_LN2 = math.log(2)
_LAE_SMALL = 192  # elements: below, NumPy's float64 logaddexp costs less than numba's dispatch


def logaddexp32(a: Any, b: Any) -> Any:
    """``logaddexp`` of float32 NumPy arrays in float64, rounded once (NumPy's float32 loop is
    a scalar ``expf`` and ``log1pf`` an element, ~18 ns, and loses every digit where
    ``exp(a) + exp(b)`` is about 1): numba's one pass
    (:func:`ember.ops.softplus_numba.logaddexp_block`) by :func:`ember.ops.binary32_kernel.
    float32_pass` (the larger operand first: symmetric, but for which of two NaNs), other
    layouts and broadcasts in chunks; NumPy's float64 ``logaddexp`` for small arrays or without
    numba (Python's floats for two 0-d arrays: a third of the cost). The same values but where
    the result is below ~1e-5·max(|a|, |b|) (float64's own rounding, within the same bound,
    decides there).

    Example:
        >>> logaddexp32(np.float32([0.0, 1.0]), np.float32([0.0, -1.0]))
        array([0.6931472, 1.126928 ], dtype=float32)
    """
    if not (a.ndim or b.ndim):
        return _logaddexp_scalar(float(a), float(b))
    if (a.size <= _LAE_SMALL and b.size <= _LAE_SMALL) or (kernels := _numba()) is None:
        return np.logaddexp(a, b, dtype=np.float64).astype(np.float32)
    big, other = (a, b) if a.size >= b.size else (b, a)
    out = float32_pass(np, _KERNELS, "logaddexp_block", _LAE_SMALL, big, other)
    if out is not None:
        return out
    shape = np.broadcast_shapes(a.shape, b.shape)
    return _in_chunks(partial(_numba_chunk, kernels.logaddexp_block),
                      (np.broadcast_to(a, shape), np.broadcast_to(b, shape)))


def _logaddexp_scalar(x: float, y: float) -> Any:
    """NumPy's float64 ``logaddexp`` steps on two floats (the C library's ``exp`` and ``log1p``,
    as its loop calls), rounded to float32: a third of its ufunc call's cost with casts."""
    d = x - y
    if x == y:
        return np.float32(x + _LN2)
    return np.float32((x if d > 0 else y) + math.log1p(math.exp(-abs(d))) if d == d else d)


def _log1p_exp_in_place(xp: Any, wide: Any) -> Any:
    """``max(s, 0) + log1p(exp(-|s|))`` written over the array ``wide`` (``s``), returned."""
    linear = xp.maximum(wide, 0)
    xp.abs(wide, out=wide)
    xp.negative(wide, out=wide)
    xp.exp(wide, out=wide)
    xp.log1p(wide, out=wide)
    return xp.add(wide, linear, out=wide)


def softplus32(a: Any, beta: float, threshold: float) -> Any:
    """PyTorch's float32 softplus ``a > threshold / beta ? a : log(1 + exp(beta·a)) / beta``
    of a NumPy array (``beta·a`` and the division in float32, the logarithm correctly rounded
    from float64), in L2-sized chunks shared among the cores.

    The seven float64 passes (widen, max, abs, negate, exp, log1p, add) each went over the
    whole array, from memory, on one core (7.2 ms of CPU per million elements); on 16K
    elements at a time they run from the cache (4.2 ms), and each core takes its share.
    The linear side's select is skipped at ``beta == 1``, ``threshold >= 16``: above 16 the
    correctly rounded softplus is the input itself. With numba each chunk is one pass
    (:mod:`ember.ops.softplus_numba`, the same values: 454 -> 274 µs at 10^5 elements,
    25 -> 7.8 µs at 1000, where a small array took ``logaddexp``), and an array of one chunk
    skips the chunking."""
    kernels = _numba()
    if kernels is None:
        return _in_chunks(_softplus_chunk, (a,), beta, threshold)
    params = (np.float32(beta), np.float32(threshold))
    if a.size <= _CHUNK and a.flags.c_contiguous:
        out = np.empty_like(a)
        kernels.softplus32(a.reshape(-1), out.reshape(-1), *params)
        return out
    return _in_chunks(partial(_numba_chunk, kernels.softplus32), (a,), *params)


def _numba() -> Any:
    """numba's kernels (:mod:`ember.ops.softplus_numba`), or None where NumPy's run."""
    return compiled.load(_KERNELS) if compiled.numba_enabled() else None


def _numba_chunk(kernel: Any, *args: Any) -> None:
    """``kernel`` over one chunk: its arrays (parts, then ``dest``, which is dense; a strided
    or broadcast part is copied first) flat, then its parameters."""
    kernel(*(np.ascontiguousarray(v).reshape(-1) if isinstance(v, np.ndarray) else v
             for v in args))


def _in_chunks(kernel: Any, arrays: tuple, *params: Any) -> Any:
    """A float32 array laid out by :func:`_empty_like` from ``arrays`` (float32 arrays of one
    shape) made by ``kernel(*pieces, out piece, *params)`` over pieces of at most ``_CHUNK``
    elements in memory order, runs of them shared among the cores; a broadcast array is read
    piece by piece, never copied whole."""
    out = _empty_like(arrays, np.float32)
    order = np.argsort([-abs(stride) for stride in out.strides], kind="stable")
    views = [a.transpose(order) for a in (*arrays, out)]  # (the last one C-contiguous)
    pieces = _pieces(views[-1].shape)
    parallel.run([partial(_chunks, kernel, views, pieces[lo:hi], params)
                  for lo, hi in parallel.blocks(len(pieces),
                                                parallel.share_count(out.size, _BLOCK))])
    return out


def _empty_like(arrays: tuple, dtype: Any) -> Any:
    """A new dense array of the shape of ``arrays`` (NumPy arrays of one shape), its dims in
    PyTorch's order for an elementwise result (:func:`~ember.layouts.stride_order`: a
    channels-last input gives a channels-last result, an expanded one a C-ordered result,
    where NumPy's ``empty_like`` makes it F-like)."""
    order = stride_order(arrays[0].shape, *(tuple(abs(st) for st in a.strides) for a in arrays))
    dense = np.empty([arrays[0].shape[d] for d in order], dtype)
    return dense.transpose(np.argsort(order))


def _pieces(shape: tuple) -> list:
    """Indices cutting a C-ordered ``shape`` into blocks of at most ``_CHUNK`` elements, in
    memory order: whole trailing dims, and a slice of the dim before them."""
    inner, axis = 1, len(shape)
    while axis and inner * shape[axis - 1] <= _CHUNK:
        axis -= 1
        inner *= shape[axis]
    if not axis:
        return [()]
    step = _CHUNK // inner
    return [(*outer, slice(lo, lo + step)) for outer in np.ndindex(*shape[:axis - 1])
            for lo in range(0, shape[axis - 1], step)]


def _chunks(kernel: Any, views: list, pieces: list, params: tuple) -> None:
    for piece in pieces:
        kernel(*(view[piece] for view in views), *params)


def _softplus_chunk(part: Any, dest: Any, beta: float, threshold: float) -> None:
    scaled = part if beta == 1 else part * np.float32(beta)
    dest[...] = _log1p_exp_in_place(np, scaled.astype(np.float64))
    if beta != 1:
        np.divide(dest, np.float32(beta), out=dest)
    if threshold != math.inf and (beta != 1 or threshold < 16):  # (else no value changes)
        np.copyto(dest, part, where=scaled > threshold)


def _softplus_grad_chunk(v: Any, x: Any, dest: Any, beta: float, threshold: float) -> None:
    scaled = x if beta == 1 else x * np.float32(beta)
    np.negative(scaled, out=dest)  # sigmoid_array's steps, in float32: the composite's bits
    np.exp(dest, out=dest)
    np.add(dest, 1, out=dest)
    np.reciprocal(dest, out=dest)
    np.multiply(dest, v, out=dest)
    if threshold != math.inf:
        np.copyto(dest, v, where=scaled > threshold)


@primitive
class Softplus(Unary):
    name = "softplus"

    @in_float32
    def forward(self, xp, a, *, beta, threshold):
        if xp is np and a.dtype == np.float32 and a.ndim and (a.size >= _SMALL or _numba()):
            return softplus32(a, beta, threshold)
        scaled = a * beta
        soft = log1p_exp(xp, scaled) / beta
        return soft if threshold == math.inf else select_array(xp, scaled > threshold, a, soft)

    def chain(self, v, x, y, *, beta, threshold):
        return apply(SoftplusGrad, v, x, beta=beta, threshold=threshold)


@primitive
class SoftplusGrad(Primitive):
    """softplus's backward ``v · (beta·x > threshold ? 1 : sigmoid(beta·x))`` as one op: a
    large float32 one in cache-sized chunks on the cores (the composite's five ops each went
    over the whole array on one core), the same values; its own derivatives are Ember ops."""

    name = "softplus_grad"

    @in_float32
    def forward(self, xp, v, x, *, beta, threshold):
        if xp is np and v.dtype == x.dtype == np.float32 and v.shape == x.shape and \
                x.size >= _SMALL:
            return _in_chunks(_softplus_grad_chunk, (v, x), beta, threshold)
        scaled = x * beta
        return select_array(xp, scaled > threshold, v, v * sigmoid_array(xp, scaled))

    def infer(self, v, x, **params):
        return broadcast_spec(v, x, op=self.name)

    def vjp(self, ctx, g):
        v, x = ctx.inputs
        return (sum_to(self._slope_times(g, x, ctx.params), v.shape) if v.requires_grad
                else None,
                sum_to(self._curvature_times(g * v, x, ctx.params), x.shape) if x.requires_grad
                else None)

    def jvp(self, ctx, dv, dx):
        v, x = ctx.inputs
        return self._slope_times(dv, x, ctx.params) + \
            self._curvature_times(v * dx, x, ctx.params)

    @staticmethod
    def _slope_times(t: Any, x: Any, params: dict) -> Any:
        return apply(SoftplusGrad, t, x, **params)

    @staticmethod
    def _curvature_times(t: Any, x: Any, params: dict) -> Any:
        """``t`` times the second derivative ``beta·s·(1 - s)``, ``s = sigmoid(beta·x)``,
        times ``beta·x < threshold`` as PyTorch's (0 at the threshold itself, where the
        first derivative is still the sigmoid)."""
        scaled = x * params["beta"]
        s = sigmoid(scaled)
        return t * (s * (1 - s)) * params["beta"] * (scaled < params["threshold"])


def _tanh_softplus(xp: Any, a: Any) -> Any:
    """``tanh(softplus(a))``, softplus with no threshold (PyTorch's mish kernel has none)."""
    return xp.tanh(log1p_exp(xp, a)) if a.ndim else xp.tanh(xp.logaddexp(0, a))


@primitive
class Mish(Unary):
    """``x * tanh(softplus(x))``; the backward reads ``x`` alone."""

    name = "mish"

    @in_float32
    def forward(self, xp, a):
        t = _tanh_softplus(xp, a)
        return xp.multiply(a, t, out=t) if t.ndim else a * t

    def chain(self, v, x, y):
        return v * apply(MishSlope, x)


@primitive
class MishSlope(Unary):
    """mish's derivative ``t + x·s·(1 - t²)``, ``t = tanh(softplus(x))``, ``s = sigmoid(x)``
    (PyTorch's formula), in one op; its own derivative is ``s·(1 - t²)·(2 + x·(1 - s) -
    2·x·s·t)``."""

    name = "mish_slope"

    @in_float32
    def forward(self, xp, a):
        t = _tanh_softplus(xp, a)
        s = sigmoid_array(xp, a)
        if not t.ndim:
            return t + a * s * (1 - t * t)
        xp.multiply(s, a, out=s)
        u = xp.multiply(t, t)
        xp.subtract(1, u, out=u)
        xp.multiply(s, u, out=s)
        return xp.add(t, s, out=t)

    def chain(self, v, x, y):
        t, s = tanh(apply(Softplus, x, beta=1.0, threshold=math.inf)), sigmoid(x)
        return v * (s * (1 - t * t) * (2 + x * (1 - s) - 2 * x * s * t))
