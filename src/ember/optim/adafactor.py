"""Adafactor: Adam-like steps with a factored (row × column) second-moment estimate."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ember.errors import ArgumentError, DivisionByZero
from ember.ops.lerp_kernel import lerp_into
from ember.optim.elementwise import (
    ElementwiseOptimizer,
    check_one_element,
    full_state,
    half_add,
    half_lerp_,
    lr_of,
    next_step,
    rounded,
    scalar_state,
    scale_,
)
from ember.optim.optimizer import implementation_defaults
from ember.tensor import Tensor, _wrap
from ember.type_info import finfo

__all__ = ["Adafactor"]


class Adafactor(ElementwiseOptimizer):
    """Adafactor (Shazeer & Stern 2018), PyTorch's update rule. At step ``t``::

        beta = t ** beta2_decay;  rho = min(lr, 1 / sqrt(t))
        alpha = max(eps2, ||p|| / sqrt(numel)) * rho          (before the weight decay)
        p *= 1 - lr * weight_decay
        matrices (factored over the last two dims):
            r = lerp(r, mean(g², -1), beta);  c = lerp(c, mean(g², -2), beta)
            v = r @ c / max(mean(r, -2), eps1)
        vectors and scalars:  v = lerp(v, g², beta)
        u = g / sqrt(max(v, eps1²));  p -= alpha / max(1, rms(u) / d) * u

    ``eps = (eps1, eps2)``; ``eps1=None`` means the machine epsilon of the parameter's dtype.
    State: ``step``, and ``row_var``/``col_var`` (shapes of ``g`` with the last, resp.
    second-to-last, dim 1) for parameters of 2 or more dims, else ``variance``.

    Example:
        >>> w = ember.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        >>> opt = ember.optim.Adafactor([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([[ 0.3360, -1.5355],
                [ 0.2402,  2.4902]], requires_grad=True)
    """

    decays_in_update = True
    group_fallbacks = {"foreach": None}
    supports_complex = False  # (refused at the step, as PyTorch refuses)
    state_shaped_like_params = False  # (row_var, col_var: factored second moments)

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        check_one_element("lr", lr)
        if not 0.0 <= lr:
            raise ArgumentError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ArgumentError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ArgumentError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ArgumentError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ArgumentError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ArgumentError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        **implementation_defaults(foreach=foreach), maximize=maximize)
        super().__init__(params, defaults)

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = scalar_state(p, 0.0)
        if p.ndim > 1:
            xp = p._device.xp
            for key, dim in (("row_var", -1), ("col_var", -2)):
                shape = list(p.shape)
                shape[dim] = 1
                state[key] = _wrap(xp.zeros(shape, dtype=p._data.dtype), p._device)
        else:
            state["variance"] = full_state(p)

    @staticmethod
    def _check_elements(p: Tensor) -> None:
        if p._data.size == 0:
            raise DivisionByZero(f"Adafactor: the parameter of shape {tuple(p.shape)} has no "
                                "elements, so its root mean square (the step size's scale) "
                                "is 0/0; leave empty parameters out of the optimizer")

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        self._check_elements(p)
        xp = p._device.xp
        data = p._data
        lr = lr_of(group)  # (a float32 tensor's arithmetic stays float32, as PyTorch's)
        wd, d = float(group["weight_decay"]), float(group["d"])
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = finfo(p.dtype).eps
        eps1 = float(eps1)
        t = next_step(state)
        beta = t ** float(group["beta2_decay"])
        alpha = max(float(eps2), _rms(xp, data)) * min(lr, 1.0 / math.sqrt(t))
        if wd != 0.0:
            data *= 1 - lr * wd
        square = g * g
        if p.ndim > 1:
            row, col = state["row_var"]._data, state["col_var"]._data
            if row.shape != data.shape[:-1] + (1,) or col.shape[-1] != data.shape[-1] or \
                    col.ndim != data.ndim:  # (NumPy's writes drop leading 1-dims: (3, 4) took
                self._check_state_shapes(p, state, group, None)  # a (1, 3, 4) p silently)
            lerp_into(xp, row, square.mean(axis=-1, keepdims=True), beta)  # (torch's lerp_)
            lerp_into(xp, col, square.mean(axis=-2, keepdims=True), beta)
            var = xp.matmul(row, col)
            var /= xp.maximum(row.mean(axis=-2, keepdims=True), eps1)
        else:
            var = lerp_into(xp, state["variance"]._data, square, beta)
        step = g / xp.sqrt(xp.maximum(var, eps1 * eps1))
        data -= alpha / max(1.0, _rms(xp, step) / d) * step

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update_float` of a float16/bfloat16 ``p`` as PyTorch's ops round: each op in
        float32 rounded once to the dtype, norms too (``||p||`` and ``||u||`` are read back
        from a rounded 0-d tensor), ``add_``'s alpha in the dtype."""
        self._check_elements(p)
        xp = p._device.xp
        f32, data = xp.float32, p._data
        half = data.dtype

        def norm(x: Any, **axis: Any) -> Any:  # (torch.norm: float32 sums, one rounding)
            return rounded(xp, xp.sqrt(xp.sum(xp.square(x.astype(f32)), dtype=f32, **axis)), half)

        lr = float(lr_of(group))
        eps1, eps2 = group["eps"]
        eps1 = finfo(p.dtype).eps if eps1 is None else eps1
        t = next_step(state)
        beta = t ** float(group["beta2_decay"])
        alpha = max(float(eps2), float(norm(data)) / data.size ** 0.5) * min(lr, 1 / t ** 0.5)
        if float(group["weight_decay"]) != 0.0:
            scale_(data, 1.0 - lr * float(group["weight_decay"]))
        g = g.astype(half)
        if p.ndim > 1:
            row, col = state["row_var"]._data, state["col_var"]._data
            for var, axis in ((row, -1), (col, -2)):  # norm(g, dim).square_().div_(size)
                mean = rounded(xp, xp.square(norm(g, axis=axis, keepdims=True)), half)
                half_lerp_(xp, var, rounded(xp, mean / f32(g.shape[axis]), half), beta)
            var = rounded(xp, row.astype(f32) * col.astype(f32), half)  # (row_var @ col_var)
            scale = rounded(xp, xp.mean(row.astype(f32), axis=-2, keepdims=True), half)
            var = rounded(xp, var / xp.maximum(scale, f32(eps1)), half)
        else:
            var = state["variance"]._data
            var = half_lerp_(xp, var, rounded(xp, xp.square(g.astype(f32)), half), beta).astype(f32)
        step = rounded(xp, 1.0 / xp.sqrt(xp.maximum(var, f32(eps1 * eps1))), half)
        step = rounded(xp, step * g.astype(f32), half).astype(half)
        denom = max(1.0, float(norm(step)) / (step.size ** 0.5 * float(group["d"])))
        half_add(xp, data, step, -alpha / denom, out=data)


def _rms(xp: Any, a: Any) -> float:
    """The root mean square of a non-empty backend array, as a Python float."""
    return float(xp.sqrt(xp.vdot(a, a).real)) / math.sqrt(a.size)
