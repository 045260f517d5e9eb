"""``nn.LSTM(proj_size=...)`` against torch on the same weights: parameter names and shapes,
outputs, ``(h_n, c_n)`` and gradients wrt inputs, initial states and every parameter, for
padded and packed input."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from tests.nn.helpers import pair


def _run(lib, module, x, states, lengths=None):
    """The module on ``x`` (packed when ``lengths`` is given) from ``states``; returns the
    padded output, ``h_n``, ``c_n`` and the leaf tensors whose gradients to compare."""
    leaves = [lib.tensor(a, requires_grad=True) for a in (x, *states)]
    inp = leaves[0]
    if lengths is not None:
        inp = lib.nn.utils.rnn.pack_padded_sequence(inp, lib.tensor(lengths),
                                                    enforce_sorted=False)
    out, (h, c) = module(inp, tuple(leaves[1:]) or None)
    if lengths is not None:
        out = lib.nn.utils.rnn.pad_packed_sequence(out)[0]
    return (out, h, c), leaves


def _check(t, e, x, states=(), lengths=None):
    (t_outs, t_leaves), (e_outs, e_leaves) = (_run(lib, m, x, states, lengths)
                                              for lib, m in ((torch, t), (ember, e)))
    rng = np.random.default_rng(1)
    t_loss = e_loss = 0
    for a, b in zip(e_outs, t_outs, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7,
                                   atol=1e-10)
        w = rng.standard_normal(tuple(b.shape))
        t_loss = t_loss + (b * torch.tensor(w)).sum()
        e_loss = e_loss + (a * ember.tensor(w)).sum()
    t_loss.backward()
    e_loss.backward()
    for a, b in zip(e_leaves, t_leaves, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-10)
    e_params = dict(e.named_parameters())
    for name, p in t.named_parameters():
        np.testing.assert_allclose(e_params[name].grad.numpy(), p.grad.numpy(), rtol=1e-7,
                                   atol=1e-10, err_msg=name)


@pytest.mark.parametrize("cfg", [{}, {"num_layers": 2, "bidirectional": True},
                                 {"num_layers": 2, "bias": False, "batch_first": True}],
                         ids=["default", "2layer-bidir", "nobias-batchfirst"])
def test_proj_matches_torch(cfg):
    t, e = pair(torch.nn.LSTM, nn.LSTM, 3, 5, proj_size=2, **cfg)
    assert [(k, tuple(v.shape)) for k, v in e.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 3) if cfg.get("batch_first") else (4, 2, 3))
    _check(t, e, x)
    layers = cfg.get("num_layers", 1) * (2 if cfg.get("bidirectional") else 1)
    states = (rng.standard_normal((layers, 2, 2)), rng.standard_normal((layers, 2, 5)))
    _check(t, e, x, states)


def test_proj_packed_and_unbatched():
    t, e = pair(torch.nn.LSTM, nn.LSTM, 3, 4, proj_size=3, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(2)
    states = (rng.standard_normal((4, 3, 3)), rng.standard_normal((4, 3, 4)))
    _check(t, e, rng.standard_normal((5, 3, 3)), states, lengths=[2, 5, 3])
    _check(t, e, rng.standard_normal((5, 3)), (states[0][:, 0], states[1][:, 0]))


def test_proj_repr_all_weights_and_errors():
    t, e = torch.nn.LSTM(3, 4, proj_size=2, bidirectional=True), nn.LSTM(3, 4, proj_size=2,
                                                                         bidirectional=True)
    assert repr(e) == repr(t)
    assert [[tuple(p.shape) for p in ws] for ws in e.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in t.all_weights]
    assert e.all_weights[1][4] is e.weight_hr_l0_reverse
    with pytest.raises(ValueError, match=r"LSTM: Expected hidden\[0\] size"):
        e(ember.zeros(5, 2, 3), (ember.zeros(2, 2, 4), ember.zeros(2, 2, 4)))
    with pytest.raises(ValueError, match=r"LSTM: Expected hidden\[1\] size"):
        e(ember.zeros(5, 2, 3), (ember.zeros(2, 2, 2), ember.zeros(2, 2, 2)))
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="positive integer or zero"):
        nn.LSTM(3, 4, proj_size=-1)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.LSTM(3, 0)
