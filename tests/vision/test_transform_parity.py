"""Values the torchvision-0.29.1 sweep (/work/fuzz/vision_tf) found different, checked here
against constants recorded from torchvision 0.29.1 (printed by running the same call there)
or computed by hand."""

import numpy as np
import pytest

import ember
from ember.vision import tv_tensors
from ember.vision.transforms import functional as TF
from ember.vision.transforms.v2 import functional as F


def test_affine_nearest_picks_torchvisions_pixel_on_half_pixel_ties():
    # scale 1.2 on a 9-wide row puts samples on half pixels; the grid is built in float32 as
    # torchvision's, so they round its way (recorded from torchvision 0.29.1's F.affine)
    x = ember.arange(18, dtype=ember.float32).reshape(1, 1, 2, 9)
    out = TF.affine(x, 0.0, [0, 0], 1.2, [0.0, 0.0])
    assert out[0, 0].tolist() == [[1, 2, 2, 3, 4, 5, 6, 6, 7], [10, 11, 11, 12, 13, 14, 15, 15, 16]]


@pytest.mark.parametrize("angle, turns", [(-90, 3), (90, 1), (270, 3), (180, 2), (360, 0)])
def test_v2_rotate_quarter_turns_are_exact(angle, turns):
    img = ember.arange(3 * 11 * 14, dtype=ember.float32).reshape(3, 11, 14)
    out = F.rotate(img, angle, expand=True)
    assert out.tolist() == np.rot90(img.numpy(), turns, axes=(-2, -1)).tolist()


def test_v2_rotate_minus_90_expand_canvas_is_the_turned_image():
    # v1 keeps torchvision v1's float32 size (11 x 14 turns into 15 x 12); v2 turns exactly,
    # and boxes and key points follow (recorded from torchvision 0.29.1)
    assert tuple(TF.rotate(ember.zeros(1, 11, 14), -90, expand=True).shape) == (1, 15, 12)
    assert tuple(F.rotate(ember.zeros(1, 11, 14), -90, expand=True).shape) == (1, 14, 11)
    boxes = tv_tensors.BoundingBoxes([[0, 0, 2, 1]], format="XYXY", canvas_size=(11, 14))
    out = F.rotate(boxes, -90, expand=True)
    assert out.tolist() == [[10, 0, 11, 2]] and out.canvas_size == (14, 11)
    points = F.rotate(tv_tensors.KeyPoints([[1.0, 2.0]], canvas_size=(11, 14)), -90, expand=True)
    assert points.tolist() == [[9.0, 1.0]] and points.canvas_size == (14, 11)
    mask = F.rotate(tv_tensors.Mask(ember.zeros(11, 14, dtype=ember.uint8)), -90, expand=True)
    assert tuple(mask.shape) == (14, 11)


def test_policy_magnitude_bins_are_float32_as_torchvisions():
    from ember.vision.transforms.autoaugment import _space

    bins, _ = _space(31, 0.99, (32.0, 32.0), 135.0, 0.99, 6)["TranslateX"]
    # torchvision's TrivialAugmentWide bins are torch.linspace(0.0, 32.0, 31); its items 14-16,
    # recorded from torch 2.14: 14.933334350585938, 15.999999046325684, 17.066665649414062
    assert bins[14:17].tolist() == [14.933334350585938, 15.999999046325684, 17.066665649414062]
    assert int(bins[15]) == 15  # 15 pixels, as torchvision shifts (16 in float64)


def _pil_gray():
    from PIL import Image

    return Image.fromarray(np.arange(9 * 12, dtype=np.uint8).reshape(9, 12))


def test_resize_of_a_pil_image_is_pillows():
    from PIL import Image

    img = _pil_gray()
    out = TF.resize(img, (5, 7), TF.InterpolationMode.NEAREST)
    # Pillow's nearest takes pixel centres (torch's NEAREST_EXACT), as torchvision's PIL path
    assert np.asarray(out)[0].tolist() == [0, 2, 4, 6, 7, 9, 11]
    rgba = Image.fromarray(np.random.default_rng(0).integers(0, 256, (9, 12, 4), np.uint8))
    for mode, pillow in [("BILINEAR", Image.BILINEAR), ("BOX", Image.BOX),
                         ("HAMMING", Image.HAMMING), ("LANCZOS", Image.LANCZOS)]:
        expected = np.asarray(rgba.resize((7, 5), pillow))  # premultiplied alpha for RGBA
        interpolation = getattr(TF.InterpolationMode, mode)
        assert np.array_equal(np.asarray(TF.resize(rgba, (5, 7), interpolation)), expected)
        assert np.array_equal(np.asarray(F.resize(rgba, (5, 7), interpolation)), expected)
    crop = F.resized_crop(rgba, 1, 2, 6, 7, (4, 9))
    assert np.array_equal(np.asarray(crop), np.asarray(rgba.crop((2, 1, 9, 7)).resize((9, 4),
                                                                                       Image.BILINEAR)))


def test_pillow_interpolation_constants_and_pil_only_modes():
    assert TF.InterpolationMode(2) is TF.InterpolationMode.BILINEAR
    assert TF.InterpolationMode(1) is TF.InterpolationMode.LANCZOS
    x = ember.rand(1, 6, 8)
    assert TF.resize(x, 3, 3).tolist() == TF.resize(x, 3, TF.InterpolationMode.BICUBIC).tolist()
    with pytest.raises(ValueError, match="resize: interpolation 'lanczos' is Pillow's"):
        TF.resize(x, 3, TF.InterpolationMode.LANCZOS)
    with pytest.raises(ValueError):
        TF.InterpolationMode(7)


def test_colour_functions_take_a_flat_image_as_one_channel():
    # torchvision's brightness/saturation/hue/gamma take (H, W) tensors; resize does not
    x = ember.rand(5, 4)
    assert TF.adjust_brightness(x, 0.5).tolist() == (x * 0.5).tolist()
    assert TF.adjust_hue(x, 0.2).tolist() == x.tolist()  # one channel has no hue
    assert TF.adjust_saturation(x, 0.3).tolist() == x.tolist()
    assert tuple(TF.adjust_gamma(x, 2.0).shape) == (5, 4)
    with pytest.raises(ValueError, match="resize"):
        TF.resize(x, 3)


def test_tensor_reflect_padding_wider_than_the_image_raises():
    # torch's reflect padding needs pad < size, symmetric pad <= size (torchvision's tensors)
    x = ember.arange(12.0).reshape(1, 3, 4)
    assert tuple(TF.pad(x, 3, padding_mode="symmetric").shape) == (1, 9, 10)
    assert tuple(TF.pad(x, (3, 0), padding_mode="reflect").shape) == (1, 3, 10)
    with pytest.raises(ValueError, match="reflect padding of 3 needs an image height of at le"):
        TF.pad(x, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="symmetric padding of 4"):
        TF.pad(x, 4, padding_mode="symmetric")
    assert np.asarray(TF.pad(np.zeros((3, 4), np.uint8), 5, padding_mode="reflect")).shape == \
        (13, 14)  # arrays, like PIL images, reflect repeatedly (NumPy's, as Pillow's path)


def test_to_grayscale_is_for_pil_images():
    from PIL import Image

    img = Image.new("RGB", (4, 2), (200, 10, 30))
    assert np.asarray(TF.to_grayscale(img)).tolist() == np.asarray(img.convert("L")).tolist()
    assert TF.to_grayscale(img, 3).mode == "RGB"
    with pytest.raises(TypeError, match="rgb_to_grayscale takes tensors"):
        TF.to_grayscale(ember.rand(3, 2, 2))


def test_sanitize_keeps_a_semantic_mask():
    # torchvision 0.29 filters per-box masks (N, H, W) only; a (H, W) mask passes through
    from ember.vision.transforms import v2

    boxes = tv_tensors.BoundingBoxes([[0, 0, 4, 4], [1, 1, 1, 3]], format="XYXY",
                                     canvas_size=(6, 8))
    semantic = tv_tensors.Mask(ember.ones(6, 8, dtype=ember.uint8))
    per_box = tv_tensors.Mask(ember.ones(2, 6, 8, dtype=ember.uint8))
    out = v2.SanitizeBoundingBoxes(labels_getter=None)(
        {"boxes": boxes, "semantic": semantic, "per_box": per_box})
    assert tuple(out["semantic"].shape) == (6, 8) and isinstance(out["semantic"], tv_tensors.Mask)
    assert tuple(out["per_box"].shape) == (1, 6, 8) and out["boxes"].tolist() == [[0, 0, 4, 4]]


def test_bad_sizes_raise_where_they_enter():
    from ember.vision import transforms as T

    # a 3-element size used to resize to (size[0], size[0]) silently
    with pytest.raises(ValueError, match=r"resize: size must be an int or a sequence of 1 or 2"):
        TF.resize(ember.zeros(3, 10, 12), [1, 2, 3])
    with pytest.raises(ValueError, match="GaussianBlur: kernel_size should be odd and positive"):
        T.GaussianBlur(0)
    with pytest.raises(ValueError, match="GaussianBlur: kernel_size"):
        T.GaussianBlur((3, 4))


def test_to_pil_image_of_int16_is_i16():
    # torchvision 0.29.1 gives mode "I;16" with the int16 bytes as levels: [[0, 300, 65534]]
    out = TF.to_pil_image(ember.tensor([[[0, 300, -2]]], dtype=ember.int16))
    assert out.mode == "I;16" and np.asarray(out).tolist() == [[0, 300, 65534]]


def test_sanitize_bounding_boxes_functional():
    # torchvision 0.29.1's F.sanitize_bounding_boxes gives valid [True, False, False, False, True]
    # for these boxes on a 6 x 8 canvas (degenerate, outside at x < 0, outside at x2 > 8)
    boxes = [[0, 0, 4, 4], [1, 1, 1, 3], [-1, 0, 3, 3], [2, 2, 9, 5], [1, 1, 2, 2.5]]
    kept, valid = F.sanitize_bounding_boxes(
        tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=(6, 8)))
    assert valid.tolist() == [True, False, False, False, True]
    assert isinstance(kept, tv_tensors.BoundingBoxes) and kept.tolist() == [[0, 0, 4, 4],
                                                                            [1, 1, 2, 2.5]]
    _, valid = F.sanitize_bounding_boxes(ember.tensor(boxes), format="XYXY", canvas_size=(6, 8),
                                         min_size=2)
    assert valid.tolist() == [True, False, False, False, False]
    with pytest.raises(ValueError, match="canvas_size"):
        F.sanitize_bounding_boxes(ember.tensor(boxes), format="XYXY")


# vtransforms49: found by the torchvision-0.28 sweep (/work/fuzz/vtransforms49)


@pytest.mark.parametrize("padding", [[2, 3], [5, 1, 2, 4], [4]])
def test_edge_padding_wider_than_the_image_repeats_the_border(padding):
    # edge padding has no width limit (torchvision's is torch's replicate padding); it raised
    import torch

    x = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3)
    p = padding * 4 if len(padding) == 1 else padding * 2 if len(padding) == 2 else padding
    left, top, right, bottom = p[:4] if len(padding) == 4 else (p[0], p[1], p[0], p[1])
    ref = torch.nn.functional.pad(torch.from_numpy(x), (left, right, top, bottom),
                                  mode="replicate").numpy()
    np.testing.assert_array_equal(F.pad(ember.tensor(x), padding, padding_mode="edge").numpy(),
                                  ref)
    np.testing.assert_array_equal(TF.pad(ember.tensor(x[0]), padding, padding_mode="edge")
                                  .numpy(), ref[0])
    xg = ember.tensor(x[0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: TF.pad(t, padding, padding_mode="edge"), (xg,))
    tx = torch.from_numpy(x[0].astype(np.float64)).requires_grad_()
    torch.nn.functional.pad(tx[None], (left, right, top, bottom), mode="replicate").pow(2) \
        .sum().backward()
    TF.pad(xg, padding, padding_mode="edge").pow(2).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), tx.grad.numpy())
    with pytest.raises(ember.errors.ArgumentError, match="edge padding needs pixels"):
        TF.pad(ember.zeros(1, 0, 3), 1, padding_mode="edge")


@pytest.mark.parametrize("shape", [(3, 0, 5), (0, 3, 4, 5), (2, 1, 3, 4, 0)])
def test_empty_images_keep_their_shape(shape):
    # torchvision 0.28 returns these empty, as they came (rotate/affine/blur/equalize raised)
    x = ember.zeros(*shape, dtype=ember.uint8)
    quad = [[0, 0], [4, 0], [4, 3], [0, 3]]
    outs = [F.rotate(x, 30.0), F.rotate(x, 90.0), F.affine(x, 30.0, [1, 0], 1.0, [0.0, 0.0]),
            F.perspective(x, quad, [[1, 0], [4, 0], [4, 3], [0, 3]]), F.gaussian_blur(x, [3, 3]),
            F.adjust_sharpness(x, 2.0), F.equalize(x), F.autocontrast(x)]
    if len(shape) == 3:
        outs.append(F.elastic(x, ember.zeros(1, *shape[-2:], 2)))
    for out in outs:
        assert tuple(out.shape) == shape and out.dtype is ember.uint8
    assert tuple(F.rotate(ember.zeros(0, 3, 4, 5), 30.0, expand=True).shape) == (0, 3, 6, 7)


def test_empty_float_images_stay_in_the_graph_through_warps():
    # torchvision's v2 keeps requires_grad on an empty image (Ember's warps gave a fresh leaf)
    x = ember.zeros(3, 0, 5, dtype=ember.float64, requires_grad=True)
    for out in (F.rotate(x, 30.0), F.affine(x, 30.0, [1, 0], 1.0, [0.0, 0.0])):
        assert out.requires_grad and out.dtype is ember.float64
        out.sum().backward()
    assert x.grad.shape == x.shape


def test_resize_of_an_image_without_pixels_raises_argument_error():
    # torchvision 0.28: ZeroDivisionError (int size) or a reshape RuntimeError (pair)
    x = ember.zeros(3, 0, 5, dtype=ember.uint8)
    with pytest.raises(ember.errors.ArgumentError, match="no aspect ratio"):
        F.resize(x, 7)
    with pytest.raises(ember.errors.ArgumentError, match="no pixels"):
        F.resize(x, [2, 3])
    assert tuple(F.resize(ember.zeros(0, 3, 4, 5), [2, 3]).shape) == (0, 3, 2, 3)


def test_colour_and_dtype_refusals_are_ember_errors():
    # torchvision 0.28 raises TypeError (autocontrast of 4 channels, equalize/posterize of
    # floats, solarize above the bound) and RuntimeError (unsafe float -> int32 scaling)
    x = ember.rand(4, 2, 2)
    with pytest.raises(ember.errors.ArgumentError, match="autocontrast: expected 1 or 3"):
        F.autocontrast(x)
    with pytest.raises(ember.errors.DTypeError, match="equalize: only uint8"):
        TF.equalize(x)
    with pytest.raises(ember.errors.DTypeError, match="posterize: only uint8"):
        TF.posterize(x, 3)
    with pytest.raises(ember.errors.ArgumentTypeError, match="solarize: threshold 2"):
        F.solarize(x, 2.0)
    with pytest.raises(ember.errors.DTypeError, match="cannot be performed safely"):
        F.to_dtype(x, ember.int32, scale=True)
    with pytest.raises(ember.errors.DTypeError, match="cannot be performed safely"):
        TF.convert_image_dtype(x, ember.int32)
    with pytest.raises(ember.errors.ArgumentTypeError, match="got numpy.ndarray"):
        TF.convert_image_dtype(np.zeros((1, 2, 2)), ember.int32)


def test_v2_elastic_and_blur_take_torchvisions_number_forms():
    # torchvision 0.28's v2 classes take an int, or 1 or 2 numbers; Ember's took floats only
    from ember.vision.transforms import v2

    for alpha, want in ((2, [2.0, 2.0]), ([1.0], [1.0, 1.0]), ((1, 2), [1.0, 2.0])):
        assert v2.ElasticTransform(alpha=alpha).alpha == want
    assert v2.ElasticTransform(sigma=-1.0).sigma == [-1.0, -1.0]
    assert v2.GaussianBlur(3, sigma=[1.0]).sigma == [1.0, 1.0]
    assert v2.GaussianBlur(3, sigma=2).sigma == [2.0, 2.0]
    with pytest.raises(ember.errors.ArgumentError, match="ElasticTransform: alpha should be"):
        v2.ElasticTransform(alpha=[1, 2, 3])
    with pytest.raises(ember.errors.ArgumentError, match="GaussianBlur: sigma should be"):
        v2.GaussianBlur(3, sigma="a")
    with pytest.raises(ember.errors.ArgumentTypeError, match="got NoneType"):
        v2.ElasticTransform(sigma=None)
    out = v2.ElasticTransform(alpha=2, sigma=1)(ember.rand(1, 8, 9))
    assert tuple(out.shape) == (1, 8, 9)


def test_invert_of_integer_images_flips_the_value_bits():
    # torchvision 0.28's v2 invert: max - x for every integer dtype (int32 raised here)
    x = ember.tensor([[[-5, 0, 7, 2147483647]]], dtype=ember.int32)
    assert F.invert(x).tolist() == [[[-2147483644, 2147483647, 2147483640, 0]]]
    u = ember.tensor([[[0, 1000, 65535]]], dtype=ember.uint16)
    assert F.invert(u).tolist() == [[[65535, 64535, 0]]] and F.invert(u).dtype is ember.uint16
    with pytest.raises(ember.errors.DTypeError, match="invert"):
        F.invert(ember.zeros(1, 2, 2, dtype=ember.bool))


def test_more_refusals_are_ember_errors():
    # torchvision 0.28 raises TypeError/ValueError here; Ember raised plain TypeError/IndexError
    with pytest.raises(ember.errors.ArgumentTypeError, match="padding must be an int"):
        F.pad(ember.zeros(3, 4, 4), "1")
    with pytest.raises(ember.errors.DTypeError, match="should be a float tensor"):
        F.normalize(ember.zeros(3, 4, 4, dtype=ember.uint8), [0.5] * 3, [0.5] * 3)
    with pytest.raises(ember.errors.DTypeError, match="jpeg: input tensor must have a uint8"):
        F.jpeg(ember.zeros(3, 4, 4), 50)
    with pytest.raises(ember.errors.ShapeError, match=r"expected an image \(\.\.\., H, W\)"):
        F.crop(ember.zeros(5), 0, 0, 1, 1)


def test_v2_posterize_of_wider_integer_images_keeps_the_high_value_bits():
    # values from torchvision 0.28's v2 posterize (int16/uint16/int64 raised here)
    x = ember.tensor([[[22977, 8975, 729]]], dtype=ember.int16)
    assert F.posterize(x, 3).tolist() == [[[20480, 8192, 0]]]
    u = ember.tensor([[[25830, 56189, 36327]]], dtype=ember.uint16)
    assert F.posterize(u, 3).tolist() == [[[24576, 49152, 32768]]]
    n = ember.tensor([[[-440438210519, 5]]], dtype=ember.int64)
    assert F.posterize(n, 3).tolist() == [[[8070450532247928832, 0]]]
    assert F.posterize(x, 8).dtype is ember.int16
    with pytest.raises(ember.errors.ArgumentError, match="bits must be in"):
        F.posterize(x, 9)


def test_autocontrast_of_integer_images_is_torchvisions():
    # values from torchvision 0.28 (v1 F.autocontrast, v2 F.autocontrast); int16/int32 raised
    # here and uint8 v2 went through v1's formula (one level above v2's)
    ramp = ember.arange(8).to(ember.uint8).reshape(1, 1, 8)
    assert TF.autocontrast(ramp).tolist() == [[[0, 36, 72, 109, 145, 182, 218, 255]]]
    assert F.autocontrast(ramp).tolist() == [[[0, 36, 72, 109, 145, 182, 218, 254]]]
    u = ember.tensor([[[3, 7], [5, 9]]], dtype=ember.uint8)
    assert F.autocontrast(u).tolist() == [[[0, 169], [84, 254]]]
    assert TF.autocontrast(u).tolist() == [[[0, 170], [85, 255]]]
    s = ember.tensor([[[-100, 0], [5, 30000]]], dtype=ember.int16)
    assert TF.autocontrast(s).tolist() == [[[0, 108], [114, 32766]]]
    assert F.autocontrast(s).tolist() == [[[0, 108], [114, 32767]]]
    assert F.autocontrast(s).dtype is ember.int16
    assert F.autocontrast(u.to(ember.int8)).tolist() == [[[0, 84], [42, 127]]]
    from ember.vision.transforms import v2

    assert v2.RandomAutocontrast(p=1.0)(u.to(ember.int16)).tolist() == [[[0, 21844],
                                                                        [10922, 32767]]]
    # torch's float32 top of int32 (2**31) overflows its cast to -2**31; Ember saturates
    w = ember.tensor([[[-100, 0], [5, 2147483647]]], dtype=ember.int32)
    for fn in (TF.autocontrast, F.autocontrast):
        assert fn(w).tolist() == [[[0, 100], [105, 2147483647]]]
    with pytest.raises(ember.errors.DTypeError, match="autocontrast: expected an integer"):
        TF.autocontrast(ember.zeros(1, 2, 2, dtype=ember.bool))


def test_autocontrast_refuses_integer_pil_images_as_pillow():
    # torchvision 0.28 hands PIL images to Pillow, whose autocontrast raises for "I";
    # the int32 tensor is now taken, the PIL image must still be refused
    from PIL import Image as PILImage

    img = PILImage.fromarray(np.array([[3, 700], [5, 9]], dtype=np.int32))
    for fn in (TF.autocontrast, F.autocontrast):
        with pytest.raises(ember.errors.DTypeError, match="mode 'I' is not supported"):
            fn(img)
    gray = PILImage.fromarray(np.array([[3, 7], [5, 9]], dtype=np.uint8))
    assert np.asarray(F.autocontrast(gray)).tolist() == [[0, 170], [85, 255]]  # Pillow's


# (input, output) of torchvision 0.28's v1 and v2 autocontrast (the same) on PIL images
_PIL_AUTOCONTRAST = [
    ([[104, 160, 179, 183], [93, 181, 80, 132]], [[59, 198, 245, 254], [32, 250, 0, 128]]),
    ([[[128, 108, 115], [74, 222, 133], [181, 153, 59], [114, 189, 203]],
      [[205, 65, 137], [49, 224, 68], [98, 126, 152], [51, 184, 91]]],
     [[[129, 68, 99], [40, 251, 131], [215, 141, 0], [106, 198, 254]],
      [[254, 0, 138], [0, 255, 15], [80, 97, 164], [3, 190, 56]]]),
    ([[77, 77, 77], [77, 77, 77]], [[77, 77, 77], [77, 77, 77]]),
    ([[[10, 50, 200], [20, 50, 90]], [[30, 50, 100], [40, 50, 95]]],
     [[[0, 50, 255], [85, 50, 0]], [[170, 50, 23], [255, 50, 11]]]),
]


@pytest.mark.parametrize("given, want", _PIL_AUTOCONTRAST, ids=["L", "RGB", "L-flat", "RGB-flat"])
def test_autocontrast_of_l_and_rgb_pil_images_is_torchvisions(given, want):
    # torchvision hands PIL images to ImageOps.autocontrast; Ember's tensor formula was a
    # level off at 1 of the L values and 3 of the RGB ones (pinned: Ember calls Pillow too)
    from PIL import Image as PILImage

    img = PILImage.fromarray(np.array(given, dtype=np.uint8))
    for fn in (TF.autocontrast, F.autocontrast):
        out = fn(img)
        assert out.mode == img.mode and np.asarray(out).tolist() == want


@pytest.mark.parametrize("mode", ["YCbCr", "HSV", "LAB"])
def test_autocontrast_refuses_colour_pil_images_whose_bands_are_not_rgb(mode):
    # Pillow and torchvision 0.28 raise OSError("not supported for mode HSV"); before, the
    # bands were stretched one by one (shifting hues)
    from PIL import Image as PILImage

    img = PILImage.fromarray(np.array(_PIL_AUTOCONTRAST[1][0], dtype=np.uint8)).convert(mode)
    for fn in (TF.autocontrast, F.autocontrast):
        with pytest.raises(ember.errors.DTypeError, match=f"mode '{mode}' is not supported .*"
                                                          "convert\\('RGB'\\)"):
            fn(img)


def test_bicubic_resize_of_int16_clamps_where_torchvision_wraps():
    # torchvision 0.28 gives [-32768]*5 + [30464, 25856, -17920, 17919, -25857, -30465] + ...
    # (float32 overshoot cast unchecked); Ember clamps to the dtype's range (docs/vision.md)
    row = [-32768] * 4 + [32767] * 4
    x = ember.tensor([[row] * 2], dtype=ember.int16)
    out = F.resize(x, [2, 16], interpolation=F.InterpolationMode.BICUBIC, antialias=False)
    assert out[0, 0].tolist() == [-32768] * 7 + [-17920, 17919] + [32767] * 7
