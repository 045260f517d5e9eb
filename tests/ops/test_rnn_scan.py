"""The whole-sequence LSTM and GRU scans (ember.ops.rnn_scan): against PyTorch's layers in
float64, bit-equal to the step-by-step scan forward, their gradients (every order, forward
mode) against finite differences and the step composites, and one tape node per direction."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.func import functional_call
from ember.ops.primitive import PRIMITIVES
from ember.ops.rnn_scan import gru_scan, gru_scan_composite, lstm_scan, lstm_scan_composite


def _operands(gates, dtype=np.float64, steps=3, batch=2, hidden=3, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(steps, batch, gates * hidden), (batch, hidden)]
    shapes += [(batch, hidden)] if gates == 4 else []
    shapes += [(gates * hidden, hidden), (gates * hidden,)]
    return [ember.from_numpy(rng.standard_normal(s).astype(dtype)).requires_grad_()
            for s in shapes]


def _scan(gates, reverse):
    if gates == 4:
        return lambda px, h, c, w, b=None: lstm_scan(px, h, c, w, b, reverse)
    return lambda px, h, w, b=None: gru_scan(px, h, w, b, reverse)


def _composite(gates, reverse):
    comp = lstm_scan_composite if gates == 4 else gru_scan_composite
    return lambda *ts: comp(*ts, reverse=reverse)[:2 if gates == 4 else 1]


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True},
                                {"bias": False, "batch_first": True}])
def test_layers_match_torch_in_float64(mode, kw):
    ember.manual_seed(0)
    m = getattr(ember.nn, mode)(3, 4, **kw).double()
    t = getattr(torch.nn, mode)(3, 4, **kw).double()
    t.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                       for k, v in m.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((5, 2, 3))
    xe, xt = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    (ye, he), (yt, ht) = m(xe), t(xt)
    he, ht = (he[1], ht[1]) if mode == "LSTM" else (he, ht)
    (ye.sum() * 1.5 + (he * he).sum()).backward()
    (yt.sum() * 1.5 + (ht * ht).sum()).backward()
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-12)
    for p, q in zip(m.parameters(), t.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("gates", [4, 3])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_is_bit_equal_to_the_steps_and_gradients_close(gates, reverse, dtype):
    ops = _operands(gates, dtype, steps=4, batch=3, hidden=5)
    got = _scan(gates, reverse)(*ops)
    want = _composite(gates, reverse)(*ops)
    got, want = (got if isinstance(got, tuple) else (got,)), want
    for g, w in zip(got, want):
        assert np.array_equal(g.detach().numpy(), w.detach().numpy())
    weights = [ember.from_numpy(np.random.default_rng(2).standard_normal(g.shape).astype(dtype))
               for g in got]
    grads = [ember.autograd.grad(sum((o * w).sum() for o, w in zip(outs, weights)), ops)
             for outs in (got, want)]
    for a, b in zip(*grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4 if dtype == np.float32
                                   else 1e-12, atol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("gates", [4, 3])
@pytest.mark.parametrize("reverse", [False, True])
def test_gradcheck_gradgradcheck_and_forward_mode(gates, reverse):
    ops = _operands(gates, steps=3, batch=1, hidden=2)  # a middle step: one before, one after
    fn = _scan(gates, reverse)
    assert gradcheck(fn, ops, check_forward_ad=True)
    assert gradgradcheck(fn, ops)
    assert gradcheck(fn, ops[:-1])  # no bias


def test_one_node_per_direction_and_a_packed_or_projected_input_keeps_the_steps():
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(3, 4)
    y, _ = lstm(ember.randn(6, 2, 3))
    assert y.grad_fn is not None
    names = set()
    stack, seen = [y.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        names.add(n.name())
        stack.extend(f[0] for f in n.next_functions)
    assert "LstmScanBackward0" in names and "LstmGatesBackward0" not in names
    proj = ember.nn.LSTM(3, 4, proj_size=2)(ember.randn(6, 2, 3))[0]
    assert "lstm_scan" not in repr(proj.grad_fn)


def _counting_scans(monkeypatch):
    calls = []
    for name in ("lstm_scan", "lstm_scan_backward", "gru_scan", "gru_scan_backward"):
        cls = type(PRIMITIVES[name])
        monkeypatch.setattr(cls, "forward", lambda self, *a, _f=cls.forward, **k:
                            calls.append(self.name) or _f(self, *a, **k))
    return calls


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_vmap_over_data_is_one_scan_bit_equal_to_a_loop(kind, monkeypatch):
    # shared weights: the vmapped axis joins the scan's batch, one scan per direction and
    # layer each way; outputs bit-equal to one call per sample, per-sample gradients equal
    # to the last few ulps (bit-equal with OpenBLAS's SkylakeX kernels; the Haswell ones,
    # which some hosts pin with OPENBLAS_CORETYPE, round the batched products differently)
    ember.manual_seed(0)
    m = getattr(ember.nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
    xs = ember.randn(4, 5, 3, 3, dtype=ember.float64)
    params = {k: v.detach() for k, v in m.named_parameters()}

    def loss(p, x):
        return (functional_call(m, p, (x,))[0].sin() * 3).sum()
    calls = _counting_scans(monkeypatch)
    got = ember.func.vmap(lambda x: m(x)[0])(xs)
    grads = ember.func.vmap(ember.func.grad(loss), in_dims=(None, 0))(params, xs)
    assert len(calls) == 4 + 8  # 4 scans forward, then 4 forward and 4 backward
    want = [m(x)[0] for x in xs]
    assert np.array_equal(got.detach().numpy(), np.stack([w.detach().numpy() for w in want]))
    for k, g in grads.items():
        want = np.stack([ember.func.grad(loss)(params, x)[k].numpy() for x in xs])
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-13, atol=1e-14, err_msg=k)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_vmap_over_no_sequences_gives_empty_outputs(kind):
    m = getattr(ember.nn, kind)(3, 4)
    params = {k: v.detach() for k, v in m.named_parameters()}
    assert ember.func.vmap(lambda s: m(s)[0])(ember.randn(0, 5, 3)).shape == (0, 5, 4)
    grads = ember.func.vmap(ember.func.grad(lambda p, x: functional_call(m, p, (x,))[0].sum()),
                            in_dims=(None, 0))(params, ember.randn(0, 5, 2, 3))
    assert grads["weight_hh_l0"].shape == (0, 4 * (4 if kind == "LSTM" else 3), 4)
    ens = {k: v.expand(0, *v.shape) for k, v in params.items()}
    out = ember.func.vmap(lambda p, x: functional_call(m, p, (x,))[0])(ens, ember.randn(0, 5, 3))
    assert out.shape == (0, 5, 4)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_vmap_with_per_sample_weights_runs_a_scan_per_sample(kind):
    ember.manual_seed(0)
    m = getattr(ember.nn, kind)(3, 4)
    ens = {k: ember.stack([v.detach() * (1 + i / 10) for i in range(3)])
           for k, v in m.named_parameters()}
    xs = ember.randn(3, 5, 3)

    def f(p, x):
        return functional_call(m, p, (x,))[0]
    got = ember.func.vmap(f)(ens, xs)
    want = np.stack([f({k: v[i] for k, v in ens.items()}, xs[i]).numpy() for i in range(3)])
    assert np.array_equal(got.numpy(), want)


def test_bad_shapes_and_dtypes_are_refused():
    px, h, c, w, b = _operands(4)
    with pytest.raises(ember.ShapeError, match="lstm_scan"):
        lstm_scan(px, h, c, w[:, :2], b)
    with pytest.raises(ember.errors.DTypeError, match="lstm_scan"):
        lstm_scan(px, h.float(), c, w, b)


@pytest.mark.parametrize("gates", [4, 3])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_numba_backward_steps_are_numpys_bit_for_bit(gates, reverse, dtype, bias):
    # the backward's pointwise part in one numba pass a step, against NumPy's calls; the
    # cotangents broadcast (as sum's backward gives them) and the states transposed views
    from ember.backend import compiled

    if not compiled.numba_enabled():
        pytest.skip("numba is off")
    ops = _operands(gates, dtype, steps=5, batch=3, hidden=4, seed=3)
    ops = ops if bias else ops[:-1]
    ops[1] = ember.from_numpy(np.asfortranarray(ops[1].detach().numpy())).requires_grad_()
    outs = _scan(gates, reverse)(*ops)
    outs = outs if isinstance(outs, tuple) else (outs,)
    cot = [ember.from_numpy(np.broadcast_to(np.linspace(-1, 1, 4, dtype=dtype), o.shape))
           for o in outs]
    grads = []
    try:
        for on in (False, True):
            compiled.use_numba(on)
            grads.append(ember.autograd.grad(outs, ops, cot, retain_graph=True))
    finally:
        compiled.use_numba(True)
    for a, b in zip(*grads):
        assert np.array_equal(a.numpy(), b.numpy())
