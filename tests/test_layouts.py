"""ember.dtype, ember.layout and memory formats against torch."""

import numpy as np
import pytest
import torch

import ember

FORMATS = [("contiguous_format", None), ("channels_last", (2, 3, 4, 5)),
           ("channels_last_3d", (2, 3, 4, 5, 6))]


def test_dtype_and_layout_classes():
    assert isinstance(ember.float32, ember.dtype) and isinstance(ember.int8, ember.dtype)
    assert ember.zeros(1).layout is ember.strided and repr(ember.strided) == "ember.strided"
    assert isinstance(ember.strided, ember.layout)
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        fmt = getattr(ember, name)
        assert isinstance(fmt, ember.memory_format) and repr(fmt) == f"ember.{name}"


@pytest.mark.parametrize("name,shape", FORMATS[1:])
def test_contiguous_in_format_matches_torch(name, shape):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x, tx = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y = x.contiguous(memory_format=getattr(ember, name))
    ty = tx.contiguous(memory_format=getattr(torch, name))
    assert y.stride() == ty.stride()
    for fmt in ("contiguous_format", name):
        assert y.is_contiguous(memory_format=getattr(ember, fmt)) == \
            ty.is_contiguous(memory_format=getattr(torch, fmt))
    assert y.clone().stride() == ty.clone().stride()
    assert (y * 2).stride() == (ty * 2).stride()
    assert y.to(memory_format=ember.contiguous_format).stride() == \
        ty.to(memory_format=torch.contiguous_format).stride()
    assert x.clone(memory_format=getattr(ember, name)).stride() == \
        tx.clone(memory_format=getattr(torch, name)).stride()
    np.testing.assert_array_equal(y.detach().numpy(), a)
    (y * ember.arange(float(y.numel())).reshape(shape)).sum().backward()
    (ty * torch.arange(float(ty.numel())).reshape(shape)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_format_rank_and_type_errors():
    x = ember.zeros(2, 3)
    assert not x.is_contiguous(memory_format=ember.channels_last)
    assert not torch.zeros(2, 3).is_contiguous(memory_format=torch.channels_last)
    with pytest.raises(ember.ShapeError, match="channels_last needs a 4-d tensor"):
        x.contiguous(memory_format=ember.channels_last)
    with pytest.raises(TypeError, match="memory_format must be an ember.memory_format"):
        x.contiguous(memory_format=3)
    for args in ((), (ember.float64,)):  # (one op name in the message: to's, not clone's)
        with pytest.raises(ember.ShapeError, match=r"^to: memory format channels_last needs"):
            x.to(*args, memory_format=ember.channels_last)


def test_size_one_dims_ignore_strides_as_in_torch():
    x, tx = ember.zeros(2, 1, 4, 5), torch.zeros(2, 1, 4, 5)
    for fmt in ("contiguous_format", "channels_last"):
        assert x.is_contiguous(memory_format=getattr(ember, fmt)) == \
            tx.is_contiguous(memory_format=getattr(torch, fmt))


@pytest.mark.parametrize("fn", ["empty_like", "zeros_like", "ones_like", "full_like",
                                "rand_like", "randn_like", "randint_like"])
@pytest.mark.parametrize("fmt", [None, "preserve_format", "contiguous_format", "channels_last"])
def test_like_creation_takes_memory_format_as_torch(fn, fmt):
    extra = {"full_like": (2.0,), "randint_like": (5,)}.get(fn, ())
    kw, tkw = ({}, {}) if fmt is None else \
        ({"memory_format": getattr(ember, fmt)}, {"memory_format": getattr(torch, fmt)})
    for shape in ((2, 3, 4, 5), (3, 4)):
        if len(shape) == 2 and fmt == "channels_last":
            continue
        x = ember.zeros(shape)
        tx = torch.zeros(shape)
        if len(shape) == 4:
            x, tx = x.contiguous(memory_format=ember.channels_last), \
                tx.contiguous(memory_format=torch.channels_last)
        y = getattr(ember, fn)(x, *extra, **kw)
        ty = getattr(torch, fn)(tx, *extra, **tkw)
        assert y.shape == ty.shape and y.stride() == ty.stride() and y.dtype.name == \
            str(ty.dtype).removeprefix("torch.")


def test_empty_takes_memory_format_as_torch():
    x = ember.empty(2, 3, 4, 5, memory_format=ember.channels_last)
    assert x.stride() == torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()
    assert ember.empty((2, 3), memory_format=ember.contiguous_format).stride() == (3, 1)
    with pytest.raises(RuntimeError):
        torch.empty(2, 3, memory_format=torch.channels_last)
    with pytest.raises(ember.ShapeError, match="channels_last"):
        ember.empty(2, 3, memory_format=ember.channels_last)
    with pytest.raises(RuntimeError):
        torch.empty(2, 3, memory_format=torch.preserve_format)
    with pytest.raises(ember.ShapeError, match="preserve_format"):
        ember.empty(2, 3, memory_format=ember.preserve_format)


PRESERVED = [lambda m: m.arange(120.0).reshape(2, 3, 4, 5).permute(2, 0, 3, 1),
             lambda m: m.arange(20.0).reshape(4, 5).t(),
             lambda m: m.arange(120.0).reshape(2, 3, 4, 5)[:, :, ::2],
             lambda m: m.arange(120.0).reshape(2, 3, 4, 5).permute(3, 1, 0, 2)[::2],
             lambda m: m.arange(3.0).reshape(3, 1).expand(3, 4),
             lambda m: m.arange(60.0).reshape(3, 4, 5).transpose(0, 1)[:, 1:]]


@pytest.mark.parametrize("make", PRESERVED)
@pytest.mark.parametrize("copy", [lambda m, x: x.clone(), lambda m, x: m.empty_like(x),
                                  lambda m, x: m.zeros_like(x, dtype=m.float64),
                                  lambda m, x: m.full_like(x, 2.0), lambda m, x: m.rand_like(x)])
def test_preserve_format_keeps_the_order_of_dims_as_torch(make, copy):
    x, tx = make(ember), make(torch)
    assert copy(ember, x).stride() == copy(torch, tx).stride()
    assert x.clone().tolist() == tx.clone().tolist()


@pytest.mark.parametrize("shape, fmt", [((2, 3, 1, 1), "channels_last"),
                                        ((2, 1, 4, 5), "channels_last"),
                                        ((1, 3, 1, 1, 1), "channels_last_3d"),
                                        ((2, 1, 2, 3, 4), "channels_last_3d"),
                                        ((2, 3, 1, 1), "contiguous_format")])
@pytest.mark.parametrize("source", ["contiguous", "in_format"])
def test_to_dtype_and_format_gives_the_format_strides_of_size_one_dims(shape, fmt, source):
    # the cast already counted as laid out in fmt, so Ember kept its size-1 strides:
    # (3, 1, 1, 1) where torch allocates (3, 1, 3, 3)
    strides = []
    for m in (ember, torch):
        x = m.arange(float(np.prod(shape))).reshape(shape)
        if source == "in_format":
            x = x.contiguous(memory_format=getattr(m, fmt))
        y = x.to(m.float64, memory_format=getattr(m, fmt))
        strides.append(y.stride())
        np.testing.assert_array_equal(y.numpy(), np.arange(np.prod(shape)).reshape(shape))
    assert strides[0] == strides[1]


def test_to_channels_last_of_an_expanded_batch_copies_as_torch():
    # a broadcast batch suggests C order (torch's suggest_memory_format), so .to() copies:
    # returning the expanded alias let a later in-place write land on memory every sample shares
    results = []
    for m in (ember, torch):
        x = m.arange(60.0).reshape(1, 3, 4, 5).contiguous(memory_format=m.channels_last)
        wide = x.expand(2, 3, 4, 5)
        y = wide.to(memory_format=m.channels_last)
        y[0].zero_()
        results.append((tuple(y.stride()), y.data_ptr() == wide.data_ptr(), y[1].sum().item()))
    assert results[0] == results[1]
