"""Layer-module behaviour a differential sweep against torch.nn (sweep 48) found different,
each checked against torch here."""

import pickle

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.errors import ArgumentError


@pytest.mark.parametrize("name,args", [("GroupNorm", (2, 4)), ("RMSNorm", (4,)),
                                       ("PReLU", (4, 0.3))])
def test_reset_parameters_restores_torch_initial_values(name, args):
    tm, em = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    with torch.no_grad():
        for p in tm.parameters():
            p.fill_(7.0)
    with ember.no_grad():
        for p in em.parameters():
            p.fill_(7.0)
    tm.reset_parameters()
    em.reset_parameters()
    t, e = tm.state_dict(), em.state_dict()
    assert list(t) == list(e)
    for k in t:
        np.testing.assert_array_equal(e[k].numpy(), t[k].numpy())


def test_relu6_is_a_hardtanh_with_torch_attributes_and_repr():
    for inplace in (False, True):
        t, e = torch.nn.ReLU6(inplace), nn.ReLU6(inplace)
        assert isinstance(e, nn.Hardtanh)
        assert (e.min_val, e.max_val, e.inplace) == (t.min_val, t.max_val, t.inplace)
        assert repr(e) == repr(t)
    x = np.array([-1.0, 3.0, 7.0], np.float32)
    np.testing.assert_array_equal(nn.ReLU6()(ember.tensor(x)).numpy(),
                                  torch.nn.ReLU6()(torch.from_numpy(x)).numpy())


def test_relu6_pickled_without_min_max_runs():
    # a ReLU6 pickled before it was a Hardtanh has only 'inplace': forward raised
    # AttributeError 'min_val'
    old = nn.ReLU6()
    del old.min_val, old.max_val
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded(ember.tensor([-1.0, 7.0])).tolist() == [0.0, 6.0]
    assert (loaded.min_val, loaded.max_val) == (0.0, 6.0)


@pytest.mark.parametrize("name,args", [("GroupNorm", (2, 4)), ("RMSNorm", (4,)),
                                       ("PReLU", (4, 0.3))])
def test_constructors_call_reset_parameters_as_torch(name, args):
    def subclass(base):
        class Marked(base):
            def reset_parameters(self):
                self.marked = True

        return Marked

    assert subclass(getattr(torch.nn, name))(*args).marked
    assert subclass(getattr(nn, name))(*args).marked  # (AttributeError before)


def test_sum_rightmost_as_torch():
    from torch.distributions.utils import _sum_rightmost

    from ember.distributions.utils import sum_rightmost

    for shape, dims in [((), 2), ((), 1), ((3,), 2), ((2, 3), 1), ((2, 3), 2), ((2, 3, 4), 0)]:
        x = np.arange(float(np.prod(shape))).reshape(shape)
        e, t = sum_rightmost(ember.tensor(x), dims), _sum_rightmost(torch.tensor(x), dims)
        np.testing.assert_array_equal(e.numpy(), t.numpy())  # (0-d, 2 raised before)


def test_hardtanh_refuses_max_val_not_above_min_val():
    for lo, hi in [(2.0, -2.0), (1.0, 1.0)]:
        with pytest.raises(AssertionError):
            torch.nn.Hardtanh(lo, hi)
        with pytest.raises(ArgumentError, match="max_val .* must be greater than min_val"):
            nn.Hardtanh(lo, hi)
    assert repr(nn.Hardtanh(-2.0, 2.0, True)) == repr(torch.nn.Hardtanh(-2.0, 2.0, True))


@pytest.mark.parametrize("name,kw", [("Upsample", {"scale_factor": 2}),
                                     ("UpsamplingNearest2d", {"size": 3}),
                                     ("UpsamplingBilinear2d", {"scale_factor": 2})])
def test_upsample_name_attribute(name, kw):
    assert getattr(nn, name)(**kw).name == getattr(torch.nn, name)(**kw).name == name


@pytest.mark.parametrize("dims", [(), (1,), (0, 1), (-1, 2), (0,), (-1, 0)])
def test_flatten_of_a_scalar_checks_dims_as_torch(dims):
    try:
        t = torch.nn.Flatten(*dims)(torch.tensor(1.0)).numpy()
    except IndexError:
        with pytest.raises(IndexError, match="out of range for a tensor of 0 dimension"):
            nn.Flatten(*dims)(ember.tensor(1.0))  # (it said "of 1 dimension(s)")
        with pytest.raises(IndexError, match="of 0 dimension"):
            ember.tensor(1.0).flatten(*(dims or (1,)))
    else:
        np.testing.assert_array_equal(nn.Flatten(*dims)(ember.tensor(1.0)).numpy(), t)


def test_sparse_embedding_with_scale_grad_by_freq_runs_forward_and_refuses_backward():
    t = torch.nn.Embedding(5, 3, scale_grad_by_freq=True, sparse=True)
    e = nn.Embedding(5, 3, scale_grad_by_freq=True, sparse=True)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    idx = np.array([1, 1, 2])
    ty, ey = t(torch.from_numpy(idx)), e(ember.tensor(idx))
    np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
    with pytest.raises(RuntimeError, match="scale_grad_by_freq"):
        ty.sum().backward()
    with pytest.raises(RuntimeError, match="scale_grad_by_freq"):
        ey.sum().backward()
    with ember.no_grad():  # inference needs no gradient
        np.testing.assert_array_equal(e(ember.tensor(idx)).numpy(), ty.detach().numpy())
