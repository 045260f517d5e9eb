"""interpolate against PyTorch and finite differences."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import OpCase, S, arg, op_tests

CASES = [
    OpCase("interpolate_nearest", F.interpolate, TF.interpolate, [
        S(arg(2, 3, 3, 4), scale_factor=2),
        S(arg(2, 3, 4, 5, noncontig=True), size=(3, 7)),
        S(arg(2, 3, 5, 5), scale_factor=1.7),
        S(arg(2, 3, 5, 5), scale_factor=(0.6, 1.5), recompute_scale_factor=True),
        S(arg(2, 3, 5), size=8),                                    # 1-D
        S(arg(1, 2, 2, 3, 3), scale_factor=(1, 2, 1.5)),            # 3-D
    ]),
    OpCase("interpolate_nearest_exact", F.interpolate, TF.interpolate, [
        S(arg(2, 3, 4, 5), size=(7, 3), mode="nearest-exact"),
    ]),
    OpCase("interpolate_bilinear", F.interpolate, TF.interpolate, [
        S(arg(2, 3, 3, 4), scale_factor=2, mode="bilinear"),
        S(arg(2, 3, 3, 4), scale_factor=2, mode="bilinear", align_corners=True),
        S(arg(2, 3, 5, 4, noncontig=True), size=(3, 7), mode="bilinear"),
        S(arg(2, 3, 5, 4), size=(1, 6), mode="bilinear", align_corners=True),
        S(arg(2, 3, 4, 4), scale_factor=1.3, mode="bilinear"),
        S(arg(2, 3, 4, 4), scale_factor=0.6, mode="bilinear", recompute_scale_factor=True),
    ]),
    OpCase("interpolate_bicubic", F.interpolate, TF.interpolate, [
        S(arg(2, 3, 3, 4), scale_factor=2, mode="bicubic"),
        S(arg(2, 3, 3, 4), scale_factor=2, mode="bicubic", align_corners=True),
        S(arg(2, 3, 7, 6, noncontig=True), size=(3, 8), mode="bicubic"),
        S(arg(1, 2, 5, 4), size=(1, 6), mode="bicubic", align_corners=True),
        S(arg(1, 2, 5, 5), scale_factor=(0.6, 2.3), mode="bicubic"),    # unrecomputed scales
        S(arg(1, 2, 5, 5), scale_factor=0.6, mode="bicubic", recompute_scale_factor=True),
        S(arg(1, 1, 2, 2), size=(7, 5), mode="bicubic"),               # taps clamped at edges
    ]),
    OpCase("interpolate_linear", F.interpolate, TF.interpolate, [
        S(arg(2, 3, 5), size=9, mode="linear"),
        S(arg(2, 3, 5), size=3, mode="linear", align_corners=True),
    ]),
    OpCase("interpolate_trilinear", F.interpolate, TF.interpolate, [
        S(arg(1, 2, 2, 3, 3), size=(3, 4, 2), mode="trilinear"),
    ], gradgrad=False),
    OpCase("interpolate_antialiased", F.interpolate, TF.interpolate, [
        S(arg(2, 3, 9, 7), size=(4, 3), mode="bilinear", antialias=True),     # shrinking
        S(arg(1, 2, 4, 5), size=(7, 9), mode="bilinear", antialias=True),     # growing
        S(arg(1, 2, 9, 8), size=(3, 5), mode="bicubic", antialias=True, align_corners=True),
        S(arg(1, 2, 8, 9), scale_factor=(0.4, 1.0), mode="bicubic", antialias=True),
        S(arg(1, 2, 9, 6, noncontig=True), size=(4, 4), mode="lanczos", antialias=True),
    ]),
    OpCase("interpolate_area", F.interpolate, TF.interpolate, [
        S(arg(2, 3, 5, 7), size=(2, 3), mode="area"),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_float32_upsampling_matches_torch_at_larger_size():
    x = np.random.default_rng(0).standard_normal((2, 3, 17, 13)).astype(np.float32)
    for kw in (dict(scale_factor=2.5, mode="bilinear"), dict(size=(40, 9), mode="nearest"),
               dict(size=(31, 29), mode="bilinear", align_corners=True),
               dict(scale_factor=1.7, mode="bicubic"),
               dict(size=(9, 40), mode="bicubic", align_corners=True)):
        mine = F.interpolate(ember.from_numpy(x), **kw)
        ref = TF.interpolate(torch.from_numpy(x), **kw)
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_antialiased_resizing_matches_torch_over_many_sizes():
    rng = np.random.default_rng(1)
    for trial in range(60):
        h, w, oh, ow = (int(v) for v in rng.integers(2, 40, 4))  # (torch miscomputes width 1)
        mode = ("bilinear", "bicubic", "lanczos")[trial % 3]
        x = rng.standard_normal((1, 2, h, w)).astype(np.float32)
        kw = dict(size=(oh, ow), mode=mode, antialias=True)
        np.testing.assert_allclose(F.interpolate(ember.from_numpy(x), **kw).numpy(),
                                   TF.interpolate(torch.from_numpy(x), **kw).numpy(),
                                   rtol=1e-5, atol=1e-5)


def test_interpolate_errors():
    x = ember.randn(1, 2, 4, 4)
    with pytest.raises(ValueError, match="exactly one of size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(ember.ShapeError, match="needs a 4-D input"):
        F.interpolate(ember.randn(1, 2, 4), scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="'lanczos' needs antialias=True"):
        F.interpolate(x, scale_factor=2, mode="lanczos")
    with pytest.raises(ValueError, match="antialias=True needs mode bilinear, bicubic or lanc"):
        F.interpolate(x, scale_factor=2, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="does not support align_corners=True"):
        F.interpolate(x, scale_factor=2, mode="lanczos", antialias=True, align_corners=True)
    with pytest.raises(ember.ShapeError, match="'bicubic' needs a 4-D input"):
        F.interpolate(ember.randn(1, 2, 4, 4, 4), scale_factor=2, mode="bicubic")
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an "
                       "explicit size"):
        F.interpolate(x, size=3, recompute_scale_factor=True)
    for mode in ("nearest", "bilinear", "area"):                   # an empty spatial axis
        for dtype in (ember.float32, ember.uint8):
            with pytest.raises(ember.ShapeError, match=r"input sizes \(0, 4\) and output "
                               r"sizes \(3, 3\) should be greater than 0"):
                F.interpolate(ember.zeros(1, 1, 0, 4, dtype=dtype), size=3, mode=mode)


def _uint8_case(rng, trial):
    """A random uint8 resize: 1-4 channels (torch's generic kernel, used beyond 4, fills a
    width-1 output from the first column), sizes or scale factors, all four flags."""
    h, w = (int(v) for v in rng.integers(1, 20, 2))
    x = rng.integers(0, 256, (int(rng.integers(1, 3)), int(rng.integers(1, 5)), h, w),
                     dtype=np.uint8)
    kw = dict(mode=("bilinear", "bicubic")[trial % 2], antialias=bool(trial // 2 % 2),
              align_corners=(None, False, True)[trial % 3])
    if trial % 5 == 0:
        kw["scale_factor"] = tuple(float(s) for s in rng.uniform(0.4, 2.5, 2))
        kw["recompute_scale_factor"] = bool(trial % 2)
        if int(h * kw["scale_factor"][0]) < 1 or int(w * kw["scale_factor"][1]) < 1:
            kw["scale_factor"] = 1.5
    else:
        kw["size"] = tuple(int(s) for s in rng.integers(1, 26, 2))
    return x, kw


@pytest.fixture(params=["numba", "numpy"])
def uint8_path(request):
    """Runs a test with the uint8 resampling's numba kernel (where numba runs) and with its
    NumPy twin."""
    from ember.backend import compiled

    saved = compiled.numba_enabled()
    compiled.use_numba(saved and request.param == "numba")
    yield request.param
    compiled.use_numba(saved)


def test_uint8_resizing_equals_torch_element_for_element(uint8_path):
    rng = np.random.default_rng(2)
    for trial in range(240):
        x, kw = _uint8_case(rng, trial)
        mine = F.interpolate(ember.from_numpy(x), **kw)
        ref = TF.interpolate(torch.from_numpy(x), **kw).numpy()
        assert mine.dtype is ember.uint8, kw
        np.testing.assert_array_equal(mine.numpy(), ref, err_msg=f"{x.shape} {kw}")
    batched = ember.vmap(lambda t: F.interpolate(t, size=(4, 9), mode="bicubic"))(
        ember.from_numpy(x[:, None]))                              # and under vmap
    np.testing.assert_array_equal(batched.numpy()[:, 0], TF.interpolate(
        torch.from_numpy(x), size=(4, 9), mode="bicubic").numpy())
    for mode in ("nearest", "nearest-exact"):
        x = rng.integers(0, 256, (2, 3, 5, 7), dtype=np.uint8)
        np.testing.assert_array_equal(
            F.interpolate(ember.from_numpy(x), size=(9, 4), mode=mode).numpy(),
            TF.interpolate(torch.from_numpy(x), size=(9, 4), mode=mode).numpy())
    with pytest.raises(TypeError, match="needs a floating input \\(or uint8 for bilinear"):
        F.interpolate(ember.zeros(1, 1, 2, 2, dtype=ember.int32), size=3, mode="bilinear")
    with pytest.raises(TypeError, match="'linear' needs a floating input"):
        F.interpolate(ember.zeros(1, 1, 2, dtype=ember.uint8), size=3, mode="linear")


PLANAR = (((2, 3, 7, 9), {"scale_factor": 2}), ((1, 2, 16, 5), {"size": (11, 3)}))
ADJOINT_CASES = {  # (area is adaptive pooling: it never reaches the kernel)
    "nearest": PLANAR, "nearest-exact": PLANAR, "bilinear": PLANAR, "bicubic": PLANAR,
    "linear": (((2, 3, 9), {"scale_factor": 2}), ((1, 2, 16), {"size": 11})),
    "trilinear": (((1, 2, 3, 4, 5), {"scale_factor": 2}), ((1, 2, 6, 5, 4), {"size": (4, 7, 3)})),
}


@pytest.mark.parametrize("mode", list(ADJOINT_CASES))
def test_adjoint_by_numba_equals_numpy_and_torch(mode, monkeypatch):
    """resample_transpose's numba kernel (one pass, each output position's taps in order) and
    its NumPy twin (add.reduceat over runs) give the same gradient, torch's to rounding."""
    from ember.ops import interpolate
    rng = np.random.default_rng(0)
    for dtype, tol in ((np.float32, 1e-6), (np.float64, 1e-13)):
        for shape, kw in ADJOINT_CASES[mode]:
            a = rng.standard_normal(shape).astype(dtype)
            grads = []
            for numba in (True, False):
                if not numba:
                    monkeypatch.setattr(interpolate, "_transposed_in_numba", lambda *a: None)
                x = ember.from_numpy(a).requires_grad_()
                y = F.interpolate(x, mode=mode, **kw)
                w = np.random.default_rng(1).standard_normal(tuple(y.shape)).astype(dtype)
                (y * ember.from_numpy(w)).sum().backward()
                grads.append(x.grad.numpy())
            monkeypatch.undo()
            xt = torch.from_numpy(a).requires_grad_()
            (TF.interpolate(xt, mode=mode, **kw) * torch.from_numpy(w)).sum().backward()
            np.testing.assert_allclose(grads[0], grads[1], rtol=tol, atol=tol)
            np.testing.assert_allclose(grads[0], xt.grad.numpy(), rtol=tol, atol=tol)


def test_uint8_resizing_of_larger_images_equals_torch(uint8_path):
    # images large enough to be shared among threads, contiguous and channels-last, down and
    # up, 1-4 channels (the width pass runs on transposed rows, the height pass on whole rows)
    rng = np.random.default_rng(50)
    for trial in range(24):
        n, c = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        h, w = (int(v) for v in rng.integers(40, 160, 2))
        x = rng.integers(0, 256, (n, c, h, w), dtype=np.uint8)
        if trial % 3 == 0:
            x = (x > 127).astype(np.uint8) * 255  # sharp edges: overshoot saturates
        kw = dict(size=tuple(int(v) for v in rng.integers(8, 200, 2)),
                  mode=("bilinear", "bicubic")[trial % 2], antialias=bool(trial // 2 % 2))
        tx, ex = torch.from_numpy(x), ember.from_numpy(x)
        if trial % 4 == 3:
            tx = tx.contiguous(memory_format=torch.channels_last)
            ex = ex.contiguous(memory_format=ember.channels_last)
        mine = F.interpolate(ex, **kw).numpy()
        np.testing.assert_array_equal(mine, TF.interpolate(tx, **kw).numpy(),
                                      err_msg=f"{x.shape} {kw}")


@pytest.mark.parametrize("mode,shape,scale", [
    ("linear", (2, 3, 6), 1.1), ("bilinear", (2, 3, 6, 5), (1.1, 2.0)),
    ("bilinear", (1, 2, 6, 6), (2.0, 1.1)), ("trilinear", (1, 2, 6, 4, 5), (1.1, 1.5, 1.16)),
    ("bicubic", (1, 2, 6, 5), (1.1, 1.7))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scale_factor_keeping_a_size_matches_torch(mode, shape, scale, dtype):
    """An axis whose size a scale_factor keeps (6 * 1.1 -> 6): linear modes copy it, as
    PyTorch does; bicubic resamples it by 1 / scale (PyTorch's forward), values and grads."""
    x = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    tx, ex = torch.from_numpy(x).requires_grad_(), ember.from_numpy(x).requires_grad_()
    ty, ey = TF.interpolate(tx, scale_factor=scale, mode=mode), \
        F.interpolate(ex, scale_factor=scale, mode=mode)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    if mode == "bicubic":
        return  # torch's bicubic backward copies such an axis, against its own forward
    w = np.random.default_rng(8).standard_normal(tuple(ty.shape)).astype(dtype)
    (ty * torch.from_numpy(w)).sum().backward()
    (ey * ember.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape,scale", [((1, 2, 2, 2), 2.4), ((1, 2, 9, 2), (2.0, 2.4)),
                                         ((1, 2, 6, 5), (1.1, 1.6)), ((2, 1, 6), 1.1),
                                         ((1, 1, 6, 3, 2), (1.1, 2.4, 1.0))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nearest_scale_factor_doubling_or_keeping_a_size_matches_torch(shape, scale, dtype):
    """torch 2.13's nearest: in 2-D an axis the scale_factor keeps (6 * 1.1 -> 6) is copied and
    one it doubles (2 * 2.4 -> 4) reads i // 2; in 1-D and 3-D its forward uses 1 / scale."""
    x = np.random.default_rng(9).standard_normal(shape).astype(dtype)
    tx, ex = torch.from_numpy(x).requires_grad_(), ember.from_numpy(x).requires_grad_()
    ty = TF.interpolate(tx, scale_factor=scale, mode="nearest")
    ey = F.interpolate(ex, scale_factor=scale, mode="nearest")
    np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
    if len(shape) == 4:  # (torch's 1-D and 3-D backward take the 2-D indices, not its forward's)
        w = np.random.default_rng(10).standard_normal(tuple(ty.shape)).astype(dtype)
        (ty * torch.from_numpy(w)).sum().backward()
        (ey * ember.from_numpy(w)).sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_shortcuts_are_claimed_for_every_size_and_scale_that_needs_them():
    """resample_shortcuts says no only where no size can be kept (1 <= f < 2) or doubled
    (2 < f < 3): the dynamic ONNX graph leaves those branches out on its word. Checked at the
    ends' neighbouring floats, over small sizes, powers of two and their neighbours."""
    from ember.ops.interpolate import resample_shortcuts
    ends = [np.nextafter(e, d) for e in (1.0, 2.0, 3.0) for d in (0.0, 4.0)] + [1.0, 2.0, 3.0]
    scales = ends + [0.5, 0.99, 1.1, 1.5, 1.9999, 2.4, 2.9999, 3.5]
    sizes = list(range(1, 300)) + [2**k + d for k in range(9, 53) for d in (-1, 0, 1)]
    for f in map(float, scales):
        for s in sizes:
            out = math.floor(s * f)  # (as _sizes)
            copies = resample_shortcuts("linear", 1, f)[0]
            assert copies or out != s, (s, f)
            assert resample_shortcuts("nearest", 2, f)[1] or out != 2 * s or f == 2, (s, f)
        assert resample_shortcuts("linear", 1, f)[0] == (1 <= f < 2)
        assert resample_shortcuts("nearest", 2, f)[1] == (2 < f < 3)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_index_at_exact_boundaries_matches_torch(mode, nd, dtype):
    """A source coordinate that is an integer in exact arithmetic (nearest-exact 2 -> 41:
    (20 + 0.5)·2/41 = 1; nearest in float64 2 -> 82: 41·2/82) rounds as torch's kernels: its
    1-D and 3-D one computes it in the input's precision (ratio·(o + 0.5) - 0.5 in one
    rounding, then + 0.5) and rounds to float32 (reads 1); its 2-D one in float32 (reads 0).
    Ember read 0 in all three. The gradient is the forward's adjoint (torch's 1-D/3-D
    backward takes its 2-D indices, so its gradient there is not its forward's). sweep62j"""
    for n, m in [(2, 41), (2, 47), (4, 49), (2, 103), (7, 61), (2, 82), (2, 94), (3, 123)]:
        x = np.random.default_rng(n * m).standard_normal((1, 2) + (2,) * (nd - 1) + (n,))
        size = (3,) * (nd - 1) + (m,)
        out = F.interpolate(ember.tensor(x).to(getattr(ember, dtype)), size=size,
                            mode=mode)
        ref = TF.interpolate(torch.tensor(x).to(getattr(torch, dtype)), size=size, mode=mode)
        np.testing.assert_array_equal(out.float().numpy(), ref.float().numpy())
