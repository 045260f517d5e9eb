"""Complex ``z ** 0.5``, ``z ** -0.5``, ``z ** -1`` and ``rsqrt(z)`` bit for bit as PyTorch's,
which computes them as ``sqrt``, ``1 / sqrt`` and its complex reciprocal, not ``exp(b log z)``;
and ``sign``'s refusal of complex tensors names ``sgn``."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.test_complex import _EDGES


def _values(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(61)
    z = np.concatenate([(rng.normal(size=500) + 1j * rng.normal(size=500)) * s
                        for s in (1e-3, 1.0, 1e3)]
                       + [np.array([complex(a, b) for a in _EDGES for b in _EDGES])])
    with np.errstate(over="ignore"):
        return z.astype(dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", [0.5, -0.5, -1, "rsqrt"])
def test_complex_pow_scalar_bits_as_torch(dtype, exponent):
    """sqrt(-1) is exactly 1j (power gave 6e-17+1j), sqrt(inf) inf+0j (was inf+nanj),
    0 ** -1 inf+nanj (was nan+nanj); every other value to the bit."""
    z = _values(dtype)
    e, t = ember.tensor(z), torch.from_numpy(z)
    mine = ember.rsqrt(e) if exponent == "rsqrt" else e ** exponent
    ref = torch.rsqrt(t) if exponent == "rsqrt" else t ** exponent
    part = np.float32 if dtype == "complex64" else np.float64
    assert mine.dtype.name == dtype
    np.testing.assert_array_equal(mine.numpy().view(part), ref.numpy().view(part))


@pytest.mark.parametrize("exponent", [0.5, -0.5, -1])
def test_complex_pow_scalar_grad_as_torch(exponent):
    """The gradient of a real loss through ``z ** exponent`` (conjugate Wirtinger)."""
    z = np.array([1 + 2j, -1 + 0.5j, 0.3 - 2j, -4 - 1e-3j])
    e = ember.tensor(z, requires_grad=True)
    t = torch.tensor(z, requires_grad=True)
    (e ** exponent).abs().sum().backward()
    (t ** exponent).abs().sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call", [ember.sign, ember.Tensor.sign])
def test_complex_sign_refusal_points_to_sgn(call):
    """PyTorch refuses ``sign`` of a complex tensor and names ``sgn``; so does Ember."""
    with pytest.raises(ember.DTypeError, match=r"sign: complex64 .*Hint: sgn\(z\) is z / \|z\|"):
        call(ember.tensor([1 + 2j]))
