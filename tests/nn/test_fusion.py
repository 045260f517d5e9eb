"""``nn.utils.fusion`` against torch on the same weights and statistics; the two-step
gradient clipping and ``stateless.functional_call``."""

import numpy as np
import pytest
import torch
from torch.nn.utils import fusion as tfusion

import ember
import ember.nn as nn
from ember.nn.utils import fusion
from tests.nn.helpers import copy_state

RNG = np.random.default_rng(0)


def _stats(t, e):
    """Random running statistics and affine parameters, the same in both batch norms."""
    n = t.num_features
    state = {"running_mean": RNG.standard_normal(n), "running_var": RNG.uniform(0.5, 2, n)}
    if t.affine:
        state.update(weight=RNG.standard_normal(n), bias=RNG.standard_normal(n))
    t.load_state_dict({k: torch.tensor(v) for k, v in state.items()}, strict=False)
    copy_state(t, e)


@pytest.mark.parametrize("kind,transpose,bias,affine", [
    ("Conv2d", False, True, True), ("Conv1d", False, False, False),
    ("ConvTranspose2d", True, True, True), ("Linear", False, False, True),
    ("Linear", False, True, True)])
def test_fusion_matches_torch(kind, transpose, bias, affine):
    args = (3, 4) if kind == "Linear" else (3, 4, 3)
    tl = getattr(torch.nn, kind)(*args, bias=bias).double().eval()
    el = getattr(nn, kind)(*args, bias=bias).to(ember.float64).eval()
    copy_state(tl, el)
    nd = {"Conv2d": 2, "Conv1d": 1, "ConvTranspose2d": 2, "Linear": 1}[kind]
    tb = getattr(torch.nn, f"BatchNorm{nd}d")(4, affine=affine).double().eval()
    eb = getattr(nn, f"BatchNorm{nd}d")(4, affine=affine).to(ember.float64).eval()
    _stats(tb, eb)
    if kind == "Linear":
        tf, ef = tfusion.fuse_linear_bn_eval(tl, tb), fusion.fuse_linear_bn_eval(el, eb)
    else:
        tf = tfusion.fuse_conv_bn_eval(tl, tb, transpose)
        ef = fusion.fuse_conv_bn_eval(el, eb, transpose)
    assert ef is not el and list(ef.state_dict()) == list(tf.state_dict())
    for k, v in tf.state_dict().items():
        np.testing.assert_allclose(ef.state_dict()[k].numpy(), v.numpy(), rtol=1e-12)
    assert [p.requires_grad for p in ef.parameters()] == \
        [p.requires_grad for p in tf.parameters()]
    shape = (2, 3) if kind == "Linear" else (2, 3, *[6] * nd)
    x = RNG.standard_normal(shape)
    np.testing.assert_allclose(ef(ember.tensor(x)).detach().numpy(),
                               eb(el(ember.tensor(x))).detach().numpy(), rtol=1e-10,
                               atol=1e-12)


def test_fusion_errors():
    conv, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
    with pytest.raises(RuntimeError, match="Fusion only for eval"):
        fusion.fuse_conv_bn_eval(conv, bn)
    with pytest.raises(ValueError, match="running statistics"):
        fusion.fuse_conv_bn_eval(conv.eval(), nn.BatchNorm2d(4, track_running_stats=False)
                                 .eval())
    # PyTorch asserts both: its AssertionError too (before: only an ArgumentError)
    for lib in (torch, ember):
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            lib.nn.utils.fuse_linear_bn_eval(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        with pytest.raises(AssertionError, match="running_mean and bn.running_var must not be "
                                                 "None|keeps no running statistics"):
            lib.nn.utils.fuse_conv_bn_eval(lib.nn.Conv2d(3, 4, 3).eval(),
                                           lib.nn.BatchNorm2d(4, track_running_stats=False)
                                           .eval())
    with pytest.raises(ValueError, match="out_features must equal"):
        fusion.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())


def test_clip_grads_with_norm_matches_clip_grad_norm():
    grads = [RNG.standard_normal((3, 2)), RNG.standard_normal(4)]
    params = [ember.tensor(g * 0, requires_grad=True) for g in grads]
    tparams = [torch.tensor(g * 0, requires_grad=True) for g in grads]
    for p, tp, g in zip(params, tparams, grads):
        p.grad, tp.grad = ember.tensor(g), torch.tensor(g)
    total = nn.utils.get_total_norm([p.grad for p in params])
    nn.utils.clip_grads_with_norm_(params, 0.5, total)
    torch.nn.utils.clip_grads_with_norm_(tparams, 0.5,
                                         torch.nn.utils.get_total_norm([p.grad for p in tparams]))
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)


def test_stateless_functional_call():
    lin = nn.Linear(2, 1)
    params = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
    out = nn.utils.stateless.functional_call(lin, params, (ember.ones(3, 2),))
    assert out.tolist() == [[2.0]] * 3 and lin.weight is not params["weight"]


@pytest.mark.parametrize("in_c, out_c, groups", [(4, 6, 2), (4, 4, 4)])
def test_grouped_conv_transpose_fusion_equals_the_pair(in_c, out_c, groups):
    # PyTorch's fold scales the (in, out/groups, k) weight by all `out` channels: a shape
    # error, or (out/groups == 1) a wrongly broadcast weight; the pair is the reference
    tl = torch.nn.ConvTranspose2d(in_c, out_c, 3, stride=2, groups=groups).double().eval()
    el = nn.ConvTranspose2d(in_c, out_c, 3, stride=2, groups=groups).to(ember.float64).eval()
    copy_state(tl, el)
    tb = torch.nn.BatchNorm2d(out_c).double().eval()
    eb = nn.BatchNorm2d(out_c).to(ember.float64).eval()
    _stats(tb, eb)
    x = RNG.standard_normal((2, in_c, 3, 3))
    fused = fusion.fuse_conv_bn_eval(el, eb, transpose=True)
    assert fused.weight.shape == el.weight.shape
    np.testing.assert_allclose(fused(ember.tensor(x)).detach().numpy(),
                               tb(tl(torch.tensor(x))).detach().numpy(), atol=1e-12)
