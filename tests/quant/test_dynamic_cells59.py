"""Dynamically quantized recurrent cells (``torch.ao.nn.quantized.dynamic.RNNCell``,
``LSTMCell``, ``GRUCell``): ``quantize_dynamic`` picks them by default, as PyTorch's."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from ember.ao.nn.quantized import dynamic as nnqd


def _run(lib, q, cell, dtype, engine):
    kw = {"nonlinearity": "relu"} if cell == "RNNCell_relu" else {}
    m = lib.nn.Sequential(getattr(lib.nn, cell.split("_")[0])(5, 4, **kw))
    rng = np.random.default_rng(1)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    lib.backends.quantized.engine = engine
    qm = q.quantize_dynamic(m, dtype=getattr(lib, dtype))
    x = lib.tensor(rng.standard_normal((3, 5)).astype(np.float32))
    h = lib.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    if cell == "LSTMCell":
        c = lib.tensor(rng.standard_normal((3, 4)).astype(np.float32))
        outs = [*qm[0](x, (h, c)), *qm[0](x)]
    else:
        outs = [qm[0](x, h), qm[0](x)]
    return qm, [o.detach().numpy() for o in outs]


@pytest.mark.parametrize("engine,dtype", [("fbgemm", "qint8"), ("fbgemm", "float16"),
                                          ("qnnpack", "qint8")])
@pytest.mark.parametrize("cell", ["RNNCell", "RNNCell_relu", "LSTMCell", "GRUCell"])
def test_quantize_dynamic_cells_as_torch(cell, dtype, engine):
    old = torch.backends.quantized.engine
    try:
        tm, t = _run(torch, tq, cell, dtype, engine)
    finally:
        torch.backends.quantized.engine = old
    em, e = _run(ember, eq, cell, dtype, engine)
    assert type(em[0]) is getattr(nnqd, cell.split("_")[0])
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, atol=3e-7)


def test_dynamic_cell_state_dict_round_trip_and_errors():
    qm, out = _run(ember, eq, "LSTMCell", "qint8", "fbgemm")
    fresh = nnqd.LSTMCell(5, 4)
    fresh.load_state_dict(qm[0].state_dict())
    x = ember.tensor(np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32))
    np.testing.assert_array_equal(fresh(x)[0].numpy(), qm[0](x)[0].numpy())
    with pytest.raises(ember.errors.ShapeError, match="unsqueeze"):
        fresh(x[0])
    with pytest.raises(ember.errors.ArgumentError, match="bias=True"):
        eq.quantize_dynamic(ember.nn.Sequential(ember.nn.GRUCell(3, 2, bias=False)))


@pytest.mark.parametrize("cell, kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                      ("RNNCell", {"bias": False, "nonlinearity": "relu"}),
                                      ("LSTMCell", {}), ("GRUCell", {"bias": False})])
def test_dynamic_cell_repr_as_torch(cell, kw):
    # torch's: sizes, then bias when False and nonlinearity when not tanh (no dtype, float16
    # too: sweep65c)
    import torch
    import torch.ao.nn.quantized.dynamic as tnnqd
    for dtype in ("qint8", "float16"):
        want = repr(getattr(tnnqd, cell)(3, 4, dtype=getattr(torch, dtype), **kw))
        assert repr(getattr(nnqd, cell)(3, 4, dtype=getattr(ember, dtype), **kw)) == want
    assert not hasattr(nnqd.LSTMCell(3, 4), "nonlinearity")


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_dynamic_cell_state_errors(cell):
    m = getattr(nnqd, cell)(3, 4)
    x = ember.zeros(2, 3)

    def state(h):
        return (h, ember.zeros(2, 4)) if cell == "LSTMCell" else h
    with pytest.raises(ember.errors.DTypeError, match="float32 hx.*float64"):
        m(x, state(ember.zeros(2, 4, dtype=ember.float64)))  # torch: expected scalar type Float
    with pytest.raises(ember.errors.ShapeError, match=r"hx of shape \(2, 4\).*\(3, 4\)"):
        m(x, state(ember.zeros(3, 4)))
    with pytest.raises(ember.errors.ArgumentTypeError, match="hx must be a Tensor"):
        m(x, state([0.0]))
