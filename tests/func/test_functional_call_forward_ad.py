"""functional_call (swap and restore, strict, tied weights, buffers) and
ember.autograd.forward_ad (dual levels) against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfwd

import ember
import ember.autograd.forward_ad as fwAD
import ember.func as ef
from tests.func.test_transforms import _pair, close


class Tied(ember.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = ember.nn.Linear(3, 3, bias=False)
        self.b = ember.nn.Linear(3, 3, bias=False)
        self.b.weight = self.a.weight
        self.register_buffer("shift", ember.zeros(3))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.b(self.a(x)) + self.shift


def test_functional_call_swaps_and_restores() -> None:
    net = Tied()
    x = ember.ones(2, 3)
    before = dict(net.named_parameters(remove_duplicate=False)) | dict(net.named_buffers())
    w = ember.eye(3) * 2
    out = ef.functional_call(net, {"a.weight": w, "shift": ember.ones(3)}, x)  # tied: both
    close(out, torch.full((2, 3), 5.0))
    after = dict(net.named_parameters(remove_duplicate=False)) | dict(net.named_buffers())
    assert after.keys() == before.keys() and all(after[k] is v for k, v in before.items())
    assert net.b.weight is net.a.weight
    out = ef.functional_call(net, ({"a.weight": w}, {"b.weight": ember.eye(3)}), (x,),
                             tie_weights=False)
    close(out, torch.full((2, 3), 2.0))
    with pytest.raises(ValueError, match="tied"):
        ef.functional_call(net, {"a.weight": w, "b.weight": ember.eye(3)}, (x,))


def test_functional_call_restores_on_exception_and_kwargs() -> None:
    class Boom(ember.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = ember.nn.Linear(2, 2)

        def forward(self, x, *, fail=False):
            if fail:
                raise RuntimeError("boom")
            return self.lin(x)

    net = Boom()
    weight = net.lin.weight
    with pytest.raises(RuntimeError, match="boom"):
        ef.functional_call(net, {"lin.weight": ember.zeros(2, 2)}, (ember.ones(2),),
                           {"fail": True})
    assert net.lin.weight is weight
    out = ef.functional_call(net, {"lin.weight": ember.zeros(2, 2)}, (ember.ones(2),),
                             {"fail": False})
    close(out, torch.from_numpy(np.asarray(net.lin.bias.detach()._data)))


@pytest.mark.parametrize("shapes, strict, message", [
    ({"weight": (2, 2)}, True, r"Missing key\(s\): 'bias'"),
    ({"weight": (2, 2), "bias": (2,), "extra": (1,)}, True, r"Unexpected key\(s\): 'extra'"),
    ({"nope.weight": (2, 2)}, False, "not a parameter or buffer"),
])
def test_functional_call_bad_keys_raise_torchs_types(shapes, strict, message) -> None:
    try:
        torch.func.functional_call(torch.nn.Linear(2, 2),
                                   {k: torch.zeros(s) for k, s in shapes.items()},
                                   (torch.ones(2),), strict=strict)
    except Exception as exc:  # noqa: BLE001 - its type is what Ember must raise
        want = type(exc)
    assert want in (RuntimeError, AttributeError)
    with pytest.raises(want, match=message):
        ef.functional_call(ember.nn.Linear(2, 2), {k: ember.zeros(s) for k, s in shapes.items()},
                           (ember.ones(2),), strict=strict)


def test_functional_call_refuses_a_value_that_is_not_a_tensor() -> None:
    with pytest.raises(TypeError, match="must be a tensor"):
        ef.functional_call(ember.nn.Linear(2, 2), {"weight": [[0.0, 0.0]]}, (ember.ones(2),))


def test_functional_call_none_value_drops_the_parameter() -> None:
    net, tnet = ember.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    w = np.arange(6.0).reshape(2, 3)
    tnet.weight.data = torch.from_numpy(w.copy())
    x = np.ones((1, 3))
    got = ef.functional_call(net, {"weight": ember.from_numpy(w.copy()), "bias": None},
                             (ember.from_numpy(x.copy()),), strict=True)
    want = torch.func.functional_call(tnet, {"bias": None}, (torch.from_numpy(x.copy()),),
                                      strict=False)
    close(got, want)
    assert net.bias is not None  # restored


def test_functional_call_strict_counts_one_name_of_a_tied_weight_for_all() -> None:
    out = ef.functional_call(Tied(), {"a.weight": ember.eye(3), "shift": ember.ones(3)},
                             (ember.ones(1, 3),), strict=True)
    close(out, torch.full((1, 3), 2.0))
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): 'shift'"):
        ef.functional_call(Tied(), {"b.weight": ember.eye(3)}, (ember.ones(1, 3),),
                           strict=True)


def test_grad_through_functional_call_matches_backward() -> None:
    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 1))
    x = ember.randn(5, 3)
    params = {k: v.detach() for k, v in net.named_parameters()}
    grads = ef.grad(lambda p: ef.functional_call(net, p, (x,)).sum())(params)
    net(x).sum().backward()
    for k, p in net.named_parameters():
        close(grads[k], torch.from_numpy(np.asarray(p.grad._data)), tol=1e-6)


# -- forward_ad ----------------------------------------------------------------------------
def test_forward_ad_against_torch() -> None:
    (ex, tx), (ev, tv) = _pair(3, 2), _pair(3, 2, seed=1)
    (ew, tw) = _pair(2, 4, seed=2)
    with fwAD.dual_level():
        d = fwAD.make_dual(ex, ev)
        y = ember.softmax(d @ ew, -1).log()
        mine = fwAD.unpack_dual(y)
        assert fwAD.unpack_dual(ew).tangent is None
        assert fwAD.unpack_dual(ex).tangent is None  # make_dual did not change its input
    with tfwd.dual_level():
        d = tfwd.make_dual(tx, tv)
        ref = tfwd.unpack_dual(torch.softmax(d @ tw, -1).log())
    close((mine.primal, mine.tangent), (ref.primal, ref.tangent))
    assert isinstance(mine, fwAD.UnpackedDualTensor)
    assert fwAD.unpack_dual(y).tangent is None  # the level is over
    assert fwAD.unpack_dual(mine.primal).tangent is None


def test_forward_ad_nested_levels_and_errors() -> None:
    x = ember.tensor(2.0, dtype=ember.float64)
    with fwAD.dual_level() as outer:
        a = fwAD.make_dual(x, ember.ones_like(x))
        with fwAD.dual_level():
            b = fwAD.make_dual(a, ember.ones_like(x))
            y = b * b * b
            dy = fwAD.unpack_dual(y).tangent          # 3 x^2 = 12
            d2 = fwAD.unpack_dual(dy, level=outer).tangent  # 6 x = 12
        assert float(dy) == 12.0 and float(d2) == 12.0
    with pytest.raises(ember.GradError, match="dual_level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(ember.ShapeError, match="tangent has shape"):
            fwAD.make_dual(x, ember.ones(2))
        with pytest.raises(ember.DTypeError, match="floating"):
            fwAD.make_dual(ember.arange(3), ember.ones(3))


def test_forward_ad_inplace_and_reverse_over_forward() -> None:
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.ones(2, dtype=ember.float64))
        y = d.sin() * 1
        y.mul_(2)
        p, t = fwAD.unpack_dual(y)
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64)
    close((p, t), (2 * tx.sin(), 2 * tx.cos()))
    t.sum().backward()  # d/dx of the tangent 2 cos(x)
    close(x.grad, -2 * tx.sin())


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_dual_grad_output_gives_a_dual_gradient_as_torch(create_graph) -> None:
    """Forward over reverse: ``grad`` of a dual ``grad_outputs`` carries its tangent with or
    without create_graph (it was dropped without), and holds no history without it."""
    rng = np.random.default_rng(7)
    x, g, dg = (rng.standard_normal(s) for s in ((2, 3, 6, 6), (2, 3, 2, 2), (2, 3, 2, 2)))
    got = []
    for lib, fwd in ((ember, fwAD), (torch, tfwd)):
        xt = lib.tensor(x, requires_grad=True)
        outputs = (lib.nn.functional.avg_pool2d(xt, 3), xt.sin())
        with fwd.dual_level():
            grads = [lib.autograd.grad(
                y, [xt], fwd.make_dual(lib.tensor(v), lib.tensor(dv)),
                create_graph=create_graph)[0]
                for y, v, dv in zip(outputs, (g, x), (dg, x), strict=True)]
            assert create_graph or not any(t.requires_grad for t in grads)
            got.append([fwd.unpack_dual(t).tangent.detach().numpy() for t in grads])
    for a, b in zip(*got, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
