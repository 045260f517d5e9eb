"""PIL images of every mode: the colour functions give images of 2 or 4 bands ("RGBA", "LA",
"CMYK", "RGBX") to Pillow as torchvision does (checked against Pillow's enhancers and an
independent HSV/gamma recipe), and the resampling functions take 16-bit and 32-bit images
("I;16", "I") and "F", equal to the float computation rounded back."""

import numpy as np
import pytest
from PIL import Image, ImageEnhance

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as TF
from ember.vision.transforms import v2
from ember.vision.transforms.v2 import functional as F

RNG = np.random.default_rng(0)
RGBA = Image.fromarray(RNG.integers(0, 256, (9, 11, 4), dtype=np.uint8), "RGBA")
BANDED = ["RGBA", "LA", "CMYK", "RGBX"]


def _image(mode):
    return RGBA.convert(mode)


@pytest.mark.parametrize("mode", BANDED)
@pytest.mark.parametrize("fn, kind, factor", [
    (TF.adjust_brightness, "Brightness", 0.6), (TF.adjust_contrast, "Contrast", 1.7),
    (TF.adjust_saturation, "Color", 0.3), (TF.adjust_sharpness, "Sharpness", 2.5),
    (F.adjust_brightness, "Brightness", 1.4), (F.adjust_saturation, "Color", 1.5),
])
def test_enhancers_are_pillows(mode, fn, kind, factor):
    img = _image(mode)
    out = fn(img, factor)
    expected = getattr(ImageEnhance, kind)(img).enhance(factor)
    assert out.mode == mode and np.array_equal(np.asarray(out), np.asarray(expected))
    if "A" in img.getbands():  # the alpha band is kept
        assert np.array_equal(np.asarray(out.getchannel("A")), np.asarray(img.getchannel("A")))


@pytest.mark.parametrize("mode", BANDED)
def test_hue_and_gamma_as_torchvision_through_pillow(mode):
    img = _image(mode)
    h, s, v = img.convert("HSV").split()
    turned = ((np.asarray(h).astype(np.int64) + int(0.2 * 255)) % 256).astype(np.uint8)
    expected = Image.merge("HSV", (Image.fromarray(turned), s, v)).convert(mode)
    out = TF.adjust_hue(img, 0.2)
    assert out.mode == mode and np.array_equal(np.asarray(out), np.asarray(expected))
    levels = np.floor((256 - 1e-3) * 0.9 * (np.arange(256) / 255.0) ** 0.5).astype(np.uint8)
    expected = Image.fromarray(levels[np.asarray(img.convert("RGB"))]).convert(mode)
    out = TF.adjust_gamma(img, 0.5, 0.9)
    assert out.mode == mode and np.array_equal(np.asarray(out), np.asarray(expected))
    with pytest.raises(ValueError, match="not in"):
        TF.adjust_hue(img, 0.7)
    with pytest.raises(ValueError, match="not non-negative"):
        TF.adjust_brightness(img, -1.0)


@pytest.mark.parametrize("mode", BANDED)
def test_colour_transforms_take_banded_images(mode):
    img = _image(mode)
    for t in (T.ColorJitter(0.4, 0.4, 0.4, 0.1), v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
              T.RandomAdjustSharpness(2.0, p=1.0), v2.RandomPhotometricDistort(p=1.0),
              T.RandomInvert(p=1.0)):
        assert t(img).mode == mode


def _wide(mode):
    ys, xs = np.mgrid[:24, :30]
    values = xs * 1500 + ys * 700
    if mode == "I;16":
        return Image.fromarray(values.astype(np.uint16)), np.float32  # as torchvision
    if mode == "I":
        return Image.fromarray((values * 40).astype(np.int32), "I"), np.float64
    return Image.fromarray((values / 3.0).astype(np.float32), "F"), np.float32


RESAMPLERS = {
    "resize": lambda x: TF.resize(x, [12, 17]),
    "rotate": lambda x: TF.rotate(x, 30.0, TF.InterpolationMode.BILINEAR),
    "affine": lambda x: TF.affine(x, 10.0, [2, 1], 0.9, [4.0, 0.0],
                                  TF.InterpolationMode.BILINEAR),
    "perspective": lambda x: TF.perspective(x, [[0, 0], [29, 0], [29, 23], [0, 23]],
                                            [[2, 1], [28, 0], [27, 22], [0, 23]]),
    "gaussian_blur": lambda x: TF.gaussian_blur(x, 5, 1.5),
    "elastic": lambda x: TF.elastic_transform(x, ember.full((1, 24, 30, 2), 0.05)),
    "v2_perspective": lambda x: F.perspective(x, [[0, 0], [29, 0], [29, 23], [0, 23]],
                                              [[2, 1], [28, 0], [27, 22], [0, 23]]),
}


PILLOW_WARPS = {"rotate", "affine", "perspective", "v2_perspective"}  # Pillow's, but for I;16


@pytest.mark.parametrize("mode", ["I;16", "I", "F"])
@pytest.mark.parametrize("name", RESAMPLERS)
def test_wide_images_resample_in_float(mode, name):
    if name in PILLOW_WARPS and mode != "I;16":
        pytest.skip("warped by Pillow, as torchvision: test_warps_of_pil_images_are_pillows")
    img, compute = _wide(mode)
    out = RESAMPLERS[name](img)
    assert out.mode == mode
    floats = RESAMPLERS[name](np.asarray(img).astype(compute))
    expected = floats if mode == "F" else np.clip(np.round(floats), 0, None)
    np.testing.assert_allclose(np.asarray(out).astype(np.float64), expected, rtol=1e-6,
                               atol=1e-3 if mode == "F" else 0.5)


@pytest.mark.parametrize("mode", ["I", "F", "L", "RGBA"])
def test_warps_of_pil_images_are_pillows(mode):
    # torchvision's PIL path: Pillow's rotate and transform, torchvision's coefficients
    img = _wide(mode)[0] if mode in ("I", "F") else RGBA.convert(mode)
    bilinear = Image.Resampling.BILINEAR
    rotated = img.rotate(30.0, bilinear, True, None, fillcolor=(
        5.0 if mode == "F" else 5 if mode != "RGBA" else (5, 5, 5, 5)))
    assert np.array_equal(np.asarray(TF.rotate(img, 30.0, TF.InterpolationMode.BILINEAR, True,
                                               fill=5)), np.asarray(rotated))
    w, h = img.size
    corners = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
    moved = [[1, 0], [w - 1, 1], [w - 2, h - 1], [0, h - 2]]
    from ember.vision.transforms.warp import _perspective_coeffs

    warped = img.transform(img.size, Image.Transform.PERSPECTIVE,
                           _perspective_coeffs(corners, moved), bilinear)
    for fn in (TF.perspective, F.perspective):
        assert np.array_equal(np.asarray(fn(img, corners, moved)), np.asarray(warped))
    shifted = img.transform(img.size, Image.Transform.AFFINE, [1, 0, -2, 0, 1, -1])
    assert np.array_equal(np.asarray(TF.affine(img, 0.0, [2, 1], 1.0, 0.0)), np.asarray(shifted))


@pytest.mark.parametrize("mode", ["I;16", "I", "F"])
def test_wide_resize_agrees_with_pillow(mode):
    img, _ = _wide(mode)
    ours = np.asarray(TF.resize(img, [12, 15])).astype(np.float64)
    pillows = np.asarray(img.resize((15, 12), Image.BILINEAR)).astype(np.float64)
    np.testing.assert_allclose(ours, pillows, atol=1.0, rtol=1e-5)


def test_wide_integer_tensors_resample_as_torchvision_tensors():
    x = ember.tensor([[[0, 1000], [2000, 3000]]], dtype=ember.int32)
    assert TF.resize(x, [1, 1], antialias=True).tolist() == [[[1500]]]
    assert TF.rotate(x, 180).tolist() == [[[3000, 2000], [1000, 0]]]
    u16 = ember.tensor([[[65535, 0]]], dtype=ember.uint16)
    assert TF.gaussian_blur(u16, [3, 1], 0.5).dtype is ember.uint16
    # the colour functions take them too, in [0, max] of the dtype (as torchvision's tensors)
    assert TF.adjust_brightness(x, 1.5).tolist() == [[[0, 1500], [3000, 4500]]]
