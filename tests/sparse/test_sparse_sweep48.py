"""Fixes from the third differential sweep against torch.sparse (/work/fuzz/sparse48):
zero-preserving one-tensor ops (``sqrt``, ``sin``, ``floor``, ``isnan``, …) on every layout,
as methods and as ``ember.<op>(s)``, with PyTorch's coalescing and dtypes, and gradients."""

import warnings

import numpy as np
import pytest
import torch

import ember

warnings.filterwarnings("ignore", message="Sparse")

INDEX = [[0, 2, 1, 0, 3], [1, 0, 2, 1, 0]]  # entry (0, 1) twice: 0.5 + 1.5
VALUES = [0.5, -2.0, 3.0, 1.5, 0.25]
UNARY = ["sqrt", "sin", "tan", "tanh", "sinh", "asin", "asinh", "atan", "atanh", "expm1",
         "log1p", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac", "erf", "erfinv",
         "relu", "square", "signbit", "isnan", "isinf", "isposinf", "isneginf", "nan_to_num",
         "deg2rad", "rad2deg", "neg", "abs", "positive", "conj_physical"]


def _sparse(lib, dtype, layout, coalesce):
    s = lib.sparse_coo_tensor(lib.tensor(INDEX), lib.tensor(VALUES).to(getattr(lib, dtype)),
                              (4, 3))
    s = s.coalesce() if coalesce else s
    return {"coo": s, "csr": s.to_sparse_csr(), "csc": s.to_sparse_csc(),
            "bsr": s.to_sparse_bsr((2, 1))}[layout]


def _summary(s):
    return (s.layout.name if hasattr(s.layout, "name") else str(s.layout).split(".")[-1],
            str(s.dtype).split(".")[-1], s._nnz(),
            s.is_coalesced() if s.layout in (ember.sparse_coo, torch.sparse_coo) else None)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float64", "int64"])
@pytest.mark.parametrize("layout,coalesce", [("coo", False), ("coo", True), ("csr", True),
                                             ("csc", True), ("bsr", True)])
def test_one_tensor_ops_as_torch(name, dtype, layout, coalesce):
    try:
        want = getattr(torch, name)(_sparse(torch, dtype, layout, coalesce))
    except (RuntimeError, NotImplementedError):  # (square of a compressed one, frac of an int)
        return
    forms = [lambda s: getattr(s, name)()]
    if name not in ("deg2rad", "rad2deg"):  # (ember.deg2rad takes only dense tensors)
        forms.append(lambda s: getattr(ember, name)(s))
    for form in forms:
        got = form(_sparse(ember, dtype, layout, coalesce))
        assert _summary(got) == _summary(want)
        np.testing.assert_allclose(got.to_dense().numpy(), want.to_dense().numpy(),
                                   rtol=1e-6, equal_nan=True)


def test_one_tensor_op_of_an_uncoalesced_element_is_of_its_sum():
    s = ember.sparse_coo_tensor([[0, 0]], [2.0, 2.0], (2,))  # element 0 is 4
    assert s.sqrt().to_dense().tolist() == [2.0, 0.0]
    assert ember.floor(ember.sparse_coo_tensor([[0, 0]], [1, 2], (2,))).to_dense().tolist() \
        == [3, 0]  # (ember.floor of an integer tensor meets the sparse one in clone)


@pytest.mark.parametrize("name", ["sqrt", "sin", "tanh", "expm1", "log1p", "square", "neg",
                                  "atan", "erf"])
def test_one_tensor_op_gradients_as_torch(name):
    rng = np.random.default_rng(1)
    up = rng.standard_normal((4, 3))
    grads = []
    for lib in (ember, torch):  # (torch's has no backward: f of its dense form, f(0) = 0)
        v = lib.tensor(np.abs(VALUES) / 4, dtype=lib.float64, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(INDEX), v, (4, 3))
        out = getattr(lib, name)(s).to_dense() if lib is ember else \
            getattr(lib, name)(s.to_dense())
        (out * lib.tensor(up)).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)
    v = ember.tensor(np.abs(VALUES) / 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda v: getattr(ember, name)(ember.sparse_coo_tensor(INDEX, v, (4, 3))).to_dense(),
        (v,))
