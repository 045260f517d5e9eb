"""An Ember tensor meets a PyTorch tensor in an operator: an ArgumentTypeError naming the
operator, both types and how to convert, from either side (Python's fallback said only
"unsupported operand type(s) for +: 'Tensor' and 'Tensor'"; ``torch_t @ ember_t`` converted
silently, ``ember_t == torch_t`` was False). NumPy arrays stay operands, as in PyTorch."""

import operator
import re

import numpy as np
import pytest
import torch

import ember

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
       "//": operator.floordiv, "**": operator.pow, "@": operator.matmul, "<": operator.lt,
       "==": operator.eq, "!=": operator.ne, "+=": operator.iadd, "*=": operator.imul,
       "&": operator.and_}
# Python reflects a comparison: torch_t < ember_t reaches Ember as ember_t > torch_t
REFLECTED = {"<": ">", "+=": "+", "*=": "*"}


@pytest.mark.parametrize("symbol", list(OPS))
def test_ember_and_torch_operands_are_refused_naming_both(symbol):
    op = OPS[symbol]
    e, t = ember.ones(2, dtype=ember.int64), torch.ones(2, dtype=torch.int64)
    with pytest.raises(ember.errors.ArgumentTypeError,
                       match=rf"^{re.escape(symbol)} \(\w+\): unsupported operands "
                             r"ember\.Tensor and torch\.Tensor; .*Hint: .*ember\.from_dlpack"):
        op(e, t)
    back = REFLECTED.get(symbol, symbol)
    order = (r"ember\.Tensor and torch\.Tensor" if symbol in ("<", "==", "!=")
             else r"torch\.Tensor and ember\.Tensor")
    with pytest.raises(TypeError, match=rf"^{re.escape(back)} \(\w+\): "
                                        f"unsupported operands {order}"):
        op(t.clone(), e)


def test_numpy_arrays_stay_operands_from_either_side_as_in_pytorch():
    e, a = ember.tensor([1.0, 2.0]), np.array([3.0, 4.0])
    t = torch.tensor([1.0, 2.0])
    for op in (operator.add, operator.mul, operator.matmul):
        assert np.allclose(op(e, a).numpy(), op(t, a).numpy())
    assert (a @ e).item() == 11.0 and (a @ e).dtype == ember.float64  # (was a dtype error)
