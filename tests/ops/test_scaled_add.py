"""``add``/``sub``/``rsub`` with an ``alpha`` of float16/bfloat16 tensors as PyTorch's vector
loop computes them (:mod:`ember.ops.scaled_add`), values and gradients bit for bit."""

import numpy as np
import pytest
import torch

import ember

_CALLS = {
    "add": lambda m, x, y: m.add(x, y, alpha=0.3),
    "sub": lambda m, x, y: m.sub(x, y, alpha=1.7),
    "rsub": lambda m, x, y: m.rsub(x, y, alpha=2.5),
    "add_": lambda m, x, y: (x * 1).add_(y, alpha=-0.37),
    "sub_": lambda m, x, y: (x * 1).sub_(y, alpha=3),
    "add number": lambda m, x, y: m.add(x, 0.1, alpha=3),
    "rsub number": lambda m, x, y: m.rsub(x, 0.1, alpha=0.7),
    "add 0-d": lambda m, x, y: m.add(x, y[0, 3], alpha=0.3),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("call", list(_CALLS))
def test_half_add_with_alpha_is_torchs_bit_for_bit(dtype, call):
    # (before: alpha * y rounded to the half dtype, then the sum: an ulp off in 1 of 8;
    # PyTorch rounds alpha to the dtype and fuses the multiply-add in float32)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((64, 64)) * 10, rng.standard_normal((64, 64)) * 3
    want = _CALLS[call](torch, *(torch.tensor(v).to(getattr(torch, dtype)) for v in (a, b)))
    got = _CALLS[call](ember, *(ember.tensor(v).to(getattr(ember, dtype)) for v in (a, b)))
    assert got.dtype.name == dtype
    np.testing.assert_array_equal(got.to(ember.float64).numpy(), want.double().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("call", ["add", "sub", "rsub", "add_"])
def test_half_add_with_alpha_gradients_are_torchs(dtype, call):
    # (grad and grad * alpha, alpha a float32 there, summed over the broadcast rows)
    rng = np.random.default_rng(5)
    a, b, g = rng.standard_normal((64, 32)) * 10, rng.standard_normal(32) * 3, \
        rng.standard_normal((64, 32))
    results = []
    for m in (torch, ember):
        x, y = (m.tensor(v, dtype=m.float64).to(getattr(m, dtype)).requires_grad_()
                for v in (a, b))
        out = _CALLS[call](m, x, y)
        grads = m.autograd.grad(out, [x, y], m.tensor(g, dtype=m.float64).to(out.dtype))
        results.append((out.grad_fn.name(),
                        [np.asarray(t.detach().to(m.float64).numpy()) for t in (out, *grads)]))
    (want_name, wants), (name, gots) = results
    for want, got in zip(wants, gots):
        np.testing.assert_array_equal(got, want)
    assert name == {"rsub": "SubBackward0"}.get(call, want_name)  # (rsub is sub swapped)


def test_half_add_with_alpha_under_vmap_and_jvp():
    x = ember.randn(3, 4).half()
    batched = ember.func.vmap(lambda t: ember.sub(t, t * 2, alpha=0.5))(x)
    np.testing.assert_array_equal(batched.numpy(), ember.sub(x, x * 2, alpha=0.5).numpy())
    _, tangent = ember.func.jvp(lambda t: ember.add(t, t, alpha=0.5), (x,),
                                (ember.ones_like(x),))
    np.testing.assert_array_equal(tangent.numpy(), np.full((3, 4), 1.5, np.float16))


def test_half_add_with_alpha_keeps_torchs_output_layout():
    # (a permuted input leads, as Add's: the result was C-ordered where torch's is permuted)
    values = np.arange(24.0).reshape(2, 3, 4) + 1
    strides = []
    for m in (torch, ember):
        x = m.tensor(values).to(m.float16).permute(2, 0, 1)
        strides.append(tuple(m.add(x, x.contiguous(), alpha=2).stride()))
    assert strides[1] == strides[0]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub", "rsub"])
def test_half_add_with_a_tensor_alpha_is_torchs(dtype, op):
    # (ea8fe6aa: bfloat16 with alpha=tensor(0.3) raised "expected number, got Tensor")
    rng = np.random.default_rng(7)
    a, b, g = (rng.standard_normal((8, 40)) * s for s in (10, 3, 1))
    results = []
    for m in (torch, ember):
        x, y = (m.tensor(v).to(getattr(m, dtype)).requires_grad_() for v in (a, b))
        out = getattr(m, op)(x, y, alpha=m.tensor(0.3))
        grads = m.autograd.grad(out, [x, y], m.tensor(g).to(out.dtype))
        results.append([t.detach().to(m.float64).numpy() for t in (out, *grads)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_half_add_with_alpha_exports_to_onnx_as_eager(dtype, op):
    # (ea8fe6aa: "no ONNX converter for add_scaled_half"; onnxruntime takes no NumPy
    # bfloat16, so that model takes and gives float32; rows of 64: no scalar tails, which
    # the model, fused throughout, leaves out)
    from tests.export.onnx_helpers import run_onnx

    half = getattr(ember, dtype)

    def fn(x, y):
        out = getattr(ember, op)(x.to(half), y.to(half)[:1], alpha=0.37)
        return out if dtype == "float16" else out.float()

    rng = np.random.default_rng(9)
    a, b = (rng.standard_normal((16, 64)).astype(np.float32) * s for s in (10, 3))
    if dtype == "float16":
        a, b = a.astype(np.float16), b.astype(np.float16)
    args = (ember.tensor(a), ember.tensor(b))
    got = run_onnx(ember.onnx.to_model(fn, args), a, b)[0]
    want = fn(*args).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


_LAYOUTS = {"plain": lambda x: x, "T": lambda x: x.swapaxes(0, -1),
            "every other": lambda x: x[..., ::2], "one column": lambda x: x[..., :1],
            "one row": lambda x: x[:1], "offset": lambda x: x[..., 1:]}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub", "rsub", "add_"])
def test_half_add_with_alpha_rounds_the_product_where_torchs_loop_is_scalar(dtype, op):
    # (PyTorch fuses only in its vector steps: a strided run (x.T, [::2]) and each run's tail
    # past a multiple of 32 round alpha * b first; ea8fe6aa fused everywhere: float16
    # add(x.T, y, alpha=0.3) on 64x64 was 353 of 4096 off torch)
    rng = np.random.default_rng(11)
    for shape in [(64, 64), (7, 36), (3, 5, 41), (1, 63), (30,), (2, 1, 70)]:
        a, b = rng.standard_normal(shape) * 10, rng.standard_normal(shape) * 3
        for va in _LAYOUTS:
            for vb in _LAYOUTS:
                try:
                    np.broadcast_shapes(*(_LAYOUTS[v](np.empty(shape)).shape for v in (va, vb)))
                except ValueError:
                    continue
                results = []
                for m in (torch, ember):
                    x, y = (_LAYOUTS[v](m.tensor(w).to(getattr(m, dtype)))
                            for v, w in ((va, a), (vb, b)))
                    if op == "add_":
                        x = x.clone() if va != "T" else x.T.contiguous().T
                        out = x.add_(y, alpha=0.3) if x.shape == m.broadcast_shapes(
                            x.shape, y.shape) else m.add(x, y, alpha=0.3)
                    else:
                        out = getattr(m, op)(x, y, alpha=-0.37)
                    results.append(out.to(m.float64).numpy())
                np.testing.assert_array_equal(results[1], results[0],
                                              err_msg=f"{shape} {va} {vb}")
