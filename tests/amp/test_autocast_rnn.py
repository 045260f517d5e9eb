"""Recurrent networks under CPU autocast: PyTorch's LSTM on padded input without projections
is oneDNN's, which autocast lowers whole (output and states in bfloat16); GRU, RNN, packed
input and projections keep what their lowered products give. Dtypes and values vs torch."""

import warnings

import numpy as np
import pytest
import torch

import ember


def _both(cls, x, grad=False, packed=False, **kw):
    torch.manual_seed(0)
    tnet = getattr(torch.nn, cls)(4, 5, **kw)
    enet = getattr(ember.nn, cls)(4, 5, **kw)
    enet.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                          tnet.state_dict().items()})
    results = []
    for m, net in ((torch, tnet), (ember, enet)):
        inp = m.tensor(x, requires_grad=grad)
        if packed:
            rnn_utils = torch.nn.utils.rnn if m is torch else ember.nn.utils.rnn
            inp = rnn_utils.pack_padded_sequence(inp, [x.shape[0], x.shape[0] - 1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: 'LSTM with projections ... oneDNN'
            with m.autocast(device_type="cpu", dtype=m.bfloat16):
                out, h = net(inp)
        out = out.data if packed else out
        states = list(h) if isinstance(h, tuple) else [h]
        if grad:
            (out.float().square().sum() + sum(s.float().sum() for s in states)).backward()
            states.append(inp.grad)
        results.append([out, *states])
    return results


@pytest.mark.parametrize("cls, kw, shape, packed", [
    ("LSTM", {}, (3, 2, 4), False),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, (3, 2, 4), False),
    ("LSTM", {"batch_first": True}, (2, 6, 4), False),
    ("LSTM", {}, (5, 4), False),
    ("LSTM", {"proj_size": 3}, (3, 2, 4), False),
    ("LSTM", {}, (3, 2, 4), True),
    ("GRU", {}, (3, 2, 4), False),
    ("RNN", {"num_layers": 2}, (3, 2, 4), False),
])
def test_recurrent_layers_under_autocast_match_torch(cls, kw, shape, packed):
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    theirs, mine = _both(cls, x, packed=packed, **kw)
    for t, e in zip(theirs, mine, strict=True):
        assert e.dtype.name == str(t.dtype).removeprefix("torch.")
        np.testing.assert_allclose(e.float().detach().numpy(), t.float().detach().numpy(),
                                   atol=1e-2)


def test_lowered_lstm_backward_matches_torch():
    x = np.random.RandomState(1).randn(4, 2, 4).astype(np.float32)
    theirs, mine = _both("LSTM", x, grad=True, num_layers=2)
    assert mine[-1].dtype == ember.float32
    np.testing.assert_allclose(mine[-1].numpy(), theirs[-1].numpy(), atol=2e-2)


def test_functional_lstm_under_autocast_is_lowered_as_torch():
    h = ember.zeros(1, 2, 5)
    weights = list(ember.nn.LSTM(4, 5).parameters())
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out, h_n, c_n = ember.lstm(ember.randn(3, 2, 4), (h, h), weights, True, 1, 0.0, False,
                                   False, False)
    assert out.dtype == h_n.dtype == c_n.dtype == ember.bfloat16
    out, h_n, c_n = ember.lstm(ember.randn(3, 2, 4), (h, h), weights, True, 1, 0.0, False,
                               False, False)
    assert out.dtype == h_n.dtype == c_n.dtype == ember.float32


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("x_dtype, h_dtype", [("bfloat16", None), ("bfloat16", "float32"),
                                              ("float32", "bfloat16")])
def test_low_precision_inputs_and_states_run_under_autocast_as_in_torch(cls, x_dtype, h_dtype):
    """The layers refused a bfloat16 input to float32 weights ('input dtype does not match
    weight dtype'), and states of another dtype than the input, where torch's CPU autocast
    runs them (its products cast both); the dtypes that come out are torch's."""
    torch.manual_seed(0)
    tnet, enet = getattr(torch.nn, cls)(4, 5), getattr(ember.nn, cls)(4, 5)
    enet.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                          tnet.state_dict().items()})
    cell = cls.endswith("Cell")
    x = np.random.RandomState(0).randn(*((2, 4) if cell else (3, 2, 4)))
    h = np.random.RandomState(1).randn(*((2, 5) if cell else (1, 2, 5)))
    outs = []
    for m, net in ((torch, tnet), (ember, enet)):
        state = None if h_dtype is None else m.tensor(h, dtype=getattr(m, h_dtype))
        state = (state, state) if "LSTM" in cls and state is not None else state
        with m.autocast(device_type="cpu", dtype=m.bfloat16):
            out = net(m.tensor(x, dtype=getattr(m, x_dtype)), state)
        flat = [out] if not isinstance(out, tuple) else \
            [s for o in out for s in (o if isinstance(o, tuple) else (o,))]
        outs.append([o.float().detach().numpy() for o in flat] +
                    [str(o.dtype).rsplit(".")[-1] for o in flat])
    for t, e in zip(*outs, strict=True):
        if isinstance(t, str):
            assert e == t
        else:
            np.testing.assert_allclose(e, t, atol=2e-2)  # (a bfloat16 step near 2)
    with ember.autocast("cpu", dtype=ember.bfloat16), pytest.raises(
            ValueError, match=rf"{cls}: input dtype \(ember.float64\)"):  # (autocast keeps it)
        enet(ember.tensor(x))
