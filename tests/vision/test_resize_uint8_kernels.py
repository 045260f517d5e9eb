"""uint8 images through resize, against torch 2.13's uint8 interpolate kernels: lanczos in
F.interpolate, and transforms.v2 resize, which hands uint8 to those kernels as torchvision
0.28's v2 does on CPU (v1 resamples in float32 and rounds)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError
from ember.vision.transforms import InterpolationMode
from ember.vision.transforms import functional as V1
from ember.vision.transforms.v2 import functional as V2


def _image(rng, shape):
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    return x if rng.integers(3) else (x > 127).astype(np.uint8) * 255  # edges overshoot


def test_uint8_lanczos_interpolate_equals_torch():
    rng = np.random.default_rng(7)
    for trial in range(60):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        x = _image(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 5)), h, w))
        kw = dict(mode="lanczos", antialias=True)
        if trial % 4 == 0:
            kw["scale_factor"] = tuple(float(s) for s in rng.uniform(1.0, 2.5, 2))
        else:
            kw["size"] = tuple(int(s) for s in rng.integers(1, 45, 2))
        tx, ex = torch.from_numpy(x), ember.from_numpy(x)
        if trial % 2:
            tx = tx.contiguous(memory_format=torch.channels_last)
            ex = ex.contiguous(memory_format=ember.channels_last)
        mine = F.interpolate(ex, **kw)
        assert mine.dtype is ember.uint8
        np.testing.assert_array_equal(mine.numpy(), TF.interpolate(tx, **kw).numpy(),
                                      err_msg=f"{x.shape} {kw}")


def test_uint8_channels_last_stays_channels_last_and_equals_torch():
    rng = np.random.default_rng(8)
    for mode in ("bilinear", "bicubic", "lanczos"):
        for antialias in (False, True) if mode != "lanczos" else (True,):
            x = _image(rng, (2, 3, 13, 17))
            kw = dict(size=(6, 29), mode=mode, antialias=antialias)
            ex = ember.from_numpy(x).contiguous(memory_format=ember.channels_last)
            mine = F.interpolate(ex, **kw)
            assert mine.is_contiguous(memory_format=ember.channels_last)
            ref = TF.interpolate(torch.from_numpy(x).contiguous(
                memory_format=torch.channels_last), **kw)
            np.testing.assert_array_equal(mine.numpy(), ref.numpy(), err_msg=str(kw))


def _torch_v2(x, size, mode, antialias):
    """torchvision 0.28 v2's resize of a uint8 image on CPU: torch's uint8 kernels."""
    t = torch.from_numpy(x)
    out = TF.interpolate(t.reshape(-1, *t.shape[-3:]), size=size, mode=mode,
                         align_corners=False, antialias=antialias)
    return out.reshape(*t.shape[:-2], *size).numpy()


def test_v2_resize_of_uint8_uses_the_uint8_kernels():
    x = np.random.default_rng(0).integers(0, 256, (1, 3, 10, 2)).astype(np.uint8)[0]
    got = V2.resize(ember.from_numpy(x), [3, 8], InterpolationMode.BICUBIC, antialias=False)
    np.testing.assert_array_equal(got.numpy(), _torch_v2(x, (3, 8), "bicubic", False))
    rng = np.random.default_rng(9)
    for trial in range(90):
        mode = ("bilinear", "bicubic", "lanczos")[trial % 3]
        antialias = mode == "lanczos" or bool(trial // 3 % 2)
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        x = _image(rng, ((3, h, w), (2, 3, h, w), (1, h, w))[trial % 3])
        size = tuple(int(s) for s in rng.integers(1, 45, 2))
        got = V2.resize(ember.from_numpy(x), list(size), InterpolationMode(mode),
                        antialias=antialias)
        assert got.dtype is ember.uint8
        np.testing.assert_array_equal(got.numpy(), _torch_v2(x, size, mode, antialias),
                                      err_msg=f"{x.shape} {size} {mode} {antialias}")


def test_v1_resize_of_uint8_stays_the_float_path():
    x = np.random.default_rng(0).integers(0, 256, (1, 3, 10, 2)).astype(np.uint8)[0]
    got = V1.resize(ember.from_numpy(x), [3, 8], InterpolationMode.BICUBIC, antialias=False)
    ref = TF.interpolate(torch.from_numpy(x)[None].float(), size=(3, 8), mode="bicubic",
                         align_corners=False)[0].clamp(0, 255).round().to(torch.uint8)
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    with pytest.raises(ArgumentError, match="Pillow's"):
        V1.resize(ember.from_numpy(x), [3, 8], InterpolationMode.LANCZOS)


def test_v2_resize_lanczos_of_a_float_image():
    x = np.random.default_rng(3).random((3, 11, 14)).astype(np.float32)
    got = V2.resize(ember.from_numpy(x), [5, 20], InterpolationMode.LANCZOS)
    ref = TF.interpolate(torch.from_numpy(x)[None], size=(5, 20), mode="lanczos",
                         align_corners=False, antialias=True)[0]
    np.testing.assert_allclose(got.numpy(), ref.numpy(), atol=1e-5)
    with pytest.raises(ArgumentError, match="LANCZOS requires antialias=True"):
        V2.resize(ember.from_numpy(x), [5, 20], InterpolationMode.LANCZOS, antialias=False)
    with pytest.raises(ArgumentError, match="Pillow's"):
        V2.resize(ember.from_numpy(x), [5, 20], InterpolationMode.BOX)
