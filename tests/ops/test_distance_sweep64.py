"""Distance-area sweep (session 64) against PyTorch: integer inputs of pairwise_distance
with an integer eps and of cosine_embedding_loss, one_hot's num_classes argument."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F

INT_PAIRS = [np.array([[1, 2, 3], [4, 0, -2]]), np.array([[1, 5, 3], [0, 0, 0]])]


def _both(values, dtype):
    return ember.tensor(values).to(getattr(ember, dtype)), torch.tensor(values).to(
        getattr(torch, dtype))


def _same(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("eps", [0, 1, 2.5])
@pytest.mark.parametrize("p", [0, 1, 2, float("inf")])
def test_pairwise_distance_integer_inputs_with_integer_eps_turn_floating(eps, p):
    (a, ta), (b, tb) = (_both(v, "int64") for v in INT_PAIRS)
    _same(F.pairwise_distance(a, b, p, eps), TF.pairwise_distance(ta, tb, p, eps))


def test_pairwise_distance_refuses_a_non_number_eps():
    a = ember.ones(2, 3)
    with pytest.raises(TypeError, match="pairwise_distance: eps"):
        F.pairwise_distance(a, a, eps="small")


@pytest.mark.parametrize("dtypes", [("int64", "int64"), ("int32", "int32"), ("bool", "bool"),
                                    ("int64", "float32"), ("int64", "float64"),
                                    ("float16", "int64")])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cosine_embedding_loss_takes_integer_and_bool_inputs(dtypes, reduction):
    (a, ta), (b, tb) = (_both(v, d) for v, d in zip(INT_PAIRS, dtypes))
    y, ty = _both(np.array([1, -1]), "int64")
    _same(F.cosine_embedding_loss(a, b, y, margin=-0.5, reduction=reduction),
          TF.cosine_embedding_loss(ta, tb, ty, margin=-0.5, reduction=reduction))


def test_cosine_embedding_loss_refuses_complex_inputs_by_name():
    z = ember.ones(2, 3, dtype=ember.complex64)
    with pytest.raises(ember.errors.DTypeError, match="cosine_embedding_loss: .*input2"):
        F.cosine_embedding_loss(ember.ones(2, 3), z, ember.tensor([1, -1]))
    with pytest.raises(RuntimeError):
        TF.cosine_embedding_loss(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.complex64),
                                 torch.tensor([1, -1]))


@pytest.mark.parametrize("num_classes", [3.0, True, "3"])
def test_one_hot_num_classes_must_be_an_int(num_classes):
    with pytest.raises(TypeError, match="one_hot: num_classes"):
        F.one_hot(ember.tensor([0, 1]), num_classes)
    with pytest.raises(TypeError):
        TF.one_hot(torch.tensor([0, 1]), num_classes)


def test_one_hot_refuses_num_classes_below_minus_one():
    # (was 'class value 0 is out of range for -2 classes; expected values in [0, -3]')
    with pytest.raises(ember.errors.ArgumentError, match="num_classes must be -1 .* got -2"):
        F.one_hot(ember.zeros(2, dtype=ember.int64), -2)
    with pytest.raises(RuntimeError):
        TF.one_hot(torch.zeros(2, dtype=torch.int64), -2)


def test_one_hot_takes_a_zero_dim_integer_tensor_for_num_classes():
    got = F.one_hot(ember.tensor([0, 2]), ember.tensor(4))
    np.testing.assert_array_equal(got.numpy(),
                                  TF.one_hot(torch.tensor([0, 2]), torch.tensor(4)).numpy())


@pytest.mark.parametrize("eps", [-1.0, float("nan")])
def test_cosine_similarity_refuses_a_negative_eps(eps):
    # (eps=-1 gave NaN for a zero vector, silently)
    with pytest.raises(ember.errors.ArgumentError, match="cosine_similarity: eps must be non-neg"):
        F.cosine_similarity(ember.zeros(2, 3), ember.ones(2, 3), eps=eps)
    with pytest.raises(RuntimeError, match="eps must be non-negative"):
        TF.cosine_similarity(torch.zeros(2, 3), torch.ones(2, 3), eps=eps)


@pytest.mark.parametrize("dim", [(0, 1), 1.0])
def test_cosine_similarity_dim_must_be_an_int(dim):
    # (dim=(0, 1) summed over both dimensions, a 0-d result)
    with pytest.raises(TypeError, match="cosine_similarity: dim must be an int"):
        F.cosine_similarity(ember.ones(2, 3), ember.ones(2, 3), dim=dim)
    with pytest.raises(TypeError):
        TF.cosine_similarity(torch.ones(2, 3), torch.ones(2, 3), dim=dim)


def test_cosine_similarity_module_takes_eps_zero_and_a_zero_dim_tensor_dim():
    x, y = np.eye(3)[:2], np.ones((2, 3))
    got = ember.nn.CosineSimilarity(dim=ember.tensor(1), eps=0)(ember.tensor(x), ember.tensor(y))
    want = torch.nn.CosineSimilarity(dim=1, eps=0)(torch.tensor(x), torch.tensor(y))
    _same(got, want)
