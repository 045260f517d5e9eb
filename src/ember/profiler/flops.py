"""FLOP counts of recorded ops: each primitive's own ``flops`` rule, or one registered here for
a heavy primitive whose op file has none yet (:func:`register_flops`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ember.ops.primitive import PRIMITIVES, Primitive, TensorSpec

_RULES: dict[str, Callable[..., int]] = {}


def register_flops(name: str) -> Callable:
    """Decorator: ``rule(*specs, **params) -> int`` counts the FLOPs of primitive ``name``
    (used only when the primitive's own class has no ``flops`` rule)."""
    def register(rule: Callable[..., int]) -> Callable[..., int]:
        _RULES[name] = rule
        return rule
    return register


def flops_of(prim: Primitive, specs: tuple, params: dict | None) -> int:
    """FLOPs of one application of ``prim`` to inputs of these specs (0 if unknown)."""
    params = params or {}
    try:
        if type(prim).flops is not Primitive.flops:
            return int(prim.flops(*specs, **params))
        rule = _RULES.get(prim.name)
        return int(rule(*specs, **params)) if rule is not None else 0
    except Exception:  # noqa: BLE001 - a cost rule must never break a profile
        return 0


@register_flops("einsum")
def _einsum(*specs: TensorSpec, equation: str, **_: Any) -> int:
    """2 × (product of the sizes of every index) for two operands: a multiply and an add per
    term of the contraction (as for matmul); one per element for a single operand."""
    terms = equation.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for term, s in zip(terms, specs):
        sizes.update(zip(term, s.shape))
    n = math.prod(sizes.values())
    return 2 * n if len(specs) > 1 else n


def _elements(*specs: TensorSpec, **_: Any) -> int:
    return math.prod(specs[0].shape)


for _name in ("relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "softmax", "log_softmax",
              "sqrt", "rsqrt", "neg", "sum", "erf", "softplus", "elu", "elu_from_output",
              "leaky_relu", "softshrink", "hardshrink",
              "hardsigmoid", "hardswish", "mish", "prelu", "glu"):
    if _name in PRIMITIVES:
        register_flops(_name)(_elements)
