"""Causal products on hand-built attention graphs: which matmuls skip a quarter, the values
they give (eager's, to rounding) and the graphs they leave alone."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backend import gemm
from ember.jit.codegen import generate
from ember.jit.ir import Eqn, Graph, Var
from ember.jit.kernels import Kernel
from ember.jit.passes.causal import MIN_SIZE, skip_causal_quarters
from ember.jit.passes.fuse import fuse_elementwise
from ember.ops.primitive import PRIMITIVES, TensorSpec

T = MIN_SIZE
SWAP = (0, 1, 3, 2)


class Graphs:
    def __init__(self):
        self.g = Graph("g")
        self.ids = iter(range(1, 10_000))

    def var(self, shape, kind, dtype=ember.float32):
        return Var(next(self.ids), tuple(shape), dtype, kind)

    def input(self, *shape):
        v = self.var(shape, "input")
        self.g.inputs.append(v)
        return v

    def const(self, array):
        array = np.asarray(array)
        v = self.var(array.shape, "const", ember.bool if array.dtype == bool else ember.float32)
        self.g.consts[v] = array.astype(np.float32) if array.dtype != bool else array
        return v

    def __call__(self, name, *ins, **params):
        prim = PRIMITIVES[name]
        spec = prim.infer(*(TensorSpec(v.shape, v.dtype) for v in ins), **params)
        out = self.var(spec.shape, "eqn", spec.dtype)
        self.g.eqns.append(Eqn(prim, list(ins), params, [out]))
        return out


def attention(mask, size=T, escape_scores=False):
    """Causal attention's forward and backward, as the autodiff writes them; returns the
    graph and its inputs' arrays."""
    b = Graphs()
    q, k, v, dy = (b.input(2, 3, size, 8) for _ in range(4))
    m, zero, ninf, scale = b.const(mask), b.const(0.0), b.const(-np.inf), b.const(0.125)
    scores = b("matmul", q, b("permute", k, dims=SWAP), compute=None)
    attn = b("softmax", b("where", m, ninf, b("mul", scores, scale)), dim=3)
    y = b("matmul", attn, v, compute=None)
    dv = b("matmul", b("permute", attn, dims=SWAP), dy, compute=None)
    da = b("matmul", dy, b("permute", v, dims=SWAP), compute=None)
    ds = b("mul", b("where", m, zero, b("softmax_grad", da, attn, dim=3)), scale)
    dq = b("matmul", ds, k, compute=None)
    dkt = b("matmul", b("permute", q, dims=SWAP), ds, compute=None)
    b.g.outputs = [y, dv, dq, dkt] + ([scores] if escape_scores else [])
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3, size, 8)).astype(np.float32) for _ in range(4)]
    return b.g, arrays


def run(g, arrays):
    return generate(g, np, ember.device("cpu")).fn(*arrays)


def kinds(g):
    return [e.prim.source.split("'")[1] if isinstance(e.prim, Kernel) and
            e.prim.name == "matmul_triangular" else e.prim.name
            for e in g.eqns if "matmul" in e.prim.name]


CAUSAL = np.triu(np.ones((T, T), bool), 1)


@pytest.mark.parametrize("fuse", [False, True])
def test_each_attention_product_skips_its_quarter_with_eagers_values(fuse):
    g, arrays = attention(CAUSAL[None])  # a broadcast (1, T, T) mask
    before = run(g, arrays)
    if fuse:
        g = fuse_elementwise(g)
    g = skip_causal_quarters(g)
    assert kinds(g) == ["out_lower", "a_lower", "a_upper", "out_lower", "a_lower", "b_lower"]
    for want, got in zip(before, run(g, arrays)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_products_a_mask_does_not_prove_causal_stay_full():
    for mask in (np.tril(np.ones((T, T), bool), -1),  # the other triangle
                 np.triu(np.ones((T, T), bool), 0)):  # the diagonal masked too
        g, _ = attention(mask)
        assert set(kinds(skip_causal_quarters(g))) == {"matmul"}
    small = np.triu(np.ones((T // 2, T // 2), bool), 1)
    g, _ = attention(small, size=T // 2)  # below MIN_SIZE: halving does not pay
    assert set(kinds(skip_causal_quarters(g))) == {"matmul"}


def test_scores_read_outside_the_mask_are_computed_whole():
    g, arrays = attention(CAUSAL, escape_scores=True)
    before = run(g, arrays)
    g = skip_causal_quarters(g)
    assert kinds(g)[0] == "matmul"  # returned: every score is seen
    np.testing.assert_array_equal(run(g, arrays)[4], before[4])


@pytest.mark.parametrize("zeros", ["a_lower", "a_upper", "b_lower", "out_lower"])
def test_triangular_matmul_is_the_full_product_on_what_it_promises(zeros):
    rng = np.random.default_rng(1)
    tri = np.tril(rng.standard_normal((5, 4, 4)))  # zero above its diagonal
    other = rng.standard_normal((5, 4, 3))
    a, b = {"a_lower": (tri, other), "a_upper": (tri.transpose(0, 2, 1), other),
            "b_lower": (other.transpose(0, 2, 1), tri),
            "out_lower": (other, other.transpose(0, 2, 1))}[zeros]
    want = a @ b
    out = np.full_like(want, np.nan)
    assert gemm.triangular_matmul(np, a, b, zeros, out=out) is out
    if zeros == "out_lower":
        lower = np.tril(np.ones((4, 4), bool))
        np.testing.assert_allclose(out[:, lower], want[:, lower], rtol=1e-12)
        assert not out[:, :2, 2:].any()  # the skipped quarter is zero, never garbage
    else:
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-15)


def test_scores_that_fill_the_masked_places_are_computed_whole():
    b = Graphs()
    q, k = b.input(2, T, 8), b.input(2, 8, T)
    m = b.const(CAUSAL)
    scores = b("matmul", q, k, compute=None)
    b.g.outputs = [b("where", m, b("neg", scores), scores)]  # above: -scores
    arrays = [np.ones((2, T, 8), np.float32), np.ones((2, 8, T), np.float32)]
    g = skip_causal_quarters(b.g)
    assert kinds(g) == ["matmul"]
    np.testing.assert_array_equal(run(g, arrays)[0][:, 0, -1], -8.0)
