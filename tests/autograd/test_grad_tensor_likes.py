"""ember.autograd.grad hands a registered tensor-like (ember.ops.overrides) to its class, as the
ops do: a class that does not differentiate this way raises its named error."""

import pytest

import ember
from ember.masked import masked_tensor


def test_a_masked_tensor_is_differentiated_or_gets_its_named_error():
    """(it was read as a sequence: 'MaskedTensor: __iter__ is not supported'; grad and backward
    now take it, as tests/masked/test_tensor.py checks against torch)."""
    mt = masked_tensor(ember.tensor([1.0, 2.0]), ember.tensor([True, False]), requires_grad=True)
    (g,) = ember.autograd.grad(mt.sum(), mt)
    assert g.get_mask().tolist() == [True, False] and g.get_data()[0].item() == 1.0
    with pytest.raises(TypeError, match="^cumprod: does not take a MaskedTensor, as in torch"):
        ember.cumprod(mt, 0)


def test_a_sparse_input_is_differentiated():
    """(AttributeError: 'SparseTensor' object has no attribute '_node'; then a named error;
    now its gradient, as tests/sparse/test_sparse_autograd_calls.py checks against torch)."""
    s = ember.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse().requires_grad_()
    (g,) = ember.autograd.grad((s * 2).to_dense().sum(), [s])
    assert g.to_dense().tolist() == [[0.0, 2.0], [2.0, 0.0]]
