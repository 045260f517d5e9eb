"""ONNX export of ``linalg.det``, ``solve`` and ``inv`` (LU with partial pivoting unrolled over
the static matrix size) and of the linalg ops that decompose (norms, cross, diagonal, trace),
against eager in onnxruntime, over a dynamic batch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.linalg as LA
from tests.export.onnx_helpers import check_export, eager, run_onnx

# (singular, a needed row swap, all zero, inf and NaN entries, tiny pivots)
SPECIAL = np.array([[[0, 1.0], [1, 0]], [[1, 2], [2, 4]], [[0, 0], [0, 0]],
                    [[np.inf, 1], [2, 3]], [[np.nan, 1], [2, 3]], [[1e-300, 1], [1, 1e-300]],
                    [[-0.0, 2], [3, -0.0]], [[1e30, 1e-30], [1e-30, 1e30]],
                    [[0, np.nan], [0, 1]], [[-1e200, 1], [0, 1e200]]])


def _run(fn, arrays, rtol):
    names = [f"in{i}" for i in range(len(arrays))]
    proto = ember.onnx.to_model(fn, tuple(ember.tensor(a[:2]) for a in arrays),
                                input_names=names, dynamic_axes={n: {0: "b"} for n in names})
    got = run_onnx(proto, *arrays)
    want = eager(fn, *(ember.tensor(a) for a in arrays))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0)


FNS = {"det": lambda a, b: LA.det(a), "inv": lambda a, b: LA.inv(a),
       "solve": lambda a, b: LA.solve(a, b), "inv_ex": lambda a, b: LA.inv_ex(a),
       "solve_ex": lambda a, b: LA.solve_ex(a, b),
       "solve_vector": lambda a, b: LA.solve(a, b[..., 0]),
       "slogdet": lambda a, b: LA.slogdet(a)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 3, 6])
@pytest.mark.parametrize("op", list(FNS))
def test_det_solve_inv_of_random_matrices(op, n, dtype):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((5, n, n)) + 2 * np.eye(n)).astype(dtype)
    b = rng.standard_normal((5, n, 3)).astype(dtype)
    fn = FNS[op]
    _run(lambda a, b: fn(a, b), [a, b], rtol=2e-4 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("op", ["det", "slogdet", "inv_ex", "solve_ex"])
def test_singular_and_special_matrices_as_eagerly(op):
    b = np.stack([np.eye(2)] * len(SPECIAL)) * 3
    _run(lambda a, b: FNS[op](a, b), [SPECIAL, b], rtol=1e-12)


def test_empty_matrices():
    _run(lambda a: (LA.det(a), *LA.slogdet(a), LA.inv(a)), [np.zeros((3, 0, 0))], rtol=0)


def test_a_dynamic_matrix_size_is_refused():
    with pytest.raises(ember.onnx.ExportError, match="matrix size follows a dynamic axis"):
        ember.onnx.to_model(lambda a: LA.det(a), (ember.randn(2, 3, 3),), input_names=["a"],
                            dynamic_axes={"a": {1: "n", 2: "n"}})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["norm", "vector_norm3", "vector_norm_inf", "matrix_norm",
                                "matrix_norm1", "cross", "diagonal", "trace", "vecdot"])
def test_linalg_ops_that_decompose(op, dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3, 3)).astype(dtype)
    a[0, 0, 0], a[1, 1, 1], a[2, 2] = np.inf, np.nan, 0.0
    fns = {"norm": lambda a: LA.norm(a, dim=(-2, -1)),
           "vector_norm3": lambda a: LA.vector_norm(a, 3, dim=-1),
           "vector_norm_inf": lambda a: LA.vector_norm(a, float("inf"), dim=-1),
           "matrix_norm": lambda a: LA.matrix_norm(a),
           "matrix_norm1": lambda a: LA.matrix_norm(a, 1),
           "cross": lambda a: LA.cross(a, a.flip(-1)), "diagonal": lambda a: LA.diagonal(a),
           "trace": lambda a: a.diagonal(dim1=-2, dim2=-1).sum(-1),
           "vecdot": lambda a: LA.vecdot(a, a.flip(-2))}
    _run(fns[op], [a], rtol=2e-6 if dtype == "float32" else 1e-12)


def test_householder_product_of_no_reflectors():
    # ([I; 0], recorded as an output of A and tau that passes no gradient back: it had no
    # converter, where before c37b4a61 the export went through)
    class Reflect(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = ember.nn.Parameter(ember.randn(5, 3, dtype=ember.float64))

        def forward(self, tau):
            return LA.householder_product(self.a, tau)

    check_export(Reflect(), ember.zeros(0, dtype=ember.float64), rtol=0, atol=0)
    check_export(lambda a, tau: LA.householder_product(a, tau), ember.randn(4, 2),
                 ember.zeros(0), rtol=0, atol=0)
