"""Adagrad: per-coordinate learning rates from the sum of squared gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.optim.elementwise import (
    ElementwiseOptimizer,
    check_hyper,
    coalesced_rows,
    full_state,
    half_addcdiv_,
    half_sqrt_add_eps,
    lr_of,
    next_step,
    scalar_state,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["Adagrad"]


class Adagrad(ElementwiseOptimizer):
    """Adagrad (Duchi et al.), PyTorch's update rule::

        s += g * g;   p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)

    The state (``sum`` starting at ``initial_accumulator_value``) is made at construction, as
    in PyTorch. A sparse gradient updates only its rows (``weight_decay`` must then be 0, as
    in PyTorch).

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.Adagrad([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.7805, -1.7758], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "fused": None}

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_hyper(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                    initial_accumulator_value=initial_accumulator_value)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, maximize=maximize,
                        **implementation_defaults(foreach=foreach, differentiable=differentiable,
                                                  fused=fused))
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.init_state(p, self.state[p], group)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["sum"] = full_state(p, float(group["initial_accumulator_value"]))

    def share_memory(self) -> None:
        """Moves each parameter's ``sum`` accumulator to shared memory (``share_memory_``), as
        PyTorch's, for Hogwild training where worker processes step one optimizer.

        Example:
            >>> w = ember.zeros(2, requires_grad=True)
            >>> opt = ember.optim.Adagrad([w]); opt.share_memory()
            >>> opt.state[w]["sum"].is_shared()
            True
        """
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        return "adagrad_update"

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        return (state["sum"]._data,)

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        return self._step_size(state, group), float(group["eps"])

    @staticmethod
    def _step_size(state: dict[str, Any], group: dict[str, Any]) -> float:
        """Counts the step; the learning rate decayed to it."""
        t = next_step(state)
        return lr_of(group) / (1.0 + (t - 1.0) * float(group["lr_decay"]))

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        clr = self._step_size(state, group)
        s = state["sum"]._data
        s += g * g
        std = p._device.xp.sqrt(s)
        std += float(group["eps"])
        p._data -= clr * (g / std)

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p``: torch's ops each in float32, rounded
        once."""
        clr = self._step_size(state, group)
        s = state["sum"]._data
        xp, f32 = p._device.xp, p._device.xp.float32
        g = g.astype(f32)
        s[...] = s.astype(f32) + g * g
        half_addcdiv_(xp, p._data, g, half_sqrt_add_eps(xp, s, group["eps"]), -clr)

    def sparse_update(self, p: Tensor, grad: Any, state: dict[str, Any],
                      group: dict[str, Any]) -> None:
        if float(group["weight_decay"]) != 0.0:
            raise RuntimeError("Adagrad: weight_decay option is not compatible with sparse "
                               "gradients (as in PyTorch)")
        t = next_step(state)
        clr = lr_of(group) / (1.0 + (t - 1.0) * float(group["lr_decay"]))
        index, values = coalesced_rows(grad, group["maximize"])
        s = state["sum"]._data
        s[index] += values * values
        std = p._device.xp.sqrt(s[index])
        std += float(group["eps"])
        p._data[index] -= clr * (values / std)
