"""ember.func on real models against torch.func on their PyTorch twins (same weights): an
MLP, a small CNN and a transformer encoder block; grad, jvp, jacrev/jacfwd, hessian, hvp."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf
from torch.nn.attention import SDPBackend, sdpa_kernel

import ember
import ember.func as ef
from tests.func.test_transforms import close


@pytest.fixture(autouse=True)
def _math_attention():
    """PyTorch's fused CPU attention kernel has no forward-mode rule: use its math one."""
    with sdpa_kernel(SDPBackend.MATH):
        yield


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 3))


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(3, 4, 3), nn.Sigmoid(), nn.Flatten(), nn.Linear(4, 3))


def _block(lib):
    return lib.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                          activation="gelu", batch_first=True)


MODELS = {"mlp": (_mlp, (3, 4)), "cnn": (_cnn, (2, 2, 6, 6)), "block": (_block, (2, 3, 8))}


def _twins(name: str):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    tm = make(torch).double()  # train mode, dropout 0: PyTorch's eval fast path has no jvp
    em = make(ember)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    em = em.double()
    x = np.random.default_rng(1).standard_normal(shape)
    return em, tm, ember.from_numpy(x.copy()), torch.from_numpy(x.copy())


def _params(model, lib):
    return {k: (ember.from_numpy(np.asarray(v.detach()._data).copy()) if lib is ember
                else v.detach().clone()) for k, v in model.named_parameters()}


def _loss(mod, lib, model):
    def f(params, x):
        return (mod.functional_call(model, params, (x,)) ** 2).mean()
    return f


@pytest.mark.parametrize("name", list(MODELS))
def test_grad_of_parameters(name) -> None:
    em, tm, ex, tx = _twins(name)
    close(ef.grad(_loss(ef, ember, em))(_params(em, ember), ex),
          tf.grad(_loss(tf, torch, tm))(_params(tm, torch), tx), tol=1e-9)
    # and the model's own parameters are back in place, untouched
    assert all(type(p) is ember.nn.Parameter for p in em.parameters())


@pytest.mark.parametrize("name", list(MODELS))
def test_jvp_along_parameters_and_input(name) -> None:
    em, tm, ex, tx = _twins(name)
    ep, tp = _params(em, ember), _params(tm, torch)
    rng = np.random.default_rng(2)
    dirs = {k: rng.standard_normal(v.shape) for k, v in tp.items()}
    dx = rng.standard_normal(tuple(tx.shape))
    mine = ef.jvp(lambda p, x: ef.functional_call(em, p, (x,)), (ep, ex),
                  ({k: ember.from_numpy(d.copy()) for k, d in dirs.items()},
                   ember.from_numpy(dx.copy())))
    ref = tf.jvp(lambda p, x: tf.functional_call(tm, p, (x,)), (tp, tx),
                 ({k: torch.from_numpy(d.copy()) for k, d in dirs.items()},
                  torch.from_numpy(dx.copy())))
    close(mine, ref, tol=1e-9)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("how", ["jacrev", "jacfwd"])
def test_jacobian_wrt_input(name, how) -> None:
    em, tm, ex, tx = _twins(name)
    close(getattr(ef, how)(em)(ex), getattr(tf, how)(tm)(tx), tol=1e-9)


@pytest.mark.parametrize("name", ["mlp", "block"])
def test_hessian_wrt_input(name) -> None:
    em, tm, ex, tx = _twins(name)
    close(ef.hessian(lambda x: em(x).sin().sum())(ex),
          tf.hessian(lambda x: tm(x).sin().sum())(tx), tol=1e-9)


@pytest.mark.parametrize("name", list(MODELS))
def test_hvp_wrt_parameters(name) -> None:
    em, tm, ex, tx = _twins(name)
    ep, tp = _params(em, ember), _params(tm, torch)
    rng = np.random.default_rng(3)
    dirs = {k: rng.standard_normal(v.shape) for k, v in tp.items()}
    value, (hv,) = ef.hvp(lambda p: _loss(ef, ember, em)(p, ex), (ep,),
                          ({k: ember.from_numpy(d.copy()) for k, d in dirs.items()},))
    tv = {k: torch.from_numpy(d.copy()) for k, d in dirs.items()}
    _, thv = tf.jvp(tf.grad(lambda p: _loss(tf, torch, tm)(p, tx)), (tp,), (tv,))
    close(hv, thv, tol=1e-9)
    close(value, _loss(tf, torch, tm)(tp, tx), tol=1e-12)
