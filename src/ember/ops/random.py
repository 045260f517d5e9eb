"""Random sampling: the generators of :mod:`ember.ops.generator` (re-exported here) and
sampling ops (``rand``, ``randn``, ``randint``, ``randperm``,
``normal``, ``bernoulli``, ``multinomial``).

Sampling ops are primitives, so a traced graph keeps them as ops that draw fresh numbers on
each call (and CSE never merges them), exactly as eager code does.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import ml_dtypes
import numpy as np

from ember import dtypes
from ember.backend import device as to_device
from ember.backend.device import no_backend_error
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    OpError,
    ShapeError,
    describe,
)
from ember.layouts import check_format, format_of, memory_format, preserve_format
from ember.ops.complex_parts import view_as_complex
from ember.ops.creation import (
    NO_SIZE,
    _non_negative,
    _numbers,
    _shape,
    check_strided,
    full,
    given_size,
    sequence_size,
    zeros,
)
from ember.ops.forwarding import check_tensors
from ember.ops.generator import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from ember.ops.generator import (
    remap_seed as remap_seed,  # (for ember.data's samplers)
)
from ember.ops.grad_flag import grad_flag
from ember.ops.int_args import as_float, as_int
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive, refuse_limited
from ember.ops.select import zero_grad_from
from ember.tensor import Tensor, method

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator", "rand", "randn", "randint", "randperm", "normal", "bernoulli",
           "multinomial", "rand_like", "randn_like", "randint_like"]


class Sample(Primitive):
    """A sampling primitive: no gradient; the generator is a parameter."""

    differentiable = False
    save_inputs = False
    pure = False  # each call draws new numbers

    def rng(self, generator: Generator | None) -> np.random.Generator:
        if generator is None:
            return default_generator._rng
        if not isinstance(generator, Generator):
            kind = type(generator)
            raise ArgumentTypeError(f"{self.name}: generator must be an ember.Generator or None, "
                                    f"got {kind.__module__}.{kind.__qualname__}. Hint: "
                                    "ember.Generator().manual_seed(seed)")
        return generator._rng


class _FromShape(Sample):
    """Sampling ops whose output is fixed by ``shape`` and ``dtype`` alone."""

    def infer(self, *specs, shape, dtype, **params):
        return TensorSpec(shape, dtype)


_TOP_DRAW = np.nextafter(np.float32(1), np.float32(0))  # (the largest float32 below 1)


@primitive
class Uniform(_FromShape):
    name = "uniform"

    def forward(self, xp, *, shape, dtype, low, high, generator, device):
        rng = self.rng(generator)
        if dtype.itemsize >= 4:  # (float32: a float64 draw rounds up to 1 once in ~3e7)
            u = rng.uniform(low, high, shape).astype(dtype.np)
            return np.minimum(u, _TOP_DRAW, out=u) if u.dtype == np.float32 else u
        # half precision: steps of the dtype's resolution, as PyTorch draws them, so that
        # rounding never reaches 1 (a float64 draw rounds up to 1.0 once in ~4000)
        digits = ml_dtypes.finfo(dtype.np).nmant + 1
        u = rng.integers(0, 2 ** digits, shape) / 2 ** digits
        return (low + (high - low) * u).astype(dtype.np)


@primitive
class Normal(_FromShape):
    name = "normal"

    def forward(self, xp, *, shape, dtype, mean, std, generator, device):
        return (self.rng(generator).standard_normal(shape) * std + mean).astype(dtype.np)


@primitive
class RandInt(_FromShape):
    name = "randint"

    def forward(self, xp, *, shape, dtype, low, high, generator, device):
        return self.rng(generator).integers(low, high, shape).astype(dtype.np)


@primitive
class RandPerm(_FromShape):
    name = "randperm"

    def forward(self, xp, *, shape, dtype, generator, device):
        return self.rng(generator).permutation(shape[0]).astype(dtype.np)


@primitive
class Bernoulli(Sample):
    name = "bernoulli"

    def forward(self, xp, p, *, generator):
        if p.size and not (p.min() >= 0 and p.max() <= 1):  # (a NaN fails both)
            raise OpError(f"bernoulli: probabilities must lie in [0, 1], got values from "
                          f"{p.min()} to {p.max()} in a {describe(p.shape, p.dtype)} tensor")
        return (self.rng(generator).random(p.shape) < p).astype(p.dtype)

    def infer(self, p, *, generator):
        return p


@primitive
class Multinomial(Sample):
    name = "multinomial"

    def forward(self, xp, probs, *, num_samples, replacement, generator):
        rng = self.rng(generator)
        rows = math.prod(probs.shape[:-1])
        if not rows:  # (no distributions: nothing to draw, even from no categories)
            return np.zeros((*probs.shape[:-1], num_samples), dtype=np.int64)
        p = probs.astype(np.float64).reshape(rows, probs.shape[-1])
        if p.size and not (np.isfinite(p).all() and p.min() >= 0):
            raise OpError(f"multinomial: the probabilities must be finite and non-negative; "
                          f"{describe(probs.shape, probs.dtype)} input holds inf, nan or a "
                          f"negative value")
        total = p.sum(axis=1, keepdims=True)
        if (total <= 0).any():
            row = int(np.argmax(total[:, 0] <= 0))
            raise OpError(f"multinomial: row {row} of the {describe(probs.shape, probs.dtype)} "
                          f"probabilities sums to 0; every row needs a positive weight")
        p = p / total
        if replacement:  # inverse-CDF sampling: one binary search, row r's CDF shifted by r
            rows, n = p.shape
            shift = np.arange(rows)[:, None]
            u = rng.random((rows, num_samples)) + shift
            idx = np.searchsorted((np.cumsum(p, axis=1) + shift).ravel(), u, side="right")
            # a draw past a row's rounded total goes to its last category of positive weight
            # (not a trailing zero one)
            last = n - 1 - np.argmax(p[:, ::-1] > 0, axis=1)[:, None]
            idx = np.minimum(idx - shift * n, last)
        else:  # Gumbel top-k: sampling without replacement in one vectorised pass
            keys = np.log(np.maximum(p, 1e-300)) + rng.gumbel(size=p.shape)
            keys[p == 0] = -np.inf
            idx = _top_keys(keys, num_samples)
        return idx.reshape(*probs.shape[:-1], num_samples).astype(np.int64)

    def infer(self, probs, *, num_samples, replacement, generator):
        return TensorSpec((*probs.shape[:-1], num_samples), dtypes.int64)


def _top_keys(keys: np.ndarray, k: int) -> np.ndarray:
    """The columns of each row's ``k`` largest keys, largest first: a partition, then a sort of
    those ``k`` only (a full sort of 10000 categories cost 4x torch's multinomial)."""
    if k == 1:
        return np.argmax(keys, axis=1)[:, None]
    if k < keys.shape[1]:
        top = np.argpartition(-keys, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1, kind="stable")
        return np.take_along_axis(top, order, axis=1)
    return np.argsort(-keys, axis=1, kind="stable")


def _float_dtype(dtype: Any, op: str, complex_ok: bool = False) -> dtypes.DType:
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if not dt.is_floating_point and not (complex_ok and dt.is_complex):
        raise DTypeError(f"{op}: expected a floating dtype, got {dt.name}. Hint: continuous "
                         "samples need a floating dtype (e.g. ember.float32); parameters "
                         "given as integer tensors set it, so convert them with .float()")
    return dt


def _sampled(op: str, prim: Primitive, size: tuple, dtype: dtypes.DType, device: Any,
             requires_grad: bool, **params: Any) -> Tensor:
    refuse_limited(op, dtype, dtypes.WIDE_UNSIGNED)  # (PyTorch draws no float8)
    dev = to_device(device)
    if not dev.has_backend:  # (sampling never touches the device's array namespace)
        raise no_backend_error(str(dev), op)
    out = apply(prim, shape=_shape(size, op), dtype=dtype, device=dev, **params)
    return out.requires_grad_(True) if grad_flag(requires_grad) else out


def _complex_sampled(op: str, prim: Primitive, size: tuple, dtype: dtypes.DType, device: Any,
                     requires_grad: bool, scale: float, **params: Any) -> Tensor:
    """Complex samples whose real and imaginary parts are independent real samples (times
    ``scale``), drawn as PyTorch does: as the (real, imag) pairs of ``view_as_real``."""
    shape = _shape(size, op)
    if 0 in shape:  # (NumPy gives empty draws zero strides, which no view takes)
        return zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad)
    pairs = _sampled(op, prim, (shape + (2,),), dtype.to_real(), device, False, **params)
    out = view_as_complex(pairs if scale == 1 else pairs * scale)
    return out.requires_grad_(True) if grad_flag(requires_grad) else out


def rand(*sizes: Any, size: Any = NO_SIZE, generator: Generator | None = None,
         dtype: Any = None, device: Any = None, requires_grad: bool = False,
         layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Uniform samples from [0, 1): ``ember.rand(2, 3)`` (or ``rand(size=(2, 3))``). A complex
    dtype has both parts uniform on [0, 1), as PyTorch's."""
    check_strided("rand", layout)
    size = given_size("rand", sizes, size)
    dt = _float_dtype(dtype, "rand", complex_ok=True)
    if dt.is_complex:
        return _complex_sampled("rand", Uniform, size, dt, device, requires_grad, 1.0, low=0.0,
                                high=1.0, generator=generator)
    return _sampled("rand", Uniform, size, dt, device, requires_grad, low=0.0, high=1.0,
                    generator=generator)


def randn(*sizes: Any, size: Any = NO_SIZE, generator: Generator | None = None,
          dtype: Any = None, device: Any = None, requires_grad: bool = False,
          layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Standard normal samples: ``ember.randn(2, 3)`` (or ``randn(size=(2, 3))``). A complex
    dtype gives the standard complex normal, as PyTorch's: variance 1, half in each part (each
    N(0, 1/2))."""
    check_strided("randn", layout)
    size = given_size("randn", sizes, size)
    dt = _float_dtype(dtype, "randn", complex_ok=True)
    if dt.is_complex:
        return _complex_sampled("randn", Normal, size, dt, device, requires_grad, 0.5 ** 0.5,
                                mean=0.0, std=1.0, generator=generator)
    return _sampled("randn", Normal, size, dt, device, requires_grad, mean=0.0, std=1.0,
                    generator=generator)


def as_doubles(*params: Any) -> tuple:
    """A random fill's parameters with its Python ints as floats: they are doubles in PyTorch,
    so an int past 64 bits (``uniform_(-2**70, 2**70)``) is a value, where an op taking it as
    a number raises OverflowError.

    Example:
        >>> as_doubles(2 ** 70, 0.5)
        (1.1805916207174113e+21, 0.5)
    """
    return tuple(float(v) if type(v) is int else v for v in params)


def check_draw_bounds(op: str, low: int, high: int, dtype: dtypes.DType) -> None:
    """PyTorch's check of integers ``[low, high]`` drawn into ``dtype`` (``randint``,
    ``random_``, ``randperm``): an error when the dtype cannot hold them (instead of a silent
    wrap-around), a warning when a float dtype holds them only rounded (past ``2**digits``)."""
    if dtype is dtypes.bool_:
        lo, hi = 0, 1
    else:
        info = ml_dtypes.finfo(dtype.np) if dtype.is_floating_point else np.iinfo(dtype.np)
        # (Python numbers: against a NumPy float16 max, 65505 rounded to it and passed)
        lo, hi = (info.min.item(), info.max.item()) if dtype.is_floating_point else \
            (info.min, info.max)
    for name, value in (("from", low), ("to - 1", high)):
        if not lo <= value <= hi:
            raise ArgumentError(f"{op}: {name} = {value} is out of bounds for {dtype.name}, which "
                                f"holds [{lo}, {hi}]. Hint: draw a wider dtype, e.g. ember.int64")
    digits = ml_dtypes.finfo(dtype.np).nmant + 1 if dtype.is_floating_point else None
    if digits and max(-low, high) > 2 ** digits:
        warnings.warn(f"{op}: [{low}, {high}] reaches past the integers {dtype.name} holds "
                      f"exactly (2**{digits}), so draws are rounded, as in PyTorch", UserWarning,
                      stacklevel=3)


def randint(low: int = 0, high: int | None = None, size: tuple = NO_SIZE, *,
            generator: Generator | None = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False, layout: Any = None,
            pin_memory: bool = False) -> Tensor:
    """Integers from ``[low, high)``: ``ember.randint(10, (3,))`` or ``randint(2, 5, (3,))``;
    ``dtype`` must hold the range (int64 by default).

    Example:
        >>> ember.randint(0, 256, (2,), dtype=ember.uint8).dtype
        ember.uint8
    """
    check_strided("randint", layout)
    if isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if size is NO_SIZE:  # (randint(5, 10) is no 0-d draw: PyTorch's parser refuses it)
        raise ArgumentTypeError("randint() missing its size: pass randint(high, size) or "
                                "randint(low, high, size), as PyTorch requires. Hint: size=() "
                                "draws a 0-d tensor")
    low, high = _numbers("randint", low, high)
    low, high = as_int(low, "randint", "low"), as_int(high, "randint", "high")
    if high <= low:
        raise ArgumentError(f"randint: empty range [{low}, {high})")
    dt = dtypes.int64 if dtype is None else dtypes.to_dtype(dtype)
    if dt.is_complex:
        raise DTypeError(f"randint: integers cannot be drawn as {dt.name}, as in PyTorch. Hint: "
                         "draw a real dtype and convert with .to()")
    refuse_limited("randint", dt, dtypes.WIDE_UNSIGNED)
    check_draw_bounds("randint", low, high - 1, dt)
    return _sampled("randint", RandInt, (sequence_size("randint", size),), dt, device,
                    requires_grad, low=low, high=high, generator=generator)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None,
             device: Any = None, requires_grad: bool = False, layout: Any = None,
             pin_memory: bool = False) -> Tensor:
    """A random permutation of ``0 … n-1``; ``dtype`` must hold ``n - 1``.

    Example:
        >>> sorted(ember.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    check_strided("randperm", layout)
    dt = dtypes.int64 if dtype is None else dtypes.to_dtype(dtype)
    n = _non_negative("randperm", "n", n)
    if dt is dtypes.bool_ or dt.is_complex:
        raise DTypeError(f"randperm: not implemented for {dt.name}, as in PyTorch. Hint: draw "
                         "an integer dtype and convert with .to()")
    if dt in (dtypes.float16, dtypes.float32, dtypes.float64) and n - 1 > 2 ** (
            digits := ml_dtypes.finfo(dt.np).nmant + 1):  # (bfloat16 only warns, as torch)
        raise ArgumentError(f"randperm: n cannot be greater than 2**{digits}+1 for {dt.name}, "
                            f"got {n}: past it {dt.name} rounds integers, so the result would "
                            "not be a permutation, as PyTorch refuses. Hint: draw int64")
    if n:
        refuse_limited("randperm", dt, dtypes.WIDE_UNSIGNED)
        check_draw_bounds("randperm", 0, n - 1, dt)
    return _sampled("randperm", RandPerm, ((n,),), dt, device, requires_grad,
                    generator=generator)


@method()
def bernoulli(input: Tensor, p: Any = None, *, generator: Generator | None = None) -> Tensor:
    """0/1 samples in ``input``'s dtype: 1 with probability ``input`` (floating), or with the
    constant ``p`` (a number or 0-d tensor) for an ``input`` of any dtype. The gradient to
    ``input`` is zero, as in PyTorch.

    Example:
        >>> ember.bernoulli(ember.ones(3, dtype=ember.int64), p=1.0)
        tensor([1, 1, 1])
    """
    if p is None:
        if not input.dtype.is_floating_point:
            raise DTypeError(f"bernoulli: probabilities must be floating, got "
                             f"{input.dtype.name}. Hint: pass p= to fill a tensor of any dtype")
        probs = input.detach()
    else:
        if input.dtype.is_complex:  # (as bernoulli_'s, PyTorch has no complex kernel)
            raise DTypeError("bernoulli: not implemented for complex tensors, as in PyTorch. "
                             "Hint: sample a real tensor and convert with .to()")
        p = as_float(p, "bernoulli", "p")
        if not 0 <= p <= 1:
            raise OpError(f"bernoulli: p must lie in [0, 1], got {p}")
        probs = full(tuple(input.shape), p, dtype=probability_dtype(input.dtype),
                     device=input.device)
    out = apply(Bernoulli, probs, generator=generator)
    return zero_grad_from(input, out if out.dtype is input.dtype else out.to(input.dtype))


def probability_dtype(dtype: dtypes.DType) -> dtypes.DType:
    """The dtype in which a constant probability is drawn for samples of ``dtype`` (Bernoulli
    masks, ``bernoulli(x, p)``): ``dtype`` itself for float32 and float64, else float64, as
    PyTorch reads ``p`` as a double (rounded to bfloat16, 0.9 is 0.8984: a biased draw).

    Example:
        >>> probability_dtype(ember.bfloat16)
        ember.float64
    """
    return dtype if dtype in (dtypes.float32, dtypes.float64) else dtypes.float64


@method()
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Indices sampled from the categorical distributions in ``input``'s rows (weights ≥ 0)."""
    if input.ndim not in (1, 2):
        raise ShapeError(f"multinomial: expected 1-D or 2-D probabilities, got shape "
                         f"{tuple(input.shape)}")
    if not input.dtype.is_floating_point:
        raise DTypeError(f"multinomial: probabilities must be floating, got {input.dtype.name}")
    (num_samples,) = _numbers("multinomial", num_samples)
    if num_samples <= 0:
        raise OpError(f"multinomial: num_samples must be positive, got {num_samples}")
    if not replacement and num_samples > input.shape[-1]:
        raise OpError(f"multinomial: cannot draw {num_samples} samples without replacement "
                      f"from {input.shape[-1]} categories. Hint: pass replacement=True")
    return apply(Multinomial, input.detach(), num_samples=as_int(num_samples, "multinomial",
                                                                  "num_samples"),
                 replacement=bool(replacement), generator=generator)


def rand_like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None,
              device: Any = None, requires_grad: bool = False, layout: Any = None,
              memory_format: memory_format = preserve_format) -> Tensor:
    """Uniform [0, 1) samples shaped (and laid out, see ``memory_format``) like ``input``.

    Example:
        >>> ember.rand_like(ember.zeros(2, dtype=ember.float64)).dtype
        ember.float64
    """
    return _like_samples(rand, rand_like, input, (), generator, dtype, device, requires_grad,
                         layout, memory_format)


def randn_like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None,
               device: Any = None, requires_grad: bool = False, layout: Any = None,
               memory_format: memory_format = preserve_format) -> Tensor:
    """Standard normal samples shaped (and laid out, see ``memory_format``) like ``input``.

    Example:
        >>> ember.randn_like(ember.zeros(2, 3)).shape
        ember.Size([2, 3])
    """
    return _like_samples(randn, randn_like, input, (), generator, dtype, device,
                         requires_grad, layout, memory_format)


def randint_like(input: Tensor, *bounds: int, low: int | None = None, high: int | None = None,
                 generator: Generator | None = None, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False, layout: Any = None,
                 memory_format: memory_format = preserve_format) -> Tensor:
    """Integers from ``[low, high)`` (``randint_like(input, high)``: ``[0, high)``, as
    ``high=`` alone) shaped (and laid out, see ``memory_format``) like ``input``, in its dtype
    unless ``dtype`` is given. ``low`` alone is refused, as PyTorch does.

    Example:
        >>> ember.randint_like(ember.zeros(2, dtype=ember.int32), 5).dtype
        ember.int32
    """
    given = {"low": low, "high": high}
    names = ("low", "high") if len(bounds) == 2 else ("low",) if high is not None else ("high",)
    if len(bounds) > 2 or bounds and (low is not None or len(bounds) == 2 and high is not None):
        raise ArgumentTypeError(f"randint_like() got {len(bounds)} positional bounds and "
                                f"keywords {[n for n in given if given[n] is not None]}: pass "
                                "(input, high), (input, low, high) or high= with optional low=")
    given.update(zip(names, bounds))
    if given["high"] is None:
        raise ArgumentTypeError("randint_like() missing its upper bound: pass high (as "
                                "randint_like(input, high) or high=); low alone is refused, "
                                "as PyTorch does")
    bounds = (0 if given["low"] is None else given["low"], given["high"])
    return _like_samples(randint, randint_like, input, bounds, generator, dtype, device,
                         requires_grad, layout, memory_format)


def _like_samples(draw: Any, like: Any, input: Tensor, bounds: tuple, generator: Any,
                  dtype: Any, device: Any, requires_grad: bool, layout: Any, fmt: Any) -> Tensor:
    """``draw(*bounds, input's shape, …)`` with ``input``'s dtype and device unless given,
    laid out in ``fmt`` (``preserve_format``: as ``input``; draws are made in C order); a
    tensor-like ``input`` (a nested tensor) hands the call to ``like`` over."""
    if type(input) in TENSOR_LIKE:
        return handle(like, (input, *bounds), {
            "generator": generator, "dtype": dtype, "device": device,
            "requires_grad": requires_grad, "layout": layout, "memory_format": fmt})
    op = like.__name__
    check_tensors(op, input=input)
    check_strided(op, layout)
    fmt = check_format(op, fmt)
    fmt = format_of(input) if fmt is preserve_format else fmt
    out = draw(*bounds, tuple(input.shape), generator=generator,
               dtype=input.dtype if dtype is None else dtype,
               device=input.device if device is None else device)
    out = out if fmt.dims is None else out.contiguous(memory_format=fmt)
    return out.requires_grad_(True) if grad_flag(requires_grad) else out


from ember.ops.random_normal import normal, normal_samples  # noqa: E402,F401
from ember.ops.random_range import uniform_samples  # noqa: E402,F401  (fill, nn.init)
