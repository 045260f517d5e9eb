"""Muon: momentum orthogonalized by a Newton–Schulz iteration, for 2-D weight matrices."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ember.backend import gemm
from ember.errors import ArgumentError
from ember.ops.lerp_kernel import Lerp, lerp_into
from ember.optim.elementwise import ElementwiseOptimizer, check_one_element, full_state, lr_of
from ember.tensor import Tensor

__all__ = ["Muon"]

# Keller Jordan's quintic coefficients (PyTorch's defaults).
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


class Muon(ElementwiseOptimizer):
    """Muon (Keller Jordan 2024), PyTorch's update rule::

        B = lerp(B, g, 1 - momentum);  U = lerp(g, B, momentum) if nesterov else B
        O = NS(U): X = U / max(||U||, eps) (transposed if tall); k times:
            A = X Xᵀ;  X = a X + (b A + c A²) X
        p *= 1 - lr * weight_decay;  p -= lr * s * O

    with ``s = sqrt(max(1, rows / cols))`` (``adjust_lr_fn=None`` or ``"original"``) or
    ``0.2 * sqrt(max(rows, cols))`` (``"match_rms_adamw"``). As in PyTorch, the iteration runs
    in bfloat16 (each product accumulated in float32 and rounded once), so it matches
    ``torch.optim.Muon`` value for value on small matrices; on large ones a float32 sum taken in
    another order now and then rounds an element the other way, and the iteration carries that
    along (differences of a few bfloat16 ulps). Only 2-D parameters are accepted: optimize biases,
    embeddings and the like with another optimizer (e.g. AdamW).

    Example:
        >>> w = ember.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        >>> opt = ember.optim.Muon([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w
        tensor([[ 0.7571, -1.8244],
                [ 0.3499,  2.7214]], requires_grad=True)
    """

    decoupled_weight_decay = True
    supports_complex = False  # (refused at the step, as PyTorch refuses)

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = NS_COEFFICIENTS,
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn: str | None = None) -> None:
        check_one_element("lr", lr)
        if not 0.0 <= lr:
            raise ArgumentError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ArgumentError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ArgumentError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ArgumentError(f"Adjust learning rate function {adjust_lr_fn} is not supported "
                                "(use None, 'original' or 'match_rms_adamw')")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ArgumentError("Muon only supports 2D parameters whereas we found a "
                                        f"parameter with size: {tuple(p.shape)}; optimize it "
                                        "with another optimizer (e.g. AdamW)")

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["momentum_buffer"] = full_state(p)

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        xp = p._device.xp
        if g.ndim != 2:
            raise ArgumentError(f"Muon: the gradient of shape {tuple(g.shape)} is not a 2D matrix; "
                                "Muon only supports 2D parameters")
        momentum = float(group["momentum"])
        buf = state["momentum_buffer"]._data
        lerp_into(xp, buf, g, 1.0 - momentum)  # (the ops layer's lerp, as torch's lerp_)
        direction = Lerp.forward(xp, g, buf, weight=momentum) if group["nesterov"] else buf
        ortho = orthogonalize(xp, direction, group["ns_coefficients"], group["ns_steps"],
                              float(group["eps"]))
        rows, cols = p.shape
        if group["adjust_lr_fn"] == "match_rms_adamw":
            scale = 0.2 * math.sqrt(max(rows, cols))
        else:
            scale = math.sqrt(max(1.0, rows / cols))
        p._data -= (lr_of(group) * scale) * ortho.astype(p._data.dtype)


def orthogonalize(xp: Any, g: Any, coefficients: tuple[float, float, float], steps: int,
                  eps: float) -> Any:
    """The quintic Newton–Schulz iteration of PyTorch's Muon on the 2-D backend array ``g``,
    in bfloat16 values held in float32 (returned so): each operation computes in float32 and
    rounds its result to bfloat16 once, as PyTorch's bfloat16 kernels on the CPU do (its
    ``addmm`` adds ``beta * C`` fused, see :func:`_fused_add`). The
    products run on one BLAS thread, whatever ``ember.set_num_threads`` says: on OpenBLAS's
    two the busy 2-core host took 16 ms for a 200×200 product (PyTorch: 0.1 ms), and a large
    product's float32 sums (700×700) came out in another order than on one thread, so the
    result depended on the thread count."""
    if steps >= 100:
        raise ArgumentError(f"Muon: ns_steps={steps}; the number of Newton–Schulz steps must be "
                            "less than 100 for computational efficiency")
    if len(coefficients) != 3:
        raise ArgumentError(f"Muon: ns_coefficients={coefficients!r} must be a tuple of exactly 3 "
                            "values (a, b, c)")
    a, b, c = (xp.float32(v) for v in coefficients)
    x = _bfloat16(xp, g.astype(xp.float32))
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    norm = _bfloat16(xp, xp.sqrt(xp.vdot(x, x)))
    x = _bfloat16(xp, x / xp.maximum(norm, _bfloat16(xp, xp.float32(eps))))
    with gemm.one_thread_each():
        for _ in range(steps):
            gram = _bfloat16(xp, x @ x.T)
            gram = _bfloat16(xp, _fused_add(xp, b, gram, c * (gram @ gram)))
            x = _bfloat16(xp, _fused_add(xp, a, x, gram @ x))
    return x.T if tall else x


def _fused_add(xp: Any, beta: Any, c: Any, product: Any) -> Any:
    """``beta * c + product`` rounded once to float32, as PyTorch's bfloat16 ``addmm`` on the
    CPU adds its ``beta * C`` (a fused multiply-add). ``beta * c`` is exact in float64 (float32
    ``beta`` times a bfloat16 ``c`` has at most 32 significant bits); the float64 sum is too,
    but for operands far apart in size, and where it is not (its exact error, from a
    two-sum) it is rounded to odd, so that rounding it to float32 rounds the exact sum."""
    left = c.astype(xp.float64)
    left *= xp.float64(beta)
    right = product.astype(xp.float64)
    total = left + right
    part = total - left
    error = total - part  # (the temporaries in place: 0.38 -> 0.28 ms per 256x512 call)
    xp.subtract(left, error, out=error)
    xp.subtract(right, part, out=part)
    error += part
    # (NumPy skips the rare correction where every sum is exact; elsewhere any() would wait
    # for the device at each Newton-Schulz step, so the where runs unconditionally)
    if xp.__name__ != "numpy" or error.any():
        inexact = error != 0  # (the neighbour with an odd last bit, toward the exact sum)
        inexact &= ((total.view(xp.uint64) & xp.uint64(1)) == 0) & xp.isfinite(error)
        total = xp.where(inexact, xp.nextafter(total, xp.where(error > 0, xp.inf, -xp.inf)),
                         total)
    return total.astype(xp.float32)


def _bfloat16(xp: Any, x: Any) -> Any:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept in float32."""
    x = xp.asarray(x, dtype=xp.float32)
    bits = x.view(xp.uint32)
    rounded = (bits + xp.uint32(0x7FFF) + ((bits >> 16) & xp.uint32(1))) & xp.uint32(0xFFFF0000)
    return xp.where(xp.isnan(x), x, rounded.view(xp.float32))
