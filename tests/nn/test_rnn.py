"""RNN, LSTM and GRU against torch.nn on the same weights: outputs, final states, gradients
with respect to inputs, initial states and every parameter; state-dict keys."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from tests.nn.helpers import compare, pair

CONFIGS = [
    {}, {"num_layers": 2, "bidirectional": True}, {"batch_first": True, "bias": False},
    {"num_layers": 2, "dropout": 0.5},
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(c) or "default")
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_matches_torch(name, cfg):
    t, e = pair(getattr(torch.nn, name), getattr(nn, name), 3, 4, **cfg)
    shape = (2, 5, 3) if cfg.get("batch_first") else (5, 2, 3)
    compare(t, e, shape, train=not cfg.get("dropout"), rtol=1e-6)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_initial_state_and_unbatched(name):
    t, e = pair(getattr(torch.nn, name), getattr(nn, name), 3, 4, num_layers=2,
                bidirectional=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 2, 3))
    h0 = rng.standard_normal((4, 2, 4))
    states = (h0, rng.standard_normal((4, 2, 4))) if name == "LSTM" else h0

    def run(lib, m, x, states):
        s = tuple(lib.tensor(a, requires_grad=True) for a in states) if name == "LSTM" \
            else lib.tensor(states, requires_grad=True)
        out = m(lib.tensor(x), s)
        return out, s

    (ot, st), (oe, se) = run(torch, t, x, states), run(ember, e, x, states)
    flat_t = [ot[0], *(ot[1] if name == "LSTM" else (ot[1],))]
    flat_e = [oe[0], *(oe[1] if name == "LSTM" else (oe[1],))]
    for a, b in zip(flat_e, flat_t):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    sum(x.sum() for x in flat_t).backward()
    sum(x.sum() for x in flat_e).backward()
    for a, b in zip(se if name == "LSTM" else (se,), st if name == "LSTM" else (st,)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-12)
    compare(t, e, (5, 3), rtol=1e-6)  # unbatched input


def test_state_dict_names_and_repr():
    t = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    e = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    assert list(e.state_dict()) == list(t.state_dict())
    assert repr(e) == repr(t)
    assert repr(nn.RNN(2, 3, nonlinearity="relu")) == repr(torch.nn.RNN(2, 3,
                                                                        nonlinearity="relu"))
    bound = 1 / np.sqrt(4)
    assert all(float(p.abs().max()) <= bound for p in e.parameters())


def test_errors():
    with pytest.raises(ValueError, match="input_size"):
        nn.GRU(3, 4)(ember.randn(5, 2, 7))
    with pytest.raises(ValueError, match=r"^RNN: Expected hidden size \(1, 2, 4\), got \[2, 2, "):
        nn.RNN(3, 4)(ember.randn(5, 2, 3), ember.zeros(2, 2, 4))  # (torch's words, layer named)


def test_flatten_parameters_all_weights_and_lstm_state_type():
    t = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, bias=False)
    e = nn.LSTM(3, 4, num_layers=2, bidirectional=True, bias=False)
    e.flatten_parameters()
    assert [[tuple(p.shape) for p in ws] for ws in e.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in t.all_weights]
    assert e.all_weights[1][0] is e.weight_ih_l0_reverse
    with pytest.raises(TypeError, match=r"tuple \(h_0, c_0\)"):
        e(ember.randn(5, 2, 3), ember.zeros(4, 2, 4))


@pytest.mark.parametrize("name,kwargs", [("RNNCell", {"nonlinearity": "relu"}),
                                         ("LSTMCell", {}), ("GRUCell", {"bias": False})])
def test_cells_match_torch(name, kwargs):
    t, e = pair(getattr(torch.nn, name), getattr(nn, name), 3, 4, **kwargs)
    assert repr(e) == repr(t)
    compare(t, e, (2, 3), rtol=1e-6)
    compare(t, e, (3,), rtol=1e-6)  # unbatched
    rng = np.random.default_rng(0)
    x, h, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    state = (h, c) if name == "LSTMCell" else h

    def step(module, tensor):
        out = module(tensor(x), tuple(map(tensor, state)) if name == "LSTMCell" else
                     tensor(state))
        return [o.detach().numpy() for o in (out if isinstance(out, tuple) else (out,))]
    for a, b in zip(step(e, ember.tensor), step(t, torch.tensor), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    with pytest.raises(ValueError, match="expected hx of shape"):
        e(ember.zeros(2, 3), (ember.zeros(3, 4),) * 2 if name == "LSTMCell" else ember.zeros(3, 4))


@pytest.mark.parametrize("norm", ["parametrized", "hook"])
def test_weight_norm_on_recurrent_weight(norm):
    # the weight is a computed attribute, not an entry of _parameters
    t, e = torch.nn.LSTM(2, 3), nn.LSTM(2, 3)
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    apply_t, apply_e = ((torch.nn.utils.parametrizations.weight_norm,
                         nn.utils.parametrizations.weight_norm) if norm == "parametrized"
                        else (torch.nn.utils.weight_norm, nn.utils.weight_norm))
    apply_t(t, "weight_hh_l0")
    apply_e(e, "weight_hh_l0")
    x = np.random.default_rng(1).standard_normal((4, 1, 2)).astype(np.float32)
    np.testing.assert_allclose(e(ember.tensor(x))[0].detach().numpy(),
                               t(torch.tensor(x))[0].detach().numpy(), atol=1e-6)
    assert [tuple(w.shape) for w in e.all_weights[0]] == [(12, 2), (12, 3), (12,), (12,)]


def test_input_errors_name_the_layer():
    lstm = nn.LSTM(1, 2)
    with pytest.raises(ValueError, match="unbatched 2-D input, hx should also be 2-D"):
        lstm(ember.ones(3, 1), (ember.zeros(1, 1, 2), ember.zeros(1, 1, 2)))
    with pytest.raises(ValueError, match=r"LSTM: input dtype \(ember.float64\) does not match "
                                         r"weight dtype \(ember.float32\)"):
        lstm(ember.ones(3, 1, 1, dtype=ember.float64))


def test_wrong_kind_and_state_dtype_errors():
    gru = nn.GRU(3, 4)
    with pytest.raises(TypeError, match=r"GRU: hx is float64 but the input is float32"):
        gru(ember.randn(5, 2, 3), ember.zeros(1, 2, 4, dtype=ember.float64))
    with pytest.raises(ember.errors.ArgumentTypeError, match="hx must be a tuple"):
        nn.LSTM(3, 4)(ember.randn(5, 2, 3), ember.zeros(1, 2, 4))
    for cell in (nn.GRUCell(3, 4), nn.RNNCell(3, 4)):  # (not linear's error inside the step)
        name = type(cell).__name__
        with pytest.raises(TypeError, match=f"{name}: hx is float64 but the input is float32"):
            cell(ember.randn(2, 3), ember.zeros(2, 4, dtype=ember.float64))
        with pytest.raises(ValueError, match=rf"{name}: input dtype \(ember.float64\) does not"):
            cell(ember.randn(2, 3, dtype=ember.float64))
    with pytest.raises(TypeError, match="LSTMCell: cx is float64 but the input is float32"):
        nn.LSTMCell(3, 4)(ember.randn(2, 3), (ember.zeros(2, 4), ember.zeros(2, 4).double()))
    with pytest.raises(ember.errors.ArgumentTypeError, match="hx must be a tuple"):
        nn.LSTMCell(3, 4)(ember.randn(2, 3), ember.zeros(2, 4))
    with pytest.raises(ember.errors.ArgumentError, match="activation should be relu/gelu"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")
    with pytest.raises(ember.errors.ArgumentTypeError, match="expected a PackedSequence"):
        nn.utils.rnn.pad_packed_sequence(ember.zeros(3, 2))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_empty_sequence_is_refused_as_torch(name, batch_first):
    # a sequence of length 0 returned an empty output and h_0 unchanged; torch refuses it
    shape = (2, 0, 3) if batch_first else (0, 2, 3)
    with pytest.raises(RuntimeError, match="sequence length to be larger than 0"):
        getattr(torch.nn, name)(3, 4, batch_first=batch_first)(torch.zeros(shape))
    with pytest.raises(ember.errors.ShapeError, match="sequence length to be larger than 0"):
        getattr(nn, name)(3, 4, batch_first=batch_first)(ember.zeros(shape))
    with pytest.raises(ember.errors.ShapeError, match="sequence length to be larger than 0"):
        getattr(nn, name)(3, 4, batch_first=batch_first)(ember.zeros(0, 3))  # unbatched
    empty_batch = (0, 5, 3) if batch_first else (5, 0, 3)  # (still runs, as in torch)
    out = getattr(nn, name)(3, 4, batch_first=batch_first)(ember.zeros(empty_batch))[0]
    assert tuple(out.shape) == empty_batch[:2] + (4,)


@pytest.mark.parametrize("kw", [{"num_layers": 2, "bidirectional": True}, {"proj_size": 2},
                                {"bias": False}])
def test_flat_weights_lists_parameters_in_torch_order(kw):
    # code reaching into RNN internals (weight-drop wrappers) reads _flat_weights; it was missing
    t, e = torch.nn.LSTM(3, 4, **kw), nn.LSTM(3, 4, **kw)
    assert e._flat_weights_names == t._flat_weights_names
    assert [tuple(w.shape) for w in e._flat_weights] == \
        [tuple(w.shape) for w in t._flat_weights]
    assert all(w is getattr(e, n) for w, n in zip(e._flat_weights, e._flat_weights_names))
