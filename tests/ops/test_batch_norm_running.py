"""batch_norm's and instance_norm's running statistics: PyTorch's values, the momentum's
type, and the eager update on the arrays that equals the ops' bit for bit."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.ops import normalization


def test_batch_norm_updates_running_stats_like_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 2, 2))
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    for _ in range(2):
        F.batch_norm(ember.from_numpy(x), rm, rv, training=True, momentum=0.3)
        TF.batch_norm(torch.from_numpy(x), trm, trv, training=True, momentum=0.3)
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())  # unbiased variance, as torch
    assert rm._version == 2


def test_instance_norm_running_stats_like_torch():
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    F.instance_norm(ember.from_numpy(x), rm, rv)
    TF.instance_norm(torch.from_numpy(x), trm, trv)
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("momentum", [None, "0.1"])
def test_functional_momentum_must_be_a_number_like_torch(training, momentum):
    # (momentum=None, a cumulative average, is the layers' option: see test_layers.py)
    with pytest.raises(TypeError, match="momentum"):
        TF.batch_norm(torch.ones(4, 3), torch.zeros(3), torch.ones(3), training=training,
                      momentum=momentum)
    with pytest.raises(ember.DTypeError, match="batch_norm: momentum must be a number, got "
                                               f"{type(momentum).__name__}"):
        F.batch_norm(ember.ones(4, 3), ember.zeros(3), ember.ones(3), training=training,
                     momentum=momentum)
    with pytest.raises(ember.DTypeError, match="instance_norm: momentum must be a number"):
        F.instance_norm(ember.ones(2, 3, 4), ember.zeros(3), ember.ones(3),
                        use_input_stats=training, momentum=momentum)


@pytest.mark.parametrize(("shape", "momentum", "dtype"), [
    ((8, 16, 4, 4), 0.1, np.float32), ((8, 16), 0.1, np.float32),
    ((3, 5, 7), 0.37, np.float64)])
def test_running_statistics_eagerly_as_through_the_ops_and_like_torch(shape, momentum, dtype,
                                                                      monkeypatch):
    """Eager running statistics are updated on the arrays; under an observer (the profiler)
    through the ops (their in-place writes, counted): the same values bit for bit, the same
    version counts, torch's values."""
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal(shape).astype(dtype) * 3 + 1 for _ in range(5)]
    layers, writes = [], []
    monkeypatch.setattr(normalization, "inplace",
                        lambda *a, write=normalization.inplace: writes.append(a[1]) or write(*a))
    for observed in (False, True):
        bn = ember.nn.BatchNorm2d(16, momentum=momentum) if len(shape) == 4 else \
            ember.nn.BatchNorm1d(shape[1], momentum=momentum)
        bn = bn.double() if dtype == np.float64 else bn
        for x in batches:
            if observed:
                with ember.profiler.profile():
                    bn(ember.tensor(x))
            else:
                bn(ember.tensor(x))
        layers.append(bn)
        assert writes == ["batch_norm"] * (10 if observed else 0)
    theirs = torch.nn.BatchNorm2d(16, momentum=momentum) if len(shape) == 4 else \
        torch.nn.BatchNorm1d(shape[1], momentum=momentum)
    theirs = theirs.double() if dtype == np.float64 else theirs
    for x in batches:
        theirs(torch.tensor(x))
    fast, ops = layers
    for name in ("running_mean", "running_var"):
        a, b = getattr(fast, name), getattr(ops, name)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a._vc.value == b._vc.value == 5
        np.testing.assert_allclose(a.numpy(), getattr(theirs, name).numpy(),
                                   rtol=1e-6 if dtype == np.float32 else 1e-12)
    # the batch counter too: on its array eagerly, by the op under the profiler (one write a
    # batch each), torch's count
    counts = [(t.num_batches_tracked.item(), t.num_batches_tracked._version) for t in layers]
    assert counts == [(5, 5)] * 2 and theirs.num_batches_tracked.item() == 5


@pytest.mark.parametrize("name", ["running_mean", "num_batches_tracked"])
def test_a_read_only_buffer_refuses_the_update_clearly(name):
    # (the eager shortcut leaves a read-only array to the op, whose error names the fix)
    bn = ember.nn.BatchNorm1d(3)
    getattr(bn, name)._data.flags.writeable = False
    with pytest.raises(ember.errors.GradError, match="^(batch_norm|add_): cannot write into"):
        bn(ember.randn(4, 3))


def test_running_statistics_made_in_inference_mode_refuse_the_update():
    with ember.inference_mode():
        rm, rv = ember.zeros(3), ember.ones(3)
    with pytest.raises(ember.errors.GradError, match="inference tensor"):
        F.batch_norm(ember.randn(4, 3), rm, rv, training=True)


@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("x_dtype,stats_dtype", [("float32", "float64"), ("float64", "float32"),
                                                  ("float32", "float16"),
                                                  ("float16", "float64")])
def test_instance_norm_takes_running_stats_of_another_dtype_like_torch(
        x_dtype, stats_dtype, use_input_stats):
    # torch's instance_norm checks only weight and bias against the input: running statistics
    # of any floating dtype are read in the input's and updated in their own (Ember raised
    # batch_norm's 'mixed dtype (CPU)' error). sweep62j
    rng = np.random.default_rng(2)
    x, m = rng.standard_normal((2, 3, 5)), rng.standard_normal(3)
    v, w = np.abs(m) + 0.5, rng.standard_normal(3)
    et = [ember.tensor(a).to(getattr(ember, stats_dtype)) for a in (m, v)]
    tt = [torch.tensor(a).to(getattr(torch, stats_dtype)) for a in (m, v)]
    weight = None if x_dtype == "float16" else w
    out = F.instance_norm(ember.tensor(x).to(getattr(ember, x_dtype)), *et,
                          None if weight is None else ember.tensor(weight).to(
                              getattr(ember, x_dtype)), use_input_stats=use_input_stats)
    ref = TF.instance_norm(torch.tensor(x).to(getattr(torch, x_dtype)), *tt,
                           None if weight is None else torch.tensor(weight).to(
                               getattr(torch, x_dtype)), use_input_stats=use_input_stats)
    assert str(out.dtype) == str(ref.dtype).replace("torch", "ember")
    tol = 2e-3 if "float16" in (x_dtype, stats_dtype) else 1e-6
    np.testing.assert_allclose(out.double().numpy(), ref.double().numpy(), atol=tol)
    for e, t in zip(et, tt):
        assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
        np.testing.assert_allclose(e.double().numpy(), t.double().numpy(), atol=tol)


def test_instance_norm_still_refuses_a_weight_of_another_dtype_like_torch():
    x, w = ember.randn(2, 3, 4), ember.randn(3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.instance_norm(x, weight=w)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        TF.instance_norm(torch.randn(2, 3, 4), weight=torch.randn(3, dtype=torch.float64))
