"""An optimizer step inside a compiled function skips the parameters whose ``.grad`` the
function cleared before it (``zero_grad()``), as eager's does, even when they hold a stale
gradient at the call (left by another compiled step sharing the optimizer, or from before a
layer was frozen): the generated step used to apply it, moving a head the step never used."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember import jit

X = [np.random.default_rng(i).standard_normal((5, 6)) for i in range(6)]


def _two_heads(T, compiled, optname, scaler=False):
    """A body and two heads under one optimizer; step A trains body + head A, step B body +
    head B, alternating. Returns the losses and the parameters after six steps."""
    T.manual_seed(0)
    body, ha, hb = (T.nn.Linear(6, 8).double(), T.nn.Linear(8, 2).double(),
                    T.nn.Linear(8, 3).double())
    params = [*body.parameters(), *ha.parameters(), *hb.parameters()]
    if T is torch:
        with torch.no_grad():
            for p, q in zip(params, _two_heads(ember, None, optname)[1]):
                p.copy_(torch.tensor(q))
    extra = {"momentum": 0.9} if optname == "SGD" else {}
    opt = getattr(T.optim, optname)(params, lr=0.1, **extra)
    sc = T.amp.GradScaler("cpu", init_scale=4.0) if scaler else None

    def make(head):
        def step(x):
            loss = head(body(x).relu()).pow(2).mean()
            opt.zero_grad()
            if sc is None:
                loss.backward()
                opt.step()
            else:
                sc.scale(loss).backward()
                sc.unscale_(opt)
                sc.step(opt)
                sc.update()
            return loss
        return jit.compile(step) if compiled else step

    if compiled is None:  # (the initial parameters only)
        return None, [p.detach().numpy().copy() for p in params]
    fa, fb = make(ha), make(hb)
    losses = [float((fa if i % 2 else fb)(T.tensor(x))) for i, x in enumerate(X)]
    return losses, [p.detach().numpy().copy() for p in params]


@pytest.mark.parametrize("optname", ["SGD", "Adam"])
@pytest.mark.parametrize("scaler", [False, True])
def test_two_compiled_steps_sharing_an_optimizer_step_as_eager_and_torch(optname, scaler):
    want, want_params = _two_heads(torch, False, optname, scaler)
    eager, eager_params = _two_heads(ember, False, optname, scaler)
    got, got_params = _two_heads(ember, True, optname, scaler)
    np.testing.assert_allclose(got, eager, rtol=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    for a, b, c in zip(got_params, eager_params, want_params):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)


def test_a_layer_frozen_again_after_a_step_keeps_its_weight():
    def run(compiled):
        ember.manual_seed(0)
        m = ember.nn.Sequential(ember.nn.Linear(6, 4), ember.nn.ReLU(),
                                ember.nn.Linear(4, 2)).double()
        opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            loss = m(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        f = jit.compile(step) if compiled else step
        out = []
        for i, x in enumerate(X[:5]):
            m[0].weight.requires_grad_(i % 2 == 0)  # (frozen at calls 1 and 3: a stale .grad)
            out.append(float(f(ember.tensor(x))))
        return out, [p.detach().numpy().copy() for p in m.parameters()]
    (le, pe), (lc, pc) = run(False), run(True)
    np.testing.assert_allclose(lc, le, rtol=1e-12)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
