"""``hash_tensor`` against PyTorch: every dtype it hashes, dims and keepdim, vmap and jit, and
its refusals."""

import numpy as np
import pytest
import torch

import ember


def _same(ours: ember.Tensor, theirs: torch.Tensor) -> bool:
    # (torch's uint64 tensors have no .numpy(): compare the bits through int64)
    return np.array_equal(ours.numpy().astype(np.uint64),
                          theirs.view(torch.int64).numpy().view(np.uint64))


@pytest.mark.parametrize("values, dtype", [
    ([1.0, 2.0, 3.0], "float32"), ([float("nan"), -0.0, float("inf")], "float64"),
    ([1.5, -2.25], "bfloat16"), ([0.5, 3.0], "float16"), ([-1, 7], "int8"),
    ([2 ** 40, -7], "int64"), ([5, 200], "uint8"), ([True, False, True], "bool"),
])
def test_hash_of_all_elements_matches_torch(values, dtype):
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    e = ember.tensor(np.array(values, dtype=np.float64 if dtype == "bfloat16" else None))
    assert _same(ember.hash_tensor(e.to(getattr(ember, dtype))), torch.hash_tensor(t))


@pytest.mark.parametrize("dim, keepdim", [(1, False), ((0, 2), True), (-1, True), (None, True)])
def test_hash_over_dims_matches_torch(dim, keepdim):
    t = torch.randn(3, 4, 5, dtype=torch.float64)
    e = ember.tensor(t.numpy())
    assert _same(e.hash_tensor(dim, keepdim=keepdim), torch.hash_tensor(t, dim, keepdim=keepdim))


def test_hash_is_the_same_under_vmap_and_jit_and_for_a_transposed_copy():
    x = ember.randn(3, 4)
    rows = ember.hash_tensor(x, 1)
    assert (ember.func.vmap(ember.hash_tensor)(x) == rows).all()
    assert (ember.jit.compile(lambda a: ember.hash_tensor(a, 1))(x) == rows).all()
    assert ember.hash_tensor(x.t().contiguous().t()).item() == ember.hash_tensor(x).item()


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m.hash_tensor(m.zeros(2), mode=1), (RuntimeError, ValueError), "mode"),
    (lambda m: m.hash_tensor(m.zeros(0, 3)), (RuntimeError, ValueError), "dim"),
    (lambda m: m.hash_tensor(m.zeros(0, 3), 0), (IndexError, ember.ShapeError), "size"),
    (lambda m: m.hash_tensor(m.zeros(2, dtype=m.complex64)), (RuntimeError, ember.DTypeError),
     "omplex"),
    (lambda m: m.hash_tensor(m.zeros(2, dtype=m.uint64)), (RuntimeError, ember.DTypeError),
     "nt64"),
])
def test_hash_refuses_what_torch_refuses(call, error, words):
    with pytest.raises(error):
        call(torch)
    with pytest.raises(error, match=words):
        call(ember)
