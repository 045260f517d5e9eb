"""Activation sweep (session 63) against PyTorch 2.13: dtypes torch refuses."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - the usual spelling

import ember


@pytest.mark.parametrize("name", ["int64", "int32", "uint8", "int8", "bool"])
def test_glu_refuses_integer_and_bool_inputs_as_torch(name: str) -> None:
    # (sigmoid's promotion let an int64 input through as float64, uint8 as float16)
    with pytest.raises(NotImplementedError):
        F.glu(torch.ones(4, dtype=getattr(torch, name)))
    with pytest.raises(ember.DTypeError, match="glu: needs a floating tensor"):
        ember.nn.functional.glu(ember.ones(4, dtype=getattr(ember, name)))
    with pytest.raises(ember.DTypeError, match="glu"):
        ember.nn.GLU()(ember.ones(2, 4, dtype=getattr(ember, name)))


@pytest.mark.parametrize("dtype,bounds", [("uint8", (-1, 2)), ("uint8", (0, 300)),
                                          ("int8", (-300, -1)), ("int8", (0, 128))])
def test_hardtanh_integer_bounds_out_of_range_are_refused_clearly(dtype: str,
                                                                  bounds: tuple) -> None:
    # (NumPy's "OverflowError: Python integer -1 out of bounds for uint8" came through before)
    with pytest.raises(RuntimeError):
        F.hardtanh(torch.tensor([0, 5], dtype=getattr(torch, dtype)), *bounds)
    with pytest.raises(RuntimeError, match="hardtanh: .*(negative min_val|without overflow)"):
        ember.nn.functional.hardtanh(ember.tensor([0, 5], dtype=getattr(ember, dtype)), *bounds)


@pytest.mark.parametrize("dtype,bounds", [("uint8", (-0.5, 3)), ("uint8", (1.5, 2.5)),
                                          ("int8", (-1, 2)), ("int16", (-300, 300))])
def test_hardtanh_integer_bounds_in_range_match_torch(dtype: str, bounds: tuple) -> None:
    data = [0, 5, 100]
    want = F.hardtanh(torch.tensor(data, dtype=getattr(torch, dtype)), *bounds)
    got = ember.nn.functional.hardtanh(ember.tensor(data, dtype=getattr(ember, dtype)), *bounds)
    assert got.dtype.name == dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_implicit_dim_warning_names_the_callers_line_and_honours_stacklevel(name: str) -> None:
    def helper() -> None:  # (_stacklevel=4: the warning names helper's caller, as torch's)
        getattr(ember.nn.functional, name)(ember.ones(3), _stacklevel=4)

    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}") as caught:
        getattr(ember.nn.functional, name)(ember.ones(3))
        helper()
    assert [w.filename for w in caught] == [__file__] * 2


@pytest.mark.parametrize("dtype,lambd", [("float32", float("nan")), ("float32", float("inf")),
                                         ("float32", 1e39), ("float16", 70000.0),
                                         ("float64", -1.0)])
def test_softshrink_refuses_lambd_outside_the_dtypes_range_as_torch(dtype: str,
                                                                    lambd: float) -> None:
    # (a NaN lambd gave NaNs, an infinite one zeros; torch refuses both)
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(torch.ones(2, dtype=getattr(torch, dtype)), lambd)
    with pytest.raises(ember.errors.ArgumentError, match="softshrink: lambd must be in \\[0, "):
        ember.nn.functional.softshrink(ember.ones(2, dtype=getattr(ember, dtype)), lambd)


def test_softshrink_takes_a_large_lambd_within_the_dtypes_range_as_torch() -> None:
    got = ember.nn.functional.softshrink(ember.ones(2, dtype=ember.bfloat16), 70000.0)
    assert got.tolist() == F.softshrink(torch.ones(2, dtype=torch.bfloat16), 70000.0).tolist()


@pytest.mark.parametrize("bounds", [(0.0, 6.0), (-1.0, 1.0), (-0.0, 6.0)])
def test_hardtanh_bfloat16_keeps_negative_zero_as_torch(bounds: tuple) -> None:
    # (relu6(-0.0) in bfloat16 was +0.0; float16/float32 kept -0.0 already)
    data = [-0.0, 0.0, -1.0, 7.0, 3.0, -0.5]
    want = F.hardtanh(torch.tensor(data, dtype=torch.bfloat16), *bounds).float()
    got = ember.nn.functional.hardtanh(ember.tensor(data, dtype=ember.bfloat16), *bounds)
    assert got.dtype is ember.bfloat16
    got = torch.tensor(got.float().tolist())
    assert torch.equal(got, want) and torch.equal(got.signbit(), want.signbit())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gelu_tanh_half_backward_in_float32_as_torch(dtype: str) -> None:
    # (the slope was composed in bfloat16: at x = -3 the gradient was 0.0106, torch's 0.00656)
    data, weights = [-3.0, -2.5, -0.9, 0.0, 0.7, 3.0], [-0.57, 0.4, 1.0, 1.0, -1.0, 2.0]
    x = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=True)
    (F.gelu(x, approximate="tanh") * torch.tensor(weights, dtype=x.dtype)).sum().backward()
    xe = ember.tensor(data, dtype=getattr(ember, dtype), requires_grad=True)
    (ember.nn.functional.gelu(xe, approximate="tanh")
     * ember.tensor(weights, dtype=xe.dtype)).sum().backward()
    assert xe.grad.dtype is xe.dtype
    torch.testing.assert_close(torch.tensor(xe.grad.float().tolist()), x.grad.float(),
                               rtol=8e-3, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_silu_half_backward_near_the_slopes_zero_as_torch(dtype: str) -> None:
    # (the slope composed in bfloat16 was 0.000736 at x = -1.2734, torch's 0.000950)
    data = [-1.2734375, -1.27734375, -1.28125, -1.0, 0.0, 2.5]
    x = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=True)
    F.silu(x).sum().backward()
    xe = ember.tensor(data, dtype=getattr(ember, dtype), requires_grad=True)
    ember.nn.functional.silu(xe).sum().backward()
    assert xe.grad.dtype is xe.dtype
    torch.testing.assert_close(torch.tensor(xe.grad.float().tolist()), x.grad.float(),
                               rtol=2e-2, atol=2e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_silu_half_backward_rounds_once_with_any_upstream_gradient_as_torch(dtype):
    # v·slope in float32 then rounded (the slope rounded to half first: a quarter 1 ulp off)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(1000).astype(np.float32) * 3
    vs = rng.standard_normal(1000).astype(np.float32)
    grads = []
    for lib in (torch, ember):
        x = lib.tensor(xs).to(getattr(lib, dtype)).requires_grad_()
        lib.nn.functional.silu(x).backward(lib.tensor(vs).to(getattr(lib, dtype)))
        grads.append(x.grad.float().numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
