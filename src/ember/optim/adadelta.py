"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.optim.elementwise import (
    ElementwiseOptimizer,
    as_half,
    check_hyper,
    full_state,
    half_add,
    half_decay_squares_,
    next_step,
    rounded,
    scalar_state,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["Adadelta"]


class Adadelta(ElementwiseOptimizer):
    """Adadelta (Zeiler), PyTorch's update rule::

        v = rho * v + (1 - rho) * g * g;   d = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * d * d;   p -= lr * d

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.Adadelta([w])
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.9903, -1.9903], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "capturable": False}

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_hyper(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        **implementation_defaults(capturable=capturable, foreach=foreach,
                                                  differentiable=differentiable))
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["square_avg"] = full_state(p)
        state["acc_delta"] = full_state(p)

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        return "adadelta_update"

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        return state["square_avg"]._data, state["acc_delta"]._data

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        next_step(state)
        rho = float(group["rho"])
        return rho, 1.0 - rho, float(group["eps"]), float(group["lr"])

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        rho, eps = float(group["rho"]), float(group["eps"])
        next_step(state)
        v, u = state["square_avg"]._data, state["acc_delta"]._data
        v *= rho
        v += (1.0 - rho) * g * g
        delta = xp.sqrt(u + eps)
        delta /= xp.sqrt(v + eps)
        delta *= g
        u *= rho
        u += (1.0 - rho) * delta * delta
        p._data -= float(group["lr"]) * delta

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p``: torch's ops each in float32, rounded
        once."""
        xp = p._device.xp
        rho, eps = float(group["rho"]), float(group["eps"])
        next_step(state)
        v, u = state["square_avg"]._data, state["acc_delta"]._data
        f32, half = xp.float32, v.dtype
        g = g.astype(f32)
        half_decay_squares_(xp, v, rho, g, 1.0 - rho)
        eps = f32(as_half(eps, half))  # (square_avg.add(eps).sqrt_(), acc_delta's too)
        std = xp.sqrt(rounded(xp, v.astype(f32) + eps, half)).astype(half)
        delta = xp.sqrt(rounded(xp, u.astype(f32) + eps, half)).astype(half)
        delta = (delta.astype(f32) / std.astype(f32)).astype(half)
        delta = (delta.astype(f32) * g).astype(half)
        half_decay_squares_(xp, u, rho, delta.astype(f32), 1.0 - rho)
        half_add(xp, p._data, delta, -float(group["lr"]), out=p._data)
