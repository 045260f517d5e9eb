"""numba's im2col loop (a convolution's columns, padding never copied) against NumPy's windows
and PyTorch's convolution, in every layout it reads."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.backend import compiled
from ember.ops.im2col import Unfold

GEOMETRIES = [
    dict(kernel_size=(3, 3), dilation=(1, 1), padding=((1, 1), (1, 1)), stride=(1, 1)),
    dict(kernel_size=(3, 2), dilation=(2, 1), padding=((2, 2), (0, 0)), stride=(2, 3)),
    dict(kernel_size=(1, 1), dilation=(1, 1), padding=((0, 0), (0, 0)), stride=(2, 2)),
    dict(kernel_size=(4, 4), dilation=(1, 1), padding=((3, 3), (3, 3)), stride=(1, 1)),
    dict(kernel_size=(3, 3), dilation=(1, 1), padding=((1, 0), (1, -1)), stride=(1, 1)),
]


def _layouts(x):
    """The same values in the layouts a convolution meets: NCHW, channels-last, a strided
    view, and read-only."""
    channels_last = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    strided = np.repeat(x, 2, axis=3)[..., ::2]
    readonly = channels_last.copy()
    readonly.flags.writeable = False
    return {"nchw": x, "channels_last": channels_last, "strided": strided,
            "readonly": readonly}


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [1, 5])  # (one channel: a loop of its own)
def test_numba_columns_equal_numpys_windows(geometry, dtype, channels):
    pytest.importorskip("numba")
    x = np.random.default_rng(0).standard_normal((3, channels, 9, 8)).astype(dtype)
    saved = compiled.numba_enabled()
    try:
        compiled.use_numba(False)
        want = Unfold.forward(np, x, layout="nlc", **geometry)
        compiled.use_numba(True)
        for name, view in _layouts(x).items():
            got = Unfold.forward(np, view, layout="nlc", **geometry)
            assert got.dtype == dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
        assert compiled.numba_enabled()  # (a kernel that fails to load turns numba off)
    finally:
        compiled.use_numba(saved)


@pytest.mark.parametrize("channels", [1, 3, 16])
def test_conv2d_matches_torch_both_ways(numba_or_numpy, channels):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, channels, 11, 10)).astype(np.float32)
    w = rng.standard_normal((6, channels, 3, 3)).astype(np.float32)
    kwargs = dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))
    got = F.conv2d(ember.from_numpy(x), ember.from_numpy(w), **kwargs).numpy()
    want = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kwargs).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_gradients_in_float64_both_ways(numba_or_numpy):
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((2, 3, 6, 5)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((4, 3, 3, 2)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: F.conv2d(a, b, stride=2, padding=1), (x, w))


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("split", [False, True])
def test_numba_fold_sums_the_windows_as_numpys_canvas(monkeypatch, geometry, dtype, split):
    pytest.importorskip("numba")
    from ember.ops import im2col
    from ember.ops.im2col import Fold, window_positions

    served = []
    original = im2col._numba_fold
    monkeypatch.setattr(im2col, "_numba_fold",
                        lambda *a: served.append(original(*a)) or served[-1])
    if split:
        monkeypatch.setattr(im2col.parallel, "workers", lambda: 3)
        monkeypatch.setattr(im2col, "_FOLD_SHARE", 1000)
    size, channels = (9, 8), 64
    blocks = int(np.prod(window_positions(size, geometry["kernel_size"], geometry["dilation"],
                                          geometry["padding"], geometry["stride"])))
    k = int(np.prod(geometry["kernel_size"]))
    cols = np.random.default_rng(2).standard_normal((16, blocks, k * channels)).astype(dtype)
    got = Fold.forward(np, cols, output_size=size, layout="nlc", **geometry)
    assert served[-1] is not None and got.dtype == dtype
    saved = compiled.numba_enabled()
    compiled.use_numba(False)
    try:
        want = Fold.forward(np, cols.astype(np.float64), output_size=size, layout="nlc",
                            **geometry)
    finally:
        compiled.use_numba(saved)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-5 if dtype == np.float32 else 1e-12)
