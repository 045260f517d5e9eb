"""``nn.utils.parametrize`` and the weight/spectral norms (parametrized and hook-based),
against torch: state-dict keys, outputs and gradients on the same weights, power-iteration
state in train and eval mode, removal."""

import numpy as np
import pytest
import torch
import torch.nn.utils.parametrize as tP
from torch.nn.utils import parametrizations as tPS

import ember
import ember.nn as nn
from ember.nn.utils import parametrizations as PS
from ember.nn.utils import parametrize as P
from tests.nn.helpers import compare, copy_state


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)


class SymmetricFromTriangle(Symmetric):
    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        return x / 2


def _pair(make, wraps, **kwargs):
    """Builds the layer with ``make(lib)`` in both libraries, wraps it with ``wraps``
    (torch's, Ember's) and copies torch's state into Ember's."""
    t = wraps[0](make(torch).double(), **kwargs)
    e = wraps[1](make(ember).to(ember.float64), **kwargs)
    assert list(e.state_dict()) == list(t.state_dict())
    copy_state(t, e)
    return t, e


def test_register_chain_cached_and_remove():
    m = nn.Linear(3, 3)
    param = m.weight
    P.register_parametrization(m, "weight", SymmetricFromTriangle())
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
    assert not P.is_parametrized(m, "bias")
    assert m.parametrizations.weight.original is param
    w = m.weight.numpy(force=True)
    np.testing.assert_array_equal(w, w.T)
    assert P.type_before_parametrizations(m) is nn.Linear and isinstance(m, nn.Linear)
    P.register_parametrization(m, "weight", Scale())
    with P.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    value = ember.eye(3) * 4.0
    m.weight = value  # goes through right_inverse: original = value / 2
    np.testing.assert_allclose(m.parametrizations.weight.original.numpy(force=True),
                               np.eye(3) * 2.0)
    m(ember.randn(2, 3)).sum().backward()
    assert param.grad is not None
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert m.weight is param and list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(param.numpy(force=True), np.eye(3) * 4.0)


def test_state_dict_interoperates_with_torch():
    t = nn.Linear(3, 3)
    tt = torch.nn.Linear(3, 3).double()
    tP.register_parametrization(tt, "weight", torch.nn.Identity())
    P.register_parametrization(t, "weight", nn.Identity())
    assert list(t.state_dict()) == list(tt.state_dict())
    copy_state(tt, t.to(ember.float64))
    np.testing.assert_array_equal(t.weight.numpy(force=True), tt.weight.detach().numpy())
    P.remove_parametrizations(t, "weight", leave_parametrized=False)
    assert list(t.state_dict()) == ["bias", "weight"]


def test_errors():
    m = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="no parameter or buffer named 'scale'"):
        P.register_parametrization(m, "scale", nn.Identity())
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m, "weight", nn.Flatten(0))
    with pytest.raises(ValueError, match="no parametrization on 'weight'"):
        P.remove_parametrizations(m, "weight")
    PS.weight_norm(m)
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    with pytest.raises(ValueError, match="n_power_iterations"):
        PS.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


@pytest.mark.parametrize("dim", [0, 1, None, -2])
@pytest.mark.parametrize("layer", ["linear", "conv"])
def test_weight_norm_matches_torch(dim, layer):
    make = (lambda lib: lib.nn.Linear(4, 3)) if layer == "linear" else \
        (lambda lib: lib.nn.Conv2d(2, 3, 3))
    shape = (5, 4) if layer == "linear" else (2, 2, 5, 5)
    for t_wrap, e_wrap in ((tPS.weight_norm, PS.weight_norm),
                           (torch.nn.utils.weight_norm, nn.utils.weight_norm)):
        t, e = _pair(make, (t_wrap, e_wrap), dim=dim)
        compare(t, e, shape)
        if e_wrap is PS.weight_norm:
            P.remove_parametrizations(e, "weight")
            tP.remove_parametrizations(t, "weight")
        else:
            nn.utils.remove_weight_norm(e)
            torch.nn.utils.remove_weight_norm(t)
        assert list(e.state_dict()) == list(t.state_dict())
        compare(t, e, shape)


@pytest.mark.parametrize("new_style", [True, False])
@pytest.mark.parametrize("layer", ["linear", "conv_transpose"])
def test_spectral_norm_matches_torch(new_style, layer):
    make = (lambda lib: lib.nn.Linear(4, 3)) if layer == "linear" else \
        (lambda lib: lib.nn.ConvTranspose2d(2, 3, 3))
    shape = (5, 4) if layer == "linear" else (2, 2, 4, 4)
    wraps = (tPS.spectral_norm, PS.spectral_norm) if new_style else \
        (torch.nn.utils.spectral_norm, nn.utils.spectral_norm)
    t, e = _pair(make, wraps, n_power_iterations=2)
    for step in range(3):  # train: the vectors move every forward; eval: they stay
        compare(t, e, shape, train=step < 2)
    if new_style:
        P.remove_parametrizations(e, "weight")
        tP.remove_parametrizations(t, "weight")
    else:
        nn.utils.remove_spectral_norm(e)
        torch.nn.utils.remove_spectral_norm(t)
    assert list(e.state_dict()) == list(t.state_dict())
    compare(t, e, shape)


def test_spectral_norm_bounds_singular_value():
    m = PS.spectral_norm(nn.Linear(6, 5))
    for _ in range(20):
        m(ember.randn(1, 6))
    top = np.linalg.svd(m.weight.numpy(force=True), compute_uv=False)[0]
    assert abs(top - 1) < 1e-3
    m.eval()
    u = m.parametrizations.weight[0]._u.numpy().copy()
    m(ember.randn(1, 6))
    np.testing.assert_array_equal(m.parametrizations.weight[0]._u.numpy(), u)
    with pytest.raises(RuntimeError, match="Cannot register two"):
        nn.utils.spectral_norm(nn.utils.spectral_norm(nn.Linear(2, 2)))


def test_weight_norm_dim_out_of_range():
    for wrap in (PS.weight_norm, nn.utils.weight_norm):
        with pytest.raises(IndexError, match=r"weight_norm: dim 2 is out of range .* \(2, 3\)"):
            wrap(nn.Linear(3, 2), dim=2)


class NoInverse(nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        raise NotImplementedError


class ToDouble(nn.Module):
    def forward(self, x):
        return x.float()

    def right_inverse(self, x):
        return x.double()


def test_right_inverse_rules_as_torch():
    m = P.register_parametrization(nn.Linear(2, 2), "weight", NoInverse())  # identity at start
    w = m.parametrizations.weight.original
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * w.detach().numpy())
    with pytest.raises(NotImplementedError):  # but an assignment needs it
        m.weight = ember.ones(2, 2)
    s = P.register_parametrization(nn.Linear(2, 2), "weight", Symmetric())
    with pytest.raises(RuntimeError, match="Symmetric does not implement right_inverse"):
        s.weight = ember.ones(2, 2)
    with pytest.raises(ValueError, match="may not change the dtype"):  # even when unsafe
        P.register_parametrization(nn.Linear(2, 2), "weight", ToDouble(), unsafe=True)
    with pytest.raises(ValueError, match="may not change the dtype"):
        P.register_parametrization(nn.Linear(2, 2), "weight", ToDouble())


def test_functional_call_replaces_a_parametrized_tensor():
    m = PS.weight_norm(nn.Linear(3, 2))
    w = ember.ones(2, 3, requires_grad=True)
    y = ember.func.functional_call(m, {"weight": w}, (ember.ones(1, 3),))
    np.testing.assert_allclose(y.detach().numpy(), 3 + m.bias.detach().numpy()[None])
    y.sum().backward()
    # (the gradient goes through weight_norm's right_inverse and back: 1 up to rounding)
    np.testing.assert_allclose(w.grad.numpy(), np.ones((2, 3)), rtol=1e-6)
    assert "weight" not in m.__dict__


def _orthogonal_pair(w, **kwargs):
    """A linear layer with weight ``w`` under torch's and Ember's ``orthogonal``."""
    t, e = torch.nn.Linear(1, 1).double(), nn.Linear(1, 1).to(ember.float64)
    t.weight, e.weight = torch.nn.Parameter(torch.tensor(w)), nn.Parameter(ember.tensor(w))
    return tPS.orthogonal(t, **kwargs), PS.orthogonal(e, **kwargs)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("use_trivialization", [True, False])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_matches_torch(orthogonal_map, use_trivialization, shape):
    rng = np.random.default_rng(0)
    t, e = _orthogonal_pair(rng.standard_normal(shape), orthogonal_map=orthogonal_map,
                            use_trivialization=use_trivialization)
    t_state, e_state = t.state_dict(), e.state_dict()
    assert list(e_state) == list(t_state)
    square = shape[-1] == shape[-2]
    for key in ("parametrizations.weight.original",) + (("parametrizations.weight.0.base",)
                                                        if use_trivialization and square else ()):
        np.testing.assert_allclose(e_state[key].numpy(), t_state[key].numpy(), atol=1e-12)
    copy_state(t, e)  # the random completion of a non-square base
    g = rng.standard_normal(shape)
    (t.weight * torch.tensor(g)).sum().backward()
    (e.weight * ember.tensor(g)).sum().backward()
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(e.parametrizations.weight.original.grad.numpy(),
                               t.parametrizations.weight.original.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "householder"])
def test_orthogonal_assignment_and_default_map(orthogonal_map):
    rng = np.random.default_rng(1)
    t, e = _orthogonal_pair(rng.standard_normal((3, 3)))
    assert e.parametrizations.weight[0].orthogonal_map == "matrix_exp"
    q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    t, e = _orthogonal_pair(rng.standard_normal((3, 3)), orthogonal_map=orthogonal_map)
    t.weight, e.weight = torch.tensor(q), ember.tensor(q)  # orthogonal: kept as is
    np.testing.assert_allclose(e.weight.detach().numpy(), q, atol=1e-12)
    for key, value in t.state_dict().items():
        if key != "bias":  # random
            np.testing.assert_allclose(e.state_dict()[key].numpy(), value.numpy(), atol=1e-12)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="matrix or batch of matrices"):
        PS.orthogonal(nn.Linear(2, 3), "bias")
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        PS.orthogonal(nn.Linear(2, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="has no parameter or buffer named 'w'"):
        PS.orthogonal(nn.Linear(2, 3), "w")
    m = PS.orthogonal(nn.Linear(2, 3))
    assert m.parametrizations.weight[0].orthogonal_map == "householder"
    with pytest.raises(ValueError, match=r"of shape \(3, 2\), got a tensor of shape \(2, 2\)"):
        m.weight = ember.eye(2)


def test_complex_spectral_norm_and_orthogonal():
    ember.manual_seed(0)
    m = PS.spectral_norm(nn.Linear(4, 3, dtype=ember.complex64))
    for _ in range(30):
        m(ember.randn(2, 4).to(ember.complex64))
    assert abs(ember.linalg.matrix_norm(m.weight.detach(), ord=2).item() - 1.0) < 1e-4
    o = PS.orthogonal(nn.Linear(3, 3, dtype=ember.complex64))
    o.weight = ember.randn(3, 3).to(ember.complex64) * (1 + 2j)
    w = o.weight.detach()
    assert ember.allclose(w.mH @ w, ember.eye(3, dtype=ember.complex64), atol=1e-5)


def test_new_weight_norm_loads_an_old_weight_norm_state_dict():
    for make in (lambda lib: lib.nn.Linear(4, 3), lambda lib: lib.nn.Conv1d(2, 3, 3)):
        old = nn.utils.weight_norm(make(ember), dim=1)
        new = PS.weight_norm(make(ember), dim=1)
        assert not new.load_state_dict(old.state_dict()).missing_keys
        np.testing.assert_allclose(new.weight.detach().numpy(), old.weight.detach().numpy(),
                                   rtol=1e-6)
    torch_old = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    new = PS.weight_norm(nn.Linear(4, 3))
    new.load_state_dict({k: ember.tensor(v.detach().numpy())
                         for k, v in torch_old.state_dict().items()})
    np.testing.assert_allclose(new.weight.detach().numpy(), torch_old.weight.detach().numpy(),
                               rtol=1e-6)


def test_right_inverse_may_change_the_shape_when_forward_gives_it_back():
    def run(lib, P):
        class Flat(lib.nn.Module):
            def forward(self, x):
                return x.reshape(3, 3)

            def right_inverse(self, a):
                return a.reshape(-1)

        m = lib.nn.Linear(3, 3)
        P.register_parametrization(m, "weight", Flat())
        m.weight = lib.arange(9.0).reshape(3, 3)
        return tuple(m.parametrizations.weight.original.shape), m.weight.tolist()
    assert run(ember, P) == run(torch, tP)

    class Bad(nn.Module):  # forward does not give the shape back: refused, as in torch
        def forward(self, x):
            return x

        def right_inverse(self, a):
            return a.reshape(-1)

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(nn.Linear(3, 3), "weight", Bad())
