"""Stochastic gradient descent, with momentum, dampening and Nesterov momentum."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.errors import ArgumentError
from ember.optim.elementwise import (
    ElementwiseOptimizer,
    add_sparse_,
    check_hyper,
    full_state,
    half_add,
    scale_,
)
from ember.optim.optimizer import COMMON_FALLBACKS, implementation_defaults
from ember.tensor import Tensor, _wrap

__all__ = ["SGD"]


class SGD(ElementwiseOptimizer):
    """Stochastic gradient descent (PyTorch's update rule)::

        g = grad (+ weight_decay * p)
        b = g at the first step, then momentum * b + (1 - dampening) * g
        p -= lr * (g + momentum * b if nesterov else b)     # b = g when momentum is 0

    ``foreach``/``fused`` are accepted for porting and change nothing (one implementation).
    A sparse gradient (``nn.Embedding(sparse=True)``) updates only its rows, with a sparse
    momentum buffer, as PyTorch's; ``weight_decay`` is refused with it, as there.

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([ 0.0620, -0.1240], requires_grad=True)
    """

    group_fallbacks = {**COMMON_FALLBACKS, "nesterov": False, "fused": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_hyper(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ArgumentError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        **implementation_defaults(foreach=foreach, differentiable=differentiable,
                                                  fused=fused))
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        if p.is_meta and float(group["momentum"]) != 0.0:  # (elsewhere the first update
            state["momentum_buffer"] = full_state(p)        # copies the gradient in)

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        # (numba's one pass: resnet18's 11M parameters 20.7 → 11.3 ms)
        return "sgd_update" if float(group["momentum"]) != 0.0 else "sgd_plain_update"

    def looped_min_size(self, group: dict[str, Any]) -> int:
        # (without momentum NumPy's two passes cost less than the kernel's call up to ~10k
        # elements, measured on 1 core: 2.0 against 3.1 µs at 10, 4.3 against 4.5 at 10k)
        return 16384 if float(group["momentum"]) == 0.0 else 0

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple | None:
        if float(group["momentum"]) == 0.0:
            return ()
        buf = state.get("momentum_buffer")
        return None if buf is None else (buf._data,)

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        if float(group["momentum"]) == 0.0:
            return (float(group["lr"]),)
        return (float(group["momentum"]), 1.0 - float(group["dampening"]), float(group["lr"]),
                bool(group["nesterov"]))

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        momentum = float(group["momentum"])
        if momentum != 0.0:
            buf = state.get("momentum_buffer")
            if buf is None:
                state["momentum_buffer"] = _wrap(p._device.xp.array(g, copy=True), p._device)
                buf = g
            else:
                buf = buf._data
                dampening = float(group["dampening"])
                buf *= momentum
                buf += g if dampening == 0.0 else (1.0 - dampening) * g
            g = g + momentum * buf if group["nesterov"] else buf
        p._data -= float(group["lr"]) * g

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p`` with PyTorch's roundings: each of its
        ``mul_``/``add_`` rounds once to the dtype, ``momentum`` in float32 for ``mul_``, the
        ``alpha`` of an ``add_`` rounded to the dtype (NumPy kept ``lr`` in float32 for
        bfloat16, and rounded ``momentum`` to float16 for float16: 0.9 -> 0.89990234)."""
        xp = p._device.xp
        momentum = float(group["momentum"])
        if momentum != 0.0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = xp.array(g, dtype=p._data.dtype, copy=True)
                state["momentum_buffer"] = _wrap(buf, p._device)
            else:
                buf = buf._data
                scale_(buf, momentum)
                half_add(xp, buf, g, 1.0 - float(group["dampening"]), out=buf)
            g = half_add(xp, g, buf, momentum) if group["nesterov"] else buf
        half_add(xp, p._data, g, -float(group["lr"]), out=p._data)

    def sparse_update(self, p: Tensor, grad: Any, state: dict[str, Any],
                      group: dict[str, Any]) -> None:
        if float(group["weight_decay"]) != 0.0:
            raise RuntimeError("SGD: weight_decay is not supported with sparse gradients (in "
                               "PyTorch: add(sparse, dense) is not supported). Hint: set "
                               "weight_decay=0 for the sparse parameters' group")
        g = -grad if group["maximize"] else grad
        momentum = float(group["momentum"])
        if momentum != 0.0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = g.detach()
            else:
                dampening = float(group["dampening"])
                buf = buf * momentum + (g if dampening == 0.0 else g * (1.0 - dampening))
            state["momentum_buffer"] = buf = buf.coalesce()  # (its size stays bounded)
            g = g + buf * momentum if group["nesterov"] else buf
        add_sparse_(p, g, -float(group["lr"]))
