"""Transposed convolutions and attention under autocast: one low-precision op, as PyTorch's
CPU autocast (inputs cast to the autocast dtype, computed in float32, rounded once)."""

import numpy as np
import pytest
import torch

import ember

CASES = {
    "conv_transpose1d": (lambda L, x, w, b: L.nn.functional.conv_transpose1d(x, w, b, stride=2),
                         [(2, 6, 9), (6, 4, 3), (4,)]),
    "conv_transpose2d": (lambda L, x, w, b: L.nn.functional.conv_transpose2d(x, w, b, stride=2),
                         [(2, 8, 6, 6), (8, 4, 4, 4), (4,)]),
    "conv_transpose3d": (lambda L, x, w, b: L.nn.functional.conv_transpose3d(x, w, b),
                         [(1, 3, 4, 4, 4), (3, 2, 2, 2, 2), (2,)]),
    "sdpa": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v),
             [(2, 3, 8, 16)] * 3),
    "sdpa_mask": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=L.ones(8, 8).tril() * 0.5), [(2, 3, 8, 16)] * 3),
}


def _run(lib, fn, arrays, in_dtypes, autocast_dtype):
    ts = [lib.tensor(a).to(getattr(lib, d)).requires_grad_() for a, d in zip(arrays, in_dtypes)]
    with lib.autocast("cpu", dtype=getattr(lib, autocast_dtype)):
        y = fn(lib, *ts)
    y.float().square().sum().backward()
    return (str(y.dtype).split(".")[-1], y.detach().double().numpy(),
            [t.grad.double().numpy() for t in ts], [str(t.grad.dtype).split(".")[-1] for t in ts])


@pytest.mark.parametrize("autocast_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("in_dtype", ["float32", "float16", "bfloat16", "mixed"])
@pytest.mark.parametrize("name", list(CASES))
def test_dtype_values_and_grads_match_torch(name, in_dtype, autocast_dtype):
    fn, shapes = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    dts = ["bfloat16", "float32", "float16"][:len(shapes)] if in_dtype == "mixed" else \
        [in_dtype] * len(shapes)
    e_dtype, e_out, e_grads, e_grad_dtypes = _run(ember, fn, arrays, dts, autocast_dtype)
    t_dtype, t_out, t_grads, t_grad_dtypes = _run(torch, fn, arrays, dts, autocast_dtype)
    assert e_dtype == t_dtype == autocast_dtype  # (float16 inputs under bfloat16: were float16)
    assert e_grad_dtypes == t_grad_dtypes
    ulp = 2.0 ** -7 if autocast_dtype == "bfloat16" else 2.0 ** -10
    scale = np.abs(t_out).max()
    np.testing.assert_allclose(e_out, t_out, atol=ulp * scale)  # (before: several ulps off)
    for e, t in zip(e_grads, t_grads):  # (a bfloat16 input's gradient is rounded to bfloat16)
        np.testing.assert_allclose(e, t, atol=2.0 ** -6 * np.abs(t).max())


def test_a_float64_operand_is_left_alone_and_the_error_says_what_autocast_cast():
    x, w = ember.randn(1, 2, 3, 3, dtype=ember.float64), ember.randn(2, 2, 2, 2)
    with ember.autocast("cpu"), pytest.raises(ember.errors.DTypeError,
                                              match="float32 arguments were cast to bfloat16"):
        ember.nn.functional.conv_transpose2d(x, w)


def test_compiled_under_autocast_matches_eager():
    q = ember.randn(2, 2, 5, 8)

    def attend(q):
        with ember.autocast("cpu", dtype=ember.float16):
            return ember.nn.functional.scaled_dot_product_attention(q, q, q)
    compiled = ember.jit.compile(attend)
    eager = attend(q)
    out = compiled(q)
    assert out.dtype is eager.dtype is ember.float16
    np.testing.assert_array_equal(out.float().numpy(), eager.float().numpy())
