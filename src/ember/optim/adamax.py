"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.optim.elementwise import (
    ElementwiseOptimizer,
    as_half,
    check_hyper,
    full_state,
    half_addcdiv_,
    half_lerp_,
    lr_of,
    next_step,
    scalar_state,
    scale_,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["Adamax"]


class Adamax(ElementwiseOptimizer):
    """Adamax (Kingma & Ba), PyTorch's update rule::

        m = lerp(m, g, 1 - beta1);   u = max(beta2 * u, |g| + eps)
        p -= lr / (1 - beta1**t) * m / u

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.Adamax([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.7155, -1.7076], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "capturable": False}

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_hyper(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        maximize=maximize,
                        **implementation_defaults(foreach=foreach, differentiable=differentiable,
                                                  capturable=capturable))
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["exp_avg"] = full_state(p)
        state["exp_inf"] = full_state(p)

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        return "adamax_update"

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        return state["exp_avg"]._data, state["exp_inf"]._data

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        beta1, beta2 = (float(b) for b in group["betas"])
        t = next_step(state)
        return (1.0 - beta1, beta2, float(group["eps"]),
                lr_of(group) / (1.0 - beta1 ** t))

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        beta1, beta2 = (float(b) for b in group["betas"])
        t = next_step(state)
        m, u = state["exp_avg"]._data, state["exp_inf"]._data
        m += (1.0 - beta1) * (g - m)
        u *= beta2
        bound = xp.abs(g)
        bound += float(group["eps"])
        xp.maximum(u, bound, out=u)
        p._data -= lr_of(group) / (1.0 - beta1 ** t) * (m / u)

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p``: torch's ops each in float32, rounded
        once."""
        xp = p._device.xp
        beta1, beta2 = (float(b) for b in group["betas"])
        t = next_step(state)
        m, u = state["exp_avg"]._data, state["exp_inf"]._data
        f32 = xp.float32
        half_lerp_(xp, m, g, 1.0 - beta1)
        scale_(u, beta2)
        bound = (xp.abs(g.astype(f32)) + f32(as_half(group["eps"], u.dtype))).astype(u.dtype)
        xp.maximum(u, bound, out=u)
        half_addcdiv_(xp, p._data, m, u, -(lr_of(group) / (1.0 - beta1 ** t)))
