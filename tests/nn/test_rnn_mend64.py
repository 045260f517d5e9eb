"""Recurrent layers and cell functions against torch (mend 64): every weight a layer names
is checked for None, and the cell functions' None or non-tensor states are TypeErrors."""

import re

import numpy as np
import pytest
import torch

import ember

R = np.random.default_rng(0)


@pytest.mark.parametrize(("name", "kw", "weight"), [
    ("GRU", {"num_layers": 2}, "bias_ih_l1"),  # ran as if the layer had no bias
    ("RNN", {}, "bias_hh_l0"),
    ("LSTM", {"bidirectional": True}, "bias_hh_l0_reverse"),
    ("LSTM", {"proj_size": 2}, "weight_hr_l0"),  # a ShapeError deep in lstm_scan
    ("LSTM", {"num_layers": 2, "proj_size": 2}, "weight_ih_l1")])
def test_any_weight_set_to_none_is_named(name, kw, weight):
    def run(lib):
        m = getattr(lib.nn, name)(3, 4, **kw)
        setattr(m, weight, None)
        return m(lib.zeros(5, 2, 3))

    with pytest.raises(TypeError, match="expected Tensor as element"):
        run(torch)
    with pytest.raises(TypeError, match=rf"^{name}: {weight} is None; each layer and "
                                        "direction needs all its weights"):
        run(ember)


@pytest.mark.parametrize("kw", [{"num_layers": 2, "bidirectional": True},
                                {"proj_size": 2}])
def test_layers_without_bias_run_as_torch(kw):
    t = torch.nn.LSTM(3, 4, bias=False, dtype=torch.float64, **kw)
    e = ember.nn.LSTM(3, 4, bias=False, dtype=ember.float64, **kw)
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = R.standard_normal((5, 2, 3))
    np.testing.assert_allclose(e(ember.tensor(x))[0].detach().numpy(),
                               t(torch.tensor(x))[0].detach().numpy(), rtol=1e-10)


def _cell(lib, op, hx, kind):
    g = {"rnn_tanh_cell": 1, "rnn_relu_cell": 1, "gru_cell": 3, "lstm_cell": 4}[op]
    state = (lambda: None) if kind == "None" else (lambda: [[0.0] * 4] * 2)
    if op == "lstm_cell" and hx != "hx":  # one of the pair missing
        hx = tuple(state() if f"hx[{i}]" == hx else lib.zeros(2, 4) for i in (0, 1))
    else:
        hx = state()
    return getattr(lib, op)(lib.zeros(2, 3), hx, lib.zeros(4 * g, 3), lib.zeros(4 * g, 4))


@pytest.mark.parametrize("kind", ["None", "list"])
@pytest.mark.parametrize(("op", "label"), [
    ("rnn_tanh_cell", "hx"), ("rnn_relu_cell", "hx"), ("gru_cell", "hx"),
    ("lstm_cell", "hx[0]"), ("lstm_cell", "hx[1]")])
def test_cell_functions_name_a_state_that_is_not_a_tensor(op, label, kind):
    # an AttributeError 'NoneType' object has no attribute 'ndim' before, naming no op
    with pytest.raises(TypeError):
        _cell(torch, op, label, kind)
    with pytest.raises(TypeError, match=rf"^{op}\(\): argument '{re.escape(label)}' must be "
                                        f"Tensor, not {kind}"):
        _cell(ember, op, label, kind)


def test_lstm_cell_names_a_state_that_is_not_a_pair():
    with pytest.raises(TypeError):
        _cell(torch, "lstm_cell", "hx", "None")
    with pytest.raises(TypeError, match=r"^lstm_cell\(\): argument 'hx' must be a tuple of "
                                        "Tensors \\(h, c\\), not NoneType"):
        _cell(ember, "lstm_cell", "hx", "None")


@pytest.mark.parametrize(("name", "kw"), [("RNN", {}), ("GRU", {}), ("LSTM", {}),
                                          ("LSTM", {"proj_size": 2})])
def test_a_weight_the_layer_does_not_name_is_not_used(name, kw):
    # a bias set on a layer built with bias=False was run (0.785 off torch on a GRU), and
    # all_weights listed it; torch runs and lists only the weights in _all_weights
    def run(lib, tensor):
        lib.manual_seed(0)
        m = getattr(lib.nn, name)(3, 4, num_layers=2, bias=False, bidirectional=True,
                                  dtype=lib.float64, **kw)
        rows = {"RNN": 4, "GRU": 12, "LSTM": 16}[name]
        m.bias_ih_l1 = lib.nn.Parameter(tensor(np.linspace(-1.0, 1.0, rows)))
        state = {k: v.detach().numpy() for k, v in m.state_dict().items()}
        return m, state, [len(w) for w in m.all_weights]

    tm, state, t_lens = run(torch, torch.tensor)
    em, _, e_lens = run(ember, ember.tensor)
    em.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    x = R.standard_normal((5, 2, 3))
    expected = tm(torch.tensor(x))[0].detach().numpy()
    np.testing.assert_allclose(np.array(em(ember.tensor(x))[0].detach()), expected, atol=1e-12)
    assert e_lens == t_lens
