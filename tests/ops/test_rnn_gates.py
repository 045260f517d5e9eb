"""The fused LSTM and GRU gate primitives (ember.ops.rnn_gates) and the cell functions over
them, against PyTorch and finite differences (every order, through the op table), and the
composites they replace."""

import numpy as np
import pytest
import torch

import ember
from ember.ops.rnn_gates import gru_composite, gru_gates, lstm_composite, lstm_gates
from tests.ops.optable import OpCase, S, arg, op_tests


def _torch_lstm_gates(x, hp, c):
    i, f, g, o = (x + hp).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _torch_gru_gates(x, hp, h):
    xr, xz, xn = x.chunk(3, -1)
    hr, hz, hn = hp.chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * h


CASES = [
    OpCase("lstm_gates", lstm_gates, _torch_lstm_gates, [
        S(arg(3, 8), arg(3, 8), arg(3, 2)),
        S(arg(2, 3, 12), arg(2, 3, 12, grad=False), arg(2, 3, 3)),  # leading dims
        S(arg(2, 12, noncontig=True), arg(2, 12), arg(2, 3, grad=False)),
    ]),
    OpCase("gru_gates", gru_gates, _torch_gru_gates, [
        S(arg(3, 6), arg(3, 6), arg(3, 2)),
        S(arg(2, 3, 9), arg(2, 3, 9), arg(2, 3, 3, grad=False)),
        S(arg(2, 9, noncontig=True), arg(2, 9, grad=False), arg(2, 3)),
    ]),
    OpCase("lstm_cell",
           lambda x, h, c, wi, wh, bi, bh: ember.lstm_cell(x, (h, c), wi, wh, bi, bh),
           lambda x, h, c, wi, wh, bi, bh: torch.lstm_cell(x, (h, c), wi, wh, bi, bh), [
               S(arg(2, 3), arg(2, 2), arg(2, 2), arg(8, 3), arg(8, 2), arg(8), arg(8)),
           ]),
    OpCase("gru_cell", ember.gru_cell, torch.gru_cell, [
        S(arg(2, 3), arg(2, 2), arg(6, 3), arg(6, 2), arg(6), arg(6)),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernels_round_as_the_composites(dtype):
    rng = np.random.default_rng(0)
    for fused, composite, gates in ((lstm_gates, lstm_composite, 4),
                                    (gru_gates, gru_composite, 3)):
        arrays = [rng.standard_normal(s) * 4 for s in ((5, 3 * gates),) * 2 + ((5, 3),)]
        seeds = [ember.from_numpy(rng.standard_normal((5, 3)).astype(dtype)) for _ in range(2)]
        results = []
        for fn in (fused, composite):
            ts = [ember.from_numpy(a.astype(dtype)).requires_grad_() for a in arrays]
            outs = fn(*ts)
            outs = outs if isinstance(outs, tuple) else (outs,)
            ember.autograd.backward(list(outs), seeds[:len(outs)])
            results.append([o.detach().numpy() for o in outs] + [t.grad.numpy() for t in ts])
        for a, b in zip(*results):
            np.testing.assert_array_equal(a, b)


def test_a_step_is_one_node():
    # (the layers on padded input run whole sequences: tests/ops/test_rnn_scan.py)
    h, _ = ember.nn.LSTMCell(5, 2)(ember.randn(3, 5, requires_grad=True))
    assert h.grad_fn.name() == "LstmGatesBackward0"
    h = ember.nn.GRUCell(5, 2)(ember.randn(3, 5, requires_grad=True))
    assert h.grad_fn.name() == "GruGatesBackward0"


def test_half_precision_and_mixed_dtypes_keep_the_composite():
    x, hp, c = ember.randn(2, 8), ember.randn(2, 8), ember.randn(2, 2)
    half = [t.to(ember.bfloat16) for t in (x, hp, c)]
    for got, want in zip(lstm_gates(*half), lstm_composite(*half)):
        assert got.dtype is ember.bfloat16
        assert ember.equal(got, want)
    got = gru_gates(x[:, :6].to(ember.bfloat16), hp[:, :6].to(ember.bfloat16), c)
    assert got.dtype is ember.float32


@pytest.mark.parametrize("op, shapes, match", [
    ("lstm_gates", ((2, 8), (2, 7), (2, 2)), "4 times"),
    ("gru_gates", ((2, 6), (2, 6), (3, 2)), "3 times"),
])
def test_mismatched_gates_are_refused(op, shapes, match):
    fn = lstm_gates if op == "lstm_gates" else gru_gates
    with pytest.raises(ember.ShapeError, match=match):
        fn(*(ember.randn(*s) for s in shapes))
