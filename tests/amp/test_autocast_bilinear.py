"""``bilinear`` under CPU autocast against torch: PyTorch's rounds x₁·A, then ·x₂, to the
autocast dtype and returns the inputs' dtype (Ember gave the float32 product), with the exact
product's gradients; and every operand (bias too) must share one dtype (Ember gave a float64
result for a float64 bias)."""

import numpy as np
import pytest
import torch

import ember

R = np.random.default_rng(0)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shapes", [((7, 16), (7, 9)), ((2, 6, 5), (2, 6, 4)), ((5,), (4,))])
def test_bilinear_under_autocast_matches_torch_bitwise_with_float32_gradients(dtype, shapes):
    x1, x2 = (R.standard_normal(s).astype(np.float32) for s in shapes)
    weight = R.standard_normal((3, shapes[0][-1], shapes[1][-1])).astype(np.float32)
    bias = R.standard_normal(3).astype(np.float32)
    results = []
    for lib in (ember, torch):
        args = [lib.tensor(a, requires_grad=True) for a in (x1, x2, weight)]
        with lib.autocast("cpu", dtype=getattr(lib, dtype)):
            out = lib.nn.functional.bilinear(*args, lib.tensor(bias))
        out.sum().backward()
        results.append((str(out.dtype).split(".")[-1], out.detach().numpy(),
                        [a.grad.numpy() for a in args]))
    (dtype_e, out_e, grads_e), (dtype_t, out_t, grads_t) = results
    assert dtype_e == dtype_t == "float32"
    if dtype == "bfloat16":
        np.testing.assert_array_equal(out_e, out_t)
    else:  # (float16 GEMMs on the CPU: torch's kernel sums in another order, one ulp apart)
        np.testing.assert_allclose(out_e, out_t, rtol=2 ** -10, atol=0)
    for g_e, g_t in zip(grads_e, grads_t):
        np.testing.assert_allclose(g_e, g_t, rtol=1e-5, atol=1e-5)


def test_bilinear_under_autocast_keeps_low_and_float64_inputs_dtype():
    w = ember.ones(2, 3, 4)
    with ember.autocast("cpu", dtype=ember.float16):
        assert ember.nn.functional.bilinear(ember.ones(5, 3).bfloat16(), ember.ones(5, 4)
                                            .bfloat16(), w.bfloat16()).dtype is ember.bfloat16
        assert ember.nn.functional.bilinear(ember.ones(5, 3).double(), ember.ones(5, 4)
                                            .double(), w.double()).dtype is ember.float64


@pytest.mark.parametrize("autocast", [False, True])
def test_bilinear_refuses_a_bias_of_another_dtype(autocast):
    with ember.autocast("cpu", enabled=autocast), \
            pytest.raises(ember.errors.DTypeError, match="bias: float64"):
        ember.nn.functional.bilinear(ember.ones(5, 3), ember.ones(5, 4), ember.ones(2, 3, 4),
                                     ember.ones(2, dtype=ember.float64))


def test_bilinear_forward_derivative_under_autocast_matches_torch():
    # the tangent was the bfloat16 sum of exact products where torch's is float32, each term
    # rounded as the forward's GEMMs (review62 item 2)
    x1, v1 = (R.standard_normal((4, 3)).astype(np.float32) for _ in range(2))
    x2, v2 = (R.standard_normal((4, 2)).astype(np.float32) for _ in range(2))
    w, vw = (R.standard_normal((5, 3, 2)).astype(np.float32) for _ in range(2))
    results = []
    for lib in (ember, torch):
        t = [lib.tensor(a) for a in (x1, x2, w, v1, v2, vw)]
        bilinear = lib.nn.functional.bilinear

        def of_x1(a, t=t, bilinear=bilinear):
            return bilinear(a, t[1], t[2])

        with lib.autocast("cpu", dtype=lib.bfloat16):
            _, one = lib.func.jvp(of_x1, (t[0],), (t[3],))
            _, every = lib.func.jvp(bilinear, tuple(t[:3]), tuple(t[3:]))
            jac = lib.func.jacfwd(of_x1)(t[0])
        results.append([(str(r.dtype).split(".")[-1], r.numpy()) for r in (one, every, jac)])
    for (dtype_e, e), (dtype_t, r) in zip(*results):
        assert dtype_e == dtype_t == "float32"
        np.testing.assert_array_equal(e, r)
