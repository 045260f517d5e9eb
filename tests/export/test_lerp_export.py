"""lerp (one primitive for float32/float16/bfloat16/float64) through ember.jit.compile,
ember.export (saved and loaded) and ONNX in onnxruntime, against eager (float64's ONNX graph
ran in float32: 1e-8 off)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

_FORMS = {"number": lambda x, y, w: ember.lerp(x, y, 0.3) * w,
          "large_number": lambda x, y, w: ember.lerp(x, y, 0.8) + w,
          "tensor": lambda x, y, w: ember.lerp(x, y, w),
          "broadcast": lambda x, y, w: ember.lerp(x, y[0], w[:, :1])}


def _inputs(dtype="float32"):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((6, 5)) for _ in range(3)]
    arrays[2][0, :3] = [0.5, -0.5, np.nan]
    return [ember.tensor(a).to(getattr(ember, dtype)) for a in arrays]


@pytest.mark.parametrize("form", list(_FORMS))
def test_compiled_equals_eager_with_gradients(form):
    fn = _FORMS[form]
    x, y, w = (t.requires_grad_() for t in _inputs())
    compiled = ember.jit.compile(lambda a, b, c: fn(a, b, c).nansum())
    got = compiled(x, y, w)
    grads = ember.autograd.grad(got, (x, y, w))
    want = fn(x, y, w).nansum()
    expected = ember.autograd.grad(want, (x, y, w))
    assert got.item() == want.item()
    for g, e in zip(grads, expected, strict=True):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


@pytest.mark.parametrize("form", list(_FORMS))
def test_exported_program_saved_and_loaded_equals_eager(form, tmp_path):
    fn = _FORMS[form]

    class M(ember.nn.Module):
        def forward(self, a, b, c):
            return fn(a, b, c)

    args = _inputs()
    ep = ember.export.export(M(), tuple(args))
    ember.export.save(ep, tmp_path / "lerp.ept")
    got = ember.export.load(tmp_path / "lerp.ept").module()(*args)
    np.testing.assert_array_equal(got.numpy(), fn(*args).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("form", list(_FORMS))
def test_onnx_matches_eager(form, dtype):
    from tests.export.onnx_helpers import eager, run_onnx

    fn = _FORMS[form]
    args = _inputs(dtype)
    proto = ember.onnx.to_model(fn, tuple(args))
    got, want = run_onnx(proto, *(a.numpy() for a in args))[0], eager(fn, *args)[0]
    assert got.dtype == want.dtype
    tol = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-15}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
