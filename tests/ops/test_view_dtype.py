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
    e = ember.tensor(t.numpy() if source != "bfloat16" else t.float().numpy()).to(
        getattr(ember, source))
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


def test_writes_through_it_leave_the_base_history_alone_as_torch():
    # PyTorch's view(dtype) is no autograd view (_is_view() is False): a write through it
    # bumps the shared version counter but neither moves the base's history nor zeroes its
    # gradient
    grads = []
    for lib in (torch, ember):
        a = lib.ones(4, requires_grad=True)
        x = a * 2
        w = x[1:]
        x.view(lib.int32).add_(1)
        x.view(lib.float32).mul_(3)
        (x.sum() + w.sum()).backward()
        grads.append(a.grad.tolist())
        assert x._version == 2 and not x.view(lib.int32)._is_view()
    assert grads[0] == grads[1] == [2.0, 4.0, 4.0, 4.0]


def test_a_leaf_may_be_written_through_it_and_views_of_it_have_it_as_base():
    for lib in (torch, ember):
        x = lib.ones(2, 2, requires_grad=True)
        v = x.view(lib.int32)
        v.add_(1)
        assert x._version == 1 and v[1:]._base is v and v._base is None


def test_a_write_through_it_then_a_read_of_its_base_in_compiled_code_is_refused():
    def f(t):
        t.view(ember.int32).add_(1)
        return t * 1

    with pytest.raises(ember.errors.EmberError):
        ember.jit.compile(f)(ember.ones(3))


def test_keyword_spellings_as_torch():
    x = ember.ones(2, 2)
    assert x.view(dtype=ember.int32).dtype is ember.int32
    assert tuple(x.view(size=(4,)).shape) == (4,)
    with pytest.raises(TypeError, match="either sizes or a dtype"):
        x.view(4, dtype=ember.int32)


def test_empty_tensors_as_torch():
    for lib in (torch, ember):
        assert tuple(lib.zeros(0, 4).view(lib.float64).shape) == (0, 2)
        assert tuple(lib.zeros(0, 4).view(lib.int8).shape) == (0, 16)
