"""PIL images go through the v1 transforms and image functions as their arrays and come back
as PIL images of their mode, as torchvision's PIL inputs do."""

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as TF

RNG = np.random.default_rng(0)
RGB = Image.fromarray(RNG.integers(0, 256, (20, 24, 3), dtype=np.uint8))

TRANSFORMS = [  # (grayscale: Pillow's own luma, and resizing: Pillow's resize, tested below)
    lambda: T.CenterCrop(10), lambda: T.RandomCrop(16, padding=2), lambda: T.RandomRotation(20),
    lambda: T.RandomAffine(10, (0.1, 0.1)),
    lambda: T.Pad(3, fill=7), lambda: T.GaussianBlur(3),
    lambda: T.AutoAugment(), lambda: T.RandAugment(), lambda: T.TrivialAugmentWide(),
    lambda: T.AugMix(), lambda: T.RandomInvert(1.0), lambda: T.RandomEqualize(1.0),
    lambda: T.RandomPosterize(4, 1.0), lambda: T.RandomSolarize(100, 1.0),
    lambda: T.RandomAutocontrast(1.0), lambda: T.RandomAdjustSharpness(2.0, 1.0),
    lambda: T.RandomHorizontalFlip(1.0), lambda: T.RandomVerticalFlip(1.0),
    lambda: T.ElasticTransform(20.0, 2.0), lambda: T.FiveCrop(8), lambda: T.TenCrop(8),
]


@pytest.mark.parametrize("make", TRANSFORMS)
def test_transform_of_a_pil_image_is_the_transform_of_its_array(make):
    ember.manual_seed(3)
    got = make()(RGB)
    ember.manual_seed(3)
    want = make()(np.asarray(RGB))
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        w = w[:, :, 0] if w.ndim == 3 and w.shape[2] == 1 else w  # (one channel: mode "L")
        assert isinstance(g, Image.Image)
        assert np.array_equal(np.asarray(g), w)
        assert g.mode == ("L" if w.ndim == 2 else "RGB")


@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA", "F"])
def test_functions_keep_the_mode(mode):
    img = RGB.convert(mode)
    for out in (TF.resize(img, 10), TF.hflip(img), TF.rotate(img, 30.0), TF.pad(img, 2),
                TF.center_crop(img, 8)):
        assert isinstance(out, Image.Image) and out.mode == mode
    assert TF.get_dimensions(img) == [len(img.getbands()), 20, 24]
    assert TF.get_image_size(img) == [24, 20]


def test_exact_where_pillow_moves_pixels_only():
    assert np.array_equal(np.asarray(TF.hflip(RGB)),
                          np.asarray(RGB.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))
    assert np.array_equal(np.asarray(TF.vflip(RGB)),
                          np.asarray(RGB.transpose(Image.Transpose.FLIP_TOP_BOTTOM)))
    assert np.array_equal(np.asarray(TF.crop(RGB, 2, 3, 10, 12)),
                          np.asarray(RGB.crop((3, 2, 15, 12))))
    # resizing is Pillow's own, as torchvision's PIL path
    pillow = np.asarray(RGB.resize((12, 10), Image.Resampling.BILINEAR))
    assert np.array_equal(np.asarray(TF.resize(RGB, (10, 12))), pillow)
    assert np.array_equal(np.asarray(T.Resize((10, 12))(RGB)), pillow)
    ember.manual_seed(3)
    crop = T.RandomResizedCrop(8)(RGB)
    ember.manual_seed(3)
    top, left, height, width = T.RandomResizedCrop.get_params(RGB, (0.08, 1.0), (3 / 4, 4 / 3))
    window = RGB.crop((left, top, left + width, top + height))
    assert np.array_equal(np.asarray(crop),
                          np.asarray(window.resize((8, 8), Image.Resampling.BILINEAR)))


def test_a_pipeline_from_pil_to_a_normalized_tensor():
    tf = T.Compose([T.Resize(16), T.CenterCrop(14), T.RandomHorizontalFlip(),
                    T.ColorJitter(0.2, 0.2), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)])
    out = tf(RGB)
    assert out.shape == (3, 14, 14) and out.dtype is ember.float32


def test_colours_of_l_and_rgb_pil_images_are_pillows():
    # as torchvision's PIL path: Pillow's enhancers, hue turned in Pillow's "HSV"
    from PIL import ImageEnhance

    for img in (RGB, RGB.convert("L")):
        assert np.array_equal(np.asarray(TF.adjust_brightness(img, 0.6)),
                              np.asarray(ImageEnhance.Brightness(img).enhance(0.6)))
        assert np.array_equal(np.asarray(TF.adjust_contrast(img, 1.7)),
                              np.asarray(ImageEnhance.Contrast(img).enhance(1.7)))
    h, s, v = RGB.convert("HSV").split()
    turned = Image.fromarray(((np.asarray(h).astype(int) + int(0.2 * 255)) % 256).astype(np.uint8))
    want = Image.merge("HSV", (turned, s, v)).convert("RGB")
    assert np.array_equal(np.asarray(TF.adjust_hue(RGB, 0.2)), np.asarray(want))
    assert np.array_equal(np.asarray(T.ColorJitter(saturation=(0.4, 0.4))(RGB)),
                          np.asarray(ImageEnhance.Color(RGB).enhance(0.4)))


def test_random_perspective_of_a_pil_image_is_pillows():
    # bilinear warps of PIL images are Pillow's, as torchvision's PIL path
    from ember.vision.transforms.warp import _perspective_coeffs

    ember.manual_seed(3)
    got = T.RandomPerspective(p=1.0)(RGB)
    ember.manual_seed(3)
    ember.rand(1)  # the coin RandomPerspective tosses first
    starts, ends = T.RandomPerspective.get_params(24, 20, 0.5)
    want = RGB.transform(RGB.size, Image.Transform.PERSPECTIVE, _perspective_coeffs(starts, ends),
                         Image.Resampling.BILINEAR)
    assert np.array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("mode", ["P", "1"])
def test_palette_and_bilevel_images_are_refused_with_a_hint(mode):
    with pytest.raises(TypeError, match=r"convert\('RGB'\)"):
        T.GaussianBlur(3)(RGB.convert(mode))
    with pytest.raises(TypeError, match="hflip"):
        TF.hflip(RGB.convert(mode))
    # the resampling functions hand them to Pillow, as torchvision does
    assert TF.resize(RGB.convert(mode), 8).mode == mode
    assert T.RandomRotation(8)(RGB.convert(mode)).mode == mode


def test_v2_transforms_take_pil_images_with_boxes():
    from ember.vision import tv_tensors
    from ember.vision.transforms import v2

    boxes = tv_tensors.BoundingBoxes([[0, 0, 10, 10]], format="XYXY", canvas_size=(20, 24))
    image, moved = v2.RandomHorizontalFlip(1.0)(RGB, boxes)
    assert isinstance(image, Image.Image) and moved.tolist() == [[14, 0, 24, 10]]
    assert np.array_equal(np.asarray(image), np.asarray(TF.hflip(RGB)))
    image, moved = v2.Resize(10)(RGB, boxes)
    assert image.size == (12, 10) and moved.canvas_size == (10, 12)
    assert v2.ToImage()(RGB).shape == (3, 20, 24)


def test_16_bit_images_keep_their_mode():
    img = Image.fromarray(RNG.integers(0, 65536, (6, 5), dtype=np.uint16))
    assert img.mode == "I;16"
    for out, want in ((TF.hflip(img), np.asarray(img)[:, ::-1]),
                      (TF.crop(img, 1, 1, 3, 2), np.asarray(img)[1:4, 1:3]),
                      (T.Pad(1, padding_mode="edge")(img), np.pad(np.asarray(img), 1, "edge"))):
        assert out.mode == "I;16" and np.array_equal(np.asarray(out), want)


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "LA", "YCbCr", "HSV", "CMYK", "P"])
def test_grayscale_of_a_pil_image_is_pillows_luma_of_any_mode(mode):
    img = RGB.convert(mode)  # as torchvision's to_grayscale: img.convert("L"), 3 bands as "RGB"
    luma = np.asarray(img.convert("L"))
    one, three = T.Grayscale()(img), TF.rgb_to_grayscale(img, 3)
    assert one.mode == "L" and np.array_equal(np.asarray(one), luma)
    assert three.mode == "RGB" and np.array_equal(np.asarray(three), np.dstack([luma] * 3))
    with pytest.raises(ValueError, match="num_output_channels"):
        T.Grayscale(2)(img)


def test_random_grayscale_of_a_pil_image_keeps_its_bands():
    out = T.RandomGrayscale(1.0)(RGB)
    assert out.mode == "RGB" and np.array_equal(np.asarray(out)[:, :, 0], RGB.convert("L"))
    assert T.RandomGrayscale(1.0)(RGB.convert("L")).mode == "L"


def test_v2_grayscale_of_a_pil_image_is_pillows_luma_too():
    from ember.vision.transforms import v2

    for mode in ("L", "RGB", "YCbCr"):
        img = RGB.convert(mode)
        one, three = v2.Grayscale()(img), v2.Grayscale(3)(img)
        assert one.mode == "L" and np.array_equal(np.asarray(one), np.asarray(img.convert("L")))
        assert three.mode == "RGB" and np.array_equal(np.asarray(three)[:, :, 2], one)


def test_the_image_may_be_given_by_keyword():
    assert np.array_equal(np.asarray(TF.hflip(img=RGB)), np.asarray(TF.hflip(RGB)))
    assert TF.resize(img=RGB, size=10).size == (12, 10)


@pytest.mark.parametrize("mode", ["YCbCr", "HSV"])
def test_colour_of_a_non_rgb_pil_image_is_changed_in_rgb(mode):
    img = RGB.convert(mode)  # desaturated: gray pixels (Cb = Cr = 128 or S = 0), mode kept
    for out in (TF.adjust_saturation(img, 0.0), T.ColorJitter(saturation=(0.0, 0.0))(img)):
        assert out.mode == mode
        chroma = np.asarray(out).astype(int)[:, :, 1:] if mode == "YCbCr" else \
            np.asarray(out)[:, :, 1:2].astype(int) + 128
        assert np.abs(chroma - 128).max() <= 1
