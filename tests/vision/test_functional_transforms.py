"""ember.vision.transforms.functional and the augmentation transforms, against torch running
torchvision's formulas and against Pillow where torchvision's tensor code follows it."""

import colorsys

import numpy as np
import pytest
import torch
import torch.nn.functional as TF_torch
from PIL import Image, ImageEnhance, ImageOps

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as TF

RNG = np.random.default_rng(0)
U8 = RNG.integers(0, 256, (3, 9, 11), dtype=np.uint8)
FLOAT = RNG.uniform(size=(3, 9, 11)).astype(np.float32)


def pil(chw):
    return Image.fromarray(np.ascontiguousarray(chw.transpose(1, 2, 0)))


def chw(image):
    return np.asarray(image).transpose(2, 0, 1)


@pytest.mark.parametrize("size, expected", [(6, (6, 7)), ((4, 5), (4, 5)), ([5], (5, 6))])
def test_resize_matches_torchvision_tensor_path(size, expected):
    got = TF.resize(ember.tensor(FLOAT), size)
    assert got.shape[-2:] == expected
    ref = TF_torch.interpolate(torch.tensor(FLOAT)[None], size=expected, mode="bilinear",
                               align_corners=False, antialias=True)[0]
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    got8 = TF.resize(ember.tensor(U8), size, T.InterpolationMode.BICUBIC)
    ref8 = TF_torch.interpolate(torch.tensor(U8)[None].float(), size=expected, mode="bicubic",
                                align_corners=False, antialias=True)[0]
    ref8 = ref8.round().clamp(0, 255).to(torch.uint8)
    assert got8.dtype is ember.uint8
    assert np.abs(got8.numpy().astype(int) - ref8.numpy().astype(int)).max() <= 1
    near = TF.resize(ember.tensor(U8), (4, 4), T.InterpolationMode.NEAREST)
    np.testing.assert_array_equal(near.numpy(), TF_torch.interpolate(
        torch.tensor(U8)[None], size=(4, 4), mode="nearest")[0].numpy())


def test_resize_max_size_and_arrays():
    assert TF.resize(ember.zeros(3, 10, 40), 8, max_size=20).shape == (3, 5, 20)
    with pytest.raises(ValueError, match="max_size = 8 must be strictly greater"):
        TF.resize(ember.zeros(3, 10, 40), 8, max_size=8)
    with pytest.raises(ValueError, match="max_size is only supported"):
        TF.resize(ember.zeros(3, 10, 40), (8, 8), max_size=20)
    hwc = U8.transpose(1, 2, 0)
    out = TF.resize(hwc, (4, 5))                       # an (H, W, C) array stays one
    assert isinstance(out, np.ndarray) and out.shape == (4, 5, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, TF.resize(ember.tensor(U8), (4, 5)).numpy()
                                  .transpose(1, 2, 0))


def blend(a, b, r, bound):
    return (r * a + (1 - r) * b).clamp(0, bound)


@pytest.mark.parametrize("factor", [0.0, 0.5, 1.7])
def test_colour_adjustments_follow_the_blend_formulas(factor):
    x = torch.tensor(FLOAT)
    gray = (0.2989 * x[0] + 0.587 * x[1] + 0.114 * x[2])[None]
    cases = [(TF.adjust_brightness, blend(x, 0.0, factor, 1.0)),
             (TF.adjust_contrast, blend(x, gray.mean(), factor, 1.0)),
             (TF.adjust_saturation, blend(x, gray, factor, 1.0))]
    for fn, ref in cases:
        np.testing.assert_allclose(fn(ember.tensor(FLOAT), factor).numpy(), ref.numpy(),
                                   rtol=1e-6, atol=1e-6)
    b8 = TF.adjust_brightness(ember.tensor(U8), factor)
    np.testing.assert_array_equal(b8.numpy(), blend(torch.tensor(U8).float(), 0.0, factor, 255)
                                  .to(torch.uint8).numpy())       # truncated, as torchvision


@pytest.mark.parametrize("hue", [-0.5, -0.2, 0.0, 0.3])
def test_adjust_hue_matches_colorsys(hue):
    got = TF.adjust_hue(ember.tensor(FLOAT), hue).numpy()
    ref = np.empty_like(FLOAT)
    for i in range(FLOAT.shape[1]):
        for j in range(FLOAT.shape[2]):
            h, s, v = colorsys.rgb_to_hsv(*FLOAT[:, i, j])
            ref[:, i, j] = colorsys.hsv_to_rgb((h + hue) % 1.0, s, v)
    np.testing.assert_allclose(got, ref, atol=1e-5)



@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_hue_and_gamma_of_half_floats_go_through_float32(dtype):
    # torchvision converts to float32 and back: one rounding at the end (computed in the
    # half type, hue was up to 15 ulps off and gamma 1 ulp)
    x = ember.tensor(FLOAT).to(dtype)
    wide = torch.tensor(x.float().numpy())
    gamma = ((0.9 * wide ** 2.2).clamp(0, 1)).numpy()
    got = TF.adjust_gamma(x, 2.2, 0.9)
    assert got.dtype is dtype
    np.testing.assert_array_equal(got.float().numpy(), ember.tensor(gamma).to(dtype).float()
                                  .numpy())
    for hue in (-0.4, 0.1, 0.3):
        got = TF.adjust_hue(x, hue)
        assert got.dtype is dtype
        np.testing.assert_array_equal(got.float().numpy(),
                                      TF.adjust_hue(x.float(), hue).to(dtype).float().numpy())

def test_uint8_results_through_unit_floats_convert_as_torchvision():
    # torchvision's convert_image_dtype scales by 255.999 before truncating, so a round trip
    # through [0, 1] floats keeps every uint8 value (a plain 255 lost one on about a third)
    x = torch.tensor(U8)
    np.testing.assert_array_equal(TF.adjust_hue(ember.tensor(U8), 0.0).numpy(), U8)
    for gamma, gain in ((0.5, 1.0), (2.2, 0.9)):
        ref = ((gain * (x / 255.0) ** gamma).clamp(0, 1) * (256 - 1e-3)).to(torch.uint8)
        np.testing.assert_array_equal(TF.adjust_gamma(ember.tensor(U8), gamma, gain).numpy(),
                                      ref.numpy())


def test_gaussian_blur_is_a_reflect_padded_separable_convolution():
    got = TF.gaussian_blur(ember.tensor(FLOAT), [5, 3], [1.5, 0.7])
    x = torch.linspace(-2, 2, 5)
    kx = torch.exp(-0.5 * (x / 1.5) ** 2)
    y = torch.linspace(-1, 1, 3)
    ky = torch.exp(-0.5 * (y / 0.7) ** 2)
    k = (ky[:, None] * kx[None]) / (kx.sum() * ky.sum())
    padded = TF_torch.pad(torch.tensor(FLOAT)[None], (2, 2, 1, 1), mode="reflect")
    ref = TF_torch.conv2d(padded, k.expand(3, 1, 3, 5), groups=3)[0]
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    assert TF.gaussian_blur(ember.tensor(U8), 3).dtype is ember.uint8
    with pytest.raises(ValueError, match="odd and positive"):
        TF.gaussian_blur(ember.tensor(FLOAT), 4)


def test_pillow_point_operations():
    img = ember.tensor(U8)
    np.testing.assert_array_equal(TF.invert(img).numpy(), chw(ImageOps.invert(pil(U8))))
    np.testing.assert_array_equal(TF.posterize(img, 3).numpy(),
                                  chw(ImageOps.posterize(pil(U8), 3)))
    np.testing.assert_array_equal(TF.solarize(img, 128).numpy(),
                                  chw(ImageOps.solarize(pil(U8), 128)))
    big = RNG.integers(0, 200, (3, 32, 40), dtype=np.uint8)
    np.testing.assert_array_equal(TF.equalize(ember.tensor(big)).numpy(),
                                  chw(ImageOps.equalize(pil(big))))
    sharp = TF.adjust_sharpness(img, 1.8).numpy().astype(int)
    ref = chw(ImageEnhance.Sharpness(pil(U8)).enhance(1.8)).astype(int)
    assert np.abs(sharp - ref).max() <= 1


def test_autocontrast_stretches_each_channel():
    x = ember.tensor(FLOAT) * 0.5 + 0.2
    out = TF.autocontrast(x).numpy()
    np.testing.assert_allclose(out.min((1, 2)), 0, atol=1e-6)
    np.testing.assert_allclose(out.max((1, 2)), 1, atol=1e-6)
    flat = ember.full((3, 2, 2), 0.3)
    np.testing.assert_array_equal(TF.autocontrast(flat).numpy(), flat.numpy())


def test_rotate():
    x = ember.tensor(FLOAT)
    for k in (1, 2, 3):
        np.testing.assert_array_equal(TF.rotate(ember.tensor(FLOAT[:, :9, :9]), 90 * k).numpy(),
                                      np.rot90(FLOAT[:, :9, :9], k, axes=(1, 2)))
    np.testing.assert_allclose(TF.rotate(x, 0.0, T.InterpolationMode.BILINEAR).numpy(), FLOAT,
                               atol=1e-6)
    for angle in (30, 90, 137):
        assert TF.rotate(x, angle, expand=True).shape[1:][::-1] == \
            pil(U8).rotate(angle, expand=True).size
    filled = TF.rotate(ember.tensor(U8), 45, fill=(255, 0, 0))
    assert filled[:, 0, 0].tolist() == [255, 0, 0]         # a corner left uncovered
    assert TF.rotate(ember.tensor(U8), 45)[:, 0, 0].tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match=r"3 values but the image has 1 channel"):
        TF.rotate(U8[0], 45, fill=(1, 2, 3))


def test_random_resized_crop():
    ember.manual_seed(0)
    t = T.RandomResizedCrop((5, 7), scale=(0.2, 0.6))
    for _ in range(20):
        i, j, h, w = t.get_params(ember.zeros(3, 30, 40), t.scale, t.ratio)
        assert 0 <= i <= 30 - h and 0 <= j <= 40 - w
        assert 0.2 * 1200 * 0.8 <= h * w <= 0.6 * 1200 * 1.25
    assert t(ember.zeros(3, 30, 40)).shape == (3, 5, 7)
    assert t(U8.transpose(1, 2, 0)).shape == (5, 7, 3)
    # an impossible ratio falls back to the central crop of the nearest allowed ratio
    assert T.RandomResizedCrop.get_params(ember.zeros(1, 10, 100), (1.0, 1.0),
                                          (1.0, 1.0)) == (0, 45, 10, 10)


def test_random_transforms_repeat_under_a_seed_and_compose_with_arrays():
    pipeline = T.Compose([T.RandomResizedCrop(8), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                          T.RandomGrayscale(0.5), T.RandomRotation(20), T.ToTensor(),
                          T.RandomErasing(p=1.0)])
    runs = []
    for _ in range(2):
        ember.manual_seed(5)
        runs.append(pipeline(U8.transpose(1, 2, 0)).numpy())
    np.testing.assert_array_equal(*runs)
    assert runs[0].shape == (3, 8, 8) and runs[0].dtype == np.float32
    assert T.ColorJitter()(ember.tensor(FLOAT)).numpy().tolist() == FLOAT.tolist()
    with pytest.raises(ValueError, match="hue values should be between"):
        T.ColorJitter(hue=0.7)


def test_random_erasing_and_containers():
    ember.manual_seed(1)
    x = ember.ones(3, 20, 20)
    out = T.RandomErasing(p=1.0, scale=(0.1, 0.1), ratio=(1.0, 1.0), value=(0, 0, 0))(x)
    erased = (out.numpy() == 0).all(0)
    assert erased.sum() == 36 and (x.numpy() == 1).all()      # a 6 x 6 window, a copy
    assert T.RandomErasing(p=0.0)(x) is x
    with pytest.raises(TypeError, match="tensor image"):
        T.RandomErasing()(U8)
    ember.manual_seed(2)
    picks = [T.RandomChoice([lambda v: 0, lambda v: 1], p=[0.0, 1.0])(None) for _ in range(5)]
    assert picks == [1] * 5
    assert T.RandomApply([lambda v: v + 1], p=0.0)(1) == 1


@pytest.mark.parametrize("h, w", [(2, 4), (5, 9), (6, 10), (4, 4)])
def test_rotate_expand_by_right_angles_keeps_the_exact_size(h, w):
    # torchvision's 1e-4 tolerance must absorb cos(90 degrees) ~ 6e-17, not add a pixel
    x = ember.zeros(1, h, w)
    for k in (1, 2, 3):
        want = (w, h) if k % 2 else (h, w)
        assert tuple(TF.rotate(x, 90 * k, expand=True).shape[1:]) == want
        assert tuple(TF.rotate(x, 90 * k, expand=True, center=(w / 2, h / 2)).shape[1:]) == want
    for fn in (lambda c: TF.rotate(x, 30, center=c),
               lambda c: TF.affine(x, 30, (0, 0), 1.0, 0, center=c)):
        with pytest.raises(ValueError, match=r"center should be a sequence of length 2.*\(1,\)"):
            fn((1,))
    # sides of unlike parity: torchvision's corners land on half pixels, one more each way
    assert tuple(TF.rotate(ember.zeros(1, 3, 8), 90, expand=True).shape[1:]) == (9, 4)


@pytest.mark.parametrize("angle, translate, scale, shear", [
    (30, (2, -3), 1.0, (0, 0)), (0, (0, 0), 1.0, (20, 0)), (-45, (1, 1), 0.8, (10, -15)),
    (12, (0, 0), 1.0, (0, 25))])
def test_affine_matches_pillow_with_torchvisions_matrix(angle, translate, scale, shear):
    from ember.vision.transforms.functional import _inverse_affine

    img = RNG.integers(0, 256, (3, 20, 26), dtype=np.uint8)
    got = TF.affine(ember.tensor(img), angle, translate, scale, shear).numpy()
    m = _inverse_affine([13.0, 10.0], angle, translate, scale, shear)  # Pillow's centre
    ref = chw(pil(img).transform((26, 20), Image.AFFINE, tuple(m.ravel()), Image.NEAREST))
    assert (got == ref).all(0).mean() >= 0.99


def test_affine_rotation_is_clockwise_and_random_affine():
    x = ember.tensor(FLOAT[:, :9, :9])
    np.testing.assert_array_equal(TF.affine(x, 90, (0, 0), 1.0, 0.0).numpy(),
                                  TF.rotate(x, -90).numpy())
    with pytest.raises(ValueError, match="scale should be positive"):
        TF.affine(x, 0, (0, 0), 0.0, 0.0)
    ember.manual_seed(0)
    t = T.RandomAffine(10, translate=(0.2, 0.1), scale=(0.9, 1.1), shear=(-5, 5, -3, 3))
    angle, (dx, dy), s, (sx, sy) = t.get_params(t.degrees, t.translate, t.scale, t.shear,
                                                (40, 20))
    assert -10 <= angle <= 10 and abs(dx) <= 8 and abs(dy) <= 2 and 0.9 <= s <= 1.1
    assert -5 <= sx <= 5 and -3 <= sy <= 3
    assert t(U8.transpose(1, 2, 0)).shape == (9, 11, 3)


@pytest.mark.parametrize("policy", [T.RandAugment(num_ops=3, magnitude=20),
                                    T.TrivialAugmentWide(fill=(0, 128, 255))])
def test_automatic_augmentation_policies(policy):
    img = ember.tensor(U8)
    seen = set()
    for seed in range(30):
        ember.manual_seed(seed)
        out = policy(img)
        assert out.shape == img.shape and out.dtype is ember.uint8
        seen.add(out.numpy().tobytes())
        ember.manual_seed(seed)
        np.testing.assert_array_equal(policy(img).numpy(), out.numpy())   # repeatable
    assert len(seen) > 10                                                 # and varied
    with pytest.raises(TypeError, match="uint8"):
        policy(ember.tensor(FLOAT))


def test_crop_outside_the_image_pads_with_zeros_as_torchvision():
    x = ember.tensor(FLOAT[:, :4, :5])
    out = TF.crop(x, -1, 3, 3, 4).numpy()          # one row above, two columns past the right
    assert out.shape == (3, 3, 4)
    np.testing.assert_array_equal(out[:, 0], 0)
    np.testing.assert_array_equal(out[:, 1:, :2], FLOAT[:, :2, 3:5])
    np.testing.assert_array_equal(out[:, :, 2:], 0)
    assert TF.crop(U8.transpose(1, 2, 0), 7, 9, 4, 4).shape == (4, 4, 3)   # an (H, W, C) array
    assert not TF.crop(x, 10, 10, 2, 2).numpy().any()                     # wholly outside


@pytest.mark.parametrize("size", [4.5, None, "4", True, [4.0, 5]])
def test_resize_refuses_a_size_that_is_not_ints(size):
    # torchvision refuses these (TypeError); a float size was silently truncated, and None (a
    # v2-only size) failed inside int()
    img = ember.zeros(3, 7, 9)
    with pytest.raises(TypeError, match="resize: size should be an int or a sequence of 1 or 2"):
        TF.resize(img, size)
    with pytest.raises(TypeError, match="resize: size should be an int or a sequence of 1 or 2"):
        T.Resize(size)
    from ember.vision.transforms.v2 import functional as F2
    if size is not None:
        with pytest.raises(TypeError, match="resize: size should be an int or a sequence"):
            F2.resize(img, size)
    assert TF.resize(img, np.int64(4)).shape == (3, 4, 5)


@pytest.mark.parametrize("size", [4.5, np.float64(4.0), True])
def test_v2_resize_refuses_a_number_that_is_not_an_int(size):
    # torchvision's v2.Resize raises ValueError at construction for 4.5 ('size can be an
    # integer, a sequence of one or two integers, or None'); it was truncated to [4]
    from ember.vision.transforms import v2
    with pytest.raises(ValueError, match="Resize: size should be an int, a sequence of 1 or 2"):
        v2.Resize(size)
    assert v2.Resize(np.int64(4))(ember.zeros(3, 8, 16)).shape == (3, 4, 8)


def _u16(values, channels=1):
    return ember.tensor(np.array(values).reshape(channels, 1, -1)).to(ember.uint16)


def test_colour_functions_take_16_bit_images_in_their_range():
    # torchvision's colour kernels take every integer dtype, intensities in [0, max]; a
    # uint16 (16-bit PNG) image raised "expected a uint8 or floating image". Values as
    # torchvision 0.28 gives them, except adjust_hue's pure red: torchvision's float32
    # scaling back wraps 1.0 to 0 ([0, 0, 0]); here it is green
    assert TF.adjust_brightness(_u16([1000, 40000, 65535]), 2.0).flatten().tolist() == \
        [2000, 65535, 65535]
    rgb = _u16([65535, 0, 1000, 0, 65535, 1000, 0, 0, 1000], 3)
    assert TF.rgb_to_grayscale(rgb).flatten().tolist() == [19588, 38469, 999]
    assert TF.adjust_gamma(_u16([0, 16384, 65534]), 0.5).flatten().tolist() == [0, 32768,
                                                                                65535]
    assert TF.adjust_hue(_u16([65535, 0, 0], 3), 1 / 3).flatten().tolist() == [0, 65535, 0]
    assert TF.adjust_saturation(_u16([65535, 0, 0], 3), 0.0).flatten().tolist() == [19588] * 3
    assert TF.adjust_contrast(_u16([0, 65535] * 3, 3), 0.0).flatten().tolist() == [32764] * 6
    int16 = ember.tensor([[[100, 32767]]], dtype=ember.int16)
    assert TF.adjust_brightness(int16, 1.5).flatten().tolist() == [150, 32767]
    with pytest.raises(TypeError, match="bool"):
        TF.adjust_brightness(ember.zeros(1, 2, 2, dtype=ember.bool), 1.5)


def test_solarize_takes_uint16_images():
    # review56a item 6: uint16 passed the check and failed inside `ge` ("ge: not implemented
    # for uint16", no mention of solarize); torchvision's fails there too. Compared in int64
    # here: torchvision's formula (bound - x at or above the threshold), computed by torch
    values = [0, 1000, 500, 499, 65535]
    x = torch.tensor(values, dtype=torch.int32)
    expected = torch.where(x >= 500, 65535 - x, x).tolist()
    assert TF.solarize(_u16(values), 500).flatten().tolist() == expected
    u32 = ember.tensor([[[0, 70000]]]).to(ember.uint32)
    assert TF.solarize(u32, 500).flatten().tolist() == [0, 2 ** 32 - 1 - 70000]


def test_solarize_compares_uint64_exactly():
    # review56m2 item 2: uint64 was compared in float64, where 2**63 - 1 rounds up to the
    # threshold 2**63 and was inverted. torchvision refuses uint64: checked against the exact
    # rule (bound - x at or above the threshold) in Python ints
    top = 2 ** 64 - 1
    values = [2 ** 63 - 1, 2 ** 63, 5, 0, top, 2 ** 53 + 1]
    img = ember.from_numpy(np.array([[values]], dtype=np.uint64))
    for threshold in (2 ** 63, 2 ** 53 + 0.5, 0, -3.5, 7.2, top):
        expected = [top - v if v >= threshold else v for v in values]
        assert TF.solarize(img, threshold).flatten().tolist() == expected, threshold
    assert TF.solarize(img, float("nan")).flatten().tolist() == values
