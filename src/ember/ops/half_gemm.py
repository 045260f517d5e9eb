"""Half-precision GEMMs that take a bias before their one rounding, as PyTorch's CPU addmm,
baddbmm and linear do: the product of bfloat16/float16 operands stays float32 (the ``matmul``
primitive's ``wide``), the bias is added to it in float32, and the sum is rounded once
(rounding the product first left ~30% of bfloat16 outputs 1 ulp off PyTorch's)."""

from __future__ import annotations

from ember import dtypes
from ember.backend import compute_dtype
from ember.dtypes import DType
from ember.ops.convert import AUTOCAST_DTYPE, HALF
from ember.ops.linalg import Matmul, gemm_dtype
from ember.ops.primitive import DISPATCH, apply
from ember.tensor import Tensor


def half_product(x: Tensor) -> DType | None:
    """The bfloat16/float16 dtype (``x``'s, or the one autocast lowers it to) that a GEMM of
    ``x`` runs in as float32 here: the dtype a :func:`wide_matmul` product plus a bias is
    rounded to once, as PyTorch's CPU addmm and linear do; None for other dtypes and where the
    device multiplies half matrices itself."""
    low = x.dtype
    if DISPATCH.casting and low.is_floating_point and low is not dtypes.float64:
        low = AUTOCAST_DTYPE["autocast"]()
    if low not in HALF or compute_dtype(x.device, low, "gemm") is not dtypes.float32:
        return None
    return low


def wide_matmul(input: Tensor, other: Tensor) -> Tensor:
    """``input @ other`` of checked operands; for a :func:`half_product` dtype the float32
    product, unrounded, for a bias to be added before the one rounding."""
    return apply(Matmul, input, other, compute=gemm_dtype(input), wide=True)
