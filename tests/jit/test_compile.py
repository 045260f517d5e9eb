"""ember.jit.compile: caching and retracing with reasons, modules, errors that name the line,
random ops, static arguments, switches."""

from __future__ import annotations

import linecache

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import jit


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
    assert "argument leaf 0: shape (5, 4) -> (2, 4)" in jit.explain()[-1]


def test_training_flag_is_part_of_the_signature_and_explained():
    model = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.BatchNorm1d(4))
    fast = jit.compile(model)
    x = ember.randn(6, 4)
    with ember.no_grad():
        fast(x)
        model.eval()
        np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-6)
    assert "BatchNorm1d.training: True -> False" in jit.explain()[-1]


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
    assert linecache.getline(filename, 1).startswith("def f(")
    assert "relu" in str(fast.graph)


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


def test_bad_switches_are_refused():
    with pytest.raises(ValueError, match="mode must be one of"):
        jit.compile(lambda x: x, mode="fast")
    with pytest.raises(ValueError, match="unknown passes"):
        jit.compile(lambda x: x, passes={"inline": False})


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
    assert "bf16[3,4] = matmul" in str(fast.graph)
