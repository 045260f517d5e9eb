"""Half-precision inputs under CPU autocast against torch: reductions of a float16/bfloat16
tensor (mean, var, std, norms) still accumulate in float32 (under autocast Ember summed in
float16, so a var or a norm overflowed to inf); prelu casts a float32 weight once to the
autocast dtype (not via the input's dtype) and refuses float64; tensordot refuses two dtypes,
as torch does before its lowered mm."""

import numpy as np
import pytest
import torch

import ember

R = np.random.default_rng(0)
WIDE = (R.standard_normal((5, 300)) * 50).astype(np.float32)

REDUCTIONS = {
    "mean": lambda lib, x: x.mean(1),
    "var": lambda lib, x: x.var(1),
    "std": lambda lib, x: x.std(1),
    "var_mean": lambda lib, x: lib.var_mean(x, 1)[0],
    "vector_norm": lambda lib, x: lib.linalg.vector_norm(x, dim=1),
    "vector_norm_3": lambda lib, x: lib.linalg.vector_norm(x, 3, dim=1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("autocast_dtype", ["float16", "bfloat16"])
def test_half_reductions_under_autocast_match_torch(name, dtype, autocast_dtype):
    results = []
    for lib in (ember, torch):
        x = lib.tensor(WIDE).to(getattr(lib, dtype))
        with lib.autocast("cpu", dtype=getattr(lib, autocast_dtype)):
            out = REDUCTIONS[name](lib, x)
        results.append((str(out.dtype).split(".")[-1], out.float().numpy()))
    assert results[0][0] == results[1][0] == dtype
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_prelu_under_autocast_casts_a_float32_weight_once():
    x = R.standard_normal((3, 4, 2)).astype(np.float32)
    w = np.float32([0.3, -0.2, 0.7, 1.1])
    results = []
    for lib in (ember, torch):
        inp, weight = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.float16):
            out = lib.nn.functional.prelu(inp.bfloat16(), weight)
        (out.float() * lib.tensor(x)).sum().backward()
        results.append((str(out.dtype).split(".")[-1], out.detach().float().numpy(),
                        weight.grad.numpy(), inp.grad.numpy()))
    assert results[0][0] == results[1][0] == "float16"
    for got, want in zip(results[0][1:], results[1][1:]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "float64")])
def test_prelu_under_autocast_refuses_float64_beside_another_dtype(dtypes):
    x, w = ember.ones(2, 3).to(getattr(ember, dtypes[0])), ember.ones(1).to(
        getattr(ember, dtypes[1]))
    with ember.autocast("cpu"), pytest.raises(ember.errors.DTypeError, match="float64"):
        ember.nn.functional.prelu(x, w)
    with torch.autocast("cpu"), pytest.raises(RuntimeError, match="Type promoting"):
        torch.nn.functional.prelu(torch.ones(2, 3).to(getattr(torch, dtypes[0])),
                                  torch.ones(1).to(getattr(torch, dtypes[1])))


@pytest.mark.parametrize("autocast", [False, True])
def test_tensordot_refuses_two_dtypes_under_autocast_too(autocast):
    with ember.autocast("cpu", enabled=autocast), \
            pytest.raises(ember.errors.DTypeError, match="same dtype.*float32.*bfloat16"):
        ember.tensordot(ember.ones(2, 3), ember.ones(3, 2).bfloat16(), dims=1)
    with torch.autocast("cpu", enabled=autocast), pytest.raises(RuntimeError, match="dtype"):
        torch.tensordot(torch.ones(2, 3), torch.ones(3, 2).bfloat16(), dims=1)
