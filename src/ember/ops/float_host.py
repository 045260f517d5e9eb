"""Shared plumbing of the special functions that run float64 NumPy kernels on the host (the
gamma family, Bessel functions, zeta, the incomplete gamma functions, orthogonal
polynomials): their operands in PyTorch's floating result dtype, and the trip of their arrays
to the host and back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentTypeError, type_name
from ember.layouts import is_dense
from ember.ops.convert import promote_to, result_dtype, to_float
from ember.ops.forwarding import hand_over_tensor_like
from ember.ops.primitive import complex_error, refuse_complex
from ember.tensor import Tensor


def host_arrays(xp: Any, *arrays: Any) -> list[np.ndarray]:
    """The backend ``arrays`` as NumPy arrays (copied from the device where ``xp`` is not
    NumPy)."""
    return [np.asarray(a if xp is np else xp.asnumpy(a)) for a in arrays]


def in_float64(xp: Any, kernel: Callable[..., Any], a: Any, *args: Any) -> Any:
    """``kernel(*args, a)`` computed on the host in float64, back in ``a``'s dtype and place."""
    host = host_arrays(xp, a)[0]
    # (an expanded input's copy in C order: NumPy's "K" lays its broadcast dims innermost)
    host = host.astype(np.float64, order="K" if is_dense(host) else "C", copy=False)
    return xp.asarray(np.asarray(kernel(*args, host)).astype(a.dtype, copy=False))


def float_operand(op: str, input: Any) -> Tensor:
    """``input`` (which must be a tensor) in a floating dtype: integers and bools give the
    default float dtype, as PyTorch's special functions; complex input raises (the kernels
    are real-only)."""
    if not isinstance(input, Tensor):
        hand_over_tensor_like(input, "input")  # (a nested tensor: the op's hand-over takes it)
        raise ArgumentTypeError(f"{op}: expected a tensor, got {type_name(input)}")
    refuse_complex(op, input)
    if input.dtype.name == "bool":
        input = input.to(dtypes.int64)
    return to_float(input)


def float_operands(op: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    """Both operands in their PyTorch result dtype; integers and bools give the default float
    (``torch.atan2(int, int)`` is float32), each converted from its own values (so an int8 -7
    stays -7.0 beside a uint8 tensor, where their common integer dtype would wrap it); complex
    operands raise (the kernels are real-only)."""
    dtype = result_dtype(input, other)
    if not dtype.is_floating_point:
        if dtype.is_complex:
            raise complex_error(op, dtype)
        dtype = dtypes.get_default_dtype()
    return promote_to(dtype, input, other)
