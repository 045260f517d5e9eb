"""ember.autograd.grad with nested tensors (handed over by ember.ops.overrides), against
torch.nested (layout=torch.jagged)."""

import pytest
import torch

import ember
from ember.errors import GradError
from tests.nested.helpers import assert_close, pair


def test_more_grad_outputs_than_outputs_are_ignored_as_torch():
    """(a nested grad_outputs list longer than the outputs went back to the engine still
    nested, which handed it over again: RecursionError; then GradError "got 1 tensors but 2
    gradients"). torch ignores the extra gradients, for nested tensors as for tensors."""
    nt, tnt = pair(requires_grad=True)
    y, ty = nt * 2, tnt * 2
    (got,) = ember.autograd.grad([y], [nt], [ember.ones_like(y), ember.ones_like(y)])
    (want,) = torch.autograd.grad([ty], [tnt], [torch.ones_like(ty), torch.ones_like(ty)])
    assert_close(got, want)


def test_nested_inputs_in_a_generator_as_torch():
    """(a generator, as module.parameters(), was read as a list only after the hand-over check:
    'conversion to an array: not supported for nested tensors')."""
    nt, tnt = pair(requires_grad=True)
    w = ember.tensor([1.0, -2.0, 0.5, 3.0], dtype=ember.float64, requires_grad=True)
    tw = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
    got = ember.autograd.grad((nt * w).sin().values().sum(), (x for x in (w, nt)))
    want = torch.autograd.grad((tnt * tw).sin().values().sum(), (x for x in (tw, tnt)))
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


def test_implied_gradient_of_a_nested_output_names_its_nested_shape():
    """(the message showed the packed values' shape, (6, 4))."""
    nt, _ = pair(requires_grad=True)
    with pytest.raises(GradError, match=r"output 0 is a nested tensor of shape \(3, j\d+, 4\)"):
        ember.autograd.grad(nt * 2, nt)


def test_implied_gradient_of_a_one_element_nested_output_as_torch():
    nt, tnt = pair((1,), (1,), requires_grad=True)
    (got,) = ember.autograd.grad(nt * 3, nt)
    (want,) = torch.autograd.grad(tnt * 3, tnt)
    assert_close(got, want)


def test_a_nested_gradient_for_a_dense_output_is_refused():
    nt, _ = pair(requires_grad=True)
    w = ember.ones(4, requires_grad=True, dtype=ember.float64)
    with pytest.raises(TypeError, match=r"gradient 0 is a nested tensor of shape \(3, j"):
        ember.autograd.grad(w * 2, [w, nt], nt.detach(), allow_unused=True)


def test_autograd_backward_of_nested_tensors_as_torch():
    """(ember.autograd.backward read a nested tensor as a tensor: 'conversion to an array')."""
    nt, tnt = pair(requires_grad=True)
    ember.autograd.backward([nt * nt], [nt.detach() + 1])
    torch.autograd.backward([tnt * tnt], [tnt.detach() + 1])
    assert_close(nt.grad, tnt.grad)


def test_backward_into_nested_inputs_as_torch():
    nt, tnt = pair(requires_grad=True)
    w = ember.tensor([1.0, -2.0, 0.5, 3.0], dtype=ember.float64, requires_grad=True)
    tw = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
    ember.autograd.backward((nt * w).sin().values().sum(), inputs=(x for x in [nt]))
    torch.autograd.backward((tnt * tw).sin().values().sum(), inputs=(x for x in [tnt]))
    assert_close(nt.grad, tnt.grad)
    assert w.grad is None and tw.grad is None
    (nt * w).cos().backward(nt.detach(), inputs=[w])  # (NestedTensor.backward took no inputs)
    (tnt * tw).cos().backward(tnt.detach(), inputs=[tw])
    assert_close(w.grad, tw.grad)
    assert_close(nt.grad, tnt.grad)
    with pytest.raises(GradError, match=r"output 0 is a nested tensor of shape \(3, j"):
        (nt * 2).backward()
