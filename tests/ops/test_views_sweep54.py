"""View ops against PyTorch 2.13: the differences a differential sweep found (views54)."""

import pytest
import torch

import ember


@pytest.mark.parametrize("call", [
    lambda lib, x: x.squeeze((0, 0)),
    lambda lib, x: x.squeeze([0, -3]),
    lambda lib, x: x.squeeze_((2, 2)),
    lambda lib, x: lib.squeeze_copy(x, (0, 0)),
], ids=["tuple", "negative-alias", "in-place", "copy"])
def test_squeeze_refuses_a_dim_listed_twice_as_torch(call):
    with pytest.raises(RuntimeError, match="appears multiple times"):
        call(torch, torch.ones(1, 2, 1))
    with pytest.raises(ember.ShapeError, match="appears multiple times in the list of dims"):
        call(ember, ember.ones(1, 2, 1))


def test_squeeze_of_distinct_dims_still_matches_torch():
    for dims in [(0, 2), [0, -1], (), (1,)]:
        assert tuple(ember.ones(1, 2, 1).squeeze(dims).shape) == \
            tuple(torch.ones(1, 2, 1).squeeze(dims).shape)


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4)])
def test_T_of_a_non_matrix_warns_as_torch(shape):
    want = tuple(torch.ones(shape).T.shape)  # (torch warns once per process)
    with pytest.warns(UserWarning, match=r"x.T` on tensors of dimension other than 2"):
        got = ember.ones(shape).T
    assert tuple(got.shape) == want == shape[::-1]


def test_T_of_a_matrix_does_not_warn():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tuple(ember.ones(2, 3).T.shape) == (3, 2)


def test_view_as_complex_refuses_an_odd_storage_offset_as_torch():
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        torch.view_as_complex(torch.arange(6.0)[1:5].reshape(2, 2))
    with pytest.raises(ember.ShapeError, match="storage_offset divisible by 2.*got 1"):
        ember.view_as_complex(ember.arange(6.0)[1:5].reshape(2, 2))
    even = ember.view_as_complex(ember.arange(6.0)[2:6].reshape(2, 2))
    assert even.tolist() == torch.view_as_complex(torch.arange(6.0)[2:6].reshape(2, 2)).tolist()


@pytest.mark.parametrize("op", ["view_as_complex", "view_as_complex_copy"])
def test_view_as_complex_of_a_meta_tensor_works_as_torch(op):
    # the odd-offset check read the storage offset, which a meta tensor has no memory for
    want = getattr(torch, op)(torch.empty(3, 2, device="meta"))
    got = getattr(ember, op)(ember.empty(3, 2, device="meta"))
    assert got.is_meta and want.is_meta
    assert tuple(got.shape) == tuple(want.shape) == (3,)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "complex64"


def test_compiled_view_as_complex_refuses_an_odd_storage_offset_as_eager():
    f = ember.jit.compile(lambda x: ember.view_as_complex(x))
    assert f(ember.arange(6.0).reshape(3, 2)).tolist() == [0 + 1j, 2 + 3j, 4 + 5j]
    with pytest.raises(ember.ShapeError, match="storage_offset divisible by 2.*got 1"):
        f(ember.arange(7.0)[1:].reshape(3, 2))
