"""softshrink and hardshrink as primitives (ember.ops.shrink): PyTorch's values and gradients,
one op each (PyTorch's backward names), second derivatives, vmap, meta, jit, ONNX."""

import numpy as np
import pytest
import torch

import ember
from ember.ops.primitive import PRIMITIVES, TensorSpec
from ember.profiler.flops import flops_of

NAMES = ["softshrink", "hardshrink"]
SPECIAL = [np.nan, np.inf, -np.inf, 0.5, -0.5, 0.3, -0.3, 0.0, 1e-40, 2.0, -2.0, 1e30]


def _values(dtype, size: int = 4096) -> np.ndarray:
    # (specials first: PyTorch's vectorized loop takes them; its scalar tail writes -0.0 for
    # softshrink's negative zeros, the loop +0.0)
    rng = np.random.default_rng(0)
    return np.concatenate([SPECIAL, rng.standard_normal(size - len(SPECIAL))]).astype(dtype)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("lambd", [0.5, 0.3, 0.0, 2.0])
@pytest.mark.parametrize("size", [4096, 8192])  # (NumPy's calls; numba's one pass above 4096)
def test_values_gradients_and_backward_name_match_torch(name, dtype, lambd, size):
    values = _values(dtype, size)
    x, t = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    y = getattr(ember.nn.functional, name)(x, lambd)
    want = getattr(torch.nn.functional, name)(t, lambd)
    assert y.grad_fn.name() == want.grad_fn.name()  # (one op; WhereBackward0 before)
    got, ref = y.detach().numpy(), want.detach().numpy()
    np.testing.assert_array_equal(got, ref)
    assert (np.signbit(got) == np.signbit(ref))[~np.isnan(ref)].all()
    g = np.random.default_rng(1).standard_normal(values.shape).astype(dtype)
    y.backward(ember.tensor(g))
    want.backward(torch.tensor(g))
    keep = ~np.isnan(values)  # (PyTorch's loop gives 0 at NaN, its scalar tail and Ember g)
    np.testing.assert_array_equal(x.grad.numpy()[keep], t.grad.numpy()[keep])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_pass_gives_the_numpy_calls_bits(numba_or_numpy, name, dtype):
    """numba's one pass (large float32/float64 arrays) against NumPy's calls: the same bits
    and layout, at the specials, at ±lambd, channels-last, with a broadcast gradient."""
    from ember.backend import compiled

    def run(lambd):
        x = ember.from_numpy(a.copy(order="K")).requires_grad_()
        y = fn(x, lambd)
        (gx,) = ember.autograd.grad(y, x, ember.tensor(g))
        (ones,) = ember.autograd.grad(fn(x, lambd).sum(), x)
        return [(t.detach().numpy().tobytes(), t.stride()) for t in (y, gx, ones)]

    fn = getattr(ember.nn.functional, name)
    a = np.random.default_rng(2).standard_normal((4, 3, 32, 24)).astype(dtype)
    a.flat[:len(SPECIAL)] = SPECIAL
    a.flat[100:140] = [0.3, -0.3] * 20
    a = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # channels-last
    g = np.random.default_rng(3).standard_normal(a.shape).astype(dtype)
    on = numba_or_numpy == "numba"
    infinite = (float("inf"),) if name == "hardshrink" else ()  # (softshrink refuses it)
    for lambd in (0.3, 0.0, 1, *infinite, np.float64(0.3)):
        got = run(lambd)
        assert compiled.numba_enabled() == on  # (before the reference: no silent fallback)
        compiled.use_numba(False)  # (the reference: NumPy's calls)
        want = run(lambd)
        compiled.use_numba(on)
        assert got == want


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_second_derivative_vmap_meta_and_flops(name):
    fn = getattr(ember.nn.functional, name)
    x = ember.tensor([-2.0, -0.7, -0.2, 0.1, 0.6, 3.0], dtype=ember.float64,
                     requires_grad=True)
    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))
    rows = ember.randn(3, 5, dtype=ember.float64) * 2
    per_row = ember.func.vmap(ember.func.grad(lambda r: fn(r).sum()))(rows)
    (whole,) = ember.autograd.grad(fn(rows.requires_grad_()).sum(), rows)
    np.testing.assert_array_equal(per_row.numpy(), whole.numpy())
    m = fn(ember.empty(2, 3, 4, device="meta").transpose(0, 2))
    assert m.device.type == "meta" and m.shape == (4, 3, 2)
    assert flops_of(PRIMITIVES[name], (TensorSpec((4, 5), ember.float32),), {"lambd": 0.5}) == 20


@pytest.mark.parametrize("name", NAMES)
def test_compiled_and_onnx_equal_eager(name):
    fn = getattr(ember.nn.functional, name)
    x = ember.randn(8, 16) * 2
    assert ember.jit.compile(lambda v: fn(v, 0.4) * 2)(x).numpy().tobytes() == \
        (fn(x, 0.4) * 2).numpy().tobytes()
    ort = pytest.importorskip("onnxruntime")
    import io

    model = ember.nn.Softshrink(0.4) if name == "softshrink" else ember.nn.Hardshrink(0.4)
    buffer = io.BytesIO()
    ember.onnx.export(model, (x,), buffer)
    session = ort.InferenceSession(buffer.getvalue())
    (out,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    np.testing.assert_array_equal(out, model(x).numpy())


@pytest.mark.parametrize("name", NAMES)
def test_nested_tensors_take_each_sequence(name):
    seqs = [ember.randn(2, 3) * 2, ember.randn(4, 3) * 2]
    out = getattr(ember.nn.functional, name)(ember.nested.nested_tensor(seqs,
                                                                          layout=ember.jagged))
    for got, x in zip(out.unbind(), seqs, strict=True):
        assert got.numpy().tobytes() == getattr(ember.nn.functional, name)(x).numpy().tobytes()
