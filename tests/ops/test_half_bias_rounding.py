"""bfloat16/float16 products with a bias (linear, addmm, baddbmm, under autocast too) round
once, as PyTorch's CPU kernels: the bias added to the float32 GEMM result, bitwise; backward
keeps the half operands, not float32 copies."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

HALVES = [(ember.bfloat16, torch.bfloat16), (ember.float16, torch.float16)]


def _pair(shape, tdt, seed, edt=None):
    t = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(tdt)
    e = ember.tensor(t.float().numpy())
    return (e.to(edt) if edt is not None else e), t


def _same(e, t, at_least=1.0):
    # PyTorch's float16 GEMM (and its batched one) sums in another order now and then: a rare
    # last-bit difference that is no rounding of the bias
    at_least = min(at_least, 0.99 if t.dtype is torch.float16 else 1.0)
    assert np.mean(e.detach().float().numpy() == t.detach().float().numpy()) >= at_least


@pytest.mark.parametrize("edt,tdt", HALVES)
@pytest.mark.parametrize("x_shape,bias_shape", [((64, 48), (40,)), ((4, 16, 48), (40,)),
                                                 ((48,), (40,)), ((64, 48), ()),
                                                 ((2, 3, 8, 48), (1,)), ((4, 16, 48), ())])
def test_linear_rounds_as_pytorch(edt, tdt, x_shape, bias_shape):
    (ex, tx), (ew, tw), (eb, tb) = (_pair(s, tdt, i, edt) for i, s in
                                    enumerate((x_shape, (40, 48), bias_shape)))
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        e.requires_grad_(), t.requires_grad_()
    e, t = F.linear(ex, ew, eb), torch.nn.functional.linear(tx, tw, tb)
    _same(e, t)
    eg, tg = _pair(tuple(t.shape), tdt, 9, edt)
    e.backward(eg), t.backward(tg)
    for a, b in ((ex, tx), (ew, tw)):
        _same(a.grad, b.grad)


@pytest.mark.parametrize("edt,tdt", HALVES)
def test_linear_of_a_non_contiguous_input_rounds_twice_as_pytorch(edt, tdt):
    (ex, tx), (ew, tw), (eb, tb) = (_pair(s, tdt, i, edt) for i, s in
                                    enumerate(((48, 16, 4), (40, 48), (40,))))
    e = F.linear(ex.permute(2, 1, 0), ew, eb)
    _same(e, torch.nn.functional.linear(tx.permute(2, 1, 0), tw, tb))


@pytest.mark.parametrize("edt,tdt", HALVES)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1.5), (1.3, 0.7)])
def test_addmm_and_baddbmm_round_as_pytorch(edt, tdt, beta, alpha):
    (ei, ti), (ea, ta), (eb, tb) = (_pair(s, tdt, i, edt) for i, s in
                                    enumerate(((40,), (64, 48), (40, 48))))
    _same(ember.addmm(ei, ea, eb.t(), beta=beta, alpha=alpha),
          torch.addmm(ti, ta, tb.t(), beta=beta, alpha=alpha))
    (ei, ti), (ea, ta), (eb, tb) = (_pair(s, tdt, i, edt) for i, s in
                                    enumerate(((5, 32, 40), (5, 32, 48), (5, 48, 40))))
    _same(ember.baddbmm(ei, ea, eb, beta=beta, alpha=alpha),
          torch.baddbmm(ti, ta, tb, beta=beta, alpha=alpha), 0.999)


def test_autocast_linear_and_addmm_round_once_as_pytorch():
    (ex, tx), (ew, tw), (eb, tb) = (_pair(s, torch.float32, i) for i, s in
                                    enumerate(((64, 48), (40, 48), (40,))))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t, t2 = torch.nn.functional.linear(tx, tw, tb), torch.addmm(tb, tx, tw.t(), alpha=0.7)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        e, e2 = F.linear(ex, ew, eb), ember.addmm(eb, ex, ew.t(), alpha=0.7)
    assert e.dtype is ember.bfloat16 and e2.dtype is ember.bfloat16
    _same(e, t), _same(e2, t2)


@pytest.mark.parametrize("autocast", [False, True])
def test_a_half_linear_saves_its_half_operands_for_backward(autocast):
    dt = ember.float32 if autocast else ember.bfloat16
    layer = ember.nn.Linear(48, 40).to(dt)
    x = ember.randn(64, 48, dtype=dt, requires_grad=True)
    saved = []
    with ember.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.dtype) or t,
                                                  lambda t: t):
        with ember.autocast("cpu", dtype=ember.bfloat16, enabled=autocast):
            layer(x).sum().backward()
    assert saved and all(d is ember.bfloat16 for d in saved), saved
    assert x.grad.dtype is dt and layer.bias.grad.dtype is dt


def test_parameters_round_once_and_vmap_rounds_twice_as_pytorch():
    # addmm(self.bias, x, self.weight) with Parameters (GPT-2's Conv1D) takes the one rounding;
    # PyTorch's vmap of a half linear or addmm rounds the product, then adds: so does Ember's
    (ex, tx), (ew, tw), (eb, tb) = (_pair(s, torch.bfloat16, i, ember.bfloat16) for i, s in
                                    enumerate(((5, 6, 48), (40, 48), (40,))))
    pw, pb = ember.nn.Parameter(ew), ember.nn.Parameter(eb)
    _same(ember.addmm(pb, ex[0], pw.t()), torch.addmm(tb, tx[0], tw.t()))
    _same(ember.func.vmap(lambda r: F.linear(r, ew, eb))(ex),
          torch.func.vmap(lambda r: torch.nn.functional.linear(r, tw, tb))(tx))
    _same(ember.func.vmap(lambda r: ember.addmm(eb, r, ew.t()))(ex),
          torch.func.vmap(lambda r: torch.addmm(tb, r, tw.t()))(tx))
