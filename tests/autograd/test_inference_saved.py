"""An inference tensor an op recorded for backward would keep (its rule reads it) is refused,
as PyTorch refuses it, in built-in ops and in a custom Function's save_for_backward; an op
that does not keep it (an add, where's branches) still records. Each case against torch."""

import numpy as np
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


def _conv_with_an_inference_bias(lib):
    with lib.inference_mode():
        b = lib.ones(3, dtype=lib.float64)
    x = lib.arange(50.0, dtype=lib.float64).reshape(1, 2, 5, 5)
    w = lib.arange(54.0, dtype=lib.float64).reshape(3, 2, 3, 3).requires_grad_()
    lib.nn.functional.conv2d(x, w, b).square().sum().backward()  # (the bias is not kept)
    return w.grad.numpy()


def test_a_conv_records_with_an_inference_bias_as_torch():
    np.testing.assert_allclose(_conv_with_an_inference_bias(ember),
                               _conv_with_an_inference_bias(torch), rtol=1e-12)


def test_the_look_for_inference_tensors_ends_with_them():
    # (what records pay after an eval loop: nothing, once its inference tensors are freed)
    from ember.autograd.grad_mode import inference_tensors_may_exist

    with ember.inference_mode():
        x = ember.ones(2)
        view = x[:1]
    del x
    assert inference_tensors_may_exist()  # (the view holds the memory)
    w = ember.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved"):
        w * view
    del view
    assert not inference_tensors_may_exist()


@pytest.mark.parametrize("lib", [torch, ember])
def test_a_conv_refuses_an_inference_input_under_a_frozen_weight_as_torch(lib):
    # (the input is kept whichever gradients are needed: a trainable bias is enough)
    with lib.inference_mode():
        x = lib.ones(1, 2, 5, 5)
    bias = lib.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved"):
        lib.nn.functional.conv2d(x, lib.ones(3, 2, 3, 3), bias)
