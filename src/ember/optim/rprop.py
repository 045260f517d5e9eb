"""Rprop: per-coordinate step sizes that grow while the gradient keeps its sign."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.errors import ArgumentError
from ember.ops.relu_kernel import sign_array
from ember.optim.elementwise import (
    ElementwiseOptimizer,
    check_hyper,
    full_state,
    next_step,
    scalar_state,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["Rprop"]


class Rprop(ElementwiseOptimizer):
    """Resilient backpropagation (Riedmiller & Braun), PyTorch's update rule::

        s = g * prev:   step_size *= eta_plus (s > 0), eta_minus (s < 0) or 1 (0 or NaN),
                        clamped to [step_size_min, step_size_max];   g = 0 where s < 0
        p -= sign(g) * step_size;   prev = g       (sign(NaN) = 0, as torch.sign)

    Only the sign of the gradient is used; ``step_size`` starts at ``lr`` everywhere. It suits
    full-batch training: minibatch noise flips the signs and shrinks the steps.

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.Rprop([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.6360, -1.6360], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "capturable": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_hyper(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ArgumentError(f"Invalid eta values: {etas[0]}, {etas[1]} "
                                "(need 0 < eta_minus < 1 < eta_plus)")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                        maximize=maximize,
                        **implementation_defaults(foreach=foreach, capturable=capturable,
                                                  differentiable=differentiable))
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["prev"] = full_state(p)
        state["step_size"] = full_state(p, float(group["lr"]))

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        eta_minus, eta_plus = (float(e) for e in group["etas"])
        low, high = (float(s) for s in group["step_sizes"])
        next_step(state)
        prev, step_size = state["prev"]._data, state["step_size"]._data
        factor = xp.empty_like(prev)  # (an array also for 0-d parameters: written below)
        xp.multiply(g, prev, out=factor)
        flipped, grown = factor < 0, factor > 0
        factor[...] = 1.0  # (a zero or NaN product: PyTorch's sign(NaN) is 0)
        factor[grown] = eta_plus
        factor[flipped] = eta_minus
        step_size *= factor
        xp.clip(step_size, low, high, out=step_size)
        g = xp.where(flipped, 0, g)  # no step, and no sign memory, after a sign change
        # (a NaN gradient moves nothing, as PyTorch's sign(NaN) = 0; prev keeps the NaN)
        p._data -= sign_array(xp, g) * step_size
        prev[...] = g
