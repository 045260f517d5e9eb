"""addcmul/addcdiv (float16 and bfloat16: one primitive; float32: a composite) and the
float64 -> float16 cast through ember.jit.compile (with gradients) and ONNX in onnxruntime,
bit for bit against eager (review57e 4)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

_FORMS = {"addcmul": lambda a, b, c: ember.addcmul(a, b, c, value=0.3),
          "addcdiv": lambda a, b, c: ember.addcdiv(a, b, c, value=-2.5),
          "addcmul_broadcast": lambda a, b, c: ember.addcmul(a[:, :1], b, c[:1], value=1),
          "addcdiv_one": lambda a, b, c: ember.addcdiv(a, b, c)}


def _inputs(dtype: str, shape=(16, 12)) -> list:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape) + 3 * (i == 2) for i in range(3)]
    return [ember.tensor(a).to(getattr(ember, dtype)) for a in arrays]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("form", list(_FORMS))
def test_compiled_equals_eager_with_gradients(form, dtype):
    fn = _FORMS[form]
    args = [t.requires_grad_() for t in _inputs(dtype)]
    g = _inputs(dtype)[0]

    def step(a, b, c):
        out = fn(a, b, c)
        return (out,) + ember.autograd.grad(out, (a, b, c), g[:out.shape[0], :out.shape[1]])

    got, want = ember.jit.compile(step)(*args), step(*args)
    for x, y in zip(got, want, strict=True):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x.detach().float().numpy(), y.detach().float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_compiled_float64_to_float16_cast_equals_eager(dtype):
    x = ember.tensor(np.random.default_rng(1).standard_normal(4096) * 1e3)
    fn = lambda t: t.to(getattr(ember, dtype)) * 0.1 + 1.0  # noqa: E731
    np.testing.assert_array_equal(ember.jit.compile(fn)(x).float().numpy(),
                                  fn(x).float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("form", list(_FORMS))
def test_onnx_matches_eager_bits(form, dtype):
    from tests.export.onnx_helpers import run_onnx

    fn = _FORMS[form]
    args = _inputs(dtype)
    if dtype == "bfloat16":  # (onnxruntime takes no NumPy bfloat16: float32 in and out)
        fn, args = _through_bfloat16(fn), [a.float() for a in args]
    got = run_onnx(ember.onnx.to_model(fn, tuple(args)), *(a.numpy() for a in args))[0]
    np.testing.assert_array_equal(got, fn(*args).numpy())


def _through_bfloat16(fn):
    return lambda *xs: fn(*(x.to(ember.bfloat16) for x in xs)).float()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_onnx_float64_cast_matches_eager_bits(dtype):
    from tests.export.onnx_helpers import run_onnx

    x = ember.tensor(np.random.default_rng(1).standard_normal(4096) * 1e3)
    fn = lambda t: t.to(getattr(ember, dtype))  # noqa: E731
    if dtype == "bfloat16":
        fn = lambda t: t.to(ember.bfloat16).float()  # noqa: E731
    got = run_onnx(ember.onnx.to_model(fn, (x,)), x.numpy())[0]
    np.testing.assert_array_equal(got, fn(x).numpy())


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_mixed_dtype_half_onnx_and_compiled_match_eager(op):
    """A float16 result from an int64 tensor1 and a 0-d float64 tensor2 (the primitive takes
    the operands as given, review57m4 3): converted to float16 first in ONNX as in eager."""
    from tests.export.onnx_helpers import run_onnx

    rng = np.random.default_rng(4)
    a = ember.tensor(rng.standard_normal((6, 5))).half()
    b = ember.tensor(rng.integers(-2000, 2000, (6, 5)))
    c = ember.tensor(1.0 + 2 ** -13 + 2 ** -30)
    fn = lambda x, y, z: getattr(ember, op)(x, y, z, value=0.3)  # noqa: E731
    want = fn(a, b, c)
    assert want.dtype == ember.float16
    np.testing.assert_array_equal(ember.jit.compile(fn)(a, b, c).numpy(), want.numpy())
    got = run_onnx(ember.onnx.to_model(fn, (a, b, c)), a.numpy(), b.numpy(), c.numpy())[0]
    np.testing.assert_array_equal(got, want.numpy())
