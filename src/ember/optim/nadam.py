"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.optim.elementwise import (
    ElementwiseOptimizer,
    check_hyper,
    full_state,
    half_addcdiv_,
    half_decay_squares_,
    half_lerp_,
    half_sqrt_add_eps,
    lr_of,
    next_step,
    scalar_state,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["NAdam"]


class NAdam(ElementwiseOptimizer):
    """NAdam (Dozat), PyTorch's update rule::

        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay));   P_t = mu_1 ... mu_t
        m = lerp(m, g, 1 - beta1);   v = beta2 * v + (1 - beta2) * g * g
        d = sqrt(v / (1 - beta2**t)) + eps
        p -= lr * (1 - mu_t) / (1 - P_t) * g / d + lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / d

    ``P_t`` (``mu_product``) is kept in float32, as PyTorch keeps it.

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.NAdam([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.7527, -1.7475], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "capturable": False, "decoupled_weight_decay": False}

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_hyper(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay,
                    momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        **implementation_defaults(foreach=foreach, capturable=capturable,
                                                  differentiable=differentiable))
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["mu_product"] = scalar_state(p, 1.0)
        state["exp_avg"] = full_state(p)
        state["exp_avg_sq"] = full_state(p)

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        return "nadam_update"

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        return state["exp_avg"]._data, state["exp_avg_sq"]._data

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        beta1, beta2, t, grad_size, moment_size = self._sizes(state, group)
        return (1.0 - beta1, beta2, 1.0 - beta2, 1.0 - beta2 ** t, float(group["eps"]),
                grad_size, moment_size)

    @staticmethod
    def _sizes(state: dict[str, Any], group: dict[str, Any]) -> tuple[float, ...]:
        """Counts the step and moves ``mu_product``; the betas, the step, and the sizes of
        the gradient's and the moment's parts of the update."""
        beta1, beta2 = (float(b) for b in group["betas"])
        lr, decay = lr_of(group), float(group["momentum_decay"])
        t = next_step(state)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1.0) * decay))
        product = state["mu_product"]._data
        product *= mu
        product = float(product)
        return (beta1, beta2, t, lr * (1.0 - mu) / (1.0 - product),
                lr * mu_next / (1.0 - product * mu_next))

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        beta1, beta2, t, grad_size, moment_size = self._sizes(state, group)
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        m += (1.0 - beta1) * (g - m)
        v *= beta2
        v += (1.0 - beta2) * g * g
        denom = xp.sqrt(v / (1.0 - beta2 ** t))
        denom += float(group["eps"])
        p._data -= grad_size * (g / denom)
        p._data -= moment_size * (m / denom)

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p``: torch's ops each in float32, rounded
        once."""
        xp = p._device.xp
        beta1, beta2, t, grad_size, moment_size = self._sizes(state, group)
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        f32, half = xp.float32, m.dtype
        g = g.astype(f32)
        half_lerp_(xp, m, g, 1.0 - beta1)
        half_decay_squares_(xp, v, beta2, g, 1.0 - beta2)
        denom = half_sqrt_add_eps(xp, (v.astype(f32) / f32(1.0 - beta2 ** t)).astype(half),
                                  group["eps"])
        half_addcdiv_(xp, p._data, g, denom, -grad_size)
        half_addcdiv_(xp, p._data, m, denom, -moment_size)
