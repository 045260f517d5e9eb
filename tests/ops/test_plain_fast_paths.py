"""The eager fast paths of basic indexing (``x[i]``, ``x[:, 1:5]``, ``x[None]``, ...) and
``flip`` on plain tensors (no handler, no history to record or renew) give what the full path
through ``apply`` gives: views sharing memory and version counter, strides and values as
PyTorch's, histories, stale views renewed, profiler op names, tracing and vmap."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError, GradError, IndexOutOfRange, IndexTypeError
from ember.func.vmap import vmap
from ember.profiler import profile

KEYS = [3, -1, (3, 2), (slice(None), slice(1, 5)), (Ellipsis, slice(None, None, 2)), None,
        (None, None), (slice(1, 3), None, 2), (Ellipsis, None), (), (Ellipsis,)]
FLIPS = [0, 1, (0, 1), -1, (1, 0)]


def _pair(shape=(6, 7), layout=None):
    a = np.arange(float(np.prod(shape)), dtype=np.float32).reshape(shape)
    e, t = ember.tensor(a), torch.tensor(a)
    if layout == "t":
        e, t = e.t(), t.t()
    elif layout == "step":
        e, t = e[:, ::2], t[:, ::2]
    return e, t


@pytest.mark.parametrize("layout", [None, "t", "step"])
@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_index_is_a_view_as_torch(key, layout):
    e, t = _pair(layout=layout)
    y, ty = e[key], t[key]
    assert tuple(y.shape) == tuple(ty.shape) and y.stride() == ty.stride()
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    assert y._base is (e if e._base is None else e._base)
    v = e._version
    y.add_(1)  # writes through the view, bumps the shared counter
    ty.add_(1)
    assert e._version == y._version > v
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("layout", [None, "t", "step"])
@pytest.mark.parametrize("dims", FLIPS, ids=repr)
def test_flip_is_a_copy_as_torch(dims, layout):
    e, t = _pair(layout=layout)
    y, ty = e.flip(dims), t.flip(dims)
    assert y.stride() == ty.stride() and y._base is None
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    v = e._version
    y.add_(1)
    assert e._version == v  # its own memory
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("op", [lambda x: x[1], lambda x: x[:, 1:3], lambda x: x[None],
                                lambda x: x.flip(0), lambda x: x.flip((0, 1))])
def test_histories_and_gradients(op):
    a = np.random.default_rng(0).standard_normal((4, 5))
    e, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ye, yt = op(e), op(t)
    assert ye.requires_grad and ye.grad_fn is not None
    (ye * ye).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())
    assert ember.autograd.gradcheck(lambda x: op(x).sin().sum(), (e.detach().requires_grad_(),))


def test_flip_keeps_its_grad_fn_name():
    x = ember.ones(3, 2, requires_grad=True)
    assert x.flip(0).grad_fn.name() == "FlipBackward0"
    with ember.no_grad():
        assert x.flip(0).grad_fn is None and not x.flip(0).requires_grad


@pytest.mark.parametrize("op", [lambda v: v[0], lambda v: v.flip(0), lambda v: v[None]])
def test_a_stale_view_takes_its_bases_new_history(op):
    base = ember.zeros(3)
    v = base[:2]
    w = ember.ones(3, requires_grad=True)
    base.copy_(w * 2)  # v's memory written, with history
    out, tb = op(v), torch.zeros(3)
    tv = tb[:2]
    tw = torch.ones(3, requires_grad=True)
    tb.copy_(tw * 2)
    assert out.requires_grad == op(tv).requires_grad is True
    out.sum().backward()
    op(tv).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


def test_a_no_grad_view_of_a_grad_tensor_refuses_writes_with_grad():
    x = ember.ones(3, requires_grad=True).clone()
    with ember.no_grad():
        y = x[0]
    assert not y.requires_grad and y._base is x
    with pytest.raises(GradError):
        y.mul_(2)


def test_inference_mode_marks_new_memory_only():
    x = ember.ones(4, 3)
    with ember.inference_mode():
        v, f = x[1], x.flip(0)
    assert not v.is_inference() and f.is_inference()


def test_profiler_sees_the_same_ops():
    x = ember.ones(4, 3)
    with profile() as prof:
        x[1]
        x[None]
        x.flip(0)
    assert [e.name for e in prof.events()] == ["slice", "slice", "slice", "copy"]


def test_under_vmap_and_jit():
    a = np.arange(24.0).reshape(2, 3, 4)
    got = vmap(lambda r: r[1].flip(0) + r[None, :, 1:3].sum())(ember.tensor(a))
    want = torch.func.vmap(lambda r: r[1].flip(0) + r[None, :, 1:3].sum())(torch.tensor(a))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    f = ember.jit.compile(lambda x: x[1].flip(0) * 2 + x[..., ::2].sum())
    for _ in range(2):
        np.testing.assert_allclose(f(ember.tensor(a[0])).numpy(),
                                   (torch.tensor(a[0])[1].flip(0) * 2
                                    + torch.tensor(a[0])[..., ::2].sum()).numpy())


def test_meta_and_bad_keys():
    m = ember.empty(4, 5, device="meta")
    assert m[1].shape == (5,) and m.flip(1).shape == (4, 5) and m[None].device.type == "meta"
    x = ember.ones(4, 5)
    with pytest.raises(IndexOutOfRange, match="__getitem__"):
        x[4]
    with pytest.raises(IndexTypeError):
        x[1.5]
    with pytest.raises(ArgumentError, match="step"):
        x[::-1]
    with pytest.raises(IndexOutOfRange):
        x[0, 0, 0]


@pytest.mark.parametrize("make", [lambda m: m.ones(3, 1).t(), lambda m: m.ones(1, 3)[:, ::2],
                                  lambda m: m.ones(0, 3), lambda m: m.ones(2, 3)[0, 0],
                                  lambda m: m.ones(2, 1, 3).permute(1, 0, 2)])
@pytest.mark.parametrize("key", [None, (None, None), (Ellipsis, None), (slice(None), None)],
                         ids=repr)
def test_new_dims_strided_as_torch(make, key):
    e, t = make(ember), make(torch)
    if e.ndim == 0 and key == (slice(None), None):
        return
    assert e[key].stride() == t[key].stride() and tuple(e[key].shape) == tuple(t[key].shape)
    assert e.unsqueeze(0).stride() == t.unsqueeze(0).stride()
    assert e.unsqueeze(-1).stride() == t.unsqueeze(-1).stride()
