"""``Tensor.view(dtype)``: the same memory read as another dtype, as PyTorch's."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ShapeError

PAIRS = [("float32", "int32"), ("int32", "float32"), ("int16", "int32"), ("int64", "int16"),
         ("uint8", "int32"), ("float32", "float16"), ("bfloat16", "int16"), ("int32", "bool"),
         ("float64", "complex128"), ("complex64", "float32"), ("float32", "float32")]


@pytest.mark.parametrize("source,target", PAIRS)
def test_values_and_shapes_match_torch(source, target):
    base = torch.arange(1, 49, dtype=torch.int64).reshape(3, 16) % 7
    t = base.to(getattr(torch, source)) if source != "bool" else base > 3
    e = ember.tensor(t.numpy() if source != "bfloat16" else t.float().numpy()).to(source)
    got, want = e.view(getattr(ember, target)), t.view(getattr(torch, target))
    assert tuple(got.shape) == tuple(want.shape) and got.dtype.name == target
    if target == "bfloat16":
        want, got = want.float(), got.float()
    assert np.array_equal(got.numpy(), want.numpy(), equal_nan=True)


def test_shares_memory_and_version():
    b = ember.zeros(4, dtype=ember.uint8)
    c = b.view(ember.int32)
    c[0] = -1
    assert b.tolist() == [255] * 4 and b._version == c._version == 1


def test_not_differentiable_even_to_the_same_dtype():
    x = ember.randn(2, 4, requires_grad=True)
    assert not x.view(ember.float32).requires_grad and not x.view(ember.float16).requires_grad


@pytest.mark.parametrize("make,target,message", [
    (lambda lib: lib.arange(6, dtype=lib.float32).reshape(2, 3).t(), "int16", "stride"),
    (lambda lib: lib.zeros(2, 3, dtype=lib.int16), "int32", "size"),
    (lambda lib: lib.zeros(2, 4, dtype=lib.int16)[:, 1:3], "int32", "storage_offset"),
    (lambda lib: lib.zeros((), dtype=lib.int32), "int8", "dim"),
])
def test_errors_match_torch(make, target, message):
    with pytest.raises(RuntimeError, match=message):
        make(torch).view(getattr(torch, target))
    with pytest.raises(ShapeError, match=message):
        make(ember).view(getattr(ember, target))


def test_under_vmap_and_jit():
    x = ember.arange(6, dtype=ember.int32).reshape(3, 2)
    assert ember.equal(ember.vmap(lambda t: t.view(ember.int16))(x), x.view(ember.int16))
    f = ember.jit.compile(lambda t: t.view(ember.int32) + 1)
    assert f(ember.ones(3)).tolist() == [1065353217] * 3


def test_vmap_view_chains_track_the_rank_through_complex_views():
    from ember.func.batching.views import _rank_after

    assert [_rank_after(name, {}, 2) for name in
            ("real", "view_as_real", "view_as_complex", "view_dtype")] == [2, 3, 1, 2]
