"""softmax and log_softmax against PyTorch and finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import OpCase, S, arg, op_tests

SAMPLES = [
    S(arg(3, 4), dim=1),
    S(arg(3, 4), dim=0),
    S(arg(2, 3, 4, noncontig=True), dim=-2),
    S(arg(), dim=0),                       # 0-d
    S(arg(0, 3), dim=1),                   # empty
    S(arg(3, 4, low=-50, high=50), dim=-1),  # wide range: needs the max shift
]

CASES = [
    OpCase("softmax", F.softmax, TF.softmax, SAMPLES),
    OpCase("log_softmax", F.log_softmax, TF.log_softmax, SAMPLES),
    OpCase("softmax_dtype", lambda x, dim: ember.softmax(x.float(), dim, dtype=ember.float64),
           lambda x, dim: torch.softmax(x.float(), dim, dtype=torch.float64),
           [S(arg(3, 4), dim=1)], grad=False),
    OpCase("log_softmax_method", lambda x, dim: x.log_softmax(dim),
           lambda x, dim: x.log_softmax(dim), [S(arg(2, 5), dim=-1)]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_stable_for_huge_logits():
    x = ember.tensor([[1000.0, 0.0, -1000.0]])
    assert np.isfinite(F.log_softmax(x, 1).numpy()).all()
    np.testing.assert_allclose(F.softmax(x, 1).numpy(), [[1.0, 0.0, 0.0]])


def test_implicit_dim_warns_and_follows_torch():
    x = ember.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        y = F.softmax(x)
    np.testing.assert_allclose(y.numpy(), TF.softmax(torch.from_numpy(x.numpy()), 1).numpy(),
                               rtol=1e-6)


def test_softmax_errors():
    with pytest.raises(IndexError, match="softmax"):
        F.softmax(ember.randn(2, 3), dim=2)
    with pytest.raises(ember.DTypeError, match="dtype=ember.float32"):
        F.softmax(ember.tensor([1, 2]), dim=0)
