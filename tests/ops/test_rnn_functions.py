"""torch.lstm / gru / rnn_tanh / rnn_relu (flat weights, both ATen overloads) against torch:
values, final states and gradients, and a float64 gradcheck."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd.gradcheck import gradcheck
from tests.ops.optable import raises_like_torch

R = np.random.default_rng(0)
GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


def _weights(op, inp, hidden, layers, bidirectional, bias, proj=0):
    out, dirs = [], 2 if bidirectional else 1
    real = proj or hidden
    for layer in range(layers):
        width = inp if layer == 0 else real * dirs
        for _ in range(dirs):
            shapes = [(GATES[op] * hidden, width), (GATES[op] * hidden, real)]
            shapes += [(GATES[op] * hidden,)] * 2 if bias else []
            shapes += [(proj, hidden)] if proj else []
            out += [R.uniform(-0.5, 0.5, s) for s in shapes]
    return out


def _call(lib, op, x, h, ws, bias, layers, bidirectional, batch_first, packed=None):
    hx = tuple(h) if op == "lstm" else h[0]
    if packed is not None:
        return getattr(lib, op)(x, packed, hx, ws, bias, layers, 0.0, True, bidirectional)
    return getattr(lib, op)(x, hx, ws, bias, layers, 0.0, True, bidirectional, batch_first)


@pytest.mark.parametrize("op", list(GATES))
@pytest.mark.parametrize("layers,bidirectional,bias,batch_first,proj",
                         [(1, False, True, False, 0), (2, True, False, True, 0),
                          (2, False, True, False, 2)])
def test_matches_torch(op, layers, bidirectional, bias, batch_first, proj):
    if proj and op != "lstm":
        pytest.skip("projections are LSTM's")
    dirs = 2 if bidirectional else 1
    x = R.standard_normal((2, 3, 4) if batch_first else (3, 2, 4))
    hs = [R.standard_normal((layers * dirs, 2, proj or 3)),
          R.standard_normal((layers * dirs, 2, 3))]
    ws = _weights(op, 4, 3, layers, bidirectional, bias, proj)
    results = []
    for lib in (ember, torch):
        tensors = [lib.tensor(a, requires_grad=True) for a in [x, *hs, *ws]]
        out = _call(lib, op, tensors[0], tensors[1:3], tensors[3:], bias, layers, bidirectional,
                    batch_first)
        seeds = [np.cos(np.arange(o.numel())).reshape(tuple(o.shape)) for o in out]
        lib.autograd.backward(list(out), [lib.tensor(s) for s in seeds])
        results.append([o.detach().numpy() for o in out] +
                       [np.zeros(1) if t.grad is None else t.grad.numpy() for t in tensors])
    for mine, ref in zip(*results):
        np.testing.assert_allclose(mine, ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_packed_overload_matches_torch(op):
    seqs = [R.standard_normal((n, 2)) for n in (3, 2, 1)]
    ws = _weights(op, 2, 3, 1, True, True)
    h = [np.zeros((2, 3, 3)), np.zeros((2, 3, 3))]
    outs = []
    for lib in (ember, torch):
        packed = lib.nn.utils.rnn.pack_sequence([lib.tensor(s) for s in seqs])
        out = _call(lib, op, packed.data, [lib.tensor(a) for a in h],
                    [lib.tensor(w) for w in ws], True, 1, True, False, packed.batch_sizes)
        outs.append([o.numpy() for o in out])
    for mine, ref in zip(*outs):
        np.testing.assert_allclose(mine, ref, rtol=1e-10)


def test_gradcheck_and_module_equivalence():
    x = ember.tensor(R.standard_normal((2, 1, 2)), requires_grad=True)
    ws = [ember.tensor(w, requires_grad=True) for w in _weights("gru", 2, 2, 1, False, True)]
    h = ember.zeros(1, 1, 2, dtype=ember.float64)
    assert gradcheck(lambda x, *w: ember.gru(x, h, list(w), True, 1, 0.0, False, False,
                                             False)[0], (x, *ws))
    lstm = ember.nn.LSTM(2, 3, num_layers=2, dtype=ember.float64)
    inp = ember.tensor(R.standard_normal((4, 1, 2)))
    out, (h_n, c_n) = lstm(inp)
    zeros = ember.zeros(2, 1, 3, dtype=ember.float64)
    flat = ember.lstm(inp, (zeros, zeros), [p for ws in lstm.all_weights for p in ws], True, 2,
                      0.0, False, False, False)
    for a, b in zip(flat, (out, h_n, c_n)):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_errors():
    h = ember.zeros(1, 2, 3)
    with pytest.raises(ember.ShapeError, match="gru: expected 2 .* weights per layer"):
        ember.gru(ember.zeros(3, 2, 4), h, [ember.zeros(9, 4)], False, 1, 0.0, False, False,
                  False)
    with pytest.raises(ember.ShapeError, match="rnn_tanh: expected a 3-D input"):
        ember.rnn_tanh(ember.zeros(3, 4), h, [ember.zeros(3, 4), ember.zeros(3, 3)], False, 1,
                       0.0, False, False, False)
    with pytest.raises(TypeError, match="lstm: hx must be a pair"):
        ember.lstm(ember.zeros(3, 2, 4), h, [], False, 1, 0.0, False, False, False)


@pytest.mark.parametrize("h_shape", [(1, 2, 3), (2, 3), (2, 1, 3), (2, 2, 4)])
def test_hidden_state_of_the_wrong_shape_is_refused(h_shape):
    weights = [ember.zeros(3, 4), ember.zeros(3, 3)] * 2  # two layers of rnn_tanh, 4 -> 3
    x = ember.zeros(5, 2, 4)
    with pytest.raises(ember.ShapeError, match=r"rnn_tanh: expected hx of shape \(2, 2, 3\)"):
        ember.rnn_tanh(x, ember.zeros(*h_shape), weights, False, 2, 0.0, False, False, False)
    packed_sizes = ember.tensor([2, 2, 1])
    with pytest.raises(ember.ShapeError, match=r"rnn_tanh: expected hx of shape \(2, 2, 3\)"):
        ember.rnn_tanh(ember.zeros(5, 4), packed_sizes, ember.zeros(*h_shape), weights, False, 2,
                       0.0, False, False)


def test_lstm_cell_state_shape_and_empty_sequence_are_refused():
    h = ember.zeros(1, 2, 2)  # projections: h has proj_size 2, c hidden size 3
    weights = [ember.zeros(12, 4), ember.zeros(12, 2), ember.zeros(2, 3)]
    out = ember.lstm(ember.zeros(5, 2, 4), (h, ember.zeros(1, 2, 3)), weights, False, 1, 0.0,
                     False, False, False)
    assert out[0].shape == (5, 2, 2) and out[2].shape == (1, 2, 3)
    with pytest.raises(ember.ShapeError, match=r"lstm: expected cx of shape \(1, 2, 3\)"):
        ember.lstm(ember.zeros(5, 2, 4), (h, h), weights, False, 1, 0.0, False, False, False)
    raises_like_torch(
        lambda lib: lib.gru(lib.zeros(0, 2, 4), lib.zeros(1, 2, 3),
                            [lib.zeros(9, 4), lib.zeros(9, 3)], False, 1, 0.0, False, False,
                            False), ember.ShapeError, "sequence length to be larger than 0")
