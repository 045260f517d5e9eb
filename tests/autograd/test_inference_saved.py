"""An inference tensor an op recorded for backward would keep (its rule reads it) is refused,
as PyTorch refuses it, in built-in ops and in a custom Function's save_for_backward; an op
that does not keep it (an add, where's branches) still records. Each case against torch."""

import pytest
import torch

import ember

_CASES = {
    "mul other": lambda lib, w, x: w * x,
    "mul self": lambda lib, w, x: x * w,
    "matmul": lambda lib, w, x: lib.matmul(w, x),
    "add": lambda lib, w, x: w + x,
    "where": lambda lib, w, x: lib.where(x > 0, w, x),
    "mul of a normal tensor": lambda lib, w, x: w * x.exp(),
    "no grad needed": lambda lib, w, x: w.detach() * x,
}


def _outcome(lib, case):
    with lib.inference_mode():
        x = lib.ones(2)
    w = lib.ones(2, requires_grad=True)
    try:
        return _CASES[case](lib, w, x).requires_grad
    except RuntimeError as exc:
        assert "Inference tensors cannot be saved for backward" in str(exc)
        return "refused"


@pytest.mark.parametrize("case", list(_CASES))
def test_inference_tensors_saved_for_backward_are_refused_as_torch(case):
    assert _outcome(ember, case) == _outcome(torch, case)


def _function_outcome(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0], None

    with lib.inference_mode():
        x = lib.ones(2)
    out = [Scale.apply(lib.ones(2), x).requires_grad]  # (nothing recorded: allowed)
    try:
        Scale.apply(lib.ones(2, requires_grad=True), x)
    except RuntimeError as exc:
        out.append("Inference tensors cannot be saved for backward" in str(exc))
    return out


def test_a_function_saving_an_inference_tensor_is_refused_as_torch():
    assert _function_outcome(ember) == _function_outcome(torch) == [False, True]
