"""Masked-out elements holding nan or inf must not reach the values or gradients of masked-in
elements, nor the gradients of plain tensors combined with a MaskedTensor (the trap of a
``where`` whose other branch is differentiated anyway)."""

import math

import numpy as np
import pytest

import ember
import ember.masked as M
from tests.masked.helpers import DATA, MASK

KEEP = MASK | np.eye(3, 4, dtype=bool)  # every row keeps something
POISONED = np.where(KEEP, DATA, np.array([np.nan, np.inf, -np.inf, np.nan])[None, :])

FUNCTIONS = [("sum", (1,)), ("prod", (1,)), ("amax", (1,)), ("amin", (0,)), ("mean", (1,)),
             ("median", (1,)), ("logsumexp", (1,)), ("norm", (2.0, 1)),
             ("norm", (math.inf, 0)), ("var", (1,)), ("var", (0,)), ("std", (1,)),
             ("std", ()), ("cumsum", (1,)), ("cumprod", (1,)), ("softmax", (1,)),
             ("log_softmax", (0,)), ("softmin", (1,)), ("normalize", (2.0, 1))]


def _value_and_grad(name, args, data):
    x = ember.tensor(data, requires_grad=True)
    out = getattr(M, name)(x, *args, mask=ember.tensor(KEEP))
    out.sum().backward()
    return out.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name,args", FUNCTIONS)
def test_functions_ignore_nan_and_inf_where_masked_out(name, args):
    clean_out, clean_grad = _value_and_grad(name, args, DATA)
    out, grad = _value_and_grad(name, args, POISONED)
    if name in ("cumsum", "cumprod", "softmax", "log_softmax", "softmin", "normalize"):
        out, clean_out = out[KEEP], clean_out[KEEP]  # masked-out outputs are not specified
    np.testing.assert_allclose(out, clean_out)
    np.testing.assert_allclose(grad[KEEP], clean_grad[KEEP])
    np.testing.assert_array_equal(grad[~KEEP], 0.0)


@pytest.mark.parametrize("fn", [lambda mt, w: (mt * w).sum(), lambda mt, w: (1.0 / mt * w).sum(),
                                lambda mt, w: mt.pow(2).mul(w).mean(1).sum(),
                                lambda mt, w: (mt - w).atan2(w).amax(1).sum(),
                                lambda mt, w: mt.mul_(w).div_(w).mul_(w).sum()])
def test_masked_tensor_ops_keep_nan_out_of_plain_gradients(fn):
    weight = ember.tensor([0.5, 1.5, -2.0, 1.0], requires_grad=True)
    source = ember.tensor(POISONED, requires_grad=True)
    fn(M.as_masked_tensor(source * 1.0, ember.tensor(KEEP)), weight).backward()
    clean_weight = ember.tensor([0.5, 1.5, -2.0, 1.0], requires_grad=True)
    clean_source = ember.tensor(DATA, requires_grad=True)
    fn(M.as_masked_tensor(clean_source * 1.0, ember.tensor(KEEP)), clean_weight).backward()
    np.testing.assert_allclose(weight.grad.numpy(), clean_weight.grad.numpy())
    np.testing.assert_allclose(source.grad.numpy(), clean_source.grad.numpy())
    np.testing.assert_array_equal(source.grad.numpy()[~KEEP], 0.0)


@pytest.mark.parametrize("fn", [lambda mt: mt.reciprocal().log(),
                                lambda mt: mt.reciprocal_().log_()])
def test_unary_ops_of_padding_zeros_give_no_nan_upstream(fn):
    hidden = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    padded = hidden * ember.tensor([[1.0, 1.0], [1.0, 0.0]])  # the padding is 0
    valid = ember.tensor([[True, True], [True, False]])
    fn(M.as_masked_tensor(padded, valid)).sum().backward()
    assert np.isfinite(hidden.grad.numpy()).all()
    assert hidden.grad.numpy()[1, 1] == 0.0
