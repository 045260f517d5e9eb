"""RMSprop: gradients scaled by a running root mean square, optionally centered."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.optim.elementwise import (
    ElementwiseOptimizer,
    check_hyper,
    full_state,
    half_add,
    half_addcdiv_,
    half_decay_squares_,
    half_lerp_,
    half_sqrt_add_eps,
    next_step,
    scalar_state,
    scale_,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["RMSprop"]


class RMSprop(ElementwiseOptimizer):
    """RMSprop (Hinton), PyTorch's update rule::

        v = alpha * v + (1 - alpha) * g * g
        centered: a = lerp(a, g, 1 - alpha), v' = v - a * a      (else v' = v)
        d = sqrt(v') + eps;   p -= lr * g / d
        with momentum: b = momentum * b + g / d,  p -= lr * b

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.RMSprop([w], lr=0.01, momentum=0.9, centered=True)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.5497, -1.5407], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "capturable": False, "momentum": 0,
                       "centered": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_hyper(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, maximize=maximize,
                        **implementation_defaults(capturable=capturable, foreach=foreach,
                                                  differentiable=differentiable))
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["square_avg"] = full_state(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = full_state(p)
        if group["centered"]:
            state["grad_avg"] = full_state(p)

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        return "rmsprop_update"

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        v = state["square_avg"]._data  # (also standing for the states the options leave out)
        return (v, state["grad_avg"]._data if group["centered"] else v,
                state["momentum_buffer"]._data if group["momentum"] > 0 else v)

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        next_step(state)
        alpha = float(group["alpha"])
        return (alpha, 1.0 - alpha, float(group["eps"]), float(group["lr"]),
                float(group["momentum"]), bool(group["centered"]), group["momentum"] > 0)

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        alpha = float(group["alpha"])
        next_step(state)
        v = state["square_avg"]._data
        v *= alpha
        v += (1.0 - alpha) * g * g
        if group["centered"]:
            a = state["grad_avg"]._data
            a += (1.0 - alpha) * (g - a)
            avg = xp.sqrt(v - a * a)
        else:
            avg = xp.sqrt(v)
        avg += float(group["eps"])
        lr = float(group["lr"])
        momentum = float(group["momentum"])
        if momentum > 0:
            buf = state["momentum_buffer"]._data
            buf *= momentum
            buf += g / avg
            p._data -= lr * buf
        else:
            p._data -= lr * (g / avg)

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p`` as PyTorch's ops round: each computes in
        float32 with its scalars in float32 (but ``add``'s: alpha, eps) and rounds once to the
        dtype (NumPy rounded ``g / avg`` before ``lr`` multiplied it, and float16's
        ``v *= alpha`` took float16(0.99))."""
        xp = p._device.xp
        f32 = xp.float32
        alpha = float(group["alpha"])
        next_step(state)
        g = g.astype(f32)
        v = half_decay_squares_(xp, state["square_avg"]._data, alpha, g, 1.0 - alpha)
        if group["centered"]:
            a = half_lerp_(xp, state["grad_avg"]._data, g, 1.0 - alpha).astype(f32)
            avg = (v.astype(f32) - a * a).astype(v.dtype)
        else:
            avg = v
        avg = half_sqrt_add_eps(xp, avg, group["eps"])
        lr = float(group["lr"])
        momentum = float(group["momentum"])
        if momentum > 0:
            buf = state["momentum_buffer"]._data
            scale_(buf, momentum)
            buf[...] = buf.astype(f32) + g / avg            # .addcdiv_(g, avg)
            half_add(xp, p._data, buf, -lr, out=p._data)
        else:
            half_addcdiv_(xp, p._data, g, avg, -lr)
