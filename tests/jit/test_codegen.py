"""The generated code of a small model's training step: one line per equation pointing at the
user's line, fused kernels defined in the same module, no dead temporaries, and the same
numbers as eager whichever passes run."""

from __future__ import annotations

import ast
import linecache

import numpy as np
import pytest
from tests.jit.helpers import training_step

import ember
from ember import jit


def _setup():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(6, 16), ember.nn.GELU(), ember.nn.LayerNorm(16),
                                ember.nn.Linear(16, 4))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, training_step(model, opt)


def _data():
    rng = np.random.default_rng(0)
    return (ember.tensor(rng.standard_normal((8, 6)).astype(np.float32)),
            ember.tensor(rng.integers(0, 4, 8)))


def _train(passes, steps=3):
    model, step = _setup()
    fn = step if passes is None else jit.compile(step, passes=passes)
    x, y = _data()
    losses = [fn(x, y).detach().numpy() for _ in range(steps)]
    return losses, [p.detach().numpy().copy() for p in model.parameters()], fn


def _main_body(code: str, name: str) -> list[ast.stmt]:
    tree = ast.parse(code)
    return next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == name).body


def _reads(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load)}


def test_no_dead_temporaries_and_each_is_freed_right_after_its_last_read():
    _, _, fn = _train({})
    body = _main_body(fn.code, "step")
    made, freed_at, last_read, extra = {}, {}, {}, set()
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                freed_at[t.id] = i
            continue
        for name in _reads(stmt):
            last_read[name] = i
        if isinstance(stmt, ast.Assign):
            targets = [t.id for t in ast.walk(stmt.targets[0])
                       if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)]
            made.update(dict.fromkeys(targets, i))
            if len(targets) > 1:  # an op's other results (layer norm's mean) may go unread
                extra.update(targets)
    graph = fn.graph
    ends = {v.name for v in graph.live_roots()} | {r.var.name for r in graph.state}
    for name, at in made.items():
        read = last_read.get(name, at)
        assert read > at or name in extra, f"{name} is computed and never read"
        if name in ends:
            continue
        assert name in freed_at, f"{name} is never freed"
        assert freed_at[name] == read + 1, f"{name} outlives its last read"


def test_one_line_per_equation_with_the_users_line_and_kernels_in_the_module():
    _, _, fn = _train({})
    code, graph = fn.code, fn.graph
    body = _main_body(code, "step")
    calls = [s for s in body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)]
    assert len(calls) == len(graph.eqns)
    lines = code.splitlines()
    for stmt in calls:
        assert "helpers.py:" in lines[stmt.lineno - 1]  # (where the step is written)
    kernels = [line for line in lines if line.startswith("def fused_")]
    assert kernels, "the small model has elementwise chains to fuse"
    assert "out=" in code
    filename = fn.last.generated.fn.__code__.co_filename
    first = lines.index(kernels[0]) + 1
    assert linecache.getline(filename, first) == kernels[0] + "\n"


@pytest.mark.parametrize("off", [(), ("simplify",), ("fuse",), ("memory",), ("fuse", "memory"),
                                 tuple(jit.PASSES)])
def test_every_pass_keeps_eagers_numbers(off):
    eager_losses, eager_params, _ = _train(None)
    losses, params, fn = _train({name: False for name in off})
    for a, b in zip(losses + params, eager_losses + eager_params):
        np.testing.assert_array_equal(a, b)
    if "fuse" in off:
        assert "def fused_" not in fn.code
    if "memory" in off:
        assert "out=" not in fn.code.split("def step(")[1]


def test_a_constant_output_is_a_new_array_at_every_call():
    fast = jit.compile(lambda x: (x * 2, ember.tensor([1.0, 2.0]) * 3))  # folded: a constant
    with ember.no_grad():
        for _ in range(3):
            _, c = fast(ember.ones(2))
            np.testing.assert_array_equal(c.numpy(), [3.0, 6.0])
            c.mul_(10)  # the caller's own result


def test_a_checked_index_argument_is_not_written_back():
    """``index_check`` passes its index through unchanged: no write to the argument."""
    step = jit.compile(lambda x, i: ember.gather(x, 1, i))
    x, i = ember.randn(3, 4), ember.tensor([[0], [3], [2]])
    np.testing.assert_array_equal(step(x, i).numpy(), ember.gather(x, 1, i).numpy())
    assert step.graph.arg_writes == []
    with pytest.raises(ember.errors.IndexOutOfRange, match="gather"):
        step(x, ember.tensor([[0], [4], [2]]))


def test_a_kernels_dense_layout_test_is_numpys_contiguity_of_its_sorted_axes():
    # (remembered per shape and strides: every layout of a few shapes, views and slices)
    import itertools

    from ember.jit.kernels import _dense_layout

    def expected(*arrays):
        first = arrays[0]
        if all(a.flags.c_contiguous for a in arrays):
            return first.strides
        if any(a.strides != first.strides for a in arrays[1:]):
            return None
        order = sorted(range(first.ndim), key=lambda d: -first.strides[d])
        return first.strides if first.transpose(order).flags.c_contiguous else None

    for shape in [(1, 3, 4, 5), (2, 1, 4, 1), (3, 4), (1, 1, 1), (0, 3, 2), (4,)]:
        for dtype in (np.float32, np.float64):
            base = np.zeros(shape, dtype)
            for perm in itertools.permutations(range(len(shape))):
                a = np.ascontiguousarray(base.transpose(perm)).transpose(np.argsort(perm))
                views = [a, a[..., ::2], a[::-1], a.astype(np.float16)]
                for v in views:
                    assert _dense_layout(v) == expected(v), (shape, perm, v.strides)
                    assert _dense_layout(v, a) == expected(v, a)


def test_a_function_named_like_a_name_of_the_generated_code():
    """A function named ``c1`` (a constant's name in the generated code) or ``xp`` (the array
    module there) compiles: its def no longer replaces that global (NameError at each call)."""
    def xp(x):
        return x + 1

    def c1(x):
        return x * ember.tensor([1.0, 2.0])

    def c2(x):  # (c2 names the constant the trace makes here)
        b = ember.ones(2)
        b.mul_(2.0)
        return x + b

    x = ember.tensor([1.0, 3.0])
    for f in (xp, c1, c2):
        g = jit.compile(f)
        for _ in range(3):
            np.testing.assert_allclose(g(x).numpy(), f(x).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_real_reciprocal_stays_in_the_fused_kernel(dtype):
    """``(x.reciprocal() + 1) * x`` compiles to one fused kernel with eager's numbers: since
    Reciprocal has its own forward (for complex), the emitter table takes it by name
    (4d2a09fe); without it the graph is ``reciprocal`` then ``fused_add_mul``."""
    fast = jit.compile(lambda x: (x.reciprocal() + 1) * x)
    x = ember.tensor(np.linspace(0.5, 3.0, 7)).to(getattr(ember, dtype))
    fast(x)
    got = fast(x)
    assert [eqn.prim.name for eqn in fast.graph.eqns] == ["fused_reciprocal_add_mul"], \
        str(fast.graph)
    np.testing.assert_array_equal(got.float().numpy(), ((x.reciprocal() + 1) * x).float().numpy())
