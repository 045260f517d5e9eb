"""Von Mises variates: ``_sample_von_mises`` draws angles around ``loc`` with
``concentration``, one per element, from Ember's generators (NumPy's Best and Fisher (1979)
rejection sampler, in float64). ``distributions.VonMises`` samples through it, so its draws
compile under ``ember.jit`` and batch under ``vmap``. No gradient, as in PyTorch (VonMises has
no ``rsample``)."""

from __future__ import annotations

import numpy as np

from ember.errors import DTypeError, OpError, describe
from ember.ops.broadcast import broadcast_tensors
from ember.ops.primitive import TensorSpec, apply, primitive
from ember.ops.random import Generator, Sample
from ember.tensor import Tensor

__all__ = ["_sample_von_mises"]


@primitive
class VonMises(Sample):
    name = "von_mises"

    def forward(self, xp, loc, concentration, *, generator):
        host = [np.asarray(v if xp is np else xp.asnumpy(v), np.float64)
                for v in (loc, concentration)]
        if host[1].size and not (np.isfinite(host[1]).all() and host[1].min() >= 0):
            raise OpError(f"_sample_von_mises: expected finite, non-negative concentrations, "
                          f"got a minimum of {host[1].min()} in a "
                          f"{describe(concentration.shape, concentration.dtype)} tensor")
        angles = self.rng(generator).vonmises(*host)  # in [-pi, pi] around loc
        return xp.asarray(np.asarray(angles).astype(loc.dtype))

    def infer(self, loc, concentration, *, generator):
        return TensorSpec(loc.shape, loc.dtype)


def _sample_von_mises(loc: Tensor, concentration: Tensor,
                      generator: Generator | None = None) -> Tensor:
    """Von Mises samples (angles in ``[-pi, pi]``) with mean direction ``loc`` and
    ``concentration`` (broadcast together; one floating dtype), without gradient.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> ember._sample_von_mises(ember.zeros(3), ember.full((3,), 1e6)).abs().max() < 0.01
        tensor(True)
    """
    for t in (loc, concentration):
        if not t.dtype.is_floating_point:
            raise DTypeError(f"_sample_von_mises: expected floating-point tensors, got "
                             f"{t.dtype.name}. Hint: convert with .float()")
    if loc.dtype != concentration.dtype:
        raise DTypeError(f"_sample_von_mises: loc and concentration must have one dtype, got "
                         f"{loc.dtype.name} and {concentration.dtype.name}")
    loc, concentration = broadcast_tensors(loc.detach(), concentration.detach())
    return apply(VonMises, loc, concentration, generator=generator)
