"""Discrete Fourier transforms as primitives: complex-to-complex (``fft_c2c``), real-to-complex
(``fft_r2c``, the one-sided half spectrum) and complex-to-real (``fft_c2r``), over any dims,
with NumPy's/PyTorch's ``norm`` ("backward": the inverse scales by 1/n; "forward": the forward
does; "ortho": both by 1/sqrt(n)). The ``ember.fft`` functions sit on top of them.

The gradient rules are the adjoints of these linear maps (PyTorch's convention for complex
gradients: the vjp of z -> A z is A^H g):
- c2c: the adjoint of a forward DFT is the inverse DFT with the dual norm (backward and forward
  swap, ortho stays), and the other way round.
- r2c keeps the first n//2+1 frequencies of the last dim of a DFT of a real signal: its vjp
  puts zeros in the frequencies it dropped, takes the inverse DFT with the dual norm and keeps
  the real part (the input was real).
- c2r reads a half spectrum as the Hermitian full one: its vjp is the r2c of the gradient (dual
  norm) with the frequencies that stand for two (all but the zero frequency and, for an even
  length, the last) doubled, as torch's ``fft_c2r_backward``.
NumPy computes in complex128 (and float64); results are cast back to the input's precision.
"""

from __future__ import annotations

import math

import numpy as np

from ember import dtypes
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    is_complex_input,
    refuse_non_tensor,
    type_name,
)
from ember.ops.complex_parts import real
from ember.ops.convert import cast, to_float
from ember.ops.creation import tensor, zeros
from ember.ops.join import cat
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.public_op import calling_op
from ember.ops.shape import narrow
from ember.tensor import Tensor

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _dft_flops(shape: tuple[int, ...], dims: tuple[int, ...]) -> int:
    """About 5 n log2 n per complex transform of length n (the radix-2 count)."""
    n = math.prod(shape[d] for d in dims)
    if not n:
        return 0
    return int(5 * math.prod(shape) * math.log2(max(n, 2)))


@primitive
class FFTC2C(Primitive):
    """The DFT (``inverse=False``) or inverse DFT of a complex tensor over ``dims``."""

    name = "fft_c2c"
    save_inputs = False
    complex_grad = True

    def forward(self, xp, a, *, dims, inverse, norm):
        fn = xp.fft.ifftn if inverse else xp.fft.fftn
        return fn(a, axes=dims, norm=norm).astype(a.dtype, copy=False)

    def infer(self, a, *, dims, inverse, norm):
        if not a.dtype.is_complex:
            raise DTypeError(f"{self.name}: expects a complex tensor, got {a}")
        return a

    def vjp(self, ctx, g):
        p = ctx.params
        return apply(FFTC2C, g, dims=p["dims"], inverse=not p["inverse"], norm=_DUAL[p["norm"]])

    def jvp(self, ctx, dz):
        return apply(FFTC2C, dz, **ctx.params)

    def flops(self, a, *, dims, inverse, norm):
        return _dft_flops(a.shape, dims)


@primitive
class FFTR2C(Primitive):
    """The one-sided DFT of a real tensor over ``dims``: the last of ``dims`` keeps n//2+1
    frequencies."""

    name = "fft_r2c"
    save_inputs = False
    complex_grad = True

    def forward(self, xp, a, *, dims, norm):
        if a.dtype.itemsize == 2:  # (NumPy's scaling has no bfloat16 loop: norm="forward")
            a = a.astype(np.float32)
        out = xp.fft.rfftn(a, axes=dims, norm=norm)
        return out.astype(np.result_type(a.dtype, np.complex64), copy=False)

    def infer(self, a, *, dims, norm):
        if not a.dtype.is_floating_point:
            raise DTypeError(f"{self.name}: expects a real floating tensor, got {a}")
        shape = list(a.shape)
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
        return TensorSpec(tuple(shape), a.dtype.to_complex())

    def vjp(self, ctx, g):
        p = ctx.params
        last = p["dims"][-1]
        full = resize(g, (last,), (ctx.inputs[0].shape[last],))
        return real(apply(FFTC2C, full, dims=p["dims"], inverse=True, norm=_DUAL[p["norm"]]))

    def jvp(self, ctx, dx):
        return apply(FFTR2C, dx, **ctx.params)

    def flops(self, a, *, dims, norm):
        return _dft_flops(a.shape, dims) // 2


@primitive
class FFTC2R(Primitive):
    """The real inverse of a one-sided spectrum over ``dims``: the last of ``dims`` gives
    ``last_size`` outputs from its first ``last_size // 2 + 1`` inputs (the caller trims or pads
    the input to that)."""

    name = "fft_c2r"
    save_inputs = False
    complex_grad = True

    def forward(self, xp, a, *, dims, last_size, norm):
        s = [a.shape[d] for d in dims[:-1]] + [last_size]
        out = xp.fft.irfftn(a, s=s, axes=dims, norm=norm)
        return out.astype(np.float64 if a.dtype == np.complex128 else np.float32, copy=False)

    def infer(self, a, *, dims, last_size, norm):
        if not a.dtype.is_complex:
            raise DTypeError(f"{self.name}: expects a complex tensor, got {a}")
        shape = list(a.shape)
        shape[dims[-1]] = last_size
        return TensorSpec(tuple(shape), a.dtype.to_real())

    def vjp(self, ctx, g):
        p = ctx.params
        half = apply(FFTR2C, g, dims=p["dims"], norm=_DUAL[p["norm"]])
        last = p["dims"][-1]
        m = half.shape[last]
        doubled = p["last_size"] - m  # frequencies 1 .. doubled stand for their mirror images too
        if doubled <= 0:
            return half
        weights = np.ones(m)
        weights[1:1 + doubled] = 2
        shape = [1] * half.ndim
        shape[last] = m
        return half * tensor(weights.reshape(shape), dtype=half.dtype.to_real(),
                             device=half.device)

    def jvp(self, ctx, dz):
        return apply(FFTC2R, dz, **ctx.params)

    def flops(self, a, *, dims, last_size, norm):
        shape = list(a.shape)
        shape[dims[-1]] = last_size
        return _dft_flops(tuple(shape), dims) // 2


def resize(x: Tensor, dims: tuple[int, ...], sizes: tuple[int, ...]) -> Tensor:
    """``x`` with each of ``dims`` cut to, or padded with zeros at its end to, its size in
    ``sizes`` (what an FFT's ``n``/``s`` does to its input)."""
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if n < have:
            x = narrow(x, d, 0, n)
        elif n > have:
            shape = list(x.shape)
            shape[d] = n - have
            x = cat([x, zeros(tuple(shape), dtype=x.dtype, device=x.device)], d)
    return x


def fft_c2c(x: Tensor, dims: tuple[int, ...], inverse: bool, norm: str) -> Tensor:
    """The (inverse) DFT over ``dims`` of ``x`` made complex (integers: the default complex
    dtype)."""
    return apply(FFTC2C, as_complex(x), dims=dims, inverse=inverse, norm=norm)


def fft_r2c(x: Tensor, dims: tuple[int, ...], norm: str, op: str = "rfft") -> Tensor:
    """The one-sided DFT over ``dims`` of a real tensor (integers: the default float dtype);
    ``op`` names the caller in errors."""
    if is_complex_input(op, "input", x):
        raise DTypeError(f"{op}: expects a real input tensor, got {x.dtype.name}. Hint: use "
                         "the complex transform (fft, fftn) for complex input, or pass .real")
    return apply(FFTR2C, to_float(x), dims=dims, norm=norm)


def fft_c2r(x: Tensor, dims: tuple[int, ...], last_size: int, norm: str) -> Tensor:
    """The real signal of length ``last_size`` (last of ``dims``) of a one-sided spectrum."""
    return apply(FFTC2R, as_complex(x), dims=dims, last_size=last_size, norm=norm)


def as_complex(x: Tensor) -> Tensor:
    """``x`` in a complex dtype: complex as it is, real floats to their complex dtype, others
    to the default complex dtype (as torch.fft promotes)."""
    try:
        dt, complex_ = x.dtype, x.dtype.is_complex
    except AttributeError:  # (a NumPy array: its dtype is NumPy's)
        refuse_non_tensor(calling_op(), "input", x)
        raise
    if complex_:
        return x
    return cast(x, dt.to_complex() if dt.is_floating_point else
                dtypes.get_default_dtype().to_complex())


def norm_name(norm: str | bytes | None, op: str) -> str:
    """``norm`` checked (bytes decoded, as torch does), None read as "backward"."""
    if norm is None:
        return "backward"
    if isinstance(norm, bytes):
        norm = norm.decode("ascii", "replace")
    if not isinstance(norm, str):
        raise ArgumentTypeError(f"{op}: norm must be a string or None, got "
                                f"{type_name(norm)} {norm!r}. Hint: one of 'backward', "
                                "'forward', 'ortho'")
    if norm not in _DUAL:
        raise ArgumentError(f"{op}: invalid normalization mode {norm!r}; expected one of "
                            "'backward', 'forward', 'ortho' or None")
    return norm

