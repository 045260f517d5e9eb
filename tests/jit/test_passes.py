"""Simplification, elementwise fusion and memory planning on hand-built graphs: each pass's
structure, and the same numbers (bit for bit) as the graph before it."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import ember
from ember.jit.codegen import generate
from ember.jit.ir import Effect, Eqn, Graph, StateRef, Var
from ember.jit.kernels import EMITTERS, KERNEL_GLOBALS, Kernel
from ember.jit.passes import last_uses
from ember.jit.passes.dce import eliminate_dead_code
from ember.jit.passes.epilogue import fuse_epilogues
from ember.jit.passes.fuse import fuse_elementwise
from ember.jit.passes.join import join_in_place
from ember.jit.passes.layout import permute_products
from ember.jit.passes.memory import plan_memory
from ember.jit.passes.simplify import simplify
from ember.ops.primitive import PRIMITIVES, TensorSpec

CPU = ember.device("cpu")


class Graphs:
    """Builds a graph by hand; output specs come from each primitive's infer rule."""

    def __init__(self, dtype=ember.float32):
        self.g = Graph("g")
        self.ids = iter(range(1, 10_000))
        self.dtype = dtype

    def _var(self, shape, kind, dtype=None):
        return Var(next(self.ids), shape, dtype or self.dtype, kind)

    def input(self, *shape, dtype=None):
        v = self._var(shape, "input", dtype)
        self.g.inputs.append(v)
        return v

    def const(self, value, dtype=None):
        dtype = dtype or self.dtype
        array = np.asarray(value, dtype=dtype.np)
        v = self._var(array.shape, "const", dtype)
        self.g.consts[v] = array
        return v

    def state(self, tensor):
        v = self._var(tuple(tensor.shape), "state", tensor.dtype)
        self.g.state.append(StateRef(v, tensor, "w"))
        return v

    def __call__(self, name, *ins, **params):
        prim = PRIMITIVES[name]
        spec = prim.infer(*(TensorSpec(v.shape, v.dtype) for v in ins), **params)
        out = self._var(spec.shape, "eqn", spec.dtype)
        self.g.eqns.append(Eqn(prim, list(ins), params, [out]))
        return out

    def returns(self, *outs):
        self.g.outputs = list(outs)
        return self.g


def run(g, *arrays, frees=None):
    return generate(g, np, CPU, frees).fn(*arrays)


def names(g):
    return [e.prim.name for e in g.eqns]


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def same(before, after):
    for a, b in zip(before, after):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(a), np.signbit(b))  # (zeros', NaNs')


def check(g, pass_, *arrays):
    """Runs ``pass_`` (and DCE), checks the numbers are unchanged; returns the new graph."""
    before = run(g, *(a.copy() for a in arrays))
    g = eliminate_dead_code(pass_(g))
    after = run(g, *(a.copy() for a in arrays), frees=last_uses(g))
    same(before, after)
    return g


# -- simplify ----------------------------------------------------------------------------------
def test_an_expand_feeding_a_broadcasting_op_is_not_materialised():
    b = Graphs()
    x, z = b.input(4, 1), b.input(4, 3)
    y = b("mul", b("expand", x, shape=(4, 3)), z)
    g = check(b.returns(y), simplify, rand(4, 1), rand(4, 3, seed=1))
    assert names(g) == ["mul"] and g.eqns[0].inputs == [x, z]


def test_an_expand_that_fixes_the_result_shape_stays():
    b = Graphs()
    x, s = b.input(3), b.input(3)
    y = b("add", b("expand", x, shape=(2, 3)), s)
    g = check(b.returns(y), simplify, rand(3), rand(3, seed=1))
    assert names(g) == ["expand", "add"]


def test_sum_to_of_expand_is_dropped_only_when_nothing_is_repeated():
    b = Graphs()
    x = b("exp", b.input(3))
    once = b("sum_to", b("expand", x, shape=(1, 3)), shape=(3,))
    twice = b("sum_to", b("expand", x, shape=(2, 3)), shape=(3,))  # 2·x, not x
    g = check(b.returns(b("add", once, twice)), simplify, rand(3))
    assert names(g) == ["exp", "expand", "sum_to", "add"]


def test_shape_chains_collapse():
    b = Graphs()
    x = b.input(2, 3, 4)
    r = b("reshape", b("reshape", x, shape=(6, 4)), shape=(4, 6))
    back = b("permute", b("permute", x, dims=(2, 0, 1)), dims=(1, 2, 0))  # identity
    twice = b("permute", b("permute", x, dims=(1, 0, 2)), dims=(2, 1, 0))
    y = b("add", b("reshape", back, shape=(4, 6)), r)
    g = check(b.returns(y, twice), simplify, rand(2, 3, 4))
    assert sorted(names(g)) == ["add", "permute", "reshape", "reshape"]
    assert all(e.inputs == [x] for e in g.eqns[:-1])
    assert made_by(g, twice).params["dims"] == (2, 0, 1)


def test_neutral_operations_and_double_negation_go():
    b = Graphs()
    x = b.input(2, 3)
    t = b("exp", x)
    t = b("mul", b.const(1.0), t)
    t = b("add", t, b.const(np.zeros(3)))
    t = b("neg", b("neg", t))
    t = b("cast", t, dtype=ember.float32)
    g = check(b.returns(b("sqrt", t)), simplify, rand(2, 3))
    assert names(g) == ["exp", "sqrt"]


def test_a_neutral_op_that_widens_or_is_seen_outside_stays():
    b = Graphs()
    x = b.input(3)
    wide = b("mul", b("exp", x), b.const(np.ones((2, 3))))  # the constant sets the shape
    seen = b("mul", b("exp", x), b.const(1.0))  # an output: a fresh array, as eager's
    on_input = b("sqrt", b("mul", x, b.const(1.0)))  # would alias the caller's input
    g = check(b.returns(wide, seen, on_input), simplify, rand(3))
    assert names(g).count("mul") == 3


def test_a_copy_before_a_reshape_goes_unless_it_protects_outside_memory():
    b = Graphs()
    x = b.input(2, 3)
    inner = b("reshape", b("copy", b("permute", b("exp", x), dims=(1, 0))), shape=(6,))
    outside = b("reshape", b("copy", b("permute", x, dims=(1, 0))), shape=(6,))
    g = check(b.returns(b("add", inner, outside)), simplify, rand(2, 3))
    assert names(g).count("copy") == 1
    assert made_by(g, g.eqns[-1].inputs[1]).inputs[0].kind == "eqn"  # the input's copy stays


def made_by(g, var):
    return next(e for e in g.eqns if var in e.outputs)


def scatter(b, zero, value, dim, start, stop, mode="set"):
    """``value`` put into ``zero`` at ``start:stop`` of ``dim`` (a Slice vjp's equation)."""
    basic = tuple((None, None, None) if d != dim else (start, stop, 1) for d in range(dim + 1))
    return b("index_put", zero, value, basic=basic, dims=(), mode=mode)


def test_slabs_scattered_into_zeros_that_tile_a_dimension_become_one_cat():
    b = Graphs()
    q, k, v = b.input(2, 3, 4), b.input(2, 3, 4), b.input(2, 3, 4)
    zero = b("expand", b.const(0.0), shape=(2, 3, 12))
    parts = [scatter(b, zero, v, 2, 8, 12), scatter(b, zero, q, 2, 0, 4, mode="add"),
             scatter(b, zero, k, 2, 4, 8)]
    total = b("add", b("add", parts[0], parts[1]), parts[2])
    g = check(b.returns(b("exp", total)), simplify, rand(2, 3, 4), rand(2, 3, 4, seed=1),
              rand(2, 3, 4, seed=2))
    assert names(g) == ["cat", "exp"]
    assert g.eqns[0].inputs == [q, k, v] and g.eqns[0].params == {"dim": 2}


def test_slabs_are_not_joined_across_an_effect_that_may_write_their_values():
    b = Graphs()
    w = ember.ones(2, 3)
    state, y = b.state(w), b.input(2, 3)
    zero = b("expand", b.const(0.0), shape=(4, 3))
    first = scatter(b, zero, state, 0, 0, 2)  # reads the parameter before the step

    def bump(a):
        a += 1  # writes the parameter in place, as an optimizer step does
        return [a]

    b.g.eqns.append(Eqn(Effect("bump", bump), [state], {}, [Var(999, (2, 3), ember.float32,
                                                                "eqn")]))
    total = b("add", first, scatter(b, zero, y, 0, 2, 4))
    g = simplify(b.returns(total))
    assert "cat" not in names(g)
    np.testing.assert_array_equal(run(g, rand(2, 3))[0][:2], np.ones((2, 3)))


def test_slabs_that_overlap_leave_a_gap_or_sit_on_nonzeros_stay_sums():
    b = Graphs()
    x, y, z, base = b.input(3, 4), b.input(3, 4), b.input(3, 3), b.input(3, 8)
    zero = b("expand", b.const(0.0), shape=(3, 8))
    overlap = b("add", scatter(b, zero, x, 1, 0, 4), scatter(b, zero, y, 1, 3, 7))
    twice = b("add", scatter(b, zero, x, 1, 0, 4), scatter(b, zero, y, 1, 0, 4))
    gap = b("add", scatter(b, zero, x, 1, 0, 4), scatter(b, zero, z, 1, 5, 8))
    nonzero = b("add", scatter(b, base, x, 1, 0, 4), scatter(b, zero, y, 1, 4, 8))
    tiled = b("add", scatter(b, zero, x, 1, 0, 4),  # a zero constant of either form
              scatter(b, b.const(np.zeros((3, 8))), y, 1, 4, 8))
    g = check(b.returns(overlap, twice, gap, nonzero, tiled), simplify, rand(3, 4),
              rand(3, 4, seed=1), rand(3, 3, seed=2), rand(3, 8, seed=3))
    assert names(g).count("add") == 4 and names(g).count("cat") == 1
    assert made_by(g, g.outputs[4]).prim.name == "cat"


# -- join ------------------------------------------------------------------------------------
def heads(b, x):
    """``(B, H, T, D)`` -> ``(B, T, H·D)``: a permute, then a reshape that copies."""
    n, h, t, d = x.shape
    return b("reshape", b("permute", x, dims=(0, 2, 1, 3)), shape=(n, t, h * d))


def test_reshaped_operands_of_a_cat_are_copied_straight_into_its_result():
    b = Graphs()
    dq, dk, dv = b.input(2, 3, 4, 5), b.input(2, 3, 5, 4), b.input(2, 3, 4, 5)
    bias = b.input(2, 4, 6)
    dk_rows = b("permute", dk, dims=(0, 1, 3, 2))
    joined = b("cat", heads(b, dq), heads(b, dk_rows), bias, heads(b, dv), dim=2)
    g = check(b.returns(b("exp", joined)), join_in_place, rand(2, 3, 4, 5),
              rand(2, 3, 5, 4, seed=1), rand(2, 3, 4, 5, seed=2), rand(2, 4, 6, seed=3))
    assert names(g) == ["permute", "permute", "permute", "permute", "cat_into", "exp"]
    kernel = g.eqns[4].prim
    assert [e.prim.name for e in kernel.eqns] == ["reshape", "reshape", "reshape", "cat"]
    permuted = [e.inputs[0] for e in kernel.eqns[:3]]  # each reshape's input, copied
    assert g.eqns[4].inputs == [*permuted[:2], bias, permuted[2]]
    assert "out[:, :, 0:15].reshape((2, 4, 3, 5))" in kernel.source


@pytest.mark.parametrize("size", [5, 64])  # (64: the batch shared among the threads)
def test_permuted_products_of_a_cat_are_written_into_its_result_by_blas(size):
    b = Graphs()
    x, y, w = b.input(2, 3, size, 8), b.input(2, 3, 8, size), b.input(2, 3, size, 8)
    dq = b("matmul", x, b("matmul", y, w, compute=None), compute=None)  # (2, 3, size, 8)
    square = b("matmul", x, y, compute=None)
    dk = b("permute", b("matmul", y, square, compute=None), dims=(0, 1, 3, 2))  # last moves
    joined = b("cat", heads(b, dq), heads(b, dk), heads(b, w), dim=2)
    g = check(b.returns(joined), join_in_place, rand(2, 3, size, 8),
              rand(2, 3, 8, size, seed=1), rand(2, 3, size, 8, seed=2))
    kernel = g.eqns[-1].prim
    assert [e.prim.name for e in kernel.eqns] == ["matmul", "permute", "reshape", "reshape",
                                                  "reshape", "cat"]
    in_place = [line for line in kernel.source.splitlines() if "out=out[" in line]
    assert len(in_place) == 1 and "_gemm(" in in_place[0]  # (eager's calls also call _gemm)
    assert kernel.source.count("xp.copyto(") == 2
    assert names(g) == ["matmul", "matmul", "matmul", "permute", "permute", "permute",
                        "cat_into"]


def test_a_cat_keeps_reshapes_read_elsewhere_unviewable_or_behind_an_effect():
    b = Graphs()
    x, y, z = b.input(2, 6), b.input(4, 3), b.input(2, 2, 3)
    rows = b("reshape", x, shape=(4, 3))  # its slice (4, 3) of (4, 6) is no (2, 6) view
    twice = b("reshape", z, shape=(4, 3))
    w = ember.ones(4, 3)
    state = b.state(w)
    behind = b("reshape", b("permute", state, dims=(1, 0)), shape=(4, 3))

    def bump(a):
        a += 1  # writes the parameter in place, as an optimizer step does
        return [a]

    b.g.eqns.append(Eqn(Effect("bump", bump), [state], {}, [Var(999, (4, 3), ember.float32,
                                                                "eqn")]))
    out = b("cat", rows, y, twice, behind, dim=1)
    g = join_in_place(b.returns(out, twice))
    assert names(g)[-1] == "cat" and names(g).count("reshape") == 3
    x_, y_, z_ = rand(2, 6), rand(4, 3, seed=1), rand(2, 2, 3, seed=2)
    expected = np.concatenate([x_.reshape(4, 3), y_, z_.reshape(4, 3), np.ones((4, 3))], 1)
    np.testing.assert_array_equal(run(g, x_, y_, z_)[0], expected)  # read before the bump


@pytest.mark.parametrize("made_by", ["matmul", "exp"])
def test_operands_a_reshape_views_out_of_order_keep_the_cat_in_eager_layout(made_by):
    b = Graphs()
    x, y, w = b.input(8, 3, 64, 16), b.input(8, 3, 16, 64), b.input(8, 3, 16, 64)

    def viewed(other):  # eager views the permuted value (its cat is C-ordered, as torch's)
        made = b("matmul", x, other, compute=None) if made_by == "matmul" else \
            b("exp", b("matmul", x, other, compute=None))
        return b("reshape", b("permute", made, dims=(1, 0, 2, 3)), shape=(3, 8, 4096))
    joined = b("cat", viewed(y), viewed(w), dim=2)
    total = b("sum", joined, dims=(0, 1, 2), keepdim=False)  # adds in memory order
    check(b.returns(total, joined), join_in_place, rand(8, 3, 64, 16),
          rand(8, 3, 16, 64, seed=1), rand(8, 3, 16, 64, seed=2))


class _CupyReshape(np.ndarray):
    """An array whose ``reshape`` takes CuPy's arguments: no ``copy=``."""

    def reshape(self, *shape, order="C"):
        return super().reshape(*shape, order=order)


@pytest.mark.parametrize("layout", ["C", "eager's"])
def test_a_joining_kernel_asks_reshape_only_what_cupy_answers(layout):
    b = Graphs()
    x, y = b.input(8, 3, 4, 16), b.input(8, 3, 4, 16)
    dims, shape = ((0, 2, 1, 3), (8, 12, 16)) if layout == "C" else ((1, 0, 2, 3), (3, 8, 64))
    pieces = [b("reshape", b("permute", b("exp", v), dims=dims), shape=shape) for v in (x, y)]
    joined = b("cat", *pieces, dim=2)  # (the reshapes copy, or view as eager's cat follows)
    g = join_in_place(b.returns(joined))
    assert "cat_into" in names(g)
    arrays = rand(8, 3, 4, 16), rand(8, 3, 4, 16, seed=1)
    expected, = run(g, *arrays)
    got, = run(g, *(a.view(_CupyReshape) for a in arrays))
    np.testing.assert_array_equal(got, expected)
    assert got.flags.c_contiguous and expected.flags.c_contiguous  # (eager's cat: C, as torch's)


def test_a_join_writes_into_a_dead_buffer_but_never_over_its_operand():
    b = Graphs()
    x, y, w = b.input(2, 3, 4, 5), b.input(2, 4, 30), b.input(30, 15)
    t = b("exp", y)  # dies before the cat: its buffer may be given
    s = b("matmul", t, w, compute=None)
    joined = b("cat", heads(b, x), s, dim=2)
    g = join_in_place(b.returns(b("exp", joined)))
    assert "cat_into" in names(g) and not g.eqns[names(g).index("cat_into")].prim.fused
    g = check(g, plan_memory, rand(2, 3, 4, 5), rand(2, 4, 30, seed=1), rand(30, 15, seed=2))
    cat = g.eqns[names(g).index("cat_into")]
    assert cat.out is t


def linear(b, x, n, dtype=None, bias_first=False, relu=True):
    """A Linear layer's equations as a trace records them: ``relu(x @ w.T + bias)``."""
    w, bias = b.input(n, x.shape[-1], dtype=dtype), b.input(n, dtype=dtype)
    product = b("matmul", x, b("permute", w, dims=(1, 0)), compute=None)
    total = b("add", *((bias, product) if bias_first else (product, bias)))
    return (b("relu", total) if relu else total), product


@pytest.mark.usefixtures("threads_restored")
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_a_one_row_product_takes_its_bias_and_relu_into_its_kernel(dtype):
    ember.set_num_threads(2)  # (numba's threads may run the first layer)
    b = Graphs(dtype)
    x = b.input(1, 784)
    hidden, _ = linear(b, x, 1024)
    out, _ = linear(b, b("reshape", hidden, shape=(1024,)), 10, bias_first=True, relu=False)
    g = fuse_elementwise(b.returns(out))
    arrays = [rand(1, 784, dtype=dtype.np), rand(1024, 784, seed=1, dtype=dtype.np),
              rand(1024, seed=2, dtype=dtype.np), rand(10, 1024, seed=3, dtype=dtype.np),
              rand(10, seed=4, dtype=dtype.np)]
    g = check(g, fuse_epilogues, *arrays)  # (the same values, bit for bit)
    assert names(g) == ["permute", "linear_relu", "reshape", "permute", "linear"]
    kernel = g.eqns[1].prim
    assert [e.prim.name for e in kernel.eqns] == ["matmul", "add", "relu"]
    assert "_one_row(xp, a, b, bias, True, out=out)" in kernel.source


def test_products_of_several_rows_read_twice_or_with_other_addends_keep_their_kernels():
    b = Graphs()
    rows, _ = linear(b, b.input(2, 64), 32)  # two rows: BLAS's GEMM
    shared, product = linear(b, b.input(1, 64), 32)  # (the product returned too)
    widened = b("add", b("matmul", b.input(1, 64), b.input(64, 32), compute=None),
                b.input(4, 1))  # (4, 32): not one value per column
    g = fuse_epilogues(fuse_elementwise(b.returns(rows, shared, product, widened)))
    assert "linear_relu" not in names(g) and "linear" not in names(g), str(names(g))
    b = Graphs()
    row = b("add", b("matmul", b.input(1, 64), b.input(64, 32), compute=None), b.input(1, 32))
    assert names(fuse_epilogues(b.returns(row))) == ["linear"]  # (a row of values: per column)


def test_a_product_is_not_moved_past_an_effect():
    b = Graphs()
    w = ember.ones(32, 64)
    state = b.state(w)
    product = b("matmul", b.input(1, 64), b("permute", state, dims=(1, 0)), compute=None)

    def bump(a):
        a += 1  # writes the parameter in place, as an optimizer step does
        return [a]

    b.g.eqns.append(Eqn(Effect("bump", bump), [state], {}, [Var(999, (32, 64), ember.float32,
                                                                "eqn")]))
    g = fuse_epilogues(b.returns(b("add", product, b.input(32))))
    assert names(g) == ["permute", "matmul", "bump", "add"]


def test_a_permuted_product_a_reshape_would_copy_is_made_contiguous_by_blas():
    b = Graphs()
    attn, v = b.input(2, 3, 64, 64), b.input(2, 3, 64, 8)
    heads_out = heads(b, b("matmul", attn, v, compute=None))  # (2, 64, 24): a copy, before
    moved = b("permute", b("matmul", attn, v, compute=None), dims=(0, 1, 3, 2))
    kept = b("reshape", moved, shape=(2, 3, 512))  # the last dimension moves: stays
    g = check(b.returns(b("exp", heads_out), kept), permute_products, rand(2, 3, 64, 64),
              rand(2, 3, 64, 8, seed=1))
    assert names(g) == ["matmul_permuted", "reshape", "matmul", "permute", "reshape", "exp"]
    assert [e.prim.name for e in g.eqns[0].prim.eqns] == ["matmul", "permute"]
    product = g.eqns[0].prim.forward(np, rand(2, 3, 64, 64), rand(2, 3, 64, 8))
    assert product.shape == (2, 64, 3, 8) and product.flags.c_contiguous  # the reshape views it


def test_a_permuted_product_a_reshape_views_keeps_eager_layout():
    b = Graphs()
    x, y = b.input(8, 3, 64, 16), b.input(8, 3, 16, 64)
    viewed = b("reshape", b("permute", b("matmul", x, y, compute=None), dims=(1, 0, 2, 3)),
               shape=(3, 8, 4096))  # eager views the permuted product: no copy to save
    total = b("sum", viewed, dims=(0, 1, 2), keepdim=False)  # adds in memory order
    g = check(b.returns(total), permute_products, rand(8, 3, 64, 16), rand(8, 3, 16, 64, seed=1))
    assert names(g) == ["matmul", "permute", "reshape", "sum"]


def _k_gradient(b, q, ds):
    """Attention's ``k`` gradient as the backward traces it: ``qᵀ @ dS`` (B, H, D, T),
    permuted to (B, T, H, D) and reshaped to (B, T, H·D)."""
    n, h, t, d = q.shape
    product = b("matmul", b("permute", q, dims=(0, 1, 3, 2)), ds, compute=None)
    return b("reshape", b("permute", product, dims=(0, 3, 1, 2)), shape=(n, t, h * d))


def test_a_product_permuted_rows_last_is_copied_into_the_join():
    """Attention's ``k`` gradient, ``qᵀ @ dS`` permuted rows last: BLAS would round ``dSᵀ @ q``
    otherwise than eager on some shapes, so the join copies eager's product."""
    b = Graphs()
    q, ds = b.input(2, 3, 16, 8), b.input(2, 3, 16, 16)
    dq = heads(b, b("matmul", ds, q, compute=None))
    joined = b("cat", dq, _k_gradient(b, q, ds), dim=2)
    g = check(b.returns(joined), join_in_place, rand(2, 3, 16, 8), rand(2, 3, 16, 16, seed=1))
    source = g.eqns[-1].prim.source
    assert "swapaxes" not in source and source.count("out=out[") == 1
    assert names(g)[:3] == ["permute", "matmul", "permute"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", [((64, 64), (64, 8)), ((16, 16), (16, 1)),
                                    ((4, 8, 16), (16, 2))])
def test_a_joined_product_permuted_rows_last_is_eagers_bit_for_bit(dtype, shapes):
    a, w = (ember.randn(*s, dtype=getattr(ember, dtype)) for s in shapes)
    y = ember.randn(5, dtype=getattr(ember, dtype))

    def joined(a, w, y):
        product = a @ w
        dims = (*range(product.ndim - 2), product.ndim - 1, product.ndim - 2)
        return ember.cat([product.permute(*dims).reshape(-1), y])

    with ember.no_grad():
        eager = joined(a, w, y)
        fast = ember.jit.compile(joined)
        fast(a, w, y)
        compiled = fast(a, w, y)
    np.testing.assert_array_equal(compiled.numpy(), eager.numpy())


def test_a_product_permuted_rows_last_outside_a_join_keeps_eagers_layout():
    x, w = ember.randn(2, 64, 64, 8), ember.randn(8, 4)

    def heads_rows_last(x, w):  # eager's reshape views the permuted product
        viewed = (x @ w).permute(0, 3, 1, 2).reshape(2, 4, 4096)
        return viewed, viewed.sum(-1)

    with ember.no_grad():
        eager = heads_rows_last(x, w)
        fast = ember.jit.compile(heads_rows_last)
        fast(x, w)
        compiled = fast(x, w)
    assert [t.stride() for t in compiled] == [t.stride() for t in eager]
    for c, e in zip(compiled, eager):
        np.testing.assert_array_equal(c.numpy(), e.numpy())


# -- fuse ------------------------------------------------------------------------------------
def test_an_elementwise_tree_becomes_one_kernel_writing_one_buffer():
    b = Graphs()
    x, w, s = b.input(8, 16), b.input(16), b.input(8, 1)
    t = b("mul", x, w)
    u = b("exp", b("neg", s))
    y = b("rsqrt", b("add", b("mul", t, u), b.const(2.0)))
    g = check(b.returns(y), fuse_elementwise, rand(8, 16), rand(16, seed=1), rand(8, 1, seed=2))
    assert len(g.eqns) == 1
    kernel = g.eqns[0].prim
    assert isinstance(kernel, Kernel) and g.eqns[0].inputs[:3] == [x, w, s]
    assert kernel.source.count("out=out") >= 4  # mul, mul, add, rsqrt write into out
    assert "xp.empty_like(x" in kernel.source.replace(x.name, "x")  # in x's layout


def test_a_value_with_two_readers_is_not_fused_away():
    b = Graphs()
    x = b.input(4)
    t = b("exp", x)
    y = b("add", b("mul", t, x), b("neg", t))
    g = check(b.returns(y), fuse_elementwise, rand(4))
    assert names(g)[0] == "exp" and len(g.eqns) == 2


def test_fusion_never_moves_a_read_past_an_effect():
    b = Graphs()
    w = ember.ones(3)
    v = b.state(w)
    t = b("neg", v)
    new = Var(999, (3,), ember.float32, "eqn")

    def bump(a):
        a += 1  # writes the parameter in place, as an optimizer step does
        return [a]

    b.g.eqns.append(Eqn(Effect("bump", bump), [v], {}, [new]))
    y = b("exp", t)
    g = fuse_elementwise(b.returns(y))
    assert names(g) == ["neg", "bump", "exp"]
    np.testing.assert_array_equal(run(g)[0], np.exp(-np.ones(3, np.float32)))


@pytest.mark.parametrize("dtype", [ember.float64, ember.float16, ember.bfloat16])
def test_fused_kernels_compute_in_each_dtype_as_eager(dtype):
    b = Graphs(dtype)
    x, y = b.input(5, 7), b.input(7)
    t = b("div", b("sub", b("tanh", x), y), b("add", b("abs", y), b.const(1.0, dtype)))
    np_type = dtype.np
    g = check(b.returns(b("relu", t)), fuse_elementwise, rand(5, 7, dtype=np_type),
              rand(7, dtype=np_type, seed=1))
    assert len(g.eqns) == 1


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("layout", ["c", "channels_last"])
def test_gelus_backward_is_one_pass_with_eagers_values(monkeypatch, dtype, layout):
    pytest.importorskip("numba")
    looped = []

    def spy(*args, _loop=KERNEL_GLOBALS["_loop"]):
        looped.append(_loop(*args))
        return looped[-1]
    monkeypatch.setitem(KERNEL_GLOBALS, "_loop", spy)
    b = Graphs(dtype)
    shape = (4, 16, 24, 32)
    x, v = b.input(*shape), b.input(*shape)
    y = b("mul", v, b("gelu_slope", b("gelu", x, approximate="none")))
    tanh = b("gelu", x, approximate="tanh")
    arrays = [rand(*shape, dtype=dtype.np, seed=k) * 3 for k in range(2)]
    if layout == "channels_last":
        arrays = [np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)
                  for a in arrays]
    g = check(b.returns(y, tanh), fuse_elementwise, *arrays)  # eager's values, bit for bit
    assert names(g) == ["fused_gelu_gelu_slope_mul", "gelu"]  # (the tanh form: not a step)
    assert looped == [dtype is ember.float32]  # float64: eager's NumPy fit, so NumPy's calls
    assert run(g, *arrays)[0].strides == arrays[0].strides  # eager's layout


def test_non_contiguous_operands_get_eagers_layout():
    b = Graphs()
    x = b.input(6, 4)
    g = fuse_elementwise(b.returns(b("exp", b("neg", x))))
    a = rand(4, 6).T  # Fortran order: eager's ufuncs keep it, and so must the kernel
    out = run(g, a)[0]
    assert out.flags.f_contiguous and not out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.exp(np.negative(a)))


def test_where_writes_in_place_whichever_operand_holds_the_buffer():
    b = Graphs()
    c, x = b.input(3, 4, dtype=ember.bool_), b.input(3, 4)
    first = b("where", c, b("exp", x), b.const(0.0))
    second = b("where", c, b.const(-1.0), b("neg", x))
    both = b("where", c, b("exp", x), b("neg", x))
    g = check(b.returns(first, second, both), fuse_elementwise,
              rand(3, 4) > 0, rand(3, 4, seed=1))
    assert all(isinstance(e.prim, Kernel) for e in g.eqns)


@pytest.mark.parametrize("name", sorted(EMITTERS))
def test_every_emitter_is_its_primitives_forward(name):
    prim = PRIMITIVES[name]
    for np_type in (np.float32, ml_dtypes.bfloat16):
        a = np.abs(rand(4, 3, dtype=np_type)) + np_type(0.5)  # inside every domain
        b = rand(3, dtype=np_type, seed=1)
        args = {"where": (rand(4, 3) > 0, a, b), "relu_grad": (a, a - np_type(1))}.get(name) or \
            ((a, b) if name in ("add", "sub", "mul", "div", "maximum", "minimum") else (a,))
        args = tuple(np.clip(v, -0.9, 0.9) if name in ("asin", "acos", "atanh") and
                     v.dtype != bool else v for v in args)
        if name == "acosh":
            args = (args[0] + np_type(1),)
        eager = prim.forward(np, *args, **({"approximate": "none"} if name == "gelu" else {}))
        names_ = [f"a{i}" for i in range(len(args))]
        into, alloc = EMITTERS[name](names_, "out", True), EMITTERS[name](names_, "r", False)
        scope = {"xp": np, **KERNEL_GLOBALS, **dict(zip(names_, args)),
                 "out": np.empty_like(eager)}
        exec("\n".join(into + alloc), scope)  # noqa: S102 - the emitted NumPy calls
        np.testing.assert_array_equal(scope["out"], eager)
        np.testing.assert_array_equal(scope["r"], eager)


# -- memory ----------------------------------------------------------------------------------
def test_a_dead_buffer_of_the_same_shape_is_written_again():
    b = Graphs()
    x, y = b.input(8, 8), b.input(8, 8)
    t = b("exp", x)
    m = b("matmul", t, y, compute=None)  # t dies here
    u = b("neg", m)  # m dies here: overwritten in place
    v = b("matmul", u, y, compute=None)  # can write into t's buffer
    g = check(b.returns(v), plan_memory, rand(8, 8), rand(8, 8, seed=1))
    outs = {e.outputs[0]: e.out for e in g.eqns}
    assert outs[u] is m and outs[v] is t
    assert names(g) == ["exp", "matmul", "neg_into", "matmul_into"]
    assert [e.prim.name for k in g.eqns[2:] for e in k.prim.eqns] == ["neg", "matmul"]
    code = generate(g, np, CPU, last_uses(g)).code
    assert f"neg_into(xp, {m.name}, out={m.name})" in code
    before, after = code.split(f"out={t.name})")  # freed after its reuse, not before
    freed = re.compile(rf"del .*\b{t.name}\b")
    assert not freed.search(before) and freed.search(after)


def test_an_operand_that_dies_with_an_elementwise_op_is_overwritten_in_place():
    b = Graphs()
    x, y = b.input(8, 8), b.input(8, 8)
    t = b("exp", x)
    u = b("mul", t, y)  # t dies here: the product goes into t's own buffer
    m = b("matmul", u, y, compute=None)  # BLAS never writes over its operands
    w = b("relu_grad", m, t2 := b("exp", y))  # both die here: m's buffer, the first
    g = check(b.returns(w, t2), plan_memory, rand(8, 8), rand(8, 8, seed=1))
    outs = {e.outputs[0]: e.out for e in g.eqns}
    assert outs[u] is t and outs[m] is None and outs[w] is m
    code = generate(g, np, CPU, last_uses(g)).code
    assert f"mul_into(xp, {t.name}, {y.name}, out={t.name})" in code


def test_softmax_grads_new_array_takes_the_next_elementwise_result():
    b = Graphs()
    v, x = b.input(4, 8), b.input(4, 8)
    y = b("softmax", x, dim=1)
    g = b("softmax_grad", v, y, dim=1)  # allocates: dies in the product, which writes there
    u = b("mul", g, x)
    planned = check(b.returns(u), plan_memory, rand(4, 8), rand(4, 8, seed=1))
    assert {e.outputs[0]: e.out for e in planned.eqns}[u] is g


def test_a_whole_view_of_a_dying_buffer_is_overwritten_in_place():
    b = Graphs()
    x, w, bias = b.input(6, 8), b.input(8, 10), b.input(10)
    m = b("matmul", x, w, compute=None)
    r = b("reshape", m, shape=(2, 3, 10))  # a linear layer's result, seen in 3-D
    y = b("add", r, bias)  # m's buffer dies here, seen whole through r: the sum goes there
    part = b("slice", b("exp", y), index=((0, 1, 1),))
    z = b("neg", part)  # exp's buffer dies here, but part sees only half of it
    grown = b("expand", b("exp", z), shape=(1, 1, 3, 10))  # all of it, but read-only
    w = b("neg", grown)
    g = check(b.returns(w), plan_memory, rand(6, 8), rand(8, 10, seed=1), rand(10, seed=2))
    outs = {e.outputs[0]: e.out for e in g.eqns}
    assert outs[y] is r and outs[z] is None and outs[w] is None
    code = generate(g, np, CPU, last_uses(g)).code
    assert f"add_into(xp, {r.name}, {bias.name}, out={r.name})" in code


def test_an_operand_read_after_the_kernel_writes_its_result_is_not_overwritten():
    b = Graphs()
    x = b.input(8, 8)
    t = b("matmul", x, x, compute=None)
    y = b("add", b("neg", b("sin", x)), t)  # fused: t is read by the last step only
    g = check(b.returns(y), fuse_elementwise, rand(8, 8))
    assert len(g.eqns) == 2
    g = check(g, plan_memory, rand(8, 8))
    assert all(e.out is not t for e in g.eqns)


def test_where_never_overwrites_the_branch_it_reads_after_copying_the_other():
    b = Graphs()
    c, x, y = b.input(8, 1, dtype=ember.bool_), b.input(8, 8), b.input(8, 8)
    t = b("matmul", x, y, compute=None)  # dies at the where, as its first branch
    g = check(b.returns(b("where", c, t, b("neg", y))), plan_memory,
              rand(8, 1) > 0, rand(8, 8), rand(8, 8, seed=1))
    assert all(e.out is not t for e in g.eqns)


def test_an_operand_seen_through_a_view_in_the_same_op_is_not_overwritten():
    b = Graphs()
    x = b.input(8, 8)
    t = b("matmul", x, x, compute=None)
    both = b("add", b("mul", t, b.const(2.0)), b("permute", t, dims=(1, 0)))
    g = check(b.returns(both), lambda g: plan_memory(fuse_elementwise(g)), rand(8, 8))
    assert all(e.out is not t for e in g.eqns)


def test_a_full_size_bool_mask_leaves_the_buffer_to_the_float_operands():
    b = Graphs()
    c, x, y = b.input(8, 8, dtype=ember.bool_), b.input(8, 8), b.input(8, 8)
    d = b("exp", x)
    t = b("matmul", d, y, compute=None)  # d's buffer is free from here
    r = b("where", c, t, y)  # the mask is its first operand
    g = check(b.returns(r), plan_memory, rand(8, 8) > 0, rand(8, 8), rand(8, 8, seed=1))
    assert g.eqns[-1].out is d


def test_memory_never_reuses_what_the_world_or_an_alias_still_sees():
    b = Graphs()
    x = b.input(4, 4)
    w = b.state(ember.ones(4, 4))
    e = b("exp", x)
    view = b("permute", e, dims=(1, 0))  # e stays visible through it
    seen = b("neg", x)  # a graph output
    grad = b("sqrt", b("abs", x))  # read by an effect
    b.g.eqns.append(Eqn(Effect("keep", lambda a: [a]), [grad], {}, [Var(999, (4, 4),
                                                                        ember.float32, "eqn")]))
    a1 = b("mul", w, b.const(2.0))  # state buffer: never reused
    a2 = b("add", a1, x)
    a3 = b("add", a2, view)
    a4 = b("exp", a3)
    g = check(b.returns(a4, seen), plan_memory, rand(4, 4))
    donors = {e_.out for e_ in g.eqns} - {None}
    assert not donors & {x, w, seen, grad, e}


def test_no_reuse_raises_the_static_peak():
    b = Graphs()
    x = b.input(256, 256)
    t = b("exp", x)
    s = b("sum", t, dims=(1,), keepdim=True)  # t dies: its buffer could wait for y ...
    big = b("neg", b("expand", s, shape=(4, 256, 256)))  # ... but the peak is here
    y = b("exp", b("sum", big, dims=(0,), keepdim=False))
    g = check(b.returns(y), plan_memory, rand(256, 256))
    assert all(e.out is None for e in g.eqns)


SLICE = ((PRIMITIVES["slice"], {"index": ((None, None, None), (1, None, None))}),)


def test_an_element_write_goes_into_its_base_where_the_base_dies_there():
    b = Graphs()
    x, v = b.input(3, 4), b.input(3, 3)
    first = b("view_scatter", b("exp", x), v, chain=SLICE)  # exp's buffer dies here
    twice = b("view_scatter", first, b("neg", v), chain=SLICE)  # and so does first's
    kept = b("sin", x)
    part = b("slice", kept, index=((None, None, None), (1, None, None)))
    copied = b("view_scatter", kept, v, chain=SLICE)  # part, a view of kept, is read after
    argument = b("view_scatter", x, v, chain=SLICE)  # an argument's buffer: never written
    shown = b("cos", x)
    escaping = b("view_scatter", shown, v, chain=SLICE)  # cos's buffer is returned too
    row = b("index_put", b("exp", x), b("sum", v, dims=(0,), keepdim=False),
            basic=((None, None, None), 1), dims=(), mode="set")  # (y[:, 1] = ...: setitem)
    outs = (b("add", twice, copied), b("neg", part), argument, shown, escaping, row)
    g = check(b.returns(*outs), plan_memory, rand(3, 4), rand(3, 3, seed=1))
    in_place = {e.outputs[0]: e.params.get("in_place", False) for e in g.eqns
                if getattr(e.prim, "writes_input", False)}
    assert in_place == {first: True, twice: True, copied: False, argument: False,
                        escaping: False, row: True}
