"""SparseAdam: Adam for sparse gradients, updating only the rows a gradient names."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ember.errors import ArgumentError
from ember.optim.elementwise import (
    ElementwiseOptimizer,
    check_hyper,
    check_one_element,
    coalesced_rows,
    full_state,
)
from ember.tensor import Tensor

__all__ = ["SparseAdam"]


class SparseAdam(ElementwiseOptimizer):
    """Adam's update applied lazily, as PyTorch's ``SparseAdam``: the moments of a row move
    only at steps whose (sparse) gradient names that row::

        m[i] += (1 - beta1) * (g - m[i]);   v[i] += (1 - beta2) * (g * g - v[i])
        p[i] -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m[i] / (sqrt(v[i]) + eps)

    Dense gradients are refused (use :class:`Adam`), as in PyTorch.

    Example:
        >>> emb = ember.nn.Embedding(4, 2, sparse=True)
        >>> opt = ember.optim.SparseAdam(emb.parameters(), lr=0.1)
        >>> emb(ember.tensor([1])).sum().backward(); opt.step()
        >>> emb.weight.grad.layout
        ember.sparse_coo
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        check_one_element("lr", lr)
        if not 0.0 < lr:
            raise ArgumentError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ArgumentError(f"Invalid epsilon value: {eps}")
        check_hyper(betas=betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize))
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, param in enumerate(group["params"]) if param.is_complex()]
        if complex_params:  # (PyTorch's check, made when built)
            raise ArgumentError(f"Complex params at indices {complex_params}: SparseAdam does not "
                                "support complex parameters. Hint: step view_as_real of them")

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam "
                           "instead")

    def sparse_update(self, p: Tensor, grad: Any, state: dict[str, Any],
                      group: dict[str, Any]) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"], state["exp_avg_sq"] = full_state(p), full_state(p)
        state["step"] = int(state["step"]) + 1  # (an int, as PyTorch's, also once loaded)
        index, values = coalesced_rows(grad, group["maximize"])
        if not values.size:
            return
        beta1, beta2 = group["betas"]
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        old_m, old_v = m[index], v[index]
        m_step = (values - old_m) * (1 - beta1)
        v_step = (values * values - old_v) * (1 - beta2)
        m[index] += m_step
        v[index] += v_step
        denom = p._device.xp.sqrt(v_step + old_v) + group["eps"]
        t = state["step"]
        step_size = group["lr"] * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        p._data[index] += -step_size * ((m_step + old_m) / denom)
