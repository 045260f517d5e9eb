"""Quantized LayerNorm, GroupNorm and InstanceNorm1d/2d/3d against PyTorch's quantized kernels:
the same output integers, reprs, state dicts, and what ``convert`` swaps in."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq
import torch.ao.quantization as tq

import ember
import ember.ao.nn.quantized as ennq
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same

F32 = np.float32


def _quantized(x: np.ndarray, scale: float, zero_point: int) -> tuple:
    x = np.ascontiguousarray(x, F32)
    return (ember.quantize_per_tensor(ember.from_numpy(x.copy()), scale, zero_point,
                                      ember.quint8),
            torch.quantize_per_tensor(torch.from_numpy(x.copy()), scale, zero_point,
                                      torch.quint8))


def _affine(rng, shape, present: bool) -> tuple:
    """The same float weight and bias as Parameters of both frameworks (or None twice)."""
    if not present:
        return (None, None), (None, None)
    w, b = rng.normal(1, 0.5, shape).astype(F32), rng.normal(0, 0.5, shape).astype(F32)
    return ((ember.nn.Parameter(ember.from_numpy(w.copy())),
             ember.nn.Parameter(ember.from_numpy(b.copy()))),
            (torch.nn.Parameter(torch.from_numpy(w.copy())),
             torch.nn.Parameter(torch.from_numpy(b.copy()))))


def _case(seed: int, shape: tuple) -> tuple:
    rng = np.random.default_rng(seed)
    x = rng.normal(rng.uniform(-2, 2), rng.uniform(0.1, 5), shape)
    ex, tx = _quantized(x, float(rng.uniform(0.005, 0.1)), int(rng.integers(0, 256)))
    out = (float(rng.uniform(0.005, 0.1)), int(rng.integers(0, 256)))
    return rng, ex, tx, out, float(rng.choice([1e-5, 1e-3, 0.1]))


# (rows of 64 and more: the kernel's vectorized loop and its scalar tail)
@pytest.mark.parametrize("seed,shape,dims", [
    (0, (2, 5), 1), (1, (3, 4, 7), 2), (2, (2, 70), 1), (3, (4, 130), 1), (4, (2, 3, 64), 1),
    (5, (2, 3, 4, 5), 3), (6, (1, 200), 1), (7, (5, 1), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_integers_match_torch(seed, shape, dims, affine):
    rng, ex, tx, (scale, zp), eps = _case(seed, shape)
    normalized = shape[-dims:]
    (ew, eb), (tw, tb) = _affine(rng, normalized, affine)
    e = ennq.LayerNorm(normalized, ew, eb, scale, zp, eps, elementwise_affine=affine)
    t = tnnq.LayerNorm(normalized, tw, tb, scale, zp, eps, elementwise_affine=affine)
    eo, to = e(ex), t(tx)
    same(eo.int_repr(), to.int_repr())
    assert (eo.q_scale(), eo.q_zero_point()) == (to.q_scale(), to.q_zero_point())
    assert repr(e) == repr(t)


# (spatial sizes above 1: PyTorch takes (N, C, 1, 1) for channels-last, another kernel)
@pytest.mark.parametrize("seed,shape,groups", [
    (10, (2, 4, 5), 2), (11, (3, 6, 3, 4), 3), (12, (2, 8, 70), 8), (13, (1, 4, 130), 1),
    (14, (2, 2, 3, 4, 5), 2), (15, (4, 6, 9), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_integers_match_torch(seed, shape, groups, affine):
    rng, ex, tx, (scale, zp), eps = _case(seed, shape)
    (ew, eb), (tw, tb) = _affine(rng, shape[1], affine)
    e = ennq.GroupNorm(groups, shape[1], ew, eb, scale, zp, eps, affine)
    t = tnnq.GroupNorm(groups, shape[1], tw, tb, scale, zp, eps, affine)
    same(e(ex).int_repr(), t(tx).int_repr())
    assert repr(e) == repr(t)


@pytest.mark.parametrize("dims,shape", [(1, (2, 3, 7)), (2, (3, 2, 4, 5)), (3, (2, 2, 3, 2, 4))])
@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm_integers_match_torch(dims, shape, affine):
    rng, ex, tx, (scale, zp), eps = _case(20 + dims, shape)
    (ew, eb), (tw, tb) = _affine(rng, shape[1], affine)
    name = f"InstanceNorm{dims}d"
    e = getattr(ennq, name)(shape[1], ew, eb, scale, zp, eps, affine=affine)
    t = getattr(tnnq, name)(shape[1], tw, tb, scale, zp, eps, affine=affine)
    same(e(ex).int_repr(), t(tx).int_repr())
    assert repr(e) == repr(t)


def _norms_net(nn, q):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.conv = nn.Conv2d(2, 4, 1)
            self.gn, self.inorm = nn.GroupNorm(2, 4), nn.InstanceNorm2d(4, affine=True)
            self.ln = nn.LayerNorm([5, 6])

        def forward(self, x):
            return self.dequant(self.ln(self.inorm(self.gn(self.conv(self.quant(x))))))
    return Net()


def test_convert_swaps_norms_and_computes_torchs_integers():
    torch.manual_seed(0)
    t = _norms_net(torch.nn, tq).eval()
    with torch.no_grad():
        for p in list(t.gn.parameters()) + list(t.inorm.parameters()) + list(t.ln.parameters()):
            p.uniform_(0.5, 1.5)
    e = _norms_net(ember.nn, eq).eval()
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    tp, ep = tq.prepare(t), eq.prepare(e)
    x = np.random.default_rng(1).normal(0, 2, (3, 2, 5, 6)).astype(F32)
    tp(torch.from_numpy(x.copy()))
    ep(ember.from_numpy(x.copy()))  # (the observers then get PyTorch's exact ranges)
    eq.load_observer_state_dict(ep, {k: ember.from_numpy(v.numpy().copy())
                                     for k, v in tq.get_observer_state_dict(tp).items()})
    tc, ec = tq.convert(tp), eq.convert(ep)
    assert (type(ec.gn), type(ec.inorm), type(ec.ln)) == (ennq.GroupNorm, ennq.InstanceNorm2d,
                                                          ennq.LayerNorm)
    same(ec(ember.from_numpy(x.copy())), tc(torch.from_numpy(x.copy())))
    for name in ("gn", "inorm", "ln"):
        em, tm = ec.get_submodule(name), tc.get_submodule(name)
        assert float(em.scale) == float(tm.scale) and int(em.zero_point) == int(tm.zero_point)
        assert list(em.state_dict()) == list(tm.state_dict())
    fresh = ennq.LayerNorm([5, 6], ember.nn.Parameter(ember.ones(5, 6)),
                           ember.nn.Parameter(ember.zeros(5, 6)), 1.0, 0)
    fresh.load_state_dict(ec.ln.state_dict())
    q = ember.quantize_per_tensor(ember.from_numpy(x), 0.1, 64, ember.quint8)
    same(fresh(q).int_repr(), ec.ln(q).int_repr())


def test_float_input_gets_the_float_norm_and_bad_input_a_clear_error():
    ln = ennq.LayerNorm([4], None, None, 0.1, 0, elementwise_affine=False)
    x = ember.randn(2, 4)
    np.testing.assert_allclose(ln(x).numpy(), ember.nn.functional.layer_norm(x, [4]).numpy())
    q = ember.quantize_per_tensor(ember.randn(2, 3), 0.1, 0, ember.quint8)
    with pytest.raises(ValueError, match=r"last dims are \(4,\), got shape \(2, 3\)"):
        ln(q)
    with pytest.raises(ValueError, match="InstanceNorm2d: expected a 4-D input"):
        ennq.InstanceNorm2d(3, None, None, 0.1, 0)(q)
    signed = ember.quantize_per_tensor(ember.randn(2, 4), 0.1, 0, ember.qint8)
    with pytest.raises(TypeError, match="quantized layer_norm: expected a per-tensor"):
        ln(signed)


# PReLU (an activation, with its quantized slopes: here beside the norms, PyTorch's other
# twins with float-module state)


@pytest.mark.parametrize("shape,slopes", [((2, 3, 4, 5), 3), ((2, 3, 4, 5), 1), ((70,), 1),
                                          ((4, 6), 6), ((2, 2, 3, 2, 3), 2), ((3, 5, 7), 5)])
@pytest.mark.parametrize("seed", [0, 1])
def test_prelu_integers_match_torch(shape, slopes, seed):
    rng = np.random.default_rng(seed)
    ex, tx = _quantized(rng.normal(0, 2, shape), float(rng.uniform(0.01, 0.1)),
                        int(rng.integers(0, 256)))
    w = rng.uniform(-0.5, 1.5, slopes)  # (negative slopes saturate at 0 in quint8 if zp is 0)
    ew, tw = _quantized(w, float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 100)))
    scale, zp = float(rng.uniform(0.01, 0.1)), int(rng.integers(0, 256))
    e, t = ennq.PReLU(scale, zp, slopes), tnnq.PReLU(scale, zp, slopes)
    e.set_weight(ew)
    t.set_weight(tw)
    same(e(ex).int_repr(), t(tx).int_repr())
    assert repr(e) == repr(t)
    fresh = ennq.PReLU(1.0, 0, slopes)
    fresh.load_state_dict(e.state_dict())  # (the slopes too, which PyTorch's leaves out)
    same(fresh(ex).int_repr(), t(tx).int_repr())


@pytest.mark.parametrize("weight_dtype", ["quint8", "qint8"])
def test_convert_swaps_prelu_like_torch(weight_dtype):
    def net(nn, q):
        return nn.Sequential(q.QuantStub(), nn.Conv2d(2, 3, 1), nn.PReLU(3), q.DeQuantStub())
    torch.manual_seed(0)
    t, e = net(torch.nn, tq).eval(), net(ember.nn, eq).eval()
    with torch.no_grad():
        t[2].weight.copy_(torch.tensor([0.1, -0.3, 0.7]))
    copy_weights(t, e)

    def qconfig(q, lib):  # (the default weight observer, symmetric qint8, makes PyTorch warn)
        scheme = "per_tensor_affine" if weight_dtype == "quint8" else "per_tensor_symmetric"
        weight = q.MinMaxObserver.with_args(dtype=getattr(lib, weight_dtype),
                                            qscheme=getattr(lib, scheme))
        return q.QConfig(activation=q.default_observer, weight=weight)
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    t[2].qconfig, e[2].qconfig = qconfig(tq, torch), qconfig(eq, ember)
    tp, ep = tq.prepare(t), eq.prepare(e)
    x = np.random.default_rng(1).normal(0, 2, (2, 2, 4, 5)).astype(F32)
    tp(torch.from_numpy(x.copy()))
    ep(ember.from_numpy(x.copy()))
    eq.load_observer_state_dict(ep, {k: ember.from_numpy(v.numpy().copy())
                                     for k, v in tq.get_observer_state_dict(tp).items()})
    warned = pytest.warns(UserWarning, match="should have dtype quint8") \
        if weight_dtype == "qint8" else warnings.catch_warnings()
    with warned:
        ec = eq.convert(ep)
    tc = tq.convert(tp)
    assert type(ec[2]) is ennq.PReLU
    same(ec[2].weight.int_repr(), tc[2].weight.int_repr())
    same(ec(ember.from_numpy(x.copy())), tc(torch.from_numpy(x.copy())))


def test_prelu_float_input_and_bad_slopes():
    m = ennq.PReLU(0.1, 0, 3)
    m.set_weight(ember.quantize_per_tensor(ember.tensor([0.5, 0.25, 1.0]), 0.25, 0,
                                           ember.quint8))
    x = ember.randn(2, 3, 4)
    np.testing.assert_allclose(m(x).numpy(), ember.nn.functional.prelu(
        x, ember.tensor([0.5, 0.25, 1.0])).numpy())
    with pytest.raises(ValueError, match=r"3 slopes do not fit an input of shape \(2, 4\)"):
        m(ember.quantize_per_tensor(ember.randn(2, 4), 0.1, 0, ember.quint8))
    with pytest.raises(TypeError, match=r"prelu \(its weight\): expected a per-tensor"):
        m.set_weight(ember.tensor([0.5]))
