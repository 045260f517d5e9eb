"""Batching rules of sampling primitives, following vmap's ``randomness``.

``"error"`` refuses them (PyTorch's default), ``"different"`` draws independent samples for
each batch entry (one draw of the batched shape), ``"same"`` draws once and shares it.
"""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.errors import OpError
from ember.func.batching import ALWAYS, batched, merge_batch, prim, reshape, rule
from ember.ops.primitive import apply


class RandomUnderVmap(OpError):
    """A random op ran under a vmap whose ``randomness`` is ``"error"``."""


def _refuse(randomness: str, name: str) -> None:
    if randomness == "error":
        raise RandomUnderVmap(f"vmap: {name} is a random operation and vmap's randomness is "
                              "'error'. Hint: pass randomness='different' (independent samples "
                              "per batch entry) or 'same' (one sample shared by all) to vmap, "
                              "or draw the random numbers outside vmap")


def _shape_rule(name: str) -> Any:
    """The rule of a primitive whose output is fixed by its ``shape`` parameter; its inputs
    (``normal_noise``'s std) are only checked, so they pass as they are, batched or not."""
    p = prim(name)

    def batch_sample(b: int, xs: tuple, bs: tuple, *, randomness: str, shape: tuple,
                     **params: Any) -> tuple[Any, bool]:
        _refuse(randomness, name)
        if randomness == "same":
            return apply(p, *xs, shape=shape, **params), False
        return apply(p, *xs, shape=(b,) + tuple(shape), **params), True

    return batch_sample


for _name in ("uniform", "uniform_range", "normal", "randint", "normal_noise"):
    rule(_name)(_shape_rule(_name))


@rule("randperm")
def _randperm(b: int, xs: tuple, bs: tuple, *, randomness: str, shape: tuple, dtype: Any,
              generator: Any, device: Any) -> tuple[Any, bool]:
    _refuse(randomness, "randperm")
    if randomness == "same":
        return apply(prim("randperm"), shape=shape, dtype=dtype, generator=generator,
                     device=device), False
    keys = apply(prim("uniform"), shape=(b,) + tuple(shape), dtype=dtypes.float64, low=0.0,
                 high=1.0, generator=generator, device=device)
    order = apply(prim("argsort"), keys, dim=1, descending=False, stable=False)
    return apply(prim("cast"), order, dtype=dtype), True


@rule("bernoulli")
def _bernoulli(b: int, xs: tuple, bs: tuple, *, randomness: str,
               generator: Any) -> tuple[Any, bool]:
    _refuse(randomness, "bernoulli")
    (p,) = xs
    if randomness == "different":
        return apply(prim("bernoulli"), batched(p, b, bs[0]), generator=generator), True
    if not bs[0]:
        return apply(prim("bernoulli"), p, generator=generator), False
    u = apply(prim("uniform"), shape=tuple(p.shape)[1:], dtype=p.dtype, low=0.0, high=1.0,
              generator=generator, device=p.device)
    return apply(prim("cast"), apply(prim("lt"), u, p), dtype=p.dtype), True


@rule("multinomial")
def _multinomial(b: int, xs: tuple, bs: tuple, *, randomness: str, num_samples: int,
                 replacement: bool, generator: Any) -> tuple[Any, bool]:
    _refuse(randomness, "multinomial")
    (probs,) = xs
    p = prim("multinomial")
    if not bs[0] and randomness == "same":
        return apply(p, probs, num_samples=num_samples, replacement=replacement,
                     generator=generator), False
    if randomness == "same":
        raise OpError("vmap: multinomial with randomness='same' and batched probabilities is "
                      "not supported; use randomness='different'")
    probs = batched(probs, b, bs[0])
    flat = merge_batch(probs) if probs.ndim == 3 else probs
    out = apply(p, flat, num_samples=num_samples, replacement=replacement, generator=generator)
    return reshape(out, tuple(probs.shape)[:-1] + (num_samples,)), True


def _elementwise_rule(name: str) -> Any:
    """The rule of an elementwise sampler of same-shape inputs (``poisson``, ``binomial``,
    ``standard_gamma``, ``von_mises``)."""
    p = prim(name)

    def batch_sample(b: int, xs: tuple, bs: tuple, *, randomness: str,
                     generator: Any) -> tuple[Any, bool]:
        _refuse(randomness, name)
        if not any(bs) and randomness == "same":
            return apply(p, *xs, generator=generator), False
        if randomness == "same":
            raise OpError(f"vmap: {name} with randomness='same' and batched inputs is not "
                          "supported; use randomness='different'")
        return apply(p, *(batched(x, b, i) for x, i in zip(xs, bs)), generator=generator), True

    return batch_sample


for _name in ("poisson", "binomial", "standard_gamma", "von_mises"):
    rule(_name)(_elementwise_rule(_name))

ALWAYS.update(("uniform", "uniform_range", "normal", "randint", "normal_noise", "randperm",
               "bernoulli", "multinomial", "poisson", "binomial", "standard_gamma", "von_mises"))
