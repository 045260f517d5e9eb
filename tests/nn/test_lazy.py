"""The lazy layers (``ember.nn.lazy``) against torch: shapes taken from the first input, the
same parameters kept, state dicts loaded before the first call."""

import copy

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.nn import lazy
from tests.nn.helpers import compare, copy_state

LAZY_CASES = [("LazyLinear", (3,), (2, 5)), ("LazyConv2d", (4, 3), (1, 2, 5, 5)),
              ("LazyConvTranspose1d", (4, 3), (2, 2, 6)), ("LazyBatchNorm2d", (), (2, 3, 4, 4)),
              ("LazyInstanceNorm1d", (), (2, 3, 5)), ("LazyInstanceNorm3d", (), (1, 2, 3, 2, 2))]


@pytest.mark.parametrize("name,args,shape", LAZY_CASES, ids=[c[0] for c in LAZY_CASES])
def test_lazy_matches_torch(name, args, shape):
    t, e = getattr(torch.nn, name)(*args).double(), getattr(lazy, name)(*args)
    assert list(e.state_dict()) == list(t.state_dict())
    weight = e.weight
    x = np.random.default_rng(0).standard_normal(shape)
    t(torch.tensor(x))
    e(ember.tensor(x, dtype=ember.float32))
    assert type(e).__name__ == type(t).__name__ and e.weight is weight
    assert repr(e) == repr(t)
    copy_state(t, e.to(ember.float64))
    compare(t, e, shape)


def test_load_state_dict_before_first_call():
    t = torch.nn.Linear(4, 2).double()
    e = lazy.LazyLinear(2).to(ember.float64)
    copy_state(t, e)
    compare(t, e, (3, 4))
    bad = lazy.LazyLinear(2)
    copy_state(t.float(), bad)
    with pytest.raises(ValueError, match="needs"):
        bad(ember.randn(3, 5))
    assert isinstance(lazy.LazyConv1d(2, 3).weight, nn.Parameter)


@pytest.mark.parametrize("name,args,shape", LAZY_CASES, ids=[c[0] for c in LAZY_CASES])
def test_before_first_call(name, args, shape):
    t, e = getattr(torch.nn, name)(*args), getattr(lazy, name)(*args)
    assert repr(e) == repr(t)
    for attr in ("in_features", "out_features", "in_channels", "kernel_size", "num_features"):
        assert getattr(e, attr, None) == getattr(t, attr, None)
    copied = copy.deepcopy(e)  # still lazy, and apart from the original
    fresh = getattr(lazy, name)(*args)
    fresh.load_state_dict(e.state_dict())  # an unmaterialized checkpoint keeps it lazy
    for m in (copied, fresh):
        assert m.has_uninitialized_params()
        m(ember.randn(*shape))
        assert type(m).__name__ == name[len("Lazy"):]
    assert type(e).__name__ == name


def test_lazy_batch_norm_to_double_before_first_call():
    m = lazy.LazyBatchNorm1d().double()
    m(ember.randn(4, 3, dtype=ember.float64))
    assert [t.dtype for t in m.state_dict().values()] == [ember.float64] * 4 + [ember.int64]


def test_first_call_keeps_attributes_and_hooks():
    m = lazy.LazyLinear(2)
    m.tag = "head"
    calls = []
    m.register_full_backward_pre_hook(lambda mod, grad: calls.append(1))
    m(ember.randn(3, 4)).sum().backward()
    assert m.tag == "head" and calls == [1]


def test_lazy_instance_norm_unbatched_and_without_affine():
    m = lazy.LazyInstanceNorm2d()
    m(ember.randn(3, 4, 5))  # (C, H, W): the channels are dimension 0 (PyTorch reads dim 1)
    assert m.num_features == 3 and tuple(m.running_var.shape) == (3,)
    t = torch.nn.LazyInstanceNorm1d(affine=False, track_running_stats=False, bias=False)
    e = lazy.LazyInstanceNorm1d(affine=False, track_running_stats=False, bias=False)
    assert repr(e) == repr(t) and list(e.state_dict()) == list(t.state_dict()) == []
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    np.testing.assert_allclose(e(ember.tensor(x)).numpy(), t(torch.tensor(x)).numpy(),
                               atol=1e-12)
    b = lazy.LazyBatchNorm1d(bias=False)
    assert b.bias is None and list(b.state_dict()) == ["weight", "running_mean", "running_var",
                                                       "num_batches_tracked"]


def test_uninitialized_buffer():
    m = lazy.LazyBatchNorm1d()
    assert isinstance(m.running_mean, nn.UninitializedBuffer)
    assert repr(m.running_mean) == repr(torch.nn.LazyBatchNorm1d().running_mean)
    holder = nn.Module()
    holder.kept = nn.UninitializedBuffer(dtype=ember.float64)
    holder.scratch = nn.UninitializedBuffer(persistent=False)
    assert list(holder.state_dict()) == ["kept"]
    assert [name for name, _ in holder.named_buffers()] == ["kept", "scratch"]
    copied = copy.deepcopy(holder)
    assert not copied.scratch.persistent and copied.kept.dtype == ember.float64
    holder.kept.materialize((2, 3))
    assert type(holder.kept) is ember.Tensor and holder.kept.shape == (2, 3)
    assert holder.kept.dtype == ember.float64 and not holder.kept.requires_grad


def test_a_lazy_parameter_frozen_before_its_first_forward_stays_frozen_as_torch():
    for lib in (torch, ember):
        layer = lib.nn.LazyLinear(3)
        layer.weight.requires_grad = False  # (the setter refused a lazy parameter)
        layer(lib.ones(2, 4)).sum().backward()
        assert not layer.weight.requires_grad and layer.weight.grad is None
        assert layer.bias.grad is not None
