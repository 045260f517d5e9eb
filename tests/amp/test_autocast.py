"""ember.autocast against torch.autocast("cpu", bfloat16): output dtypes by op, values,
gradients, nesting, the decorator form, and that it leaves no trace when off."""

import threading

import numpy as np
import pytest
import torch

import ember
import ember.models
import ember.nn.functional as F
from ember.amp import POLICY
from ember.ops.primitive import DISPATCH

R = np.random.default_rng(0)
A = R.standard_normal((3, 4)).astype(np.float32)
B = R.standard_normal((4, 5)).astype(np.float32)
W = R.standard_normal((5, 4)).astype(np.float32)
IMG = R.standard_normal((1, 2, 5, 5)).astype(np.float32)
KER = R.standard_normal((3, 2, 3, 3)).astype(np.float32)

# name -> fn(lib, functional, a, b, w, img, ker), applied to ember and torch alike
CASES = {
    "matmul": lambda m, f, a, b, w, i, k: a @ b,
    "linear": lambda m, f, a, b, w, i, k: f.linear(a, w, w[:, 0]),
    "bmm": lambda m, f, a, b, w, i, k: m.bmm(a[None], b[None]),
    "addmm": lambda m, f, a, b, w, i, k: m.addmm(a[:, :1], a, b),
    "einsum": lambda m, f, a, b, w, i, k: m.einsum("ij,jk->ik", a, b),
    "conv2d": lambda m, f, a, b, w, i, k: f.conv2d(i, k),
    "softmax": lambda m, f, a, b, w, i, k: f.softmax(a @ b, dim=-1),
    "log_softmax": lambda m, f, a, b, w, i, k: f.log_softmax(a @ b, dim=-1),
    "layer_norm": lambda m, f, a, b, w, i, k: f.layer_norm(a @ b, (5,)),
    "group_norm": lambda m, f, a, b, w, i, k: f.group_norm(f.conv2d(i, k), 3, k[:, 0, 0, 0],
                                                           k[:, 1, 0, 0]),
    "exp": lambda m, f, a, b, w, i, k: (a @ b).exp(),
    "sum": lambda m, f, a, b, w, i, k: (a @ b).sum(),
    "mse_loss": lambda m, f, a, b, w, i, k: f.mse_loss(a @ b, a @ b * 0.5),
    "cross_entropy": lambda m, f, a, b, w, i, k: f.cross_entropy(a @ b, m.tensor([0, 1, 4])),
    "add_mixed": lambda m, f, a, b, w, i, k: (a @ b) + b[0],
    "cat_mixed": lambda m, f, a, b, w, i, k: m.cat([a @ b, b], 0),
    "relu": lambda m, f, a, b, w, i, k: f.relu(a @ b),
    # not on the list (they share matmul's primitive in Ember): left in float32
    "mv": lambda m, f, a, b, w, i, k: m.mv(a, b[:, 0]),
    "dot": lambda m, f, a, b, w, i, k: m.dot(a[0], b[:, 0]),
    "vdot": lambda m, f, a, b, w, i, k: m.vdot(a[0], b[:, 0]),
    "inner_vectors": lambda m, f, a, b, w, i, k: m.inner(a[0], b[:, 0]),
    "inner_matrices": lambda m, f, a, b, w, i, k: m.inner(a, w),
    "bilinear": lambda m, f, a, b, w, i, k: f.bilinear(a, a, w[None, :4, :4]),
}


def _args(lib, grad):
    mk = (lambda v: ember.tensor(v, requires_grad=grad)) if lib is ember else (
        lambda v: torch.tensor(v, requires_grad=grad))
    return [mk(v) for v in (A, B, W, IMG, KER)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_dtype_value_and_grad_like_torch(name):
    fn = CASES[name]
    ea, ta = _args(ember, True), _args(torch, True)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        eo = fn(ember, F, *ea)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        to = fn(torch, torch.nn.functional, *ta)
    # (softmax, norms, exp, sum keep bfloat16 as torch's CPU list does; Ember used CUDA's)
    assert eo.dtype.name == str(to.dtype).removeprefix("torch."), (eo.dtype, to.dtype)
    np.testing.assert_allclose(eo.detach().float().numpy(), to.detach().float().numpy(),
                               rtol=3e-2, atol=3e-2)
    eo.float().sum().backward()
    to.float().sum().backward()
    for e, t in zip(ea, ta):
        if t.grad is not None:
            assert e.grad is not None and e.grad.dtype is ember.float32
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=5e-2, atol=5e-2)


def test_nested_disabled_and_float16_and_decorator():
    a, b = ember.tensor(A), ember.tensor(B)
    with ember.autocast("cpu"):
        assert (a @ b).dtype is ember.bfloat16
        with ember.autocast("cpu", enabled=False):
            assert (a @ b).dtype is ember.float32
            assert not ember.amp.is_autocast_enabled()
            with ember.autocast("cpu", dtype=ember.float16):
                assert (a @ b).dtype is ember.float16
            assert (a @ b).dtype is ember.float32
        assert (a @ b).dtype is ember.bfloat16
    assert (a @ b).dtype is ember.float32
    assert not DISPATCH.stack and not DISPATCH.casting

    @ember.amp.autocast(dtype=ember.float16)
    def f(x, y):
        return x @ y

    assert f(a, b).dtype is ember.float16
    assert ember.amp.get_autocast_dtype() is ember.bfloat16


def test_float64_untouched_and_errors_outside():
    a64 = ember.tensor(A.astype(np.float64))
    with ember.autocast("cpu"):
        assert (a64 @ a64.t()).dtype is ember.float64
    with pytest.raises(ember.DTypeError, match="same dtype"):
        ember.tensor(A) @ ember.tensor(B).to(ember.bfloat16)
    with pytest.raises(ValueError, match="bfloat16 or ember.float16"):
        ember.set_autocast_dtype("cpu", ember.float32)


def test_policy_names_are_primitives():
    from ember.ops.primitive import PRIMITIVES

    missing = [n for n in POLICY if n not in PRIMITIVES]
    assert not missing, missing


def test_gpt_step_under_autocast_saves_bf16():
    ember.manual_seed(0)
    model = ember.models.gpt(vocab_size=32, block_size=8, n_layer=1, n_head=2, d_model=16)
    idx = ember.randint(0, 32, (2, 8))
    with ember.autocast("cpu"):
        logits = model(idx)
        loss = F.cross_entropy(logits.view(-1, 32), idx.view(-1))
    assert logits.dtype is ember.bfloat16 and loss.dtype is ember.float32
    loss.backward()
    assert all(p.grad is not None and p.grad.dtype is ember.float32 for p in model.parameters())


def _train(amp, steps=25):
    ember.manual_seed(0)
    model = ember.models.gpt(vocab_size=32, block_size=16, n_layer=1, n_head=2, d_model=32)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    text = (np.arange(4000) * 7 % 31 + rng.integers(0, 2, 4000)) % 32  # learnable pattern
    losses = []
    for _ in range(steps):
        starts = rng.integers(0, len(text) - 17, 8)
        idx = ember.tensor(np.stack([text[s:s + 17] for s in starts]))
        with ember.autocast("cpu", enabled=amp):
            logits = model(idx[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 32), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.mean(losses[-5:]), losses[0]


def test_short_gpt_training_bf16_tracks_float32():
    """CI version of examples/amp_memory.py: same batches, bf16 ends near the float32 loss."""
    f32, start = _train(False)
    bf16, _ = _train(True)
    assert f32 < 0.8 * start
    assert abs(bf16 - f32) / f32 < 0.03


def test_autocast_queries_are_at_the_top_level_like_torch():
    assert ember.is_autocast_enabled("cpu") is torch.is_autocast_enabled("cpu") is False
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu")
        assert ember.get_autocast_dtype("cpu") is ember.bfloat16


def test_autocast_in_one_thread_leaves_another_threads_ops_alone_like_torch():
    started, done, seen = threading.Event(), threading.Event(), []

    def other(lib):
        started.wait(10)
        seen.append(str((lib.ones(2, 2) @ lib.ones(2, 2)).dtype).split(".")[-1])
        done.set()

    for lib in (torch, ember):
        started.clear(), done.clear()
        thread = threading.Thread(target=other, args=(lib,))
        thread.start()
        with lib.autocast("cpu"):
            started.set()
            done.wait(10)
        thread.join()
    assert seen == ["float32", "float32"]


def test_autocast_state_is_per_thread_like_torch():
    def run(lib):
        seen, entered, done = {}, threading.Event(), threading.Event()

        def other():
            with lib.autocast("cpu", dtype=lib.float16):
                entered.set()
                done.wait(5)

        thread = threading.Thread(target=other)
        thread.start()
        entered.wait(5)
        seen["enabled_here"] = lib.is_autocast_enabled("cpu")
        with lib.autocast("cpu"):  # this thread's default dtype, not the other thread's
            seen["dtype"] = str(lib.get_autocast_dtype("cpu")).split(".")[-1]
            seen["mm"] = str(lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype).split(".")[-1]
        done.set()
        thread.join()
        return seen

    assert run(ember) == run(torch) == {"enabled_here": False, "dtype": "bfloat16",
                                        "mm": "bfloat16"}


def test_a_compiled_function_called_under_autocast_compiles_per_state_like_torch():
    # torch.compile under an outer torch.autocast traces with the autocast state as a guard;
    # Ember ran the plain function on every such call (no graph), now one graph per state
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))
    x = ember.randn(5, 4)
    fast = ember.jit.compile(model)
    states = [dict(dtype=ember.bfloat16), dict(dtype=ember.float16), dict(enabled=False),
              dict(dtype=ember.bfloat16)]
    for kwargs in states * 2:
        with ember.autocast("cpu", **kwargs):
            stack = list(DISPATCH.stack)
            got, want = fast(x), model(x)
            assert DISPATCH.stack == stack  # (the outer autocast is back after the call)
        assert got.dtype is want.dtype
        np.testing.assert_array_equal(got.detach().float().numpy(), want.detach().float().numpy())
    assert [f.traces for f in fast.within.values()] == [1, 1]  # a graph per autocast state
    with ember.autocast("cpu"):
        loss = fast(x).float().sum()
    loss.backward()  # (differentiable through the graph traced under autocast)
    grad = model[0].weight.grad.numpy().copy()
    model.zero_grad()
    with ember.autocast("cpu"):
        model(x).float().sum().backward()
    np.testing.assert_allclose(grad, model[0].weight.grad.numpy(), rtol=1e-6)


def test_one_autocast_object_entered_twice_restores_the_state_before_it():
    # (PyTorch's keeps one saved state per object: a nested re-entry leaves autocast on)
    region = ember.autocast("cpu", dtype=ember.float16)
    with region:
        with region:
            assert ember.is_autocast_enabled("cpu")
        assert ember.is_autocast_enabled("cpu")
        assert ember.get_autocast_dtype("cpu") is ember.float16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.get_autocast_dtype("cpu") is ember.bfloat16
    assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype is ember.float32


def test_one_autocast_object_shared_by_two_threads_restores_each_threads_state():
    # (review54a: the saved states were one stack per object, so the first thread to leave
    # popped the other thread's record; PyTorch's object has that race too, so the expected
    # states are those of each thread run alone)
    shared = ember.autocast("cpu", dtype=ember.bfloat16)
    barrier, seen, errors = threading.Barrier(2, timeout=10), {}, []

    def state():
        return (ember.is_autocast_enabled("cpu"), ember.get_autocast_dtype("cpu"),
                (ember.ones(2, 2) @ ember.ones(2, 2)).dtype)

    def inside_its_own():  # enters the shared object first and leaves it first
        try:
            with ember.autocast("cpu", dtype=ember.float16):
                with shared:
                    barrier.wait()  # the other thread enters the shared object
                    barrier.wait()
                seen["own"] = state()
                barrier.wait()  # the other thread leaves it after this one
        except Exception as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    def alone():
        try:
            barrier.wait()
            with shared:
                barrier.wait()
                barrier.wait()
            seen["alone"] = state()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=f) for f in (inside_its_own, alone)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors, errors
    assert seen["own"] == (True, ember.float16, ember.float16)
    assert seen["alone"] == (False, ember.bfloat16, ember.float32)


def _exit_elsewhere(lib):
    """Enters one autocast object in a thread and leaves it (a generator closed) in another
    that is inside an autocast of its own; what the leaving thread sees, before and after."""
    ac, seen = lib.autocast("cpu", dtype=lib.bfloat16), {}

    def gen():
        with ac:
            yield

    def state():
        return lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu"))[6:]

    def leave(g):
        with lib.autocast("cpu", dtype=lib.float16):
            g.close()
            seen["after exit"] = state()
        seen["end"] = state()

    g = gen()
    for target in (lambda: next(g), lambda: leave(g)):  # (each thread ends: its state too)
        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
    return seen


def test_exit_in_another_thread_restores_the_saved_state_there_as_torch():
    assert _exit_elsewhere(ember) == _exit_elsewhere(torch)


def test_exit_without_enter_is_a_clear_error():
    with pytest.raises(RuntimeError, match="without entering"):
        ember.autocast("cpu").__exit__(None, None, None)
