"""Errors PyTorch users catch by class: a derivative PyTorch lacks is a NotImplementedError
there (Ember's DerivativeNotImplemented, also a GradError); embedding indices other than int64
and int32 are refused, as torch refuses them (they were silently taken)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.errors import DerivativeNotImplemented


def _zeta(m):
    x = m.tensor([2.0], dtype=m.float64, requires_grad=True)
    m.special.zeta(x, m.tensor([1.0], dtype=m.float64)).sum().backward()


def _igamma(m):
    a = m.tensor([2.0], dtype=m.float64, requires_grad=True)
    m.igamma(a, m.tensor([1.0], dtype=m.float64)).sum().backward()


def _igammac(m):
    a = m.tensor([2.0], dtype=m.float64, requires_grad=True)
    m.igammac(a, m.tensor([1.0], dtype=m.float64)).sum().backward()


def _geqrf(m):
    m.geqrf(m.ones(3, 3, dtype=m.float64, requires_grad=True))[0].sum().backward()


@pytest.mark.parametrize("case", [_zeta, _igamma, _igammac, _geqrf])
def test_missing_derivative_is_a_not_implemented_error_like_torch(case):
    with pytest.raises(NotImplementedError):
        case(torch)
    with pytest.raises(NotImplementedError) as caught:
        case(ember)
    assert isinstance(caught.value, DerivativeNotImplemented)
    assert isinstance(caught.value, ember.GradError) and isinstance(caught.value, RuntimeError)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_embedding_takes_int64_and_int32_indices_only_like_torch(dtype):
    calls = [lambda m, f, i: f.embedding(i, m.ones(4, 3)),
             lambda m, f, i: f.embedding_bag(i.reshape(1, 2), m.ones(4, 3)),
             lambda m, f, i: m.nn.Embedding(4, 3)(i)]
    for call in calls:
        index = [1, 2]
        try:
            expected = call(torch, TF, torch.tensor(index, dtype=getattr(torch, dtype)))
        except RuntimeError:
            with pytest.raises(ember.DTypeError, match="int64 or int32 integer.*" + dtype):
                call(ember, F, ember.tensor(index, dtype=getattr(ember, dtype)))
            continue
        got = call(ember, F, ember.tensor(index, dtype=getattr(ember, dtype)))
        assert tuple(got.shape) == tuple(expected.shape)


@pytest.mark.parametrize("index, offset", [("int8", "int64"), ("uint8", "int64"),
                                           ("int16", "int32"), ("int64", "int8")])
def test_bag_indices_take_the_offsets_common_dtype_as_torch(index, offset):
    # (PyTorch promotes indices and offsets together before its check: int8 indices with
    # int64 offsets are taken; the check refused them)
    w = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)

    def run(lib):
        idx = lib.tensor([1, 2, 9, 0], dtype=getattr(lib, index))
        return lib.nn.functional.embedding_bag(idx, lib.tensor(w), lib.tensor(
            [0, 2], dtype=getattr(lib, offset))).numpy()

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-6)
    with pytest.raises(ember.errors.DTypeError, match="int64 or int32"):
        ember.nn.functional.embedding_bag(ember.tensor([1, 2], dtype=ember.int8),
                                          ember.tensor(w), ember.tensor([0], dtype=ember.int8))
