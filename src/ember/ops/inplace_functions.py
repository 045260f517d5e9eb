"""The in-place ops PyTorch also offers as functions (``torch.sin_(x)`` is ``x.sin_()``), made
from the Tensor methods by one table.

Example:
    >>> x = ember.tensor([-1.0, 4.0])
    >>> ember.abs_(x) is x, x
    (True, tensor([1., 4.]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.errors import refuse_non_tensor
from ember.tensor import Tensor

_NAMES = ("abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
          "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_",
          "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_",
          "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_",
          "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_",
          "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
          "resize_as_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
          "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_")

__all__ = list(_NAMES)


def _function(name: str) -> Callable[..., Tensor]:
    def op(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not isinstance(input, Tensor):  # (a torch.Tensor has the method: it would run it)
            refuse_non_tensor(name, "input", input)
        try:
            method = getattr(input, name)
        except AttributeError:
            refuse_non_tensor(name, "input", input)
            raise
        return method(*args, **kwargs)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``input.{name}(...)``: the in-place op as a function; returns ``input``."
    return op


globals().update({name: _function(name) for name in _NAMES})
