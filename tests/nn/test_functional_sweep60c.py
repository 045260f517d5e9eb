"""Fixes from the functional sweep of session 60 (sweep60c), checked against torch 2.13."""

import inspect

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.errors import DTypeError, ShapeError


@pytest.mark.parametrize("name", ["hardsigmoid", "hardswish"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int64", "bool"])
def test_hardsigmoid_hardswish_refuse_integer_and_bool_inputs_as_torch(name, dtype):
    # torch has no integer or bool kernel (NotImplementedError "hardswish_cpu" not implemented
    # for 'Byte'), as for silu, gelu, elu...; ember promoted to float (bool: hardswish(True)
    # was 0.667)
    x = np.array([253, 1, 0], dtype=np.uint8).astype(dtype)
    with pytest.raises(NotImplementedError):
        getattr(torch.nn.functional, name)(torch.tensor(x))
    for inplace in (False, True):
        with pytest.raises(DTypeError, match=rf"{name}: needs a floating tensor, got {dtype}"):
            getattr(F, name)(ember.tensor(x), inplace=inplace)


def test_sdpa_with_zero_features_attends_uniformly():
    # torch: q @ k^T over 0 features is 0, so every query averages the values; ember raised
    # ZeroDivisionError computing 1 / sqrt(0)
    rng = np.random.default_rng(0)
    v = rng.standard_normal((1, 2, 3, 4))
    q = ember.zeros(1, 2, 3, 0, dtype=ember.float64)
    out = F.scaled_dot_product_attention(q, q, ember.tensor(v))
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(v.mean(-2, keepdims=True), v.shape))
    causal = F.scaled_dot_product_attention(q, q, ember.tensor(v), is_causal=True)
    want = np.cumsum(v, -2) / np.arange(1, 4)[:, None]
    np.testing.assert_allclose(causal.numpy(), want)


def test_sdpa_mask_of_wrong_shape_names_the_weights_shape():
    # before: "scaled_dot_product_attention: where: shapes (3, 4) and (1, 2, 3, 5) and ()"
    q, kv = ember.randn(1, 2, 3, 4), ember.randn(1, 2, 5, 4)
    for mask in (ember.ones(3, 4, dtype=ember.bool), ember.zeros(3, 4)):
        with pytest.raises(ShapeError, match=r"attn_mask of shape \(3, 4\) does not broadcast "
                                             r"to the attention weights' shape \(1, 2, 3, 5\)"):
            F.scaled_dot_product_attention(q, kv, kv, attn_mask=mask)
    ok = F.scaled_dot_product_attention(q, kv, kv, attn_mask=ember.ones(2, 1, 5, dtype=ember.bool))
    assert ok.shape == (1, 2, 3, 4)


def test_normalize_takes_out_as_torch():
    # torch.nn.functional.normalize(input, p, dim, eps, out=None); ember raised TypeError
    x = np.array([[3.0, 4.0], [0.0, 2.0]], dtype=np.float32)
    out = ember.empty(2, 2)
    assert F.normalize(ember.tensor(x), out=out) is out
    np.testing.assert_allclose(out.numpy(), x / np.linalg.norm(x, axis=1, keepdims=True))
    np.testing.assert_allclose(F.normalize(ember.tensor(x), p=1, dim=0).numpy(),
                               [[1.0, 4 / 6], [0.0, 2 / 6]], rtol=1e-6)


def test_normalize_takes_out_as_fifth_positional_argument_as_torch():
    # torch's F.normalize(input, p, dim, eps, out) is a Python function: out is an ordinary
    # parameter; ember took it only as a keyword (TypeError: 5 positional arguments)
    x = np.array([[3.0, 4.0], [1.0, -2.0]], dtype=np.float32)
    t_out = torch.empty(2, 2)
    torch.nn.functional.normalize(torch.tensor(x), 1.0, 0, 1e-12, t_out)
    out = ember.empty(2, 2)
    assert F.normalize(ember.tensor(x), 1.0, 0, 1e-12, out) is out
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-6)
    assert list(inspect.signature(F.normalize).parameters) == ["input", "p", "dim", "eps", "out"]


def test_one_hot_takes_torch_keyword_input():
    # torch 2.13 binds F.one_hot(input=..., num_classes=...) (its docstring says "tensor", but
    # tensor= is refused); ember took only tensor=
    out = F.one_hot(input=ember.tensor([1, 0]), num_classes=3)
    assert out.tolist() == [[0, 1, 0], [1, 0, 0]]
