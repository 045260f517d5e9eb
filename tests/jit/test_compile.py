"""ember.jit.compile: caching and retracing with reasons, modules, errors that name the line,
random ops, static arguments, switches."""

from __future__ import annotations

import linecache
import math
import pathlib
import re
import threading
import types
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.models
import ember.nn.functional as F
from ember import jit
from ember.jit.discover import reach
from ember.jit.passes import PASSES


def _mlp():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))


def test_module_inference_matches_eager_and_retraces_on_a_new_batch_size():
    model = _mlp().eval()
    fast = jit.compile(model)
    with ember.no_grad():
        for batch in (5, 5, 2, 5):
            x = ember.randn(batch, 4)
            np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-6)
    assert len(fast.entries) == 2
    assert "argument input: shape (5, 4) -> (2, 4)" in jit.explain()[-1]  # (forward's name)


def test_explain_names_the_argument_that_changed():
    @jit.compile
    def step(x, pair, *, scale=1.0):
        return x * scale + pair[1]

    x = ember.ones(3)
    step(x, (x, x), scale=2.0)
    step(x, (x, ember.ones(2, 3)), scale=2.0)
    assert jit.explain()[-1] == ("step: traced again: argument pair[1]: shape (3,) -> (2, 3), "
                                 "memory of x -> its own memory")
    step(x, (x, ember.ones(2, 3)), scale=3.0)
    assert jit.explain()[-1] == "step: traced again: argument scale: 2.0 -> 3.0"
    with pytest.raises(TypeError, match=r"argument pair\[0\] of type set is not hashable"):
        step(x, ({1}, x))

    @jit.compile
    def total(*xs):
        return sum(xs)

    total(x, ember.ones(3))
    total(x, ember.ones(1))
    assert jit.explain()[-1] == "total: traced again: argument #1: shape (3,) -> (1,)"


def test_training_flag_is_part_of_the_signature_and_explained():
    model = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.BatchNorm1d(4))
    fast = jit.compile(model)
    x = ember.randn(6, 4)
    with ember.no_grad():
        fast(x)
        model.eval()
        np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-6)
    assert jit.explain()[-1].endswith("1.training: True -> False")


def test_gradients_without_zero_grad_accumulate_as_in_eager():
    def run(compiled):
        model = _mlp()
        x = ember.randn(3, 4, generator=ember.Generator().manual_seed(1))

        def step(x):
            loss = model(x).square().mean()
            loss.backward()
            return loss
        fn = jit.compile(step) if compiled else step
        for _ in range(3):
            fn(x)
        return [p.grad.numpy().copy() for p in model.parameters()]
    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_dropout_draws_fresh_numbers_each_call_like_eager():
    def draws(compiled):
        ember.manual_seed(3)
        fn = lambda x: F.dropout(x, 0.5)  # noqa: E731
        fn = jit.compile(fn) if compiled else fn
        return [fn(ember.ones(8)).numpy() for _ in range(3)]
    eager, compiled = draws(False), draws(True)
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(compiled[1], compiled[2])


@pytest.mark.parametrize("body, what", [
    ("if x.sum() > 0:\n        x = x * 2", "bool()"),
    ("x = x * x.max().item()", "item()"),
    ("x.numpy()", "numpy()"),
    ("print(x)", "printing"),
])
def test_reading_a_traced_value_names_the_line_and_the_fix(body, what):
    scope = {"ember": ember}
    exec(f"def f(x):\n    x = x + 1\n    {body}\n    return x\n", scope)  # noqa: S102
    with pytest.raises(jit.TraceError) as err:
        jit.compile(scope["f"])(ember.randn(3))
    message = str(err.value)
    assert what in message and ":3" in message and "static_argnums" in message


def test_reading_a_buffers_value_before_any_op_uses_it_is_refused_too():
    # (a counter buffer read with int() would be frozen at its value when traced: the
    # averaged model's first-update branch on every call)
    model = ember.nn.Linear(2, 2)
    average = ember.optim.swa_utils.AveragedModel(model)

    def step(x):
        average.update_parameters(model)
        return average(x)

    with pytest.raises(jit.TraceError, match="item\\(\\) reads the value of average.n_averaged "
                       "\\(shape \\(\\)\\) at .*, which this function also writes") as err:
        jit.compile(step)(ember.ones(1, 2))
    assert "update_parameters(model)" in str(err.value)
    assert int(average.n_averaged) == 0  # (the failed trace left nothing behind)


class _Scaled(ember.nn.Module):
    """A layer that reads its buffer as a Python number."""

    def __init__(self, scale):
        super().__init__()
        self.register_buffer("scale", scale)

    def forward(self, x):
        return x * float(self.scale)


@pytest.mark.parametrize("shared", [False, True])
def test_a_value_python_read_while_tracing_traces_again_once_it_changes(shared):
    memory = np.array(2.0, np.float32)
    layer = _Scaled(ember.from_numpy(memory) if shared else ember.tensor(2.0))
    fn = jit.compile(layer)
    x = ember.ones(3)
    for _ in range(2):
        np.testing.assert_array_equal(fn(x).numpy(), 2.0)
    if shared:
        memory[...] = 5.0  # (through NumPy: no version counter moves)
    else:
        layer.scale.fill_(5.0)
    np.testing.assert_array_equal(fn(x).numpy(), 5.0)
    reason = jit.explain()[-1]
    assert "scale changed (its value was read by Python at test_compile.py:" in reason
    np.testing.assert_array_equal(fn(x).numpy(), 5.0)
    assert jit.explain()[-1] is reason  # (traced once: the new graph's guard holds)


def test_a_value_python_reads_that_changes_at_every_call_warns():
    layer = _Scaled(ember.tensor(1.0))
    fn, x = jit.compile(layer), ember.ones(3)
    with pytest.warns(UserWarning, match="_Scaled has been compiled 8 times.*scale changed"):
        for step in range(8):
            layer.scale.fill_(float(step))
            np.testing.assert_array_equal(fn(x).numpy(), float(step))
    assert len(fn.entries) == 1


def test_static_arguments_are_values_and_retrace():
    def scale(x, n):
        return x * n if n > 1 else x - n
    fast = jit.compile(scale, static_argnums=1)
    x = ember.ones(2)
    assert fast(x, 3).tolist() == [3.0, 3.0]
    assert fast(x, 0).tolist() == [1.0, 1.0]
    assert fast(x, 3).tolist() == [3.0, 3.0]
    assert len(fast.entries) == 2


def test_generated_code_points_at_the_users_lines_and_is_in_linecache():
    def f(x, w):
        h = x @ w
        return h.relu().sum()
    fast = jit.compile(f)
    fast(ember.randn(2, 3), ember.randn(3, 4))
    code = fast.code
    assert "`h = x @ w`" in code and "`return h.relu().sum()`" in code
    filename = fast.last.generated.fn.__code__.co_filename
    assert any(line.startswith("def f(") for line in linecache.getlines(filename))
    assert "relu" in str(fast.graph)


def test_torch_compile_arguments():
    def f(x):
        return (x * 2 + x * 2).exp()
    x = ember.randn(4)
    for mode in ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", None):
        fast = ember.compile(f, mode=mode, fullgraph=True, dynamic=False)
        fast(x)
        assert str(fast.graph).count(" = mul(") == 1          # every pass ran
    eager = ember.compile(f, backend="eager", mode="reduce-overhead")
    eager(x)
    assert str(eager.graph).count(" = mul(") == 2             # traced, no passes
    assert ember.compile(f, disable=True) is f
    assert ember.compile(disable=True)(f) is f
    with pytest.raises(ValueError, match="unknown backend 'cudagraphs'"):
        ember.compile(f, backend="cudagraphs")
    with pytest.raises(ValueError, match="inductor settings.*passes="):
        ember.compile(f, options={"triton.cudagraphs": True})


def test_disable_and_debug_mode_run_the_same_numbers():
    def f(x):
        return (x * 2 + x * 2).exp()
    x = ember.randn(4)
    expected = f(x).numpy()
    for fast in (jit.compile(f), jit.compile(f, mode="debug"), jit.compile(f, passes={"cse": 0})):
        fast(x)
        np.testing.assert_allclose(fast(x).numpy(), expected, rtol=1e-6)
    debug = jit.compile(f, mode="debug")
    debug(x)
    assert str(debug.graph).count(" = mul(") == 2
    optimized = jit.compile(f)
    optimized(x)
    assert str(optimized.graph).count(" = mul(") == 1
    with jit.disable():
        calls = []
        jit.compile(lambda x: calls.append(1) or x)(x)
        jit.compile(lambda x: calls.append(1) or x)(x)
    assert calls == [1, 1]


def test_disable_holds_in_every_thread_until_the_last_block_closes():
    # (process-wide, as torch.compiler.set_stance("force_eager"); blocks in two threads that
    # close out of order left it switched on while one was open, or off after both)
    traced = []
    fast = jit.compile(lambda x: traced.append(1) or x * 2)
    entered, leave = threading.Event(), threading.Event()

    def other():
        with jit.disable():
            entered.set()
            leave.wait(10)

    with jit.disable():
        worker = threading.Thread(target=other)
        worker.start()
        entered.wait(10)
    fast(ember.ones(2))  # the other thread's block is still open: eager (runs the Python)
    fast(ember.ones(2))
    assert traced == [1, 1]
    leave.set()
    worker.join()
    fast(ember.ones(2))  # both closed: it traces once, then runs its graph
    fast(ember.ones(2))
    assert traced == [1, 1, 1]


def test_bad_switches_are_refused():
    with pytest.raises(ValueError, match="mode must be one of"):
        jit.compile(lambda x: x, mode="fast")
    with pytest.raises(ValueError, match="unknown passes"):
        jit.compile(lambda x: x, passes={"inline": False})


def test_jit_md_names_every_pass_in_its_order():
    text = (pathlib.Path(__file__).parents[2] / "docs" / "jit.md").read_text()
    listed = re.search(r"The passes' names, in the order they run: (.*?) \(", text, re.S)
    assert re.findall(r"`(\w+)`", listed.group(1)) == list(PASSES)


def test_in_place_writes_into_new_and_outside_tensors_follow_eager():
    outside = ember.zeros(3)

    def f(x):
        buf = ember.zeros(3)
        buf[1] = x.sum()
        outside.add_(x)
        return buf * 2

    fast = jit.compile(f)
    x = ember.ones(3)
    for _ in range(3):
        out = fast(x)
    assert out.tolist() == [0.0, 6.0, 0.0]
    assert outside.tolist() == [3.0, 3.0, 3.0]


def test_in_place_ops_whose_backward_reads_the_old_value_compile_as_eager():
    def step(x, lib):
        a = x * 1
        a.clamp_(-0.3, 0.3)  # (clamp's and sin's rules read the value each overwrites:
        a.sin_()             # eager keeps a copy of it, and so does the graph)
        a.mul_(x)
        loss = (a * a).sum()
        loss.backward()
        return loss.detach()

    fast = jit.compile(lambda x: step(x, ember))
    rng = np.random.default_rng(0)
    for _ in range(3):
        data = rng.standard_normal((3, 4))
        x, xt = ember.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        loss = fast(x)
        np.testing.assert_allclose(loss.item(), step(xt, torch).item(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_autocast_inside_the_compiled_function_is_recorded():
    lin = ember.nn.Linear(8, 4)

    def f(x):
        with ember.autocast("cpu", dtype=ember.bfloat16):
            return lin(x).float()
    fast = jit.compile(f)
    x = ember.randn(3, 8)
    with ember.no_grad():
        fast(x)
        np.testing.assert_array_equal(fast(x).numpy(), f(x).numpy())
    # (bfloat16 operands, their float32 product taking the bias before one rounding)
    graph = str(fast.graph)
    assert "f32[3,4] = matmul(v3, v4, compute=float32, wide=True)" in graph
    assert "bf16[3,8] = cast(v0" in graph and "bf16[3,4] = cast" in graph


def test_none_results_and_int_float_arguments():
    fast = jit.compile(lambda x, k: (x * k, None))
    x = ember.ones(2, dtype=ember.int64)
    for _ in range(2):
        y, nothing = fast(x, 1)
        assert nothing is None and y.dtype is ember.int64
    assert fast(x, 1.0)[0].dtype is ember.float32  # 1.0 is not 1: traced again


def test_state_reached_through_objects_helpers_and_aliases_is_updated_each_call():
    class Trainer:
        def __init__(self):
            self.model = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.BatchNorm1d(3))
            self.ema = ember.zeros(3)

        def step(self, x):
            out = self.model(x)
            update_ema(self.ema, out.detach().mean(0))
            self.model[0].weight.data.mul_(0.5)
            return out.detach()

    def update_ema(ema, value):
        ema.detach().mul_(0.5).add_(value * 0.5)

    def run(compiled):
        ember.manual_seed(0)
        t = Trainer()
        step = jit.compile(t.step) if compiled else t.step
        x = ember.randn(4, 3)
        for _ in range(3):
            step(x)
        return [t.ema.numpy(), t.model[1].running_mean.numpy(), t.model[0].weight.detach().numpy()]
    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_arguments_written_in_place_and_their_gradients():
    def f(x, w):
        x.add_(1)
        (w * w).sum().backward()
        return x * 2
    fast = jit.compile(f)
    for _ in range(3):
        x, w = ember.ones(2), ember.tensor([1.0, 2.0], requires_grad=True)
        out = fast(x, w)
        assert x.tolist() == [2.0, 2.0] and out.tolist() == [4.0, 4.0]
        assert w.grad.tolist() == [2.0, 4.0]


VIEW_WRITES = {
    "slice": lambda y, x: y[:, 1:].mul_(2),
    "flat view": lambda y, x: y.view(-1)[:5].add_(x[0, 0]),
    "narrow copy_": lambda y, x: y.narrow(1, 0, 2).copy_(x[:, 2:4]),
    "transpose": lambda y, x: y.t().add_(1),
    "setitem on a slice": lambda y, x: y[1:].__setitem__(0, x[0, 1]),
    "chunks": lambda y, x: [c.relu_() for c in y.chunk(2, 1)],
    "diagonal": lambda y, x: y[:, :4].diagonal().fill_(0),
    "view of a view": lambda y, x: y[1:][:, ::2].mul_(x[1:, :3]),
    "read after the base changed": lambda y, x: (lambda v: (y.sub_(1), v.mul_(3)))(y[2]),
}


@pytest.mark.parametrize("grad", [False, True], ids=["no grad", "grad"])
@pytest.mark.parametrize("case", list(VIEW_WRITES))
def test_in_place_writes_through_views_compile_as_eager_runs_them(case, grad):
    def step(x):
        y = x * 1
        v = y[0]  # taken before the writes: read after them, it sees them
        VIEW_WRITES[case](y, x)
        out = y * y + v.sum()
        if grad:
            out.sum().backward()
        return out.detach()

    fast = jit.compile(step)
    rng = np.random.default_rng(0)
    for _ in range(3):  # (eager's writes through views match PyTorch's: test_inplace_views)
        data = rng.standard_normal((4, 6))
        x, x_eager = (ember.tensor(data, requires_grad=grad) for _ in range(2))
        np.testing.assert_allclose(fast(x).numpy(), step(x_eager).numpy(), rtol=1e-12)
        if grad:
            np.testing.assert_allclose(x.grad.numpy(), x_eager.grad.numpy(), rtol=1e-12)
    assert "view_scatter" in str(fast.graph)


def test_writes_into_an_argument_that_views_the_callers_tensor_reach_that_tensor():
    def f(x, w):
        x[0].mul_(2)  # x is data[1:4]: the graph writes the argument, and the caller's data
        x.t()[1].add_(w)
        v = x[1]
        x.mul_(0.5)
        return x.sum(0) + v.sum()

    fast = jit.compile(f)
    for k in range(3):
        data, data_eager = (ember.arange(15.0).reshape(5, 3) + k for _ in range(2))
        w = ember.tensor([1.0, 2.0, 3.0])
        with ember.no_grad():
            out = fast(data[1:4], w)
        np.testing.assert_array_equal(out.numpy(), f(data_eager[1:4], w).numpy())
        np.testing.assert_array_equal(data.numpy(), data_eager.numpy())


def test_a_parameter_written_through_a_view_is_written_back():
    w = ember.nn.Parameter(ember.ones(3, 4))

    @jit.compile
    def f(x):
        with ember.no_grad():
            w[:, 0].mul_(x)
        return (w * 2).sum()
    for k in range(1, 4):
        f(ember.tensor(2.0))
        assert w[:, 0].tolist() == [2.0 ** k] * 3 and w[:, 1:].eq(1).all()


def test_freezing_a_layer_and_a_scheduler_inside_the_step():
    model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Linear(2, 1))
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    @jit.compile
    def step(x):
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()
        sched.step()
    x = ember.ones(1, 2)
    for _ in range(3):
        step(x)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5 ** 3)
    model[0].weight.requires_grad_(False)
    frozen = model[0].weight.numpy().copy()
    step(x)
    np.testing.assert_array_equal(model[0].weight.numpy(), frozen)
    assert jit.explain()[-1].endswith("model.0.weight.requires_grad: True -> False")


def traced_cnn(batch):
    """An eval-mode cnn, its compiled form traced once under no_grad, and an input."""
    model = ember.models.cnn().eval()
    fast = jit.compile(model)
    x = ember.randn(batch, 1, 28, 28)
    with ember.no_grad():
        fast(x)
    return model, fast, x


def test_inference_max_pool_computes_values_only():
    model, fast, x = traced_cnn(2)
    with ember.no_grad():
        np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())
    assert str(fast.graph).count("window=False") == 2


def test_weight_only_work_is_cached_until_a_parameter_changes():
    model, fast, x = traced_cnn(1)
    with ember.no_grad():
        assert fast.graph.hoisted > 0 and "_cached.get(" in fast.code
        for change in (lambda: model[0].weight.mul_(2),                      # new version
                       lambda: setattr(model[3].weight, "data", model[3].weight * 0.5),
                       lambda: model.load_state_dict(ember.models.cnn().state_dict())):
            change()
            np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())
            np.testing.assert_array_equal(fast(x * 2).numpy(), model(x * 2).numpy())


def test_weights_changed_where_no_version_moves_are_seen():
    model, fast, x = traced_cnn(1)
    with ember.no_grad():
        model[3].weight.detach().numpy()[...] *= 2  # through a NumPy array of the weight
        np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())
        w = model[0].weight * 0.5
        model[0].weight.data = w
        fast(x)
        w.mul_(-1)  # through another tensor sharing the weight's memory
        np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())
        fresh, _, _ = traced_cnn(1)  # (parameters nobody shared keep their cached copies)
        assert not any(p._vc.shared for p in fresh.parameters())


def test_threads_calling_after_a_weight_change_all_see_it():
    model = ember.nn.Sequential(*[ember.nn.Conv2d(16, 16, 3, padding=1) for _ in range(4)])
    model.eval()
    fast, x = jit.compile(model), ember.randn(1, 16, 4, 4)
    wrong = []

    def call(expected):
        with ember.no_grad():
            got = fast(x).numpy()
        if not np.allclose(got, expected, rtol=1e-5, atol=1e-6):
            wrong.append(np.abs(got - expected).max())

    with ember.no_grad():
        fast(x)
    for _ in range(10):
        with ember.no_grad():
            for p in model.parameters():
                p.mul_(-1.0)
            expected = model(x).numpy()
        threads = [threading.Thread(target=call, args=(expected,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert wrong == []


def test_a_parameter_only_output_is_a_new_array_at_every_call():
    class Prior(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.logits = ember.nn.Parameter(ember.randn(4))

        def forward(self, x):
            return x * 2, ember.softmax(self.logits, dim=0).reshape(2, 2)

    model, x = Prior().eval(), ember.randn(3)
    fast = jit.compile(model)
    with ember.no_grad():
        expected = model(x)[1].numpy().copy()
        fast(x)  # (traced: the function itself ran)
        fast(x)[1].mul_(100)  # the caller's own result
        np.testing.assert_allclose(fast(x)[1].numpy(), expected, rtol=1e-6)


def test_a_hoisted_temporary_is_never_a_later_equations_buffer():
    class Standardized(ember.nn.Module):  # a conv weight computed from the parameter alone
        def __init__(self):
            super().__init__()
            self.weight = ember.nn.Parameter(ember.randn(4, 4, 3, 3))

        def forward(self, x):
            w = self.weight
            w = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / w.std(dim=(1, 2, 3), keepdim=True)
            y = F.conv2d(x, w)  # (4, 4, 3, 3), the weight's shape
            return y, ember.relu(y) * 2.0  # a fresh buffer of that shape

    model, x = Standardized().eval(), ember.randn(4, 4, 5, 5)
    fast = jit.compile(model)
    with ember.no_grad():
        expected = [t.numpy() for t in model(x)]
        for _ in range(3):  # the second and third calls skip the hoisted block
            for got, want in zip(fast(x), expected):
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_compiled_grads_never_share_memory_with_each_other_or_constants():
    a, b = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    root = ember.ones(3)

    def sums():
        (a + b).backward(root)  # the engine copies the root: CSE must not merge the copies

    def constant():
        (a * 3).sum().backward()  # a's gradient folds to a constant of the graph

    for fn in (sums, constant):
        step = jit.compile(fn)
        for _ in range(3):
            a.grad = b.grad = None
            step()
            a.grad.mul_(10)  # as clip_grad_norm_ scales gradients in place
        expected = (1.0, 1.0) if fn is sums else (3.0, None)
        np.testing.assert_array_equal(a.grad.numpy(), np.full(3, expected[0] * 10))
        if expected[1] is not None:
            np.testing.assert_array_equal(b.grad.numpy(), np.full(3, expected[1]))
        np.testing.assert_array_equal(root.numpy(), np.ones(3))


def test_a_returned_gradient_is_that_grad_itself_at_every_call():
    ember.manual_seed(0)
    model = ember.nn.Linear(4, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    weight = model.weight

    def step(x):
        opt.zero_grad()
        loss = model(x).square().sum()
        loss.backward()
        opt.step()
        return loss, weight.grad, weight.grad * 1

    fn = jit.compile(step)
    x = ember.ones(3, 4)
    for _ in range(4):
        _, grad, copy = fn(x)
        assert grad is weight.grad
        np.testing.assert_array_equal(copy.numpy(), grad.numpy())
    grad.mul_(0)  # (as eager: the caller's tensor is the .grad)
    assert not weight.grad.numpy().any()

    def aliased(x):
        opt.zero_grad()
        model(x).square().sum().backward()
        return weight.grad.detach(), weight.grad

    fn = jit.compile(aliased)
    for _ in range(4):
        alias, grad = fn(x)
        assert grad is weight.grad and alias is not grad
        assert np.shares_memory(alias.numpy(), grad.numpy())


SCALE = 2.0
WEIGHT = ember.ones(3)


def _scaled(x):
    return x * WEIGHT * SCALE


def test_rebinding_a_global_retraces_and_says_which():
    global SCALE, WEIGHT
    fast, x = jit.compile(_scaled), ember.arange(3.0)
    try:
        for scale, weight in ((2.0, WEIGHT), (3.0, WEIGHT), (3.0, ember.full((3,), 5.0))):
            SCALE, WEIGHT = scale, weight
            np.testing.assert_array_equal(fast(x).numpy(), _scaled(x).numpy())
        assert jit.explain()[-2] == "_scaled: traced again: _scaled: global SCALE: 2.0 -> 3.0"
        assert jit.explain()[-1] == "_scaled: traced again: _scaled: global WEIGHT: another object"
        SCALE = 2.0 + 1.0  # another float object of an equal value: the compiled graph holds
        fast(x)
        assert len(fast.entries) == 3
    finally:
        SCALE, WEIGHT = 2.0, ember.ones(3)


def test_rebinding_a_closure_variable_retraces():
    offset = ember.ones(2)

    @jit.compile
    def shifted(x):
        return x + offset

    x = ember.zeros(2)
    shifted(x)
    offset = ember.full((2,), 4.0)
    np.testing.assert_array_equal(shifted(x).numpy(), [4.0, 4.0])
    assert jit.explain()[-1].endswith("closure variable offset: another object")


class _Config:
    def __init__(self, **values) -> None:
        vars(self).update(values)


CONFIG = _Config(scale=2.0, inner=_Config(shift=1.0))


def _configured(x):
    return x * CONFIG.scale + CONFIG.inner.shift


def test_an_attribute_the_function_reads_is_watched():
    fast, x = jit.compile(_configured), ember.arange(3.0)
    try:
        for scale, shift in ((2.0, 1.0), (0.5, 1.0), (0.5, -4.0), (0.5, -4.0)):
            CONFIG.scale, CONFIG.inner.shift = scale, shift
            np.testing.assert_array_equal(fast(x).numpy(), _configured(x).numpy())
        assert jit.explain()[-2].endswith("_configured: CONFIG.scale: 2.0 -> 0.5")
        assert jit.explain()[-1].endswith("_configured: CONFIG.inner.shift: 1.0 -> -4.0")
        assert len(fast.entries) == 3
    finally:
        CONFIG.scale, CONFIG.inner.shift = 2.0, 1.0


def test_attributes_of_a_layers_plain_object_and_of_a_callable_object_are_watched():
    class Scaled(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = _Config(gain=3.0)

        def forward(self, x):
            return x * self.cfg.gain

    class Shift:
        def __init__(self):
            self.by = 1.0

        def __call__(self, x):
            return x + self.by

    layer, shift, x = Scaled(), Shift(), ember.ones(2)
    fast_layer, fast_shift = jit.compile(layer), jit.compile(shift)
    with ember.no_grad():
        fast_layer(x), fast_shift(x)
        layer.cfg.gain, shift.by = 0.5, -2.0
        np.testing.assert_array_equal(fast_layer(x).numpy(), [0.5, 0.5])
        np.testing.assert_array_equal(fast_shift(x).numpy(), [-1.0, -1.0])
    assert jit.explain()[-2].endswith("Scaled.forward: self.cfg.gain: 3.0 -> 0.5")


SETTINGS = types.ModuleType("settings_of_a_user")  # (a config module: import settings)
SETTINGS.SCALE = 2.0


def _set(x):
    return x * SETTINGS.SCALE + math.pi  # (the standard library's constants are not watched)


def test_an_attribute_of_a_users_module_is_watched():
    fast, x = jit.compile(_set), ember.ones(1)
    try:
        fast(x)
        SETTINGS.SCALE = 3.0
        np.testing.assert_allclose(fast(x).numpy(), [3.0 + math.pi], rtol=1e-6)
    finally:
        SETTINGS.SCALE = 2.0
    assert jit.explain()[-1].endswith("_set: SETTINGS.SCALE: 2.0 -> 3.0")
    assert not any("math" in b[2] for b in reach(_set, (x,)).bindings)


def test_an_attribute_of_an_argument_object_is_watched():
    @jit.compile
    def scaled(x, cfg):
        return x * cfg.scale

    cfg, x = _Config(scale=3.0), ember.ones(2)
    scaled(x, cfg)
    cfg.scale = 4.0
    np.testing.assert_array_equal(scaled(x, cfg).numpy(), [4.0, 4.0])
    assert jit.explain()[-1].endswith("scaled: cfg.scale: 3.0 -> 4.0")


class _Defaults:
    scale = 2.0
    reads = 0

    @property
    def computed(self) -> float:
        type(self).reads += 1
        return 3.0


def test_an_attribute_inherited_from_the_class_is_watched_until_the_object_sets_its_own():
    @jit.compile
    def scaled(x, cfg):
        return x * cfg.scale

    cfg, x = _Defaults(), ember.ones(2)
    scaled(x, cfg)
    cfg.scale = 4.0
    np.testing.assert_array_equal(scaled(x, cfg).numpy(), [4.0, 4.0])
    assert jit.explain()[-1].endswith("scaled: cfg.scale: 2.0 -> 4.0")


def test_a_property_the_function_reads_is_not_run_by_the_watch():
    @jit.compile
    def read(x, cfg):
        return x * cfg.computed

    cfg, x = _Defaults(), ember.ones(2)
    for _ in range(3):
        np.testing.assert_array_equal(read(x, cfg).numpy(), [3.0, 3.0])
    assert _Defaults.reads == 1  # (once, while tracing)


def test_an_attribute_the_function_assigns_is_a_counter_not_a_reason_to_retrace():
    stats = _Config(calls=0, scale=2.0)

    @jit.compile
    def counted(x):
        stats.calls += 1
        return x * stats.scale

    for _ in range(3):
        counted(ember.ones(2))
    assert len(counted.entries) == 1 and stats.calls == 1  # (a side effect of the trace)


def test_a_counter_the_function_assigns_is_not_a_reason_to_retrace_and_is_told():
    calls = 0

    @jit.compile
    def counted(x):
        nonlocal calls
        calls += 1  # a Python side effect: it happens when tracing, as documented
        return x * 2

    with pytest.warns(UserWarning, match="counted changes closure variable calls each time"):
        for _ in range(3):
            counted(ember.ones(2))
    assert len(counted.entries) == 1 and calls == 1
    calls = np.int64(0)  # (a NumPy count too)
    with pytest.warns(UserWarning, match="changes closure variable calls"):
        jit.compile(counted.__wrapped__ if hasattr(counted, "__wrapped__") else counted.fn)(
            ember.ones(2))


STEP = 0
CACHE = None
TABLE = None


def _bump():
    global STEP
    STEP += 1


def test_a_global_counter_bumped_by_a_helper_is_told_once():
    global STEP
    STEP = 0

    @jit.compile
    def stepped(x):
        _bump()
        return x + 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            stepped(ember.ones(2))
    assert STEP == 1 and len(caught) == 1
    assert "changes global STEP each time it is traced" in str(caught[0].message)
    assert caught[0].filename == __file__  # (the caller's line)


def test_a_global_assigned_a_computed_tensor_is_refused():
    @jit.compile
    def cached(x):
        global CACHE
        CACHE = x * 3  # the graph would keep this trace's tensor
        return x * 2

    with pytest.raises(jit.TraceError, match=r"cached assigns a tensor computed from its inputs "
                       r"\(shape \(2,\)\) to a global or closure name \(.*global CACHE\)"):
        cached(ember.ones(2))


def test_a_flag_set_or_an_object_replaced_is_no_counter():
    ready, table = False, {"a": 1}

    @jit.compile
    def step(x):
        nonlocal ready, table
        ready, table = True, {"a": 2}  # a flag and a new object: no count
        return x + 1

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step(ember.ones(2))
    assert ready is True and table == {"a": 2}


def test_a_global_initialized_once_is_no_counter():
    global TABLE
    TABLE = None

    @jit.compile
    def lookup(x):
        global TABLE
        if TABLE is None:
            TABLE = ember.arange(2.0)  # a constant, made once
        return x + TABLE

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            np.testing.assert_array_equal(lookup(ember.ones(2)).numpy(), [1.0, 2.0])


@pytest.mark.parametrize("change, reason", [
    (lambda m: m.__setitem__(0, ember.nn.Linear(3, 4)), "0: another object"),
    (lambda m: setattr(m[0], "weight", ember.nn.Parameter(ember.zeros(4, 3))),
     "0.weight: another object"),
    (lambda m: setattr(m[0], "bias", None), "0.bias: no longer reached"),
    (lambda m: (setattr(m[0].weight, "data", ember.zeros(4, 3, dtype=ember.float64)),
                setattr(m[0].bias, "data", ember.zeros(4, dtype=ember.float64))),
     "0.weight: dtype float32 -> float64"),
])
def test_replacing_a_layer_or_parameter_retraces(change, reason):
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU())
    fast, x = jit.compile(model), ember.randn(2, 3)
    with ember.no_grad():
        fast(x)
        change(model)
        if model[0].weight.dtype is ember.float64:
            x = x.double()
        np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-6)
    assert reason in jit.explain()[-1]


def test_a_model_updated_in_place_keeps_its_compiled_graph():
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    fast, x = jit.compile(model), ember.randn(8, 3)
    for _ in range(3):
        fast(x)
        model.load_state_dict(model.state_dict())
        ember.nn.Linear(2, 2)  # another model made elsewhere changes nothing here
    assert len(fast.entries) == 1


def test_compiling_one_function_many_times_warns():
    @jit.compile
    def shaped(x):
        return x + 1

    with pytest.warns(UserWarning, match="shaped has been compiled 8 times.*shape"):
        for n in range(1, 9):
            shaped(ember.ones(n))


def test_a_compiled_function_told_not_to_warn_of_retraces_stays_silent():
    """An export traces on purpose at several sizes: it turns the warning off on its own
    compiled function (not with a process-wide warnings filter, which other threads share)."""
    shaped = jit.compile(lambda x: x + 1)
    shaped.warn_retraces = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 10):
            shaped(ember.ones(n))


def test_hooks_and_numbers_set_on_modules_after_compiling_retrace():
    drop, x = ember.nn.Dropout(0.5), ember.ones(400)
    fast = jit.compile(lambda x: drop(x))
    assert (fast(x).numpy() == 0).any()
    drop.p = 0.0
    np.testing.assert_array_equal(fast(x).numpy(), x.numpy())
    assert jit.explain()[-1].endswith("drop.p: 0.5 -> 0.0")
    model = ember.nn.Linear(3, 2)
    fast_model = jit.compile(model)
    with ember.no_grad():
        fast_model(x[:3])
        model.register_forward_hook(lambda module, args, out: out * 10)
        np.testing.assert_allclose(fast_model(x[:3]).numpy(), model(x[:3]).numpy())
    assert jit.explain()[-1].endswith("hooks of self: [] -> [test_hooks_and_numbers_set_on_"
                                      "modules_after_compiling_retrace.<locals>.<lambda>]")
    w = ember.ones(3, requires_grad=True)
    backward = jit.compile(lambda x: (x * w).sum().backward())
    backward(x[:3])
    w.grad = None
    w.register_hook(lambda g: g * 10)
    backward(x[:3])
    np.testing.assert_array_equal(w.grad.numpy(), [10.0] * 3)


def test_a_parameter_group_added_after_compiling_is_updated():
    model, head = ember.nn.Linear(3, 1), ember.nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)

    @jit.compile
    def step(x):
        (model(x).sum() + head(x).sum()).backward()
        opt.step()
        opt.zero_grad()

    x = ember.ones(2, 3)
    step(x)
    head.zero_grad()
    opt.add_param_group({"params": head.parameters()})
    before = head.weight.detach().clone()
    step(x)
    np.testing.assert_allclose(head.weight.detach().numpy(), before.numpy() - 0.1 * 2, rtol=1e-6)
    assert jit.explain()[-1].endswith(
        "parameters of opt: 2 parameters in 1 group -> 4 parameters in 2 groups")


def test_a_module_changing_its_own_attributes_while_traced():
    class Counting(ember.nn.Module):  # a side effect of every call: done when tracing
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * 2

    class ActNorm(ember.nn.Module):  # initialized from the first batch (Glow's layer)
        def __init__(self):
            super().__init__()
            self.loc = ember.nn.Parameter(ember.zeros(3))
            self.initialized = False

        def forward(self, x):
            if not self.initialized:
                with ember.no_grad():
                    self.loc.copy_(-x.mean(0))
                self.initialized = True
            return x + self.loc

    counting = Counting()
    fast = jit.compile(counting)
    for _ in range(4):
        fast(ember.ones(2))
    assert counting.calls == 2 and len(fast.entries) == 2  # (traced once more, then steady)
    ember.manual_seed(0)
    batches = [ember.randn(4, 3) + i for i in range(4)]
    compiled_norm, eager_norm = ActNorm(), ActNorm()
    fast = jit.compile(compiled_norm)
    for x in batches:
        np.testing.assert_allclose(fast(x).detach().numpy(), eager_norm(x).detach().numpy(),
                                   rtol=1e-6)
    assert jit.explain()[-1].endswith("self.initialized: False -> True")


class RunningNorm(ember.nn.Module):
    """Updates a registered buffer by rebinding it (a common custom batch norm or EMA);
    ``seen`` is a buffer made on the first call."""

    def __init__(self, n):
        super().__init__()
        self.lin = ember.nn.Linear(n, n)
        self.register_buffer("running", ember.zeros(n))
        self.register_buffer("seen", None)

    def forward(self, x):
        h = self.lin(x)
        if self.training:
            with ember.no_grad():
                self.running = 0.9 * self.running + 0.1 * h.mean(0)
            self.seen = ember.zeros(()) if self.seen is None else self.seen + 1
        return h - self.running


def _train_running_norm(compiled):
    ember.manual_seed(0)
    m = RunningNorm(4)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        loss = (m(x) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    fast = jit.compile(step) if compiled else step
    ember.manual_seed(1)
    seen = [(fast(ember.randn(8, 4) + 3.0).item(), m.running.numpy().copy(), m.seen.item())
            for _ in range(6)]
    return seen, m, fast


def test_a_buffer_rebound_in_forward_is_written_back_on_every_call():
    (eager, _, _), (jit_, m, fast) = _train_running_norm(False), _train_running_norm(True)
    for i, ((e_loss, e_run, e_seen), (j_loss, j_run, j_seen)) in enumerate(zip(eager, jit_)):
        assert j_loss == pytest.approx(e_loss, rel=1e-5), f"call {i}"
        np.testing.assert_allclose(j_run, e_run, rtol=1e-5, atol=1e-6, err_msg=f"call {i}")
        assert j_seen == e_seen == i
    assert len(fast.entries) == 2  # (once more after `seen` was made, then steady)
    assert jit.explain()[-1].endswith("m.seen: newly reached; hooks of m.seen: newly reached")
    running = m.running  # the buffer stays the module's own tensor, updated in place
    fast(ember.randn(8, 4))
    assert m.running is running and m._buffers["running"] is running
    assert len(fast.entries) == 2


def test_a_buffer_rebound_by_a_compiled_module_that_returns_grads():
    def run(compiled):
        ember.manual_seed(0)
        m = RunningNorm(3)
        fast = jit.compile(m) if compiled else m
        out = []
        for i in range(4):
            fast(ember.ones(2, 3) * i).sum().backward()
            out.append((m.running.numpy().copy(), m.lin.weight.grad.numpy().copy()))
        return out

    for (e_run, e_grad), (j_run, j_grad) in zip(run(False), run(True)):
        np.testing.assert_allclose(j_run, e_run, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(j_grad, e_grad, rtol=1e-6, atol=1e-7)

def test_the_same_tensor_passed_twice_traces_its_own_graph():
    def bump_then_add(x, y):
        x.add_(1)
        return x + y

    fast = jit.compile(bump_then_add)
    fast(ember.zeros(3), ember.zeros(3))
    array = np.zeros(3, np.float32)
    for x, y in ((lambda t: (t, t))(ember.zeros(3)), (lambda t: (t, t[:]))(ember.zeros(3)),
                 (ember.from_numpy(array), ember.from_numpy(array))):
        np.testing.assert_array_equal(fast(x, y).numpy(), [2.0] * 3)  # as eager
    assert jit.explain()[-2].endswith("argument y: its own memory -> memory of x")
    assert jit.explain()[-1].startswith("bump_then_add: runs eagerly: argument x shares memory "
                                        "with y")
    assert len(fast.entries) == 2


def test_a_new_default_dtype_traces_again():
    fast = jit.compile(lambda x: x + ember.zeros(3))
    x = ember.ones(3, dtype=ember.float16)
    assert fast(x).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert fast(x).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    assert jit.explain()[-1].endswith("default dtype float32 -> float64")


class _Head(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 2)
        self.drop = ember.nn.Dropout(0.5)

    @jit.compile
    def forward(self, x):
        return self.drop(self.fc(x)).relu()


def test_a_compiled_method_binds_and_keeps_each_instance_apart():
    first, second, x = _Head(), _Head(), ember.randn(4, 3)
    first.eval()
    second.eval()
    with ember.no_grad():
        for _ in range(2):
            for net in (first, second):
                np.testing.assert_allclose(net(x).numpy(), net.fc(x).relu().numpy(), rtol=1e-6)
        second.train()  # first's graph is still the inference one
        np.testing.assert_allclose(first(x).numpy(), first.fc(x).relu().numpy(), rtol=1e-6)
        assert len(_Head.forward.entries) == 2
        second(x)
    assert jit.explain()[-1].endswith("self.drop.training: False -> True")
    assert len(_Head.forward.entries) == 3 and "self.fc.weight" in str(first.forward.graph)


def test_modules_passed_in_turn_are_traced_once_each():
    a, b, x = ember.nn.Linear(3, 2), ember.nn.Linear(3, 2), ember.randn(4, 3)
    fast = jit.compile(lambda m, x: m(x))
    with ember.no_grad():
        for _ in range(3):
            for m in (a, b):
                np.testing.assert_allclose(fast(m, x).numpy(), m(x).numpy(), rtol=1e-6)
    assert len(fast.entries) == 2
    assert jit.explain()[-1] == "<lambda>: traced again: argument m: another object"


@pytest.mark.parametrize("unfreeze", [lambda p: p.requires_grad_(True),
                                      lambda p: setattr(p, "requires_grad", True)])
def test_unfreezing_a_layer_after_compiling_trains_it(unfreeze):
    model = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.Linear(3, 1))
    model[0].requires_grad_(False)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.randn(4, 3)

    @jit.compile
    def step():
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()

    step()
    for p in model[0].parameters():
        unfreeze(p)
    before = model[0].weight.detach().clone()
    step()
    assert not np.array_equal(model[0].weight.detach().numpy(), before.numpy())
    assert jit.explain()[-1].endswith("model.0.bias.requires_grad: False -> True")


def _scaled_steps(compiled: bool) -> list:
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = ember.amp.GradScaler(init_scale=2.0 ** 124, growth_interval=2)
    x, y = ember.randn(16, 4), ember.randint(0, 2, (16,))

    def step():
        loss = F.cross_entropy(model(x), y) * 8
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norm = ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        return loss, norm

    run = jit.compile(step) if compiled else step
    out = []
    for _ in range(6):  # growth until the scaled gradients overflow: skipped steps, backoff
        loss, norm = run()
        out.append((loss.item(), norm.item(), scaler.get_scale(),
                    model[0].weight.detach().numpy().copy()))
    return out


def test_a_grad_scaler_step_compiles_with_skips_backoff_and_growth():
    eager, compiled = _scaled_steps(False), _scaled_steps(True)
    assert [e[2] for e in eager] == [c[2] for c in compiled]
    scales = [e[2] for e in eager]
    assert any(map(float.__lt__, scales, scales[1:])) and any(map(float.__gt__, scales, scales[1:]))
    assert not all(np.isfinite(e[1]) for e in eager)  # (some steps were skipped)
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(c[0], e[0], rtol=1e-6)
        np.testing.assert_allclose(c[3], e[3], rtol=1e-6)
        assert np.isfinite(e[1]) == np.isfinite(c[1])


def test_a_hook_replaced_by_another_traces_again_and_the_same_one_does_not():
    model, x = ember.nn.Linear(3, 2), ember.randn(4, 3)
    fast = jit.compile(model)

    def double(module, args, out):
        return out * 2

    with ember.no_grad():
        for hook, factor in ((double, 2), (lambda module, args, out: -out, -1), (double, 2)):
            handle = model.register_forward_hook(hook)
            np.testing.assert_allclose(fast(x).numpy(), model.forward(x).numpy() * factor,
                                       rtol=1e-6)
            handle.remove()
    assert len(fast.entries) == 2


def test_steady_calls_do_not_look_again_at_what_the_function_reaches(monkeypatch):
    from ember.jit import compiled

    model = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.Dropout(0.1))
    fast = jit.compile(model)
    x = ember.randn(2, 3)
    fast(x)
    looks = []
    monkeypatch.setattr(compiled, "reach", lambda *a: looks.append(a) or reach(*a))
    for _ in range(3):  # inputs made to require grad, model switched back and forth
        fast(ember.randn(2, 3).requires_grad_())
        model.eval()
        model.train()
        fast(x)
    # one look for the trace with a grad-requiring input, one after each eval()/train() pair
    assert len(looks) == 1 + 3 and len(fast.entries) == 2


GAIN = 1.0


class _Gained(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x) * GAIN


def test_a_global_read_by_a_child_layer_is_watched():
    global GAIN
    model = ember.nn.Sequential(_Gained(), ember.nn.ReLU())
    fast, x = jit.compile(model), ember.randn(2, 3)
    try:
        with ember.no_grad():
            fast(x)
            GAIN = 5.0
            np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-6)
    finally:
        GAIN = 1.0
    assert jit.explain()[-1].endswith("_Gained.forward: global GAIN: 1.0 -> 5.0")


def test_a_method_of_an_unhashable_object_compiles_per_instance():
    import dataclasses

    @dataclasses.dataclass
    class Scaler:
        factor: ember.Tensor

        @jit.compile
        def apply(self, x):
            return x * self.factor

    two, three = Scaler(ember.full((2,), 2.0)), Scaler(ember.full((2,), 3.0))
    for _ in range(2):
        assert two.apply(ember.ones(2)).tolist() == [2.0, 2.0]
        assert three.apply(ember.ones(2)).tolist() == [3.0, 3.0]
    assert len(Scaler.apply.entries) == 2


def test_reseeding_inside_a_compiled_function_happens_on_every_call():
    def masked(x):
        ember.manual_seed(0)
        own = ember.Generator().manual_seed(1)
        return F.dropout(x, 0.5, training=True) + ember.rand(8, generator=own)

    fast, x = jit.compile(masked), ember.ones(8)
    for _ in range(3):
        np.testing.assert_array_equal(fast(x).numpy(), masked(x).numpy())
    assert "Generator_manual_seed()" in fast.code


_REBOUND = None


def test_models_rebound_again_and_again_are_freed_with_their_oldest_graphs(monkeypatch):
    import gc
    import weakref

    from ember.jit import compiled

    global _REBOUND
    monkeypatch.setattr(compiled, "_KEEP_ENTRIES", 2)
    fast, alive = jit.compile(lambda x: _REBOUND(x)), []
    try:
        for _ in range(6):  # a notebook cell run again: a new model each time
            _REBOUND = ember.nn.Linear(3, 3)
            alive.append(weakref.ref(_REBOUND))
            with ember.no_grad():
                np.testing.assert_allclose(fast(ember.ones(1, 3)).numpy(),
                                           _REBOUND(ember.ones(1, 3)).numpy(), rtol=1e-6)
    finally:
        _REBOUND = None
    gc.collect()
    assert len(fast.entries) == 2 and sum(r() is not None for r in alive) == 2


zero_grad = 0  # a global named like an attribute the step reads (opt.zero_grad)
_MOCK = None


def test_attribute_names_are_not_globals_and_odd_globals_are_left_alone():
    global zero_grad, _MOCK
    from unittest import mock

    model = ember.nn.Linear(2, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    _MOCK = mock.Mock()  # (asked for any attribute, it makes one up)

    @jit.compile
    def step(x):
        _MOCK.seen = True
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()

    try:
        for zero_grad in range(4):  # noqa: B007 - a global loop variable named like opt.zero_grad
            step(ember.ones(1, 2))
    finally:
        zero_grad, _MOCK = 0, None
    assert len(step.entries) == 1 and jit.explain()[-1] == "step: first call: traced"


def test_private_attributes_requires_grad_toggles_and_side_effects_in_two_signatures():
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(3, 3)
            self._temperature = 1.0
            self.calls = 0

        def forward(self, x):
            self.calls += 1  # bumped by every trace: left out once two traces changed it
            return self.fc(x) / self._temperature

    net = Net()
    fast = jit.compile(net)
    for i in range(8):  # two signatures, and the weight frozen on every other call
        net.fc.weight.requires_grad_(i % 2 == 0)
        fast(ember.ones(2 + i % 2, 3))
    assert net.calls <= 4 and len(fast.entries) <= 4
    net._temperature = 4.0
    with ember.no_grad():
        np.testing.assert_allclose(fast(ember.ones(2, 3)).numpy(),
                                   net.fc(ember.ones(2, 3)).numpy() / 4, rtol=1e-6)


def test_modules_reached_through_keywords_partials_and_callable_objects():
    import functools

    model = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.Dropout(0.5))

    def run(x, net):
        return net(x)

    class Runner:
        def __init__(self):
            self.net = model

        def __call__(self, x):
            return self.net(x)

    x, compiled_run = ember.ones(4, 3), jit.compile(run)
    for fast in (lambda x: compiled_run(x, net=model),
                 jit.compile(functools.partial(run, net=model)), jit.compile(Runner())):
        model.train()
        fast(x)
        model.eval()  # dropout off: the compiled call must see it
        with ember.no_grad():
            np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())


def test_a_parameter_written_in_place_before_the_optimizer_step_is_what_the_step_updates():
    def build():
        ember.manual_seed(0)
        model = ember.nn.Linear(3, 2)
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            with ember.no_grad():
                model.weight.mul_(0.5)  # as a max_norm renorm does: the step must see it
            loss = model(x).square().sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step, model

    (eager, me), (compiled, mc) = build(), build()
    compiled = jit.compile(compiled)
    for seed in range(3):
        x = ember.randn(4, 3, generator=ember.Generator().manual_seed(seed))
        np.testing.assert_allclose(compiled(x).item(), eager(x).item(), rtol=1e-6)
        np.testing.assert_allclose(mc.weight.detach().numpy(), me.weight.detach().numpy(),
                                   rtol=1e-6)


def test_a_tensor_rebound_to_a_new_shape_on_every_call_is_traced_each_time():
    class Growing(ember.nn.Module):  # a cache that grows by a row per call
        def __init__(self):
            super().__init__()
            self.register_buffer("seen", ember.zeros(0, 2))

        def forward(self, x):
            self.seen = ember.cat([self.seen, x])
            return self.seen.sum(0)

    eager, model = Growing(), Growing()
    fast = jit.compile(model)
    with ember.no_grad(), pytest.warns(UserWarning):  # (compiled again and again: it says so)
        for i in range(10):
            x = ember.full((1, 2), float(i + 1))
            np.testing.assert_array_equal(fast(x).numpy(), eager(x).numpy())
    assert model.seen.shape == (10, 2)


def _input_gradient(x):
    x.exp().sum().backward()
    grad, x.grad = x.grad, None
    return grad


def test_a_hook_on_an_argument_is_part_of_the_key():
    fast = jit.compile(_input_gradient)

    def arg():
        return ember.tensor([0.0, 1.0], dtype=ember.float64, requires_grad=True)

    x = arg()
    np.testing.assert_allclose(fast(x).numpy(), np.exp([0.0, 1.0]))
    handle = x.register_hook(lambda g: g * 7)
    np.testing.assert_allclose(fast(x).numpy(), 7 * np.exp([0.0, 1.0]))
    assert jit.explain()[-1].endswith("argument x: hooks [] -> [test_a_hook_on_an_argument_is_"
                                      "part_of_the_key.<locals>.<lambda>]")
    handle.remove()  # removed, or a fresh argument without one: the graph without it
    for y in (x, arg()):
        np.testing.assert_allclose(fast(y).numpy(), np.exp([0.0, 1.0]))
    assert len(fast.entries) == 2


def test_a_backward_accumulates_into_an_arguments_grad_as_eager():
    def step(x):
        (x * x * x).sum().backward()
        return x.grad

    fast = jit.compile(step)
    a, b = (ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
            for _ in range(2))
    for _ in range(3):
        np.testing.assert_array_equal(fast(b).numpy(), step(a).numpy())
        np.testing.assert_array_equal(b.grad.numpy(), a.grad.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), [9.0, 36.0, 81.0])
    assert jit.explain()[-1] == "step: traced again: argument x: .grad None -> set (ember.float64)"
    b.grad = None  # back to the first graph
    np.testing.assert_array_equal(fast(b).numpy(), [3.0, 12.0, 27.0])
    assert len(fast.entries) == 2
    model = jit.compile(ember.nn.Linear(3, 1).double())  # (a forward touches no .grad)
    for _ in range(3):
        model(b).sum().backward()
    assert b.grad is not None and len(model.entries) == 1


def test_a_differentiable_result_of_an_arguments_grad_is_refused():
    x = ember.ones(2, requires_grad=True)
    x.grad = ember.ones(2)
    with pytest.raises(jit.TraceError, match="reads the .grad an argument had before the call"):
        jit.compile(lambda x: x * x.grad)(x)
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])  # (as before the call)


def test_arguments_sharing_memory_that_the_graph_writes_run_the_plain_function():
    def scale_then_read(x, y):
        x.mul_(2)
        return y * 1

    fast = jit.compile(scale_then_read)
    for _ in range(3):
        a, b = ember.arange(1.0, 5.0), ember.arange(1.0, 5.0)
        np.testing.assert_array_equal(fast(b, b[1:3]).numpy(), scale_then_read(a, a[1:3]).numpy())
        np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert jit.explain()[-1].startswith("scale_then_read: runs eagerly: argument x shares "
                                        "memory with y and the function writes into it")
    b = ember.arange(1.0, 5.0)
    fast(b, ember.ones(2))  # apart: the graph
    assert fast(b, ember.ones(2)).tolist() == [1.0, 1.0] and b.tolist() == [4.0, 8.0, 12.0, 16.0]
    assert not fast.last.eager and len(fast.entries) == 2
    reads = jit.compile(lambda x, y: x * y)  # (sharing memory, nothing written: the graph)
    reads(b, b)
    assert reads.last.eager is None


class _Cfg:
    scale = 1.0  # (a class attribute: read as _Cfg.scale below, as cfg.scale on an instance)


def test_hooks_reading_an_attribute_of_a_plain_object_are_watched():
    cfg = _Config(scale=1.0)

    def build():
        ember.manual_seed(0)
        model = ember.nn.Linear(2, 2).double()
        model.register_forward_hook(lambda module, args, out: out * cfg.scale)
        model.weight.register_hook(lambda g: g * cfg.scale)
        return model

    def step(model, x):
        h = x.sin()
        h.register_hook(lambda g: g * cfg.scale)  # (made inside the function)
        y = model(h)
        y.sum().backward()
        out = (y.detach(), model.weight.grad, x.grad)
        model.weight.grad = model.bias.grad = x.grad = None
        return out

    eager, model = build(), build()
    fast = jit.compile(lambda x: step(model, x))
    hooked = jit.compile(_input_gradient)
    for scale in (1.0, 3.0, 0.5):
        cfg.scale = scale
        x, y = (ember.tensor([[0.5, 1.5]], dtype=ember.float64, requires_grad=True)
                for _ in range(2))
        for e, c in zip(step(eager, x), fast(y)):
            np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-12)
        y.register_hook(lambda g: g * cfg.scale)  # (an argument's hook)
        np.testing.assert_allclose(hooked(y).numpy(), scale * np.exp([[0.5, 1.5]]))
    assert len(fast.entries) == 3 and len(hooked.entries) <= 4
    assert any(r.endswith("cfg.scale: 1.0 -> 3.0") for r in jit.explain()[-6:])


def test_a_changed_default_argument_traces_again():
    def scaled(x, s=2.0, *, shift=0.0):
        return x * s + shift

    fast, x = jit.compile(scaled), ember.ones(2)
    assert fast(x).tolist() == [2.0, 2.0]
    scaled.__defaults__ = (5.0,)
    assert fast(x).tolist() == [5.0, 5.0]
    assert jit.explain()[-1].endswith("traced again: test_a_changed_default_argument_traces_"
                                      "again.<locals>.scaled: default s: 2.0 -> 5.0")
    scaled.__kwdefaults__["shift"] = 1.0
    assert fast(x).tolist() == [6.0, 6.0]
    assert jit.explain()[-1].endswith("scaled: default shift: 0.0 -> 1.0")
    scaled.__defaults__ = (2.0 + 3.0,)  # an equal value: the graph holds
    fast(x)
    assert len(fast.entries) == 3
    cfg = _Config(gain=1.0)
    gained = jit.compile(lambda x, c=cfg: x * c.gain)  # (an attribute of a default object)
    gained(x)
    cfg.gain = 3.0
    assert gained(x).tolist() == [3.0, 3.0]


class _Base:
    shift = 0.0


class _Settings(_Base):
    scale = 1.0
    weight = ember.ones(2)


def test_an_attribute_of_a_users_class_is_watched():
    direct = jit.compile(lambda x: x * _Settings.scale + _Settings.shift)
    helper = jit.compile(lambda x: _scaled_by_class(x))
    x = ember.ones(2)
    try:
        for scale, shift in ((1.0, 0.0), (3.0, 0.0), (3.0, 1.0)):
            _Settings.scale, _Settings.shift = scale, shift  # (shift: inherited, then its own)
            assert direct(x).tolist() == [scale + shift] * 2
            assert helper(x).tolist() == [scale] * 2
        assert jit.explain()[-1].endswith("<lambda>: _Settings.shift: 0.0 -> 1.0")
        _Settings.weight.mul_(4)  # a tensor of the class: state, read at every call
        assert jit.compile(lambda x: x * _Settings.weight)(x).tolist() == [4.0, 4.0]
    finally:
        _Settings.scale, _Settings.weight = 1.0, ember.ones(2)
        del _Settings.shift
    assert len(direct.entries) == 3 and len(helper.entries) == 2

    def reader(cls):
        return lambda x: x * len(cls.__module__)

    # (an installed library's class is not watched)
    for cls, watched in ((_Settings, True), (ember.nn.Linear, False)):
        found = reach(reader(cls), (x,))
        assert any(b[2].endswith("cls.__module__") for b in found.bindings) is watched


def _scaled_by_class(x):
    return x * _Settings.scale


@pytest.mark.parametrize("change", ["in place", "rebound", "cleared"])
def test_a_grad_changed_by_a_compiled_function_after_an_eager_backward(change):
    def run(compile_it):
        w = ember.ones(3, requires_grad=True)

        def process():  # e.g. a compiled clipping step between backward() and step()
            if change == "in place":
                w.grad.mul_(2)
            elif change == "rebound":
                w.grad = w.grad * 2
            else:
                w.grad = None
            return w * 1

        fn = jit.compile(process) if compile_it else process
        seen = []
        for _ in range(3):
            (w * w).sum().backward()
            fn()
            seen.append(None if w.grad is None else w.grad.numpy().copy())
        return seen

    for got, want in zip(run(True), run(False)):
        if want is None:
            assert got is None
        else:
            np.testing.assert_array_equal(got, want)


def test_a_compiled_update_writes_each_grad_in_place_as_eager():
    # clipping, the step and zero_grad(set_to_none=False) keep each .grad tensor: a reference
    # taken after backward() sees what the compiled update did to it
    def run(compile_it):
        model = _mlp()
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = ember.randn(3, 4, generator=ember.Generator().manual_seed(1))

        def update():
            ember.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            opt.step()
            opt.zero_grad(set_to_none=False)

        fn = jit.compile(update) if compile_it else update
        seen = []
        for _ in range(3):
            model(x).square().sum().backward()
            held = model[0].weight.grad
            fn()
            assert model[0].weight.grad is held
            seen.append(held.numpy().copy())
            held.add_(1.0)  # (the next backward adds to it)
        return seen, model[0].weight.detach().numpy()

    (seen, weight), (want, want_weight) = run(True), run(False)
    for got, expected in zip(seen, want):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(weight, want_weight, rtol=1e-6)


def test_lbfgs_step_with_its_closure_is_refused_with_the_way_to_compile_it():
    def setup():
        model = _mlp()
        opt = ember.optim.LBFGS(model.parameters(), max_iter=3)
        x = ember.randn(3, 4, generator=ember.Generator().manual_seed(1))

        def closure():
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            return loss
        return model, opt, closure

    model, opt, closure = setup()
    with pytest.raises(jit.TraceError, match=r"LBFGS\.step\(closure\).*"
                                             r"opt\.step\(ember\.jit\.compile\(closure\)\)"):
        jit.compile(lambda: opt.step(closure))()
    opt.step(jit.compile(closure))  # (the closure compiled, the step outside: as eager)
    want, want_opt, want_closure = setup()
    want_opt.step(want_closure)
    np.testing.assert_allclose(model[0].weight.detach().numpy(), want[0].weight.detach().numpy(),
                               rtol=1e-6)


def _while_tracing(eager_work):
    """Two events: the traced function sets the first, then waits while another thread runs
    ``eager_work`` and sets the second."""
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait(10)
        eager_work()
        done.set()

    threading.Thread(target=other).start()
    return inside, done


def test_another_threads_optimizer_step_is_not_recorded_in_a_trace():
    a, b = ember.nn.Linear(2, 1), ember.nn.Linear(2, 1)
    opt_a, opt_b = (ember.optim.SGD(m.parameters(), lr=0.1) for m in (a, b))
    x = ember.randn(3, 2)
    inside, done = _while_tracing(lambda: (b(x).sum().backward(), opt_b.step()))

    @jit.compile
    def step(x):
        a(x).sum().backward()
        inside.set()
        done.wait(10)
        opt_a.step()
        opt_a.zero_grad()

    step(x)
    before = b.weight.detach().numpy().copy()
    step(x)  # (compiled: must not step opt_b)
    np.testing.assert_array_equal(b.weight.detach().numpy(), before)


def test_a_module_traced_while_another_thread_runs_backward_stays_differentiable():
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(2, 1)

        def forward(self, x):
            inside.set()
            done.wait(10)
            return self.fc(x)

    w = ember.ones(2, requires_grad=True)
    inside, done = _while_tracing(lambda: (w * 2).sum().backward())
    fast = jit.compile(Net())
    x = ember.randn(3, 2)
    fast(x)
    assert fast(x).requires_grad


def test_an_arguments_grad_accumulates_in_place_as_eager():
    def step(x):
        (x * x).sum().backward()

    fast = jit.compile(step)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    fast(x)
    held = x.grad  # a reference taken between steps sees later sums, as in eager
    for _ in range(2):
        fast(x)
    assert x.grad is held
    np.testing.assert_array_equal(held.numpy(), [6.0, 12.0])
    clear = jit.compile(lambda x: x.grad.zero_())  # an in-place write into it, as well
    clear(x)
    x.grad.fill_(5.0)
    clear(x)
    assert x.grad is held and held.tolist() == [0.0, 0.0]
    assert "argument 0.grad <- " in str(clear.graph) and "(in place)" in str(clear.graph)


def _hooked_linear(kind):
    ember.manual_seed(0)
    m = ember.nn.Linear(3, 2)
    if kind == "post_accumulate":  # an optimizer in backward, one per parameter
        opts = {p: ember.optim.SGD([p], lr=0.1) for p in m.parameters()}

        def step(p):
            opts[p].step()
            opts[p].zero_grad()
        handles = [p.register_post_accumulate_grad_hook(step) for p in m.parameters()]
    else:
        handles = [m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))]
    return m, handles


@pytest.mark.parametrize("kind", ["post_accumulate", "backward_pre"])
def test_accumulate_and_module_backward_pre_hooks_compile_and_retrace_on_removal(kind):
    x = ember.randn(4, 3)
    (eager, eager_handles), (model, handles) = _hooked_linear(kind), _hooked_linear(kind)

    def make(m):
        def step(x):
            loss = m(x).pow(2).sum()
            loss.backward()
            return loss
        return step
    slow, fast = make(eager), jit.compile(make(model))
    for _ in range(2):
        for _ in range(3):
            assert float(fast(x)) == pytest.approx(float(slow(x)), rel=1e-6)
        np.testing.assert_allclose(model.weight.detach().numpy(),
                                   eager.weight.detach().numpy(), rtol=1e-6)
        for h in [*handles, *eager_handles]:  # (the second round runs without the hooks)
            h.remove()
    assert any("hooks of" in reason for reason in jit.explain())


def test_a_grad_that_is_a_view_of_a_bucket_still_compiles():
    x = ember.ones(3, requires_grad=True)
    x.grad = ember.zeros(2, 3)[1]  # (a gradient bucket's slice, as DDP may hold)
    step = jit.compile(lambda x: (x * 2).sum().backward())
    for _ in range(2):
        step(x)
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])


def test_a_compiled_module_still_answers_as_the_module():
    # torch.compile(model) keeps model.parameters(), .train()/.eval() and .state_dict()
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    fast = ember.compile(model)
    opt = ember.optim.SGD(fast.parameters(), lr=0.1)
    fast(ember.randn(5, 3)).sum().backward()
    opt.step()
    assert fast.eval() is fast                      # the chained form keeps the compiled one
    assert not model.training and fast.training is False
    assert list(fast.state_dict()) == list(model.state_dict())
    with pytest.raises(AttributeError, match="no_such"):
        _ = fast.no_such
    with pytest.raises(AttributeError):
        _ = ember.compile(lambda x: x).parameters
    assert fast._orig_mod is model                  # torch's unwrapping idiom
    assert getattr(ember.compile(lambda x: x), "_orig_mod", None) is None
