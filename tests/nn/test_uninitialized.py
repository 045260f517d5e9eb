"""nn.parameter.UninitializedParameter / UninitializedBuffer / is_lazy against torch's."""

import copy
import pickle

import pytest
import torch
from torch.nn.parameter import UninitializedParameter as TorchUninitialized

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy


def test_use_before_materialize_raises_like_torch():
    for p, t in ((UninitializedParameter(), TorchUninitialized()),
                 (UninitializedBuffer(), torch.nn.parameter.UninitializedBuffer())):
        assert repr(p) == repr(t) and is_lazy(p) and torch.nn.parameter.is_lazy(t)
        assert p.dtype is ember.float32 and p.requires_grad == t.requires_grad
        for q in (p, t):
            with pytest.raises(RuntimeError, match="Can't access the shape of an uninit"):
                _ = q.shape
            assert tuple(q.size()) == (0,) and q.ndim == 1
            assert q.to(torch.float64 if q is t else ember.float64).dtype is not None
            for use in (lambda q: q.numel(), lambda q: q.dim(), lambda q: q.stride(),
                        lambda q: q.detach(), lambda q: len(q), lambda q: bool(q),
                        lambda q: q[0], lambda q: iter(q), lambda q: float(q)):
                with pytest.raises(ValueError, match="Attempted to use an uninitialized para"):
                    use(q)
        for use in (lambda q: q + 1, lambda q: q.sum(), lambda q: q.exp()):
            with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
                use(t)
            with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
                use(p)
    with pytest.raises(ValueError, match="uninitialized parameter"):
        F.linear(ember.ones(2, 3), UninitializedParameter() * 1)
    assert not is_lazy(ember.ones(1)) and not is_lazy(nn.Parameter(ember.ones(1)))


@pytest.mark.parametrize("write", [nn.init.zeros_, nn.init.normal_,
                                   lambda p: p.fill_(1.0), lambda p: p.uniform_()])
def test_writing_before_materialize_raises_like_torch(write):
    # (an init before the first call would be lost silently: the lazy module re-initializes)
    for lib, lazy in ((torch, torch.nn.LazyLinear(2)), (ember, nn.LazyLinear(2))):
        with lib.no_grad(), pytest.raises(ValueError, match="uninitialized parameter"):
            write(lazy.weight) if lib is ember else torch.nn.init.zeros_(lazy.weight)


def test_materialize():
    p = UninitializedParameter(dtype=ember.float64)
    opt = ember.optim.SGD([p], lr=0.1)
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and tuple(p.shape) == (2, 3) and p.dtype is ember.float64
    nn.init.ones_(p)
    (p * 2).sum().backward()
    opt.step()  # the optimizer holds the same object
    assert p.tolist() == [[0.8] * 3] * 2
    b = UninitializedBuffer()
    b.materialize(4, dtype=ember.float64)
    assert type(b) is ember.Tensor and tuple(b.shape) == (4,) and b.dtype is ember.float64
    assert not is_lazy(p) and not is_lazy(b)


def test_copies_and_pickles_stay_lazy():
    p = UninitializedParameter(requires_grad=False)
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is UninitializedParameter and q is not p and not q.requires_grad
    m = nn.LazyLinear(3)
    fresh = nn.LazyLinear(3)
    fresh.load_state_dict(m.state_dict())
    assert is_lazy(fresh.weight)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        nn.Linear(2, 3).load_state_dict(m.state_dict())  # (torch's error)


@pytest.mark.parametrize("n", [2, 3])
def test_convert_conv_weight_memory_format(n):
    fmt = (ember.channels_last, ember.channels_last_3d)[n - 2]
    convert = getattr(nn.utils, f"convert_conv{n}d_weight_memory_format")
    conv, deconv = getattr(nn, f"Conv{n}d")(2, 3, 2), getattr(nn, f"ConvTranspose{n}d")(3, 2, 2)
    other = nn.Conv1d(2, 2, 1)
    model = nn.Sequential(conv, nn.Sequential(deconv, other))
    weight, values = conv.weight, conv.weight.tolist()
    assert convert(model, fmt) is model
    assert conv.weight is weight and conv.weight.tolist() == values
    assert conv.weight.is_contiguous(memory_format=fmt)
    assert deconv.weight.is_contiguous(memory_format=fmt)
    x = ember.randn(1, 2, *[3] * n)
    assert model[0](x).shape == conv(x.contiguous()).shape
