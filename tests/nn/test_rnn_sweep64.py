"""Recurrent layers and cells against torch (sweep 64): the cell functions' state checks."""

import numpy as np
import pytest
import torch

import ember
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
