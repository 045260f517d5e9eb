"""ember.autograd.grad hands a registered tensor-like (ember.ops.overrides) to its class, as the
ops do: a class that does not differentiate this way raises its named error."""

import pytest

import ember
from ember.masked import masked_tensor


def test_a_masked_tensor_gets_its_named_error():
    """(it was read as a sequence: 'MaskedTensor: __iter__ is not supported')."""
    mt = masked_tensor(ember.tensor([1.0, 2.0]), ember.tensor([True, False]), requires_grad=True)
    with pytest.raises(TypeError, match="^grad: does not take a MaskedTensor, torch's does"):
        ember.autograd.grad(mt.sum(), mt)
    with pytest.raises(TypeError, match="^backward: does not take a MaskedTensor, torch's"):
        ember.autograd.backward(mt.sum())
    with pytest.raises(TypeError, match="^cumprod: does not take a MaskedTensor, as in torch"):
        ember.cumprod(mt, 0)


def test_a_sparse_input_is_differentiated():
    """(AttributeError: 'SparseTensor' object has no attribute '_node'; then a named error;
    now its gradient, as tests/sparse/test_sparse_autograd_calls.py checks against torch)."""
    s = ember.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse().requires_grad_()
    (g,) = ember.autograd.grad((s * 2).to_dense().sum(), [s])
    assert g.to_dense().tolist() == [[0.0, 2.0], [2.0, 0.0]]
