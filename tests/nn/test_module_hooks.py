"""Module backward hooks against PyTorch's: full backward pre-hooks, and what full backward
hooks receive (None for non-tensor arguments and for outputs without gradient, zeros for a
tensor input needing none)."""

import copy
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.errors import GradError

LIBS = (ember, torch)


def _arrs(grads):
    return [None if g is None else np.array(g.detach()) for g in grads]


def _nn(lib):
    return nn if lib is ember else torch.nn


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x, y)


def _three_outputs(lib):
    class M(_nn(lib).Module):
        def forward(self, x, k, y, z):
            # an output needing no grad, and one that gets no gradient in backward
            return x * k, y.detach(), x.sum() * 0 + 1
    return M()


def test_full_backward_hook_entries_match_torch():
    got = {}
    for lib in LIBS:
        m = _three_outputs(lib)
        got[lib] = []
        m.register_full_backward_hook(
            lambda mod, gi, go, s=got[lib]: s.append((_arrs(gi), _arrs(go))))
        x = lib.ones(3, requires_grad=True)
        y, z = lib.ones(2), lib.ones(2, requires_grad=True)     # z is unused
        a, _, _ = m(x, 2.0, y, z)
        a.sum().backward()
        got[lib].append(_arrs([z.grad]))
    for (gi_e, go_e), (gi_t, go_t) in zip(got[ember][:1], got[torch][:1]):
        _same(gi_e, gi_t)     # [2s, None, zeros (no grad needed), zeros (unused)]
        _same(go_e, go_t)     # [ones, None, None]
    _same(got[ember][1], got[torch][1])


def test_full_backward_pre_hook_replaces_grad_output_like_torch():
    got = {}
    for lib in LIBS:
        lib.manual_seed(0)
        m = _nn(lib).Linear(2, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        log = got[lib] = []
        m.register_full_backward_pre_hook(lambda mod, go, log=log: log.append(
            ("pre", _arrs(go))) or (go[0] * 10,))
        m.register_full_backward_hook(lambda mod, gi, go, log=log: log.append(
            ("full", _arrs(gi), _arrs(go))))
        x = lib.ones(1, 2, requires_grad=True)
        m(x).sum().backward()
        log.append(("grads", _arrs([x.grad, m.weight.grad])))
    assert [e[0] for e in got[ember]] == [e[0] for e in got[torch]] == ["pre", "full", "grads"]
    for e, t in zip(got[ember], got[torch]):
        for a, b in zip(e[1:], t[1:]):
            _same(a, b)


def test_pre_hook_runs_and_full_hook_sees_none_when_no_input_requires_grad():
    got = {}
    for lib in LIBS:
        m = _nn(lib).Linear(2, 2)
        log = got[lib] = []
        m.register_full_backward_pre_hook(lambda mod, go, log=log: log.append("pre"))
        m.register_full_backward_hook(lambda mod, gi, go, log=log: log.append(gi))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(lib.ones(1, 2)).sum().backward()
    assert got[ember] == got[torch] == ["pre", (None,)]


def test_backward_hooks_returning_the_wrong_count_are_refused():
    m = nn.Linear(2, 2)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    with pytest.raises(GradError, match="pre-hook of Linear returned 2 gradients for a "
                                        "grad_output of 1"):
        m(ember.ones(1, 2, requires_grad=True)).sum().backward()
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (ember.ones(1, 2),))
    with pytest.raises(GradError, match="no input of this call requires grad"):
        m(ember.ones(1, 2)).sum().backward()


def test_backward_pre_hook_handle_removes_it_and_deepcopy_keeps_the_lists():
    m = nn.Linear(2, 2)
    h = m.register_full_backward_pre_hook(lambda mod, go: pytest.fail("removed"))
    m2 = copy.deepcopy(m)
    h.remove()
    assert not m._backward_pre_hooks and len(m2._backward_pre_hooks) == 1
    m(ember.ones(1, 2, requires_grad=True)).sum().backward()


def test_no_wrapping_under_no_grad():
    m = nn.Linear(2, 2)
    m.register_full_backward_pre_hook(lambda mod, go: None)
    with ember.no_grad():
        out = m(ember.ones(1, 2, requires_grad=True))
    assert out.grad_fn is None
