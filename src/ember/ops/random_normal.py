"""``normal``: samples of N(mean, std²) with tensor or number parameters (PyTorch's four
overloads), and ``normal_samples``, the fill of ``Tensor.normal_`` and ``nn.init.normal_``.
:mod:`ember.ops.random` exports both."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.autograd.grad_mode import GRAD
from ember.backend import device as to_device
from ember.errors import ArgumentError, DTypeError, GradError, OpError, ShapeError, describe
from ember.ops.complex_parts import view_as_complex
from ember.ops.creation import _numbers, _shape, sequence_size
from ember.ops.grad_flag import grad_flag
from ember.ops.int_args import as_float
from ember.ops.primitive import TensorSpec, apply, primitive
from ember.ops.random import Generator, Normal, Sample, _float_dtype, _sampled, randn
from ember.ops.select import zero_grad_from
from ember.tensor import Tensor

__all__: list[str] = []


def _check_std(std: Any) -> None:
    """``normal``'s check that ``std`` (a number or an array) is ≥ 0 (NaN is not)."""
    low = np.min(std) if np.size(std) else 0.0
    if not low >= 0:
        raise OpError(f"normal: std must be >= 0, got {low}"
                      + ("" if np.ndim(std) == 0 else f" in a {describe(std.shape, std.dtype)} "
                         "std tensor"))


@primitive
class NormalNoise(Sample):
    """Standard normal noise of ``shape`` for ``normal`` with a tensor ``std``, which it reads
    only to check that it is ≥ 0 (on every call, compiled code included)."""

    name = "normal_noise"

    def forward(self, xp, std, *, shape, dtype, generator):
        _check_std(std)
        return self.rng(generator).standard_normal(shape).astype(dtype.np)

    def infer(self, std, *, shape, dtype, generator):
        return TensorSpec(shape, dtype)


def normal_samples(shape: tuple, mean: float, std: float, *, dtype: Any, device: Any = None,
                   generator: Generator | None = None) -> Tensor:
    """Samples from N(mean, std²) of ``shape``, as ``normal_`` and ``nn.init.normal_`` fill a
    tensor; for a complex dtype, PyTorch's complex normal: each part N(mean, std²/2). A real
    sample is ``mean + std * z`` computed in float64 and rounded once, as PyTorch's (in a 16-bit
    dtype, ``std * z`` alone may overflow where the sum does not)."""
    mean, std = (float(v) if type(v) is int else as_float(v, "normal_", name)  # (a tensor:
                 for v, name in ((mean, "mean"), (std, "std")))  # one element, not broadcast)
    if not std >= 0:
        raise ArgumentError(f"normal_: expects std >= 0.0, but found std {std}")
    dt = _float_dtype(dtype, "normal_", complex_ok=True)
    if not dt.is_complex:
        return _sampled("normal_", Normal, (shape,), dt, device, False, mean=mean, std=std,
                        generator=generator)
    return randn(shape, dtype=dt, device=device, generator=generator) * std + mean * (1 + 1j)


def _detached(value: Any) -> Any:
    return value.detach() if isinstance(value, Tensor) else value


def normal(mean: Any = 0.0, std: Any = 1.0, size: tuple | None = None, *,
           generator: Generator | None = None, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Normal samples; ``mean``/``std`` may be tensors (broadcast) or numbers with ``size``.
    With tensor arguments the result is ``mean + std * noise``; as in PyTorch its gradient to
    ``mean`` and ``std`` is zero (a reparameterized sample is ``Normal(mean, std).rsample()``,
    or ``mean + std * ember.randn_like(std)``); the samples have ``mean``'s dtype (or
    ``std``'s), or ``out``'s. A complex one draws PyTorch's complex normal: each part
    N(mean's part, std²/2); ``std`` stays real.

    Example:
        >>> ember.normal(ember.zeros(2, dtype=ember.complex64), 1.0).dtype
        ember.complex64
    """
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if size is not None:
            raise TypeError(f"normal: size={tuple(size)} goes with number mean and std only; a "
                            "tensor mean or std sets the shape. Hint: expand it to the size")
        if requires_grad:  # (it was ignored)
            raise TypeError("normal: requires_grad= goes with number mean and std only, as in "
                            "PyTorch; a tensor mean or std passes its own. Hint: call "
                            ".requires_grad_() on the result")
        ref = mean if isinstance(mean, Tensor) else std
        if device is not None and to_device(device) != ref.device:
            raise TypeError(f"normal: device={device} differs from the tensor mean's or std's "
                            f"({ref.device}), which sets it. Hint: move them first")
        if type(std) is not float and not isinstance(std, Tensor):
            std = as_float(std, "normal", "std")  # (a str, a complex: raises, as PyTorch)
        if type(mean) is not float and not isinstance(mean, Tensor):
            mean = as_float(mean, "normal", "mean")
        from ember.ops.broadcast import broadcast_shapes

        if isinstance(std, Tensor) and std.dtype.is_complex:
            raise DTypeError(f"normal: std must be real, got a {std.dtype.name} tensor. Hint: "
                             "pass its .abs()")
        shape = broadcast_shapes(getattr(mean, "shape", ()), getattr(std, "shape", ()),
                                 op="normal")
        # (dtype: out='s, or the caller's, as torch draws into out: a complex one draws
        # complex noise; it was ignored, dtype=float64 drawing float32)
        dt = _float_dtype(ref.dtype if dtype is None else dtype, "normal", complex_ok=True)
        if dt.is_complex and GRAD.enabled and any(getattr(t, "requires_grad", False)
                                                  for t in (mean, std)):
            raise GradError("normal: no gradient for complex samples, as in PyTorch. Hint: "
                            "pass mean.detach(), or draw under ember.no_grad()")
        pairs = (2,) if dt.is_complex else ()  # a complex draw: (real, imag) pairs
        if isinstance(std, Tensor):
            noise = apply(NormalNoise, std.detach(), shape=shape + pairs, dtype=dt.to_real(),
                          generator=generator)
        else:
            _check_std(std)
            noise = randn(*shape, *pairs, generator=generator, dtype=dt.to_real(),
                          device=ref.device)
        if dt.is_complex:
            noise = view_as_complex(noise * 0.5 ** 0.5)
        out = noise * _detached(std) + _detached(mean)
        for source in (mean, std):
            if isinstance(source, Tensor):
                out = zero_grad_from(source, out)  # (after the cast it would widen again)
        return out if out.dtype is dt else out.to(dt)  # (mean's dtype, as torch: no promotion)
    mean, std = _numbers("normal", mean, std)
    if size is None:
        raise ShapeError("normal: give size= when mean and std are numbers")
    shape = _shape((sequence_size("normal", size),), "normal")
    _check_std(float(std))
    dt = _float_dtype(dtype, "normal", complex_ok=True)
    if dt.is_complex:
        out = normal_samples(shape, float(mean), float(std), dtype=dt, device=device,
                             generator=generator)
        return out.requires_grad_(True) if grad_flag(requires_grad) else out
    return _sampled("normal", Normal, (shape,), dt, device, requires_grad,
                    mean=float(mean), std=float(std), generator=generator)
