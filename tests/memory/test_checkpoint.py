"""ember.utils.checkpoint: same outputs and gradients as the plain run (dropout on), less
memory kept for backward, and the semantics of torch.utils.checkpoint."""

import contextlib
import gc
import tracemalloc

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.errors import ArgumentError
from ember.models.gpt import GPT, Block
from ember.utils.checkpoint import checkpoint, checkpoint_sequential
from tests.concurrent_grads import grads_agree_in_threads


def _grads(module, x):
    return [p.grad.numpy().copy() for p in module.parameters()] + [x.grad.numpy().copy()]


def _run(module, x, wrap, seed=1):
    module.zero_grad()
    x.grad = None
    ember.manual_seed(seed)
    y = wrap(x)
    ember.randn(7)  # RNG use between forward and backward must not change the replay
    (y * y).sum().backward()
    return y.detach().numpy(), _grads(module, x)


def test_gradients_identical_with_dropout():
    ember.manual_seed(0)
    block = Block(16, 2, dropout=0.3)
    x = ember.randn(2, 5, 16, requires_grad=True)
    y0, g0 = _run(block, x, block)
    y1, g1 = _run(block, x, lambda t: checkpoint(block, t, use_reentrant=False))
    np.testing.assert_array_equal(y0, y1)
    for a, b in zip(g0, g1):
        np.testing.assert_array_equal(a, b)


def test_without_rng_replay_masks_differ():
    ember.manual_seed(0)
    drop = nn.Dropout(0.5)
    x = ember.ones(200, requires_grad=True)
    ember.manual_seed(3)
    y = checkpoint(lambda t: drop(t) * t, x, preserve_rng_state=False)
    mask = y.detach().numpy() != 0
    y.sum().backward()
    # the gradient 2·t·mask_recomputed/(1-p) follows the recomputed mask, not the first one
    assert (mask != (x.grad.numpy() != 0)).any()


def test_sequential_and_kwargs_and_non_tensor_args():
    ember.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(4)])
    x = ember.randn(3, 8, requires_grad=True)
    _, g0 = _run(model, x, model)
    _, g1 = _run(model, x, lambda t: checkpoint_sequential(model, 2, t))
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    y = checkpoint(lambda t, k, scale=1.0: (t * scale).sum(k), x, 1, scale=2.0)
    assert y.shape == (3,)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(model, 0, x)


def test_no_grad_and_create_graph():
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    with ember.no_grad():
        assert not checkpoint(ember.sin, x).requires_grad
    y = checkpoint(lambda t: (t.sin() ** 2).sum(), x)
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    xv = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), np.sin(2 * xv))
    np.testing.assert_allclose(gg.numpy(), 2 * np.cos(2 * xv))


def test_matches_torch_checkpoint():
    rng = np.random.default_rng(0)
    wv, xv = rng.standard_normal((6, 6)), rng.standard_normal((3, 6))
    w, x = ember.tensor(wv, requires_grad=True), ember.tensor(xv, requires_grad=True)
    checkpoint(lambda t: (t @ w).tanh() @ w, x).square().sum().backward()
    wt, xt = torch.tensor(wv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    torch.utils.checkpoint.checkpoint(lambda t: (t @ wt).tanh() @ wt, xt,
                                      use_reentrant=False).square().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10)


def test_changing_function_is_an_error():
    calls = []

    def fn(t):
        calls.append(1)
        return t.exp() if len(calls) == 1 else t.exp().exp()

    x = ember.randn(3, requires_grad=True)
    # (with early stop, the default, the recompute stops after the values backward needs and
    # never sees the extra exp, as in PyTorch)
    y = checkpoint(fn, x, early_stop=False).sum()
    with pytest.raises(ember.GradError, match="same ops"):
        y.backward()


def _kept_bytes(model, idx, wrap):
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    logits = wrap(idx)
    loss = logits.float().square().mean()
    kept = tracemalloc.get_traced_memory()[0] - base
    loss.backward()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return kept, peak


def test_gpt_activation_memory_drops():
    ember.manual_seed(0)
    model = GPT(vocab_size=64, block_size=32, n_layer=4, n_head=2, d_model=32)
    idx = ember.randint(0, 64, (4, 32))

    def ckpt(i):
        x = model.tok_emb(i) + model.pos_emb(ember.arange(i.shape[1]))
        for block in model.blocks:
            x = checkpoint(block, x)
        return model.head(model.ln_f(x))

    plain_kept, plain_peak = _kept_bytes(model, idx, model)
    ck_kept, ck_peak = _kept_bytes(model, idx, ckpt)
    assert ck_kept < 0.5 * plain_kept
    assert ck_peak < plain_peak


def test_inside_a_compiled_step_each_call_gets_its_own_dropout_masks():
    def make():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2)).double()

    def step(model, x):
        y = checkpoint(model, x)
        y.sum().backward()
        grad = model[0].weight.grad.clone()
        model.zero_grad()
        return y, grad

    plain, traced = make(), make()
    fast = ember.jit.compile(lambda x: step(traced, x))
    x = ember.ones(5, 3, dtype=ember.float64)
    for seed in range(4):  # the second call on runs the compiled graph
        ember.manual_seed(seed)
        y, grad = step(plain, x)
        ember.manual_seed(seed)
        y_fast, grad_fast = fast(x)
        np.testing.assert_allclose(y_fast.detach().numpy(), y.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(grad_fast.numpy(), grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
def test_an_argument_modified_in_place_after_the_call_is_refused_as_torch(reentrant):
    def run(lib, modify):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        h = lib.tensor([1.0, 0.5, 2.0], dtype=lib.float64)
        y = lib.utils.checkpoint.checkpoint(lambda a, b: (a * b).exp(), x, h,
                                            use_reentrant=reentrant)
        if modify:
            h.mul_(2)  # the recompute would read the new values: a wrong gradient
        y.sum().backward()
        return x.grad.numpy()
    np.testing.assert_allclose(run(ember, False), run(torch, False))
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        run(torch, True)
    with pytest.raises(RuntimeError, match="modified in place after the checkpointed call"):
        run(ember, True)


def test_a_tensor_in_a_container_argument_modified_in_place_after_the_call_is_refused():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        z = x * 1
        y = lib.utils.checkpoint.checkpoint(lambda d: d["z"][0].exp(), {"z": [z]},
                                            use_reentrant=False)
        with lib.no_grad():
            z.mul_(2)  # the recompute would read 2z: exp(2z) where exp(z) is the gradient
        y.sum().backward()
        return x.grad.numpy()
    # torch does not see it and gives exp(2x), a wrong gradient, silently
    np.testing.assert_allclose(run(torch), np.exp([2.0, 4.0, 6.0]))
    with pytest.raises(RuntimeError, match=r"argument args\[0\]\['z'\]\[0\] .* modified in "
                                           "place after the checkpointed call"):
        run(ember)


@pytest.mark.parametrize("reentrant", [True, False])
def test_a_nested_counter_shared_by_layers_runs_as_torch(reentrant):
    # (a stats dict updated in place inside each checkpointed layer; no gradient reads it)
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        stats = {"count": lib.zeros(2)}

        def layer(h, st):
            with lib.no_grad():
                st["count"].add_(1)
            return h.exp()
        ck = lib.utils.checkpoint.checkpoint
        h = ck(layer, ck(layer, x, stats, use_reentrant=reentrant), stats,
               use_reentrant=reentrant)
        h.sum().backward()
        return x.grad.numpy(), stats["count"].numpy()
    for got, want in zip(run(ember), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
def test_a_nested_mask_refilled_after_the_call_runs_as_torch(reentrant):
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        d = {"mask": [lib.zeros(2, dtype=lib.float64)]}
        y = lib.utils.checkpoint.checkpoint(lambda h, d: (h + d["mask"][0]).exp().sum(), x, d,
                                            use_reentrant=reentrant)
        d["mask"][0].fill_(0.0)  # (same values, a new version; the gradient is the same)
        y.backward()
        return x.grad.numpy()
    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-12)


def test_a_modified_argument_is_named_in_the_error():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    h = ember.tensor([1.0, 0.5], dtype=ember.float64)
    y = checkpoint(lambda a, b=None: (a * b).exp(), x, b=h, use_reentrant=False)
    h.mul_(2)
    with pytest.raises(RuntimeError, match=r"argument kwargs\['b'\] \(shape \(2,\)"):
        y.sum().backward()


def test_debug_is_taken_as_torch():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    checkpoint(lambda a: a.exp(), x, use_reentrant=False, debug=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(ValueError, match="debug"):
        checkpoint(lambda a: a.exp(), x, use_reentrant=True, debug=True)
    # torch's set_checkpoint_debug_enabled was missing
    from ember.utils.checkpoint import set_checkpoint_debug_enabled
    with set_checkpoint_debug_enabled(True):
        checkpoint(lambda a: a.exp(), x, use_reentrant=False).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    # a numpy bool was refused ("must be a bool or None, got bool"), and 1; torch takes any
    for flag in (np.bool_(True), 1, None):
        for switch in (set_checkpoint_debug_enabled,
                       torch.utils.checkpoint.set_checkpoint_debug_enabled):
            with switch(flag):
                pass


def test_sequential_refuses_unknown_keywords_and_no_functions():
    # an unknown keyword reached the segments' function as a TypeError naming a closure;
    # torch raises "Unexpected keyword arguments"; no functions was range()'s zero-step error
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    x = ember.randn(1, 2, requires_grad=True)
    with pytest.raises(ArgumentError, match="unexpected keyword arguments: foo"):
        checkpoint_sequential(model, 2, x, use_reentrant=False, foo=1)
    with pytest.raises(ArgumentError, match="empty"):
        checkpoint_sequential([], 1, x, use_reentrant=False)
    y = checkpoint_sequential(model, 2, x, use_reentrant=False, preserve_rng_state=False,
                              determinism_check="none")
    np.testing.assert_allclose(y.detach().numpy(), model(x).detach().numpy())


def test_a_recompute_of_another_shape_is_refused_even_without_the_determinism_check():
    # under determinism_check="none" the (1,)- vs (2,)-shaped saved value reached gradient
    # accumulation: a NumPy broadcast error (torch silently gives a wrong x.grad, [4, 0, 0])
    calls = []

    def fn(t):
        calls.append(1)
        return (t[:len(calls)] * t[:len(calls)]).sum()

    x = ember.ones(3, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False, determinism_check="none")
    with pytest.raises(ember.utils.checkpoint.CheckpointError, match=r"shape \(1,\).*\(2,\)"):
        y.backward()


def test_without_the_determinism_check_only_values_backward_reads_are_checked():
    # a side output that backward never reaches saved a value of another shape in the
    # recompute; its shape check refused what torch (and Ember before) ran correctly
    x0 = np.linspace(0.1, 1.0, 4)
    grads = []
    for lib, ckpt in ((ember, checkpoint), (torch, torch.utils.checkpoint.checkpoint)):
        sizes = iter([2, 3])

        def fn(x, w, lib=lib, sizes=sizes):
            side = (x.sum() * lib.ones(next(sizes), dtype=lib.float64)).exp()
            return (x * w).sin(), side

        x = lib.tensor(x0, requires_grad=True)
        y, _ = ckpt(fn, x, lib.tensor(x0 + 1), use_reentrant=False, determinism_check="none")
        y.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    np.testing.assert_allclose(grads[0], (x0 + 1) * np.cos(x0 * (x0 + 1)), rtol=1e-12)


def _fails(x):
    raise ValueError("boom")


def test_context_fn_that_suppresses_the_forward_exception_is_refused():
    def context_fn():
        return contextlib.suppress(ValueError), contextlib.nullcontext()

    with pytest.raises(RuntimeError, match="suppressed an exception"):
        torch.utils.checkpoint.checkpoint(_fails, torch.ones(2, requires_grad=True),
                                          use_reentrant=False, context_fn=context_fn)
    with pytest.raises(RuntimeError, match=r"suppressed an exception .*\(ValueError: boom\)") \
            as excinfo:
        checkpoint(_fails, ember.ones(2, requires_grad=True), use_reentrant=False,
                   context_fn=context_fn)
    # the swallowed exception is chained, so the traceback shows what failed (torch: context)
    assert isinstance(excinfo.value.__cause__, ValueError)


class _Counted:
    """A layer that counts its calls (forward runs and recomputations alike)."""

    def __init__(self, scale):
        self.scale, self.calls = scale, 0

    def __call__(self, x):
        self.calls += 1
        return (x * self.scale).sin()


@pytest.mark.parametrize("n, segments", [(5, 2), (4, 3), (6, 4), (7, 3), (3, 3), (4, 1)])
def test_checkpoint_sequential_splits_the_layers_as_torch(n, segments):
    # which layers are recomputed in backward (so which activations are kept) follows
    # torch's split: segments - 1 chunks of n // segments layers, the rest last
    def recomputed(lib, seq):
        layers = [_Counted(1.0 + i / 10) for i in range(n)]
        x = lib.ones(2, requires_grad=True)
        y = seq(layers, segments, x, use_reentrant=False)
        before = [layer.calls for layer in layers]
        y.sum().backward()
        return [layer.calls - b for layer, b in zip(layers, before)], x.grad.tolist()

    want, want_grad = recomputed(torch, torch.utils.checkpoint.checkpoint_sequential)
    got, got_grad = recomputed(ember, ember.utils.checkpoint.checkpoint_sequential)
    assert got == want
    assert got_grad == pytest.approx(want_grad, rel=1e-5)


def test_checkpoint_sequential_more_segments_than_layers():
    # (torch fails here: its chunk size is 0) one layer per chunk, the last one kept
    layers = [_Counted(1.0), _Counted(2.0)]
    x = ember.ones(2, requires_grad=True)
    y = ember.utils.checkpoint.checkpoint_sequential(layers, 5, x, use_reentrant=False)
    y.sum().backward()
    assert [layer.calls for layer in layers] == [2, 1]


def test_each_backward_under_retain_graph_recomputes_as_torch():
    def calls(lib, checkpoint_fn, **kwargs):
        count = [0]

        def f(t):
            count[0] += 1
            return (t.sin() ** 2).sum()

        x = lib.tensor([0.1, 0.7, -1.3], dtype=lib.float64, requires_grad=True)
        y = checkpoint_fn(f, x, **kwargs)
        y.backward(retain_graph=True)
        y.backward(retain_graph=True)
        y.backward()
        return count[0], x.grad.tolist()

    ours, theirs = calls(ember, checkpoint), calls(torch, torch.utils.checkpoint.checkpoint,
                                                   use_reentrant=False)
    assert ours[0] == theirs[0] == 4
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)


def test_a_second_read_in_one_backward_recomputes_again():
    # (PyTorch refuses it with a CheckpointError; Ember recomputes, as another thread's
    # backward through the same graph can make a node read its values twice)
    class ReadsTwice(ember.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors  # noqa: B018
            (t,) = ctx.saved_tensors
            return g * 2 * t

    count = [0]

    def f(t):
        count[0] += 1
        return ReadsTwice.apply(t.sin()).sum()

    x = ember.tensor([0.1, 0.7], dtype=ember.float64, requires_grad=True)
    checkpoint(f, x).backward()
    assert count[0] == 3  # (the first run, then one recomputation per read)
    np.testing.assert_allclose(x.grad.numpy(), np.sin(2 * x.detach().numpy()), rtol=1e-12)


def test_backwards_in_threads_through_one_checkpoint_each_recompute():
    ember.manual_seed(0)
    w = [ember.randn(16, 16, requires_grad=True) for _ in range(4)]

    def block(h):
        for wi in w:
            h = (h @ wi).tanh()
        return h

    grads_agree_in_threads(checkpoint(block, ember.randn(8, 16)).square().sum(), w, calls=20)
