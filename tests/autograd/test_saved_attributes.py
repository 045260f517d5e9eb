"""``grad_fn._saved_<name>``: what a node keeps for its backward, as PyTorch names it."""

import pytest
import torch

import ember
from ember.errors import GradError


def _pair(lib):
    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = lib.tensor([0.5, 4.0, -1.0], requires_grad=True)
    return x, w


@pytest.mark.parametrize("lib", [torch, ember])
def test_inputs_result_and_parameters_as_pytorch_names_them(lib):
    x, w = _pair(lib)
    y = x * w
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is w
    assert {"_saved_self", "_saved_other"} <= set(dir(y.grad_fn))
    e = x.exp()
    assert e.grad_fn._saved_result.tolist() == e.tolist()
    assert "_saved_result" in dir(e.grad_fn)
    p = x.pow(3)
    assert p.grad_fn._saved_exponent == 3 and p.grad_fn._saved_self is x
    with pytest.raises(AttributeError):
        _ = y.grad_fn._saved_nothing


@pytest.mark.parametrize("lib", [torch, ember])
def test_reading_after_backward_freed_them_raises(lib):
    x, w = _pair(lib)
    y = x * w
    y.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        _ = y.grad_fn._saved_self
    kept = x * w
    kept.sum().backward(retain_graph=True)
    assert kept.grad_fn._saved_other is w


def test_freed_error_is_a_grad_error_naming_the_node():
    x, w = _pair(ember)
    y = x * w
    y.sum().backward()
    with pytest.raises(GradError, match="MulBackward0._saved_self"):
        _ = y.grad_fn._saved_self
