"""Half-precision GEMMs with an added term (``linear``'s bias, ``addmm``/``baddbmm``/
``addmv``'s input) compute the product and the sum in float32 and round once, as PyTorch's
fused kernels: bit-equal to torch 2.13 (rounding the product first was 1 ulp off in ~30% of
entries), also under autocast, and their gradients too."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

DTYPES = [(ember.bfloat16, torch.bfloat16), (ember.float16, torch.float16)]


def _pair(rng, shape, dt):
    a = torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(dt[1])
    return ember.from_numpy(a.float().numpy()).to(dt[0]), a


def _same(e, t):
    """Bit-equal in bfloat16; in float16 torch's GEMM sums in another order now and then, so
    at most 1% of entries may differ, by 1 ulp (rounding twice differed in ~30%)."""
    a, b = e.detach().float().numpy(), t.detach().float().numpy()
    if t.dtype is not torch.float16:
        np.testing.assert_array_equal(a, b)
        return
    np.testing.assert_allclose(a, b, rtol=2.0 ** -10, atol=0)
    assert (a != b).mean() <= 0.01


@pytest.mark.parametrize("dt", DTYPES, ids=["bfloat16", "float16"])
def test_linear_and_addmm_round_once_as_torch(dt):
    rng = np.random.default_rng(0)
    (x, tx), (w, tw), (b, tb) = (_pair(rng, s, dt) for s in ((64, 32), (16, 32), (16,)))
    _same(F.linear(x, w, b), torch.nn.functional.linear(tx, tw, tb))
    _same(ember.addmm(b, x, w.t()), torch.addmm(tb, tx, tw.T))
    _same(ember.addmm(b, x, w.t(), beta=0.5, alpha=2.0), torch.addmm(tb, tx, tw.T, beta=0.5,
                                                                    alpha=2.0))


def test_batched_and_vector_forms_round_once_as_torch():
    rng = np.random.default_rng(1)
    dt = DTYPES[0]
    (c, tc), (a, ta), (m, tm) = (_pair(rng, s, dt) for s in ((4, 8, 16), (4, 8, 32),
                                                               (4, 32, 16)))
    _same(ember.baddbmm(c, a, m, beta=0.5, alpha=2.0),
          torch.baddbmm(tc, ta, tm, beta=0.5, alpha=2.0))
    (y, ty), (v, tv) = (_pair(rng, s, dt) for s in ((8,), (32,)))
    _same(ember.addmv(y, a[0], v), torch.addmv(ty, ta[0], tv))


def test_autocast_linear_rounds_once_and_its_gradients_match():
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((32, 24), (8, 24), (8,)))
    ex, ew, eb = (ember.from_numpy(a).requires_grad_() for a in (x, w, b))
    tx, tw, tb = (torch.from_numpy(a).requires_grad_() for a in (x, w, b))
    with ember.autocast("cpu", dtype=ember.bfloat16):
        ey = F.linear(ex, ew, eb)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = torch.nn.functional.linear(tx, tw, tb)
    assert ey.dtype is ember.bfloat16
    _same(ey, ty)
    g = rng.standard_normal((32, 8)).astype(np.float32)
    ey.backward(ember.from_numpy(g).to(ember.bfloat16))
    ty.backward(torch.from_numpy(g).to(torch.bfloat16))
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        assert e.grad.dtype is ember.float32
        _same(e.grad, t.grad)


def test_mixed_half_dtypes_are_still_refused():
    x = ember.ones(2, 3, dtype=ember.bfloat16)
    with pytest.raises(ember.errors.DTypeError, match="linear"):
        F.linear(x, ember.ones(4, 3, dtype=ember.float16), ember.ones(4, dtype=ember.bfloat16))
    with pytest.raises(ember.errors.DTypeError, match="addmm"):
        ember.addmm(ember.ones(2, 4), x, ember.ones(3, 4, dtype=ember.bfloat16))
