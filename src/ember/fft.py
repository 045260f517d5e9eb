"""``ember.fft``: PyTorch's ``torch.fft`` namespace, discrete Fourier transforms.

Every transform takes torch's arguments: ``n`` (one dim) or ``s`` (several) cut the input to,
or pad it with zeros at the end to, that many points along each transformed dim (for the
inverse real transforms, the *output* length); ``dim`` picks the dims; ``norm`` is "backward"
(the default: no scaling forward, 1/n on the inverse), "forward" (1/n forward) or "ortho"
(1/sqrt(n) both ways). Real input to the complex transforms is made complex; integers become
the default float (or complex) dtype. float16 and bfloat16 inputs give complex64 (float32
from the inverse real transforms): Ember has no complex32, and PyTorch's CPU refuses them.
An empty dim that is not transformed gives an empty result (PyTorch's CPU raises an MKL
error). All are differentiable (:mod:`ember.ops.fft` has the
rules), also in forward mode, under ``vmap`` and ``jit``.

Example:
    >>> ember.fft.fft(ember.tensor([1.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import dtypes
from ember.errors import ArgumentTypeError, DTypeError, IndexOutOfRange, ShapeError, type_name
from ember.ops.complex_parts import conj
from ember.ops.creation import arange, check_strided
from ember.ops.dims import normalize_dim
from ember.ops.fft import as_complex, fft_c2c, fft_c2r, fft_r2c, norm_name, resize
from ember.ops.int_args import as_float, as_int, as_ints, dims_tuple
from ember.ops.join import roll
from ember.ops.numpy_names import add_numpy_names
from ember.ops.out_arg import add_out_arguments
from ember.ops.out_names import FFT
from ember.tensor import Tensor

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _sizes(s: int | Sequence[int] | None, op: str) -> tuple[int, ...] | None:
    """``s`` given as one int or several (a sequence or a 1-d array) as a tuple of ints."""
    kind = getattr(getattr(s, "dtype", None), "name", "int")
    if getattr(s, "ndim", 0) and not kind.startswith(("int", "uint")):  # (an array of non-ints)
        raise ArgumentTypeError(f"{op}: s must be a sequence of ints, got a "
                                f"{type_name(s)} of {kind}. Hint: s=tuple(t.int().tolist())")
    return None if s is None else as_ints(s, op, "the number of data points (n or s)")


def _checked_size(n: int, op: str) -> int:
    n = as_int(n, op, "the number of data points (n or s)")
    if n < 1:
        raise ShapeError(f"{op}: invalid number of data points ({n}) specified; it must be at "
                         "least 1. Hint: an empty input dim needs n (or s) to pad it")
    return n


def _dims_and_sizes(x: Tensor, s: Sequence[int] | None, dim: int | Sequence[int] | None,
                    op: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """torch's reading of ``s`` and ``dim``: dims given or, with ``s`` alone, the last
    ``len(s)``, else all; sizes from ``s`` (-1: the input's) or the input's."""
    s = _sizes(s, op)
    if dim is not None:
        dim = dims_tuple(dim, op)
        dims = _normalized(dim, x.ndim, op)
        if len(set(dims)) != len(dims):
            raise ShapeError(f"{op}: FFT dims must be unique, got {tuple(dim)}")
        if s is not None and len(s) != len(dims):
            raise ShapeError(f"{op}: when given, s and dim must have the same length, got "
                             f"s={tuple(s)} and dim={tuple(dim)}")
    elif s is not None:
        if len(s) > x.ndim:
            raise ShapeError(f"{op}: got s={tuple(s)} for a tensor of {x.ndim} dims")
        dims = tuple(range(x.ndim - len(s), x.ndim))
    else:
        dims = tuple(range(x.ndim))
    if s is None:
        s = (-1,) * len(dims)
    return dims, tuple(_checked_size(x.shape[d] if n == -1 else n, op) for d, n in zip(dims, s))


def _normalized(dim: Sequence[int], ndim: int, op: str) -> tuple[int, ...]:
    """``dim`` counted from 0; a 0-d input has no dims to name (torch raises too)."""
    if ndim == 0 and len(dim):
        raise IndexOutOfRange(f"{op}: dimension {dim[0]} specified, but the input is 0-d (it "
                              "has no dimensions). Hint: reshape it to 1-D first, e.g. "
                              "input.reshape(1)")
    return tuple(normalize_dim(d, ndim, op) for d in dim)


def _n(x: Tensor, n: int | None, dim: int, op: str) -> tuple[tuple[int] | None, tuple[int]]:
    """A one-dimensional transform's ``n`` as ``s`` (a size of at least 1: -1 is no default
    here, as in torch) and its ``dim`` normalized, checked first (torch's order: a bad dim is
    the IndexError)."""
    dims = _normalized(dims_tuple((dim,), op), x.ndim, op)
    return (None if n is None else (_checked_size(n, op),)), dims


def _one_dim(x: Tensor, n: int | None, dim: int, op: str) -> tuple[tuple[int], tuple[int]]:
    """The dims and sizes of a one-dimensional transform."""
    s, dims = _n(x, n, dim, op)
    return dims, s or (_checked_size(x.shape[dims[0]], op),)


def _some(dims: tuple[int, ...], op: str) -> tuple[int, ...]:
    """``dims`` of a real transform, which needs one: its last dim is the one-sided one."""
    if not dims:
        raise ShapeError(f"{op}: must transform at least one dim, got none (dim=() or s=(), "
                         "or a 0-d input). Hint: name the dims to transform with dim")
    return dims


# -- complex to complex -------------------------------------------------------------------------
def _c2c(x: Tensor, dims: tuple, sizes: tuple, inverse: bool, norm: str | None, op: str) -> Tensor:
    return fft_c2c(resize(x, dims, sizes), dims, inverse, norm_name(norm, op))


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim``.

    Example:
        >>> ember.fft.fft(ember.tensor([0.0, 1.0, 0.0, -1.0]))
        tensor([0.+0.j, 0.-2.j, 0.+0.j, 0.+2.j])
    """
    return _c2c(input, *_one_dim(input, n, dim, "fft"), False, norm, "fft")


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft` (scaled by 1/n with the default norm).

    Example:
        >>> ember.fft.ifft(ember.tensor([4.0, 0.0, 0.0, 0.0]))
        tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _c2c(input, *_one_dim(input, n, dim, "ifft"), True, norm, "ifft")


def fft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Tensor:
    """The two-dimensional DFT (over the last two dims by default).

    Example:
        >>> ember.fft.fft2(ember.ones(2, 2))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    return _c2c(input, *_dims_and_sizes(input, s, dim, "fft2"), False, norm, "fft2")


def ifft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft2`.

    Example:
        >>> ember.fft.ifft2(ember.fft.fft2(ember.ones(2, 2))).real
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _c2c(input, *_dims_and_sizes(input, s, dim, "ifft2"), True, norm, "ifft2")


def fftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
         norm: str | None = None) -> Tensor:
    """The N-dimensional DFT over ``dim`` (all dims by default; the last ``len(s)`` with ``s``
    alone).

    Example:
        >>> ember.fft.fftn(ember.ones(2, 2, 2))[0, 0]
        tensor([8.+0.j, 0.+0.j])
    """
    return _c2c(input, *_dims_and_sizes(input, s, dim, "fftn"), False, norm, "fftn")


def ifftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The inverse of :func:`fftn`.

    Example:
        >>> ember.fft.ifftn(ember.full((2, 2), 4.0))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    return _c2c(input, *_dims_and_sizes(input, s, dim, "ifftn"), True, norm, "ifftn")


# -- real to complex and back -------------------------------------------------------------------
def _r2c(x: Tensor, dims: tuple, sizes: tuple, norm: str | None, op: str) -> Tensor:
    return fft_r2c(resize(x, dims, sizes), _some(dims, op), norm_name(norm, op), op)


def _c2r(x: Tensor, s: Sequence[int] | None, dim: Any, norm: str | None, op: str) -> Tensor:
    """The inverse real transform: ``s`` (or ``n``) gives the output sizes; the last dim's
    default is ``2 * (m - 1)`` for an input of ``m`` frequencies there."""
    dims, sizes = _dims_and_sizes(x, s, dim, op)
    last = _some(dims, op)[-1]
    if s is None or _sizes(s, op)[-1] == -1:
        sizes = sizes[:-1] + (_checked_size(2 * (x.shape[last] - 1), op),)
    x = resize(x, dims, sizes[:-1] + (sizes[-1] // 2 + 1,))
    return fft_c2r(x, dims, sizes[-1], norm_name(norm, op))


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The DFT of a real signal, one-sided: the ``n // 2 + 1`` non-negative frequencies.

    Example:
        >>> ember.fft.rfft(ember.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    return _r2c(input, *_one_dim(input, n, dim, "rfft"), norm, "rfft")


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal of ``n`` points (``2 * (m - 1)`` by
    default) from ``m`` one-sided frequencies.

    Example:
        >>> ember.fft.irfft(ember.fft.rfft(ember.tensor([1.0, 2.0, 3.0])), n=3)
        tensor([1., 2., 3.])
    """
    return _c2r(input, *_n(input, n, dim, "irfft"), norm, "irfft")


def rfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Tensor:
    """:func:`rfft` over two dims (the last of ``dim`` is the one-sided one).

    Example:
        >>> ember.fft.rfft2(ember.ones(2, 2))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    return _r2c(input, *_dims_and_sizes(input, s, dim, "rfft2"), norm, "rfft2")


def irfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft2`.

    Example:
        >>> ember.fft.irfft2(ember.fft.rfft2(ember.ones(2, 2)))
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _c2r(input, s, dim, norm, "irfft2")


def rfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """:func:`rfft` over several dims (all by default; the last of them is one-sided).

    Example:
        >>> ember.fft.rfftn(ember.ones(2, 2)).shape
        ember.Size([2, 2])
    """
    return _r2c(input, *_dims_and_sizes(input, s, dim, "rfftn"), norm, "rfftn")


def irfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfftn`.

    Example:
        >>> ember.fft.irfftn(ember.fft.rfftn(ember.ones(2, 4))).shape
        ember.Size([2, 4])
    """
    return _c2r(input, s, dim, norm, "irfftn")


# -- Hermitian signals --------------------------------------------------------------------------
def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The DFT of a signal with Hermitian symmetry, given by its first half: a real spectrum
    of ``n`` points (``2 * (m - 1)`` by default). ``hfft(x)`` is ``irfft(conj(x))`` with the
    other scaling.

    Example:
        >>> ember.fft.hfft(ember.tensor([1.0, 2.0, 3.0]))
        tensor([ 8., -2.,  0., -2.])
    """
    return _hermitian(input, *_n(input, n, dim, "hfft"), norm, "hfft")


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfft`: the first ``n // 2 + 1`` frequencies of a real signal's
    inverse DFT (``conj(rfft(x)) / n``).

    Example:
        >>> ember.fft.ihfft(ember.tensor([8.0, -2.0, 0.0, -2.0]))
        tensor([1.-0.j, 2.-0.j, 3.-0.j])
    """
    return _ihermitian(input, *_one_dim(input, n, dim, "ihfft"), norm, "ihfft")


def _hermitian(x: Tensor, s: Sequence[int] | None, dim: Any, norm: str | None, op: str) -> Tensor:
    """The real spectrum of a Hermitian signal given by its one-sided half (the last of
    ``dim``): the inverse real transform of its conjugate with the dual scaling."""
    return _c2r(conj(as_complex(x)), s, dim, _SWAP[norm_name(norm, op)], op)


def _ihermitian(x: Tensor, dims: tuple, sizes: tuple, norm: str | None, op: str) -> Tensor:
    """The inverse of :func:`_hermitian`: the conjugate of the one-sided real transform with
    the dual scaling."""
    return conj(_r2c(x, dims, sizes, _SWAP[norm_name(norm, op)], op))


def hfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Tensor:
    """:func:`hfft` over two dims: the real 2-D spectrum of a signal Hermitian-symmetric over
    ``dim``, given by its half along the last of them (``s[-1]``, by default
    ``2 * (m - 1)``, is the output length there).

    Example:
        >>> ember.fft.hfft2(ember.tensor([[1.0, 0.0], [0.0, 0.0]]))
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _hermitian(input, s, dim, norm, "hfft2")


def ihfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfft2`: the one-sided inverse 2-D DFT of a real signal.

    Example:
        >>> ember.fft.ihfft2(ember.ones(2, 2))
        tensor([[1.-0.j, 0.-0.j],
                [0.-0.j, 0.-0.j]])
    """
    return _ihermitian(input, *_dims_and_sizes(input, s, dim, "ihfft2"), norm, "ihfft2")


def hfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """:func:`hfft` over several dims (all by default; the last ``len(s)`` with ``s`` alone);
    the last of them holds the one-sided half.

    Example:
        >>> ember.fft.hfftn(ember.ones(2, 2)).shape
        ember.Size([2, 2])
    """
    return _hermitian(input, s, dim, norm, "hfftn")


def ihfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfftn`.

    Example:
        >>> ember.fft.ihfftn(ember.ones(2, 4)).shape
        ember.Size([2, 3])
    """
    return _ihermitian(input, *_dims_and_sizes(input, s, dim, "ihfftn"), norm, "ihfftn")


# -- frequencies and shifts ---------------------------------------------------------------------
def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``.

    Example:
        >>> ember.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    n = _points(n, "fftfreq")
    check_strided("fftfreq", layout)
    k = roll(arange(n, dtype=dtypes.int64, device=device) - n // 2, -(n // 2))
    return _frequencies(k, n, d, dtype, requires_grad, "fftfreq")


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The sample frequencies of :func:`rfft`'s ``n // 2 + 1`` outputs: ``[0, 1, ..., n // 2]
    / (d * n)``.

    Example:
        >>> ember.fft.rfftfreq(4)
        tensor([0.0000, 0.2500, 0.5000])
    """
    n = _points(n, "rfftfreq")
    check_strided("rfftfreq", layout)
    return _frequencies(arange(n // 2 + 1, dtype=dtypes.int64, device=device), n, d, dtype,
                        requires_grad, "rfftfreq")


def _points(n: int, op: str) -> int:
    """The ``n`` of :func:`fftfreq` and :func:`rfftfreq`: a non-negative int."""
    n = as_int(n, op, "n")
    if n < 0:
        raise ShapeError(f"{op}: n must be non-negative, got n={n}")
    return n


def _frequencies(k: Tensor, n: int, d: float, dtype: Any, requires_grad: bool,
                 op: str) -> Tensor:
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise DTypeError(f"{op}: requires a floating point or complex dtype, got "
                         f"dtype={dt.name}. Hint: pass e.g. dtype=ember.float32 and convert "
                         "the result")
    d = as_float(d, op, "the sample spacing d")
    # divided in the real dtype: a complex division makes d=0's infinities inf+nanj
    out = k.to(dt.to_real()) / (d * n)
    return out.to(dt).requires_grad_(requires_grad)


def _shift(x: Tensor, dim: int | Sequence[int] | None, sign: int, op: str) -> Tensor:
    dims = tuple(range(x.ndim)) if dim is None else _normalized(dims_tuple(dim, op), x.ndim, op)
    if not dims:
        return x
    return roll(x, tuple(sign * (x.shape[d] // 2) for d in dims), dims)


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Moves the zero frequency to the middle of ``dim`` (all dims by default): a roll by
    ``n // 2``.

    Example:
        >>> ember.fft.fftshift(ember.fft.fftfreq(4))
        tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, 1, "fftshift")


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`: a roll by ``-(n // 2)``.

    Example:
        >>> ember.fft.ifftshift(ember.fft.fftshift(ember.arange(5)))
        tensor([0, 1, 2, 3, 4])
    """
    return _shift(input, dim, -1, "ifftshift")


add_out_arguments(globals(), FFT)  # torch's out= keyword
add_numpy_names(globals())  # axis= and keepdims=
