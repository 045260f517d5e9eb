"""ONNX export of the running scans without an ONNX op (``cummax``/``cummin`` indices,
``logcumsumexp``) as Scan, against eager in onnxruntime: ties, NaN, infinities, a dynamic
scanned length."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.test_onnx_scatter import check_feeds

nan, inf = float("nan"), float("inf")


def _spiky(shape, seed, dtype="float32"):
    """Small integers (ties) with a twentieth NaN and a tenth each of -inf and +inf."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, shape).astype(dtype)
    u = rng.random(shape)
    a[u < 0.05] = nan
    a[(u > 0.5) & (u < 0.6)] = -inf
    a[u > 0.9] = inf
    return ember.tensor(a)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin_with_ties_nan_and_a_dynamic_length(op, dim):
    fn = lambda x: tuple(getattr(x, op)(dim))  # noqa: E731
    feeds = [(_spiky((5, 7), seed),) for seed in range(3)] + [(_spiky((3, 11), 5),)]
    check_feeds(fn, feeds, dynamic={0: {0: "a", 1: "b"}})
    ints = [(ember.tensor(np.random.default_rng(s).integers(0, 3, (4, 6))),) for s in (0, 1)]
    check_feeds(fn, ints)
    check_feeds(fn, [(ember.tensor([[True, False, True], [False, False, True]]),)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logcumsumexp_with_infinities_and_nan(dtype):
    rng = np.random.default_rng(0)
    wide = ember.tensor((rng.standard_normal((4, 9)) * 30).astype(dtype))
    special = ember.tensor(np.array([[-inf, -inf, 0.0, -0.0, -inf, 5.0, -40.0],
                                     [0.0, -50.0, inf, 1.0, -inf, inf, 2.0],
                                     [1e-3, nan, 2.0, -inf, 3.0, 4.0, 5.0]], dtype=dtype))
    for dim in (0, 1):
        check_feeds(lambda x, d=dim: x.logcumsumexp(d), [(wide,), (special,)],
                    dynamic={0: {0: "a", 1: "b"}})



@pytest.mark.parametrize("op", ["cummax", "cummin", "logcumsumexp"])
@pytest.mark.parametrize("dim", [1, -1, 0])
def test_scans_at_length_zero_over_a_dynamic_axis(op, dim):
    # onnxruntime's Scan dies (SIGFPE) on an empty input, and the state was read off
    # element 0; a NaN first element (logcumsumexp kept -inf)
    if op == "logcumsumexp":
        fn = lambda x: x.logcumsumexp(dim)  # noqa: E731
    else:
        fn = lambda x: tuple(getattr(x, op)(dim))  # noqa: E731
    feeds = [(_spiky((2, 3), 0),), (ember.zeros(2, 0),), (ember.zeros(0, 4),), (_spiky((3, 5), 1),)]
    check_feeds(fn, feeds, dynamic={0: {0: "a", 1: "b"}})


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_of_bfloat16_and_integer_extremes(op):
    # bfloat16 is compared in float32 (onnxruntime has no bfloat16 Greater); the integer
    # dtypes' own least/greatest value at the start
    fn = lambda x: tuple(getattr(x, op)(1))  # noqa: E731
    in_bf16 = lambda x: tuple(v.float() for v in getattr(x.bfloat16(), op)(1))  # noqa: E731
    check_feeds(in_bf16, [(ember.tensor([[1.5, -inf, 2.0, 2.0, nan, 1.0, 1.00390625]]),)])
    for dtype in ("int64", "int32", "int16", "uint8", "int8"):
        info = np.iinfo(dtype)
        row = np.array([[info.min, info.max, info.min, 0, info.max, info.min]], dtype=dtype)
        check_feeds(fn, [(ember.tensor(row),)])
