"""Recurrent layers and cells against torch (sweep 64): the cell functions' state checks."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.nn.utils.rnn import pack_sequence
from tests.ops.optable import raises_like_torch

R = np.random.default_rng(0)
CELLS = {"rnn_tanh_cell": 1, "rnn_relu_cell": 1, "gru_cell": 3, "lstm_cell": 4}


def _cell(lib, op, x, states):
    g = CELLS[op]
    ws = [lib.tensor(R.standard_normal(s)) for s in ((g * 4, 3), (g * 4, 4), (g * 4,), (g * 4,))]
    hx = tuple(lib.tensor(s) for s in states) if op == "lstm_cell" else lib.tensor(states[0])
    return getattr(lib, op)(lib.tensor(x), hx, *ws)


@pytest.mark.parametrize("op", list(CELLS))
@pytest.mark.parametrize(("shape", "match"), [
    ((1, 4), "Input batch size 2 doesn't match hidden0 batch size 1"),  # broadcast silently
    ((3, 4), "Input batch size 2 doesn't match hidden0 batch size 3"),
    ((2, 1), "hidden0 has inconsistent hidden_size: got 1, expected 4")])
def test_cell_functions_refuse_a_state_of_another_batch_or_size(op, shape, match):
    x, h = R.standard_normal((2, 3)), R.standard_normal(shape)
    states = (h, np.zeros((2, 4))) if op == "lstm_cell" else (h,)
    raises_like_torch(lambda lib: _cell(lib, op, x, states), ember.ShapeError, f"{op}: {match}")


@pytest.mark.parametrize(("shape", "match"), [
    ((1, 4), "Input batch size 2 doesn't match hidden1 batch size 1"),
    ((2, 1), "hidden1 has inconsistent hidden_size: got 1, expected 4")])
def test_lstm_cell_refuses_a_cell_state_that_would_broadcast(shape, match):
    x, states = R.standard_normal((2, 3)), (np.zeros((2, 4)), R.standard_normal(shape))
    raises_like_torch(lambda lib: _cell(lib, "lstm_cell", x, states), ember.ShapeError, match)


@pytest.mark.parametrize("op", list(CELLS))
def test_cell_functions_match_torch_and_check_input_size(op):
    x, h, c = (R.standard_normal(s) for s in ((2, 3), (2, 4), (2, 4)))
    states = (h, c) if op == "lstm_cell" else (h,)
    seed = R.bit_generator.state
    want = _cell(torch, op, x, states)
    R.bit_generator.state = seed
    got = _cell(ember, op, x, states)
    for a, b in zip(got if op == "lstm_cell" else (got,), want if op == "lstm_cell" else (want,)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    raises_like_torch(lambda lib: _cell(lib, op, x[:, :2], states), ember.ShapeError,
                      "input has inconsistent input_size: got 2 expected 3")


@pytest.mark.parametrize("missing", [0, 1])
@pytest.mark.parametrize("name", ["LSTM", "LSTMCell"])
def test_lstm_state_pair_with_a_none_is_refused(name, missing):
    # torch fails on the None; Ember ran with zeros in its place
    shape = (1, 2, 4) if name == "LSTM" else (2, 4)
    x = np.zeros((5, 2, 3) if name == "LSTM" else (2, 3), np.float32)
    def run(lib):
        pair = tuple(None if i == missing else lib.zeros(*shape) for i in (0, 1))
        return getattr(lib.nn, name)(3, 4)(lib.tensor(x), pair)

    with pytest.raises(AttributeError):
        run(torch)
    with pytest.raises(TypeError, match=rf"{name}: hx must be a pair of tensors \(h, c\)"):
        run(ember)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_layers_refuse_an_input_that_is_not_a_tensor(name):
    x = np.zeros((5, 2, 3), np.float32)  # an AttributeError ('is_quantized') before
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' must be Tensor, not "
                                        "numpy.ndarray"):
        getattr(nn, name)(3, 4)(x)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_refuse_a_packed_sequence_naming_the_layer_that_runs_it(name):
    packed = pack_sequence([ember.ones(3, 3), ember.ones(2, 3)])
    with pytest.raises(TypeError, match=rf"{name}: got a PackedSequence.*nn\.{name[:-4]} runs"):
        getattr(nn, name)(3, 4)(packed)


@pytest.mark.parametrize("kw", [{"num_layers": 2, "bidirectional": True, "proj_size": 2},
                                {"bias": False}])
def test_all_weights_names_as_torch_drive_a_wrapper(kw):
    # wrappers (weight norm or drop over every weight) walk _all_weights: it was missing
    t, e = torch.nn.LSTM(3, 4, dtype=torch.float64, **kw), nn.LSTM(3, 4, dtype=ember.float64,
                                                                   **kw)
    assert e._all_weights == t._all_weights
    e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    for lib, m in ((torch, t), (ember, e)):
        for name in (n for names in m._all_weights for n in names if n.startswith("weight")):
            lib.nn.utils.parametrizations.weight_norm(m, name)
    x = R.standard_normal((5, 2, 3))
    np.testing.assert_allclose(e(ember.tensor(x))[0].detach().numpy(),
                               t(torch.tensor(x))[0].detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("weight", ["weight_ih_l0", "weight_hh_l1_reverse"])
def test_a_weight_set_to_none_is_named(weight):
    # torch refuses it (TypeError/AttributeError); Ember's AttributeError named no weight
    def run(lib):
        m = lib.nn.GRU(3, 4, num_layers=2, bidirectional=True)
        setattr(m, weight, None)
        return m(lib.zeros(5, 2, 3))

    with pytest.raises((TypeError, AttributeError)):
        run(torch)
    with pytest.raises(TypeError, match=rf"^GRU: {weight} is None"):
        run(ember)
