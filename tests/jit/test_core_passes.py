"""Dead code, common subexpressions, constant folding, liveness, hoisting and packing on
hand-built graphs."""

from __future__ import annotations

import numpy as np

import ember
from ember.jit.codegen import generate
from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.passes import optimize
from ember.jit.passes.cse import eliminate_common_subexpressions
from ember.jit.passes.dce import eliminate_dead_code
from ember.jit.passes.fold import fold_constants
from ember.jit.passes.liveness import last_uses
from ember.ops.primitive import PRIMITIVES

F32 = ember.float32
P = PRIMITIVES


class Builder:
    """A tiny graph-building helper: ``b.eqn("mul", a, c)`` appends and returns the output."""

    def __init__(self):
        self.g = Graph("g")
        self.n = 0

    def var(self, shape=(3,), kind="eqn"):
        self.n += 1
        return Var(self.n, shape, F32, kind)

    def input(self, shape=(3,)):
        v = self.var(shape, "input")
        self.g.inputs.append(v)
        return v

    def const(self, value):
        a = np.asarray(value, dtype=np.float32)
        v = self.var(a.shape, "const")
        self.g.consts[v] = a
        return v

    def eqn(self, name, *ins, out_shape=(3,), **params):
        out = self.var(out_shape)
        self.g.eqns.append(Eqn(P[name], list(ins), params, [out]))
        return out


def run(g, *arrays):
    return generate(g, np, ember.device("cpu")).fn(*arrays)


def test_dce_drops_unread_equations_but_keeps_effects():
    b = Builder()
    x = b.input()
    y = b.eqn("exp", x)
    b.eqn("neg", x)  # never read
    seen = []
    effect = Eqn(Effect("log", lambda a: seen.append(1) or [a]), [x], {}, [b.var()])
    b.g.eqns.append(effect)
    b.g.outputs = [y]
    g = eliminate_dead_code(b.g)
    assert [e.prim.name for e in g.eqns] == ["exp", "log"]
    run(g, np.ones(3, np.float32))
    assert seen == [1]


def test_cse_merges_equal_computations_but_never_random_draws():
    b = Builder()
    x = b.input()
    a1, a2 = b.eqn("exp", x), b.eqn("exp", x)
    s = b.eqn("add", a1, a2)
    p = b.const(0.5)
    d1 = b.eqn("bernoulli", p, out_shape=(), generator=None)
    d2 = b.eqn("bernoulli", p, out_shape=(), generator=None)
    b.g.outputs = [s, d1, d2]
    g = eliminate_common_subexpressions(b.g)
    assert [e.prim.name for e in g.eqns] == ["exp", "add", "bernoulli", "bernoulli"]
    assert g.eqns[1].inputs == [a1, a1]
    out = run(g, np.full(3, 2.0, np.float32))
    np.testing.assert_allclose(out[0], 2 * np.exp(2.0), rtol=1e-6)


def test_fold_computes_constant_equations_and_keeps_big_broadcasts():
    b = Builder()
    x = b.input((1000, 1000))
    two, three = b.const(2.0), b.const(3.0)
    six = b.eqn("mul", two, three, out_shape=())
    big = b.eqn("expand", two, out_shape=(1000, 1000), shape=(1000, 1000))  # 4 MB from 4 bytes
    y = b.eqn("mul", x, six, out_shape=(1000, 1000))
    z = b.eqn("add", y, big, out_shape=(1000, 1000))
    b.g.outputs = [z]
    g = eliminate_dead_code(fold_constants(b.g))
    assert [e.prim.name for e in g.eqns] == ["expand", "mul", "add"]
    assert six.kind == "const" and float(g.consts[six]) == 6.0
    out = run(g, np.ones((1000, 1000), np.float32))
    assert out[0][0, 0] == 8.0


def test_liveness_frees_each_temporary_after_its_last_read_only():
    b = Builder()
    x = b.input()
    c = b.const(1.0)
    t1 = b.eqn("exp", x)  # x's last read
    t2 = b.eqn("add", t1, c)
    t3 = b.eqn("mul", t2, t1)
    b.g.outputs = [t3]
    dies = last_uses(b.g)
    assert {i: set(vs) for i, vs in dies.items()} == {0: {x}, 2: {t1, t2}}  # not c, not t3


def test_optimize_keeps_the_numbers():
    b = Builder()
    x = b.input()
    e1, e2 = b.eqn("exp", x), b.eqn("exp", x)
    y = b.eqn("mul", e1, e2)
    b.eqn("neg", y)
    b.g.outputs = [y]
    arr = np.linspace(0, 1, 3, dtype=np.float32)
    before = run(b.g, arr)[0]
    g, frees = optimize(b.g, {})
    assert len(g.eqns) == 2
    after = generate(g, np, ember.device("cpu"), frees).fn(arr)[0]
    np.testing.assert_allclose(after, before, rtol=1e-7)


def test_hoist_moves_parameter_only_work_first_and_caches_it():
    from ember.jit.ir import StateRef
    from ember.jit.passes.hoist import hoist_state_only

    b = Builder()
    x = b.input((2, 3))
    w = b.var((4, 3), "state")
    weight = ember.randn(4, 3, requires_grad=True)
    b.g.state.append(StateRef(w, weight, "w"))
    h = b.eqn("exp", x, out_shape=(2, 3))
    wt = b.eqn("permute", w, out_shape=(3, 4), dims=(1, 0))
    y = b.eqn("matmul", h, wt, out_shape=(2, 4), compute=None)
    b.g.outputs = [y]
    g = hoist_state_only(b.g)
    assert [e.prim.name for e in g.eqns] == ["permute", "exp", "matmul"]
    assert g.hoisted == 1 and g.cached == [wt]
    fn = generate(g, np, ember.device("cpu")).fn
    a = np.ones((2, 3), np.float32)
    first = fn(a)[0]
    weight._data *= 2
    weight._vc.value += 1
    np.testing.assert_allclose(fn(a)[0], 2 * first, rtol=1e-6)


def _conv_graph(requires_grad=True):
    """x (1, 2, 5, 5) through two 3×3 convs sharing one parameter weight w (2, 2, 3, 3)."""
    from ember.jit.ir import StateRef

    b = Builder()
    x = b.input((1, 2, 5, 5))
    w = b.var((2, 2, 3, 3), "state")
    weight = ember.randn(2, 2, 3, 3, requires_grad=requires_grad)
    b.g.state.append(StateRef(w, weight, "w"))
    geometry = dict(dilation=(1, 1), padding=((1, 1), (1, 1)), stride=(1, 1), compute=None)
    h = b.eqn("conv", x, w, out_shape=(1, 2, 5, 5), **geometry)
    y = b.eqn("conv", h, w, out_shape=(1, 2, 5, 5), **geometry)
    b.g.outputs = [y]
    return b.g, w, weight


def test_pack_lays_a_conv_weight_out_once_for_its_gemm_and_hoisting_caches_it():
    from ember.jit.passes.hoist import hoist_state_only
    from ember.jit.passes.pack import pack_conv_weights

    g, w, weight = _conv_graph()
    a = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)
    before = run(g, a)[0]
    g = hoist_state_only(pack_conv_weights(g))
    assert [e.prim.name for e in g.eqns] == ["permute", "copy", "permute", "conv", "conv"]
    packed = g.eqns[2].outputs[0]
    assert g.eqns[0].inputs == [w] and packed.shape == w.shape  # the same tensor, logically
    assert [e.inputs[1] for e in g.eqns[3:]] == [packed, packed]  # one copy for both convs
    assert g.hoisted == 3 and g.cached == [packed]
    fn = generate(g, np, ember.device("cpu")).fn
    np.testing.assert_allclose(fn(a)[0], before, rtol=1e-6)
    (cached,) = fn.__globals__["_cached"].held[2]
    assert cached.transpose(2, 3, 1, 0).flags.c_contiguous  # (3, 3, Cin, Cout) in memory
    weight._data *= 2  # an update the cache sees: the copy is made again
    weight._vc.value += 1
    np.testing.assert_allclose(fn(a)[0], 4 * before, rtol=1e-6)
    assert [e.prim.name for e in optimize(g, {})[0].eqns].count("copy") == 1  # packed once


def test_pack_leaves_training_graphs_and_data_weights_alone():
    from ember.jit.passes.pack import pack_conv_weights

    g, w, weight = _conv_graph()
    g.grads.append((weight, None))  # a training step (it sets .grad)
    assert [e.prim.name for e in pack_conv_weights(g).eqns] == ["conv", "conv"]
    g, _, _ = _conv_graph(requires_grad=False)  # data the function reads: an input in spirit
    assert [e.prim.name for e in pack_conv_weights(g).eqns] == ["conv", "conv"]


def test_cse_renames_a_merged_value_written_into_an_argument():
    def double_in_place(x):  # x.mul_(2) repeats x * 2: merged, the write must follow it
        y = x * 2
        x.mul_(2)
        return y

    fast = ember.jit.compile(double_in_place)
    for _ in range(2):  # (the first call runs while tracing; the second runs the code)
        x = ember.ones(3)
        np.testing.assert_array_equal(fast(x).numpy(), [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(x.numpy(), [2.0, 2.0, 2.0])
