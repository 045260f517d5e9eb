"""Gamma variates: ``_standard_gamma`` samples Gamma(concentration, 1), one per element, from
Ember's generators, differentiable with respect to the concentration (PyTorch's
``torch._standard_gamma``; Gamma, Beta and Dirichlet sample through it).

Its gradient uses implicit reparameterization (Figurnov et al., 2018): a sample ``z`` solves
``P(a, z) = u`` for the regularized lower incomplete gamma ``P``, so ``dz/da = -(dP/da) /
pdf(z)``. Dividing the series ``P(a, z) = sum_k z^(a+k) e^(-z) / Gamma(a+k+1)`` by the
density gives

    dz/da = -sum_k r_k (log z - digamma(a + k + 1)),   r_0 = z / a,   r_(k+1) = r_k z / (a+k+1),

summed in float64 until the terms vanish (about ``z + 10 sqrt(z)`` terms). That derivative,
``_standard_gamma_grad``, has no derivative itself, as in PyTorch.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ember.errors import DerivativeNotImplemented, DTypeError, OpError, describe
from ember.ops.arithmetic import Binary
from ember.ops.gamma_kernel import polygamma_array
from ember.ops.primitive import apply, primitive
from ember.ops.random import Generator, Sample
from ember.tensor import Tensor

__all__ = ["_standard_gamma", "_standard_gamma_grad"]

_MAX_TERMS = 100_000


def _host64(xp, array) -> np.ndarray:
    return np.asarray(array if xp is np else xp.asnumpy(array), np.float64)


@primitive
class StandardGamma(Sample):
    name = "standard_gamma"
    differentiable = True
    save_inputs = True
    save_outputs = True

    def forward(self, xp, concentration, *, generator):
        if concentration.size and not concentration.min() >= 0:  # (a NaN fails too)
            raise OpError(f"_standard_gamma: expected non-negative concentrations, got a "
                          f"minimum of {concentration.min()} in a "
                          f"{describe(concentration.shape, concentration.dtype)} tensor")
        z = self.rng(generator).standard_gamma(_host64(xp, concentration))
        z = np.maximum(np.asarray(z).astype(concentration.dtype),  # an underflow stays positive
                       ml_dtypes.finfo(concentration.dtype).tiny)
        return xp.asarray(z)

    def infer(self, concentration, *, generator):
        return concentration

    def vjp(self, ctx, g):
        return g * apply(StandardGammaGrad, ctx.inputs[0], ctx.out)

    def jvp(self, ctx, da):
        return da * apply(StandardGammaGrad, ctx.inputs[0], ctx.out)


def _dz_da(a: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``dz/da`` of Gamma(a, 1) samples ``z`` at a fixed CDF level, in float64."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_z = np.log(z)
        r = z / a
        digamma = polygamma_array(0, a + 1)  # digamma(a + k + 1), stepped by 1 / (a + k + 1)
        total = np.zeros_like(z)
        for k in range(_MAX_TERMS):
            term = r * (log_z - digamma)
            total += term
            r = r * z / (a + k + 1)
            digamma = digamma + 1 / (a + k + 1)
            past_peak = bool((a + k + 1 > z).all())  # r only shrinks from here on
            if past_peak and bool((np.abs(term) <= 1e-17 * np.abs(total) + 1e-300).all()):
                break
    return -total


@primitive
class StandardGammaGrad(Binary):
    name = "standard_gamma_grad"

    def forward(self, xp, concentration, sample):
        a, z = np.broadcast_arrays(_host64(xp, concentration), _host64(xp, sample))
        return xp.asarray(_dz_da(a, z).astype(concentration.dtype))

    def vjp(self, ctx, *grads):
        raise DerivativeNotImplemented(
            "_standard_gamma_grad: it has no derivative, so a gamma sample's gradient with "
            "respect to its concentration cannot be differentiated again (as in PyTorch). Hint: "
            "take higher derivatives with respect to the rate, or of a loss without gamma samples")

    jvp = vjp


def _floating(op: str, t: Tensor) -> None:
    if not t.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating-point tensor, got {t.dtype.name}. "
                         "Hint: convert with .float()")


def _standard_gamma(concentration: Tensor, generator: Generator | None = None) -> Tensor:
    """Gamma(concentration, 1) samples, one per element, in ``concentration``'s dtype and
    differentiable with respect to it (implicit reparameterization).

    Example:
        >>> a = ember.tensor([0.5, 2.0], requires_grad=True)
        >>> ember._standard_gamma(a).sum().backward()
        >>> a.grad.shape
        ember.Size([2])
    """
    _floating("_standard_gamma", concentration)
    return apply(StandardGamma, concentration, generator=generator)


def _standard_gamma_grad(concentration: Tensor, sample: Tensor) -> Tensor:
    """``d sample / d concentration`` of Gamma(concentration, 1) samples at a fixed CDF level
    (broadcast together; one floating dtype). It has no derivative itself.

    Example:
        >>> ember._standard_gamma_grad(ember.tensor([1.0]), ember.tensor([1.0]))
        tensor([1.1736])
    """
    for t in (concentration, sample):
        _floating("_standard_gamma_grad", t)
    if concentration.dtype != sample.dtype:
        raise DTypeError(f"_standard_gamma_grad: concentration and sample must have one dtype, "
                         f"got {concentration.dtype.name} and {sample.dtype.name}")
    return apply(StandardGammaGrad, concentration, sample)
