"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss against torch 2.13 (reference and
chunked paths), finite differences, and the chunked path's peak memory."""

import tracemalloc

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from tests.ops.optable import Const, S, arg, op_tests, raises_like_torch
from tests.ops.test_linalg_decomp import row

T7 = Const(np.array([0, 4, -100, 2, 3, 3, 1]))
CW = Const(np.array([0.5, 1.0, 2.0, 1.5, 0.7]))


def _lce(reduction, chunk=None, bias=True, weight=False):
    def f(lib, x, w, b, t, cw):
        opts = None if chunk is None or lib is torch else \
            ember.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
        return lib.nn.functional.linear_cross_entropy(
            x, w, lib.as_tensor(t), linear_bias=b if bias else None,
            weight=lib.as_tensor(cw, dtype=x.dtype) if weight else None, reduction=reduction,
            options=opts)
    return f


CASES = [
    *[row(f"lce_{red}_chunk{chunk}_w{weight}", _lce(red, chunk, weight=weight),
          [S(arg(7, 3), arg(5, 3), arg(5), T7, CW)])
      for red, chunk, weight in (("mean", None, True), ("mean", 3, True), ("sum", 2, False),
                                 ("none", 3, True), ("none", None, False))],
    row("lce_unbatched_chunked", lambda lib, x, w: _lce("none", 2, bias=False)(
        lib, x, w, None, np.array(3), None), [S(arg(3), arg(5, 3))]),
    row("lce_kdim", lambda lib, x, w, b, t: lib.nn.functional.linear_cross_entropy(
        x, w, lib.as_tensor(t), linear_bias=b, label_smoothing=0.1),
        [S(arg(2, 3), arg(4, 2, 3), arg(4, 2), Const(np.array([[0, 3], [1, 2]])))]),
    row("lce_probs", lambda lib, x, w, p: lib.nn.functional.linear_cross_entropy(
        x, w, p.softmax(1), reduction="sum"), [S(arg(3, 2), arg(4, 2), arg(3, 4))]),
]
(test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp) = op_tests(CASES)


def test_module_matches_torch():
    torch.manual_seed(0)
    ref = torch.nn.LinearCrossEntropyLoss(5, 4, out_features=(3,), bias=True,
                                          dtype=torch.float64, ignore_index=1)
    mine = nn.LinearCrossEntropyLoss(5, 4, out_features=(3,), bias=True, dtype=ember.float64,
                                     ignore_index=1)
    mine.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                          ref.state_dict().items()})
    assert repr(mine) == repr(ref)
    x = np.random.default_rng(1).standard_normal((2, 5))
    t = np.array([[0, 1, 3], [2, 2, 1]])
    got, want = mine(ember.tensor(x), ember.tensor(t)), ref(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    got.backward()
    want.backward()
    np.testing.assert_allclose(mine.linear.weight.grad.numpy(),
                               ref.linear.weight.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_chunked_falls_back_with_warning_and_repeats_backward():
    x = ember.randn(3, 2, requires_grad=True)
    opts = nn.LinearCrossEntropyOptions()
    with pytest.warns(UserWarning, match="options`` ignored"):
        nn.functional.linear_cross_entropy(x, ember.randn(4, 2), ember.tensor([0, 1, 2]),
                                           label_smoothing=0.1, options=opts)
    loss = nn.functional.linear_cross_entropy(x, ember.randn(4, 2), ember.tensor([0, 1, 2]),
                                              options=opts)
    loss.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_errors():
    F = "nn.functional.linear_cross_entropy"  # noqa: N806
    call = lambda lib, *a, **k: eval(F, {"nn": lib.nn})(*a, **k)  # noqa: E731
    raises_like_torch(lambda lib: call(lib, lib.ones(2, 2, 3), lib.ones(4, 3),
                                       lib.zeros(2, dtype=lib.int64)), ember.ShapeError,
                      "dimensionality 1 or 2")
    raises_like_torch(lambda lib: call(lib, lib.ones(2, 3), lib.ones(4, 2),
                                       lib.zeros(2, dtype=lib.int64)), ember.ShapeError,
                      "in_features")
    raises_like_torch(lambda lib: call(lib, lib.ones(2, 3), lib.ones(4, 3),
                                       lib.zeros(2, dtype=lib.int64), linear_bias=lib.ones(3)),
                      ember.ShapeError, "linear_bias shape")
    raises_like_torch(lambda lib: call(lib, lib.ones(3), lib.ones(4, 2, 3),
                                       lib.zeros((), dtype=lib.int64)), ember.ShapeError,
                      "requires batched input")
    raises_like_torch(lambda lib: call(lib, lib.ones(2, 3), lib.ones(4, 3), lib.ones(2, 4),
                                       ignore_index=0), ValueError, "probabilities")
    with pytest.raises(ember.errors.IndexOutOfRange, match="target 4 is out of bounds"):
        call(ember, ember.ones(2, 3), ember.ones(4, 3), ember.tensor([0, 4]),
             options=nn.LinearCrossEntropyOptions())
    with pytest.raises(NotImplementedError, match="acc_policy"):
        nn.LinearCrossEntropyOptions(acc_policy="compact")


def _peak(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_chunked_peak_memory_is_a_fraction_of_the_logits():
    n, d, c = 512, 16, 2048  # logits 512 x 2048 float32 = 4 MiB; weight 128 KiB
    r = np.random.default_rng(0)
    x = ember.tensor(r.standard_normal((n, d)), dtype=ember.float32, requires_grad=True)
    w = ember.tensor(r.standard_normal((c, d)), dtype=ember.float32, requires_grad=True)
    t = ember.tensor(r.integers(0, c, n))
    lce = nn.functional.linear_cross_entropy

    def run(options):
        lce(x, w, t, options=options).backward()

    unfused = _peak(lambda: run(None))
    chunked = _peak(lambda: run(nn.LinearCrossEntropyOptions()))
    logits = n * c * 4
    assert unfused > 2 * logits and chunked < logits / 2 and chunked < unfused / 8, \
        (unfused, chunked)


def test_chunked_path_under_vmap_matches_a_loop():
    r = np.random.default_rng(3)
    xs = ember.tensor(r.standard_normal((3, 4, 2)))
    ts = ember.tensor(r.integers(0, 5, (3, 4)))
    w = ember.tensor(r.standard_normal((5, 2)))
    opts = nn.LinearCrossEntropyOptions(batch_chunk_size=3)

    def loss(x, t, w=w):
        return nn.functional.linear_cross_entropy(x, w, t, options=opts)

    looped = np.stack([loss(xs[i], ts[i]).numpy() for i in range(3)])
    np.testing.assert_allclose(ember.func.vmap(loss)(xs, ts).numpy(), looped, rtol=1e-12)
    ws = ember.tensor(r.standard_normal((3, 5, 2)))
    ensemble = ember.func.vmap(lambda x, t, w: loss(x, t, w))(xs, ts, ws)
    np.testing.assert_allclose(ensemble.numpy(), np.stack(
        [loss(xs[i], ts[i], ws[i]).numpy() for i in range(3)]), rtol=1e-12)


@pytest.mark.parametrize("options", [None, nn.LinearCrossEntropyOptions(batch_chunk_size=2)])
def test_class_weights_and_dtypes_are_checked_on_both_paths(options):
    call = lambda lib, x, w, **k: lib.nn.functional.linear_cross_entropy(  # noqa: E731
        x, w, lib.tensor([0, 1, 2]), options=options if lib is ember else None, **k)
    raises_like_torch(lambda lib: call(lib, lib.ones(3, 4), lib.ones(5, 4), weight=lib.ones(3)),
                      ember.ShapeError, "weight .*5 classes")
    raises_like_torch(lambda lib: call(lib, lib.ones(3, 4, dtype=lib.float64), lib.ones(5, 4)),
                      ember.DTypeError, "float64.*float32|float32.*float64")
    raises_like_torch(lambda lib: call(lib, lib.ones(3, 4), lib.ones(5, 4),
                                       weight=lib.ones(5, dtype=lib.float64)),
                      ember.DTypeError, "float64.*float32|float32.*float64")
