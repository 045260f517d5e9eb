"""ASGD: stochastic gradient descent that also keeps a running average of the iterates."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ember.optim.elementwise import (
    ElementwiseOptimizer,
    check_hyper,
    full_state,
    half_add,
    lr_of,
    next_step,
    scalar_state,
    scale_,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["ASGD"]


class ASGD(ElementwiseOptimizer):
    """Averaged SGD (Polyak & Juditsky), PyTorch's update rule::

        p *= 1 - lambd * eta;   p -= eta * g
        ax = p while mu = 1, then ax += mu * (p - ax)            (the average of the iterates)
        eta = lr / (1 + lambd * lr * t) ** alpha;   mu = 1 / max(1, t - t0)

    The parameters follow the plain SGD iterates; the average is ``state["ax"]`` (copy it
    into the model for evaluation). ``eta`` and ``mu`` are float32, as PyTorch keeps them.

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.ASGD([w], lr=0.1, t0=0)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w, opt.state[w]["ax"]
        (tensor([ 0.5120, -1.0240], requires_grad=True), tensor([ 0.5760, -1.1520]))
    """

    group_fallbacks = {**COMMON_FALLBACKS, "capturable": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_hyper(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        maximize=maximize,
                        **implementation_defaults(foreach=foreach, differentiable=differentiable,
                                                  capturable=capturable))
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["eta"] = scalar_state(p, float(group["lr"]))
        state["mu"] = scalar_state(p, 1.0)
        state["ax"] = full_state(p)

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        ax = state["ax"]._data
        if ax.shape != p._data.shape and np.broadcast_shapes(ax.shape, p._data.shape) != ax.shape:
            self._check_state_shapes(p, state, group, None)  # (as torch's ax.copy_(param); NumPy's
            # ax[...] = p drops p's leading 1-dims, and (6,) took a (1, 6) p silently)
        lr, lambd = lr_of(group), float(group["lambd"])
        t = next_step(state)
        eta, mu = state["eta"]._data, state["mu"]._data
        scale_(p._data, 1.0 - lambd * float(eta))  # (param.mul_(1 - lambd * eta))
        if ax.dtype.itemsize == 2:  # (float16/bfloat16, as torch's add_: alpha in the dtype)
            half_add(p._device.xp, p._data, g, -float(eta), out=p._data)
        else:
            p._data -= float(eta) * g
        if float(mu) != 1.0:  # (ax.add_(param.sub(ax).mul_(mu)))
            ax += ((p._data - ax) * np.float32(mu)).astype(ax.dtype, copy=False)
        else:
            ax[...] = p._data
        # (rounded to float32 also where a loaded state made them float64, as PyTorch's)
        eta[...] = np.float32(lr / (1.0 + lambd * lr * t) ** float(group["alpha"]))
        mu[...] = np.float32(1.0 / max(1.0, t - float(group["t0"])))
