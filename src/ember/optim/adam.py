"""Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ember.errors import ArgumentError
from ember.optim.elementwise import (
    ElementwiseOptimizer,
    bias_correction,
    check_hyper,
    full_state,
    half_addcdiv_,
    half_decay_squares_,
    half_lerp_,
    half_sqrt_add_eps,
    lr_of,
    next_step,
    scalar_state,
    tensor_scalar,
    weak,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor

__all__ = ["Adam", "AdamW"]


class Adam(ElementwiseOptimizer):
    """Adam (Kingma & Ba), PyTorch's update rule::

        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g   (v_max = max(v_max, v))
        p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    ``weight_decay`` adds ``wd * p`` to the gradient, or with ``decoupled_weight_decay=True``
    shrinks ``p *= 1 - lr * wd`` (that is :class:`AdamW`). ``foreach``/``fused``/``capturable``
    are accepted for porting and change nothing.

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.Adam([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.7016, -1.7006], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "amsgrad": False, "capturable": False,
                       "decoupled_weight_decay": False, "fused": None}
    sparse_refusal = "Adam"  # (AdamW's refusal too, as PyTorch's)

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ArgumentError("lr as a Tensor is not supported for capturable=False and "
                                "foreach=True (as in PyTorch); leave foreach=None or give "
                                "capturable=True")
        check_hyper(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize,
                        **implementation_defaults(foreach=foreach, capturable=capturable,
                                                  differentiable=differentiable, fused=fused),
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        state["exp_avg"] = full_state(p)
        state["exp_avg_sq"] = full_state(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = full_state(p)

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        # (numba's one pass, measured on 2 cores: gpt's 3.3M parameters 8.3 → 3.2 ms a step)
        return "adam_update"

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        v = state["exp_avg_sq"]._data  # (also the unused v_max without amsgrad)
        return (state["exp_avg"]._data, v,
                state["max_exp_avg_sq"]._data if group["amsgrad"] else v)

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        keep_new, beta2, step_size, root = _corrected(group, next_step(state),
                                                      state["exp_avg"]._data.dtype)
        return (keep_new, beta2, 1.0 - beta2, root, float(group["eps"]), step_size,
                bool(group["amsgrad"]))

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        keep_new, beta2, step_size, root = _corrected(group, next_step(state), m.dtype)
        m += keep_new * (g - m)
        v *= beta2
        v += (1.0 - beta2) * g * g
        if group["amsgrad"]:
            v = xp.maximum(state["max_exp_avg_sq"]._data, v, out=state["max_exp_avg_sq"]._data)
        denom = xp.sqrt(v)
        denom /= root
        denom += float(group["eps"])
        denom = m / denom
        denom *= step_size
        p._data -= denom

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p`` as PyTorch's ops round: each computes in
        float32 with float32 scalars and rounds once to the dtype (NumPy's ``m / denom``
        rounded before the step size multiplied it)."""
        xp = p._device.xp
        f32 = xp.float32
        keep_new, beta2, step_size, root = _corrected(group, next_step(state), p._data.dtype)
        g = g.astype(f32)
        m = half_lerp_(xp, state["exp_avg"]._data, g, keep_new)
        v = half_decay_squares_(xp, state["exp_avg_sq"]._data, beta2, g, 1.0 - beta2)
        if group["amsgrad"]:
            v = xp.maximum(state["max_exp_avg_sq"]._data, v, out=state["max_exp_avg_sq"]._data)
        denom = half_sqrt_add_eps(xp, v, group["eps"], root)
        half_addcdiv_(xp, p._data, m, denom, -step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay``
    before the Adam step; ``weight_decay`` defaults to 0.01.

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.AdamW([w], lr=0.1, weight_decay=0.05)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.6883, -1.6723], requires_grad=True)
    """

    decoupled_weight_decay = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:  # (whatever was loaded, as PyTorch's AdamW)
            group["decoupled_weight_decay"] = True


def _corrected(group: dict[str, Any], t: float, dtype: Any) -> tuple[Any, Any, Any, Any]:
    """``1 - beta1`` (``exp_avg``'s lerp weight), ``beta2``, the step size
    ``lr / (1 - beta1 ** t)`` and ``sqrt(1 - beta2 ** t)`` at step ``t``, for parameters of
    ``dtype``. Tensor betas are PyTorch's tensor arithmetic: the corrections in their dtype
    (a float32 tensor lr with float64 betas gives a float64 step size), and the lerp weight
    from ``beta1`` cast to the parameters' (real) dtype (float32 betas made float64
    parameters 1.5e-6 apart in 5 steps, bfloat16's 0.01 apart, when read as floats).
    ``fused=True`` reads tensor betas as floats, as PyTorch's fused kernel."""
    beta1, beta2 = group["betas"]
    if group.get("fused") or (not isinstance(beta1, Tensor) and not isinstance(beta2, Tensor)):
        beta1, beta2 = float(beta1), float(beta2)
        return (1.0 - beta1, beta2, lr_of(group) / (1.0 - beta1 ** t),
                math.sqrt(1.0 - beta2 ** t))
    beta1, beta2 = tensor_scalar(beta1), tensor_scalar(beta2)
    second = bias_correction(beta2, t)
    root = math.sqrt(second) if isinstance(second, float) else np.sqrt(second)
    lr, first = tensor_scalar(group["lr"]), bias_correction(beta1, t)
    if isinstance(group["lr"], Tensor) or not isinstance(first, np.generic):
        step_size = lr / first  # (two tensors promote; a NumPy lr is a number over a tensor:
    else:                       # the tensor's reciprocal times it, in the tensor's dtype)
        step_size = np.reciprocal(first) * weak(lr)
    keep_new = 1.0 - beta1
    if isinstance(group["betas"][0], Tensor):
        real = np.finfo(dtype).dtype if np.dtype(dtype).kind == "c" else dtype
        keep_new = float(np.asarray(1.0 - float(np.asarray(beta1, dtype=real)), dtype=real))
    return weak(keep_new), weak(beta2), weak(step_size), weak(root)
