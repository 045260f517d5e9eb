"""Lion: sign-of-momentum updates with decoupled weight decay (not in PyTorch)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.optim.elementwise import ElementwiseOptimizer, check_hyper, full_state
from ember.tensor import Tensor

__all__ = ["Lion"]


class Lion(ElementwiseOptimizer):
    """Lion, "Symbolic Discovery of Optimization Algorithms" (Chen et al. 2023), Algorithm 2::

        c = beta1 * m + (1 - beta1) * g
        p *= 1 - lr * weight_decay;   p -= lr * sign(c)
        m = beta2 * m + (1 - beta2) * g

    PyTorch has no Lion; the names follow its optimizers (``betas``, ``weight_decay``,
    ``maximize``; state ``exp_avg``). Use a learning rate 3-10x smaller than AdamW's and a
    weight decay 3-10x larger, as the paper advises.

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.Lion([w], lr=0.1, weight_decay=0.5)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.5721, -1.4295], requires_grad=True)
    """

    decoupled_weight_decay = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-4,
                 betas: tuple[float, float] = (0.9, 0.99), weight_decay: float = 0.0, *,
                 maximize: bool = False) -> None:
        check_hyper(lr=lr, betas=betas, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay,
                                      maximize=maximize))

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["exp_avg"] = full_state(p)

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        beta1, beta2 = (float(b) for b in group["betas"])
        m = state["exp_avg"]._data
        c = m * beta1
        c += (1.0 - beta1) * g
        p._data -= float(group["lr"]) * xp.sign(c)
        m *= beta2
        m += (1.0 - beta2) * g
