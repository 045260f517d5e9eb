"""RAdam: Adam with the variance of the adaptive learning rate rectified."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ember.optim.elementwise import (
    ElementwiseOptimizer,
    check_hyper,
    full_state,
    half_decay_squares_,
    half_lerp_,
    half_sqrt_add_eps,
    next_step,
    rounded,
    scalar_state,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["RAdam"]


class RAdam(ElementwiseOptimizer):
    """RAdam (Liu et al.), PyTorch's update rule::

        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g;  m^ = m / (1 - beta1**t)
        rho_inf = 2 / (1 - beta2) - 1;   rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        rho_t > 5:  p -= lr * m^ * r_t * sqrt(1 - beta2**t) / (sqrt(v) + eps)
        otherwise:  p -= lr * m^          (r_t: the variance rectification term)

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.RAdam([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.4623, -0.9246], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "capturable": False, "decoupled_weight_decay": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_hyper(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay,
                        **implementation_defaults(foreach=foreach, capturable=capturable,
                                                  differentiable=differentiable))
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["exp_avg"] = full_state(p)
        state["exp_avg_sq"] = full_state(p)

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        return "radam_update"

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        return state["exp_avg"]._data, state["exp_avg_sq"]._data

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        beta1, beta2, size, rectified = self._size(state, group)
        return 1.0 - beta1, beta2, 1.0 - beta2, float(group["eps"]), size, rectified

    @staticmethod
    def _size(state: dict[str, Any], group: dict[str, Any]) -> tuple[float, float, float, bool]:
        """Counts the step; the betas, the step's size and whether it is rectified (the
        variance's estimate is usable: ``rho_t > 5``)."""
        beta1, beta2 = (float(b) for b in group["betas"])
        lr = float(group["lr"])
        t = next_step(state)
        bc1, bc2 = 1.0 - beta1 ** t, 1.0 - beta2 ** t
        rect = _rectification(beta2, t)
        if rect is not None:
            return beta1, beta2, lr / bc1 * math.sqrt(bc2) * rect, True
        return beta1, beta2, lr / bc1, False

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        beta1, beta2, size, rectified = self._size(state, group)
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        m += (1.0 - beta1) * (g - m)
        v *= beta2
        v += (1.0 - beta2) * g * g
        if rectified:
            denom = xp.sqrt(v)
            denom += float(group["eps"])
            p._data -= size * (m / denom)
        else:
            p._data -= size * m

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p`` (it counts the step), as PyTorch's
        ops round: each in float32, rounded once, ``m / bc1 * lr * (sqrt(bc2) / d) * rect``,
        where the float ``sqrt(bc2)`` over the tensor ``d`` is ``d.reciprocal() * sqrt(bc2)``
        (``Tensor.__rtruediv__``): the reciprocal rounded to the dtype first."""
        xp = p._device.xp
        f32 = xp.float32
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        half = m.dtype
        beta1, beta2, _, _ = self._size(state, group)
        t = float(state["step"])
        g = g.astype(f32)
        half_lerp_(xp, m, g, 1.0 - beta1)
        half_decay_squares_(xp, v, beta2, g, 1.0 - beta2)
        step = (m.astype(f32) / f32(1.0 - beta1 ** t)).astype(half)
        step = (step.astype(f32) * f32(float(group["lr"]))).astype(half)
        rect = _rectification(beta2, t)
        if rect is not None:
            denom = half_sqrt_add_eps(xp, v, group["eps"])
            recip = rounded(xp, f32(1.0) / denom, half)  # (s / d is d.reciprocal() * s)
            adaptive = (recip * f32(math.sqrt(1.0 - beta2 ** t))).astype(half)
            step = (step.astype(f32) * adaptive.astype(f32)).astype(half)
            step = (step.astype(f32) * f32(rect)).astype(half)
        p._data[...] = p._data.astype(f32) - step.astype(f32)  # (param.add_(step, alpha=-1))


def _rectification(beta2: float, t: float) -> float | None:
    """RAdam's variance rectification term at step ``t``, or None where the variance's
    estimate is not yet usable (``rho_t <= 5``)."""
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * t * beta2 ** t / (1.0 - beta2 ** t)
    if rho_t <= 5.0:
        return None
    return math.sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                     / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
