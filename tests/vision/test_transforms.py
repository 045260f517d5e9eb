"""ember.vision.transforms against torch computations on the same images."""

import numpy as np
import pytest
import torch

import ember
from ember.vision import transforms as T

RNG = np.random.default_rng(0)
IMG_HWC = RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8)
IMG_HW = RNG.integers(0, 256, (6, 4), dtype=np.uint8)


def test_to_tensor():
    for img in (IMG_HWC, IMG_HW):
        got = T.ToTensor()(img)
        chw = img if img.ndim == 3 else img[:, :, None]
        want = torch.from_numpy(chw).permute(2, 0, 1).float().div(255)
        assert got.dtype == ember.float32 and got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    f = T.ToTensor()(np.ones((2, 2, 1), np.float64))  # other dtypes are kept, not scaled
    assert f.dtype == ember.float64 and f.shape == (1, 2, 2) and f.numpy().max() == 1
    with pytest.raises(TypeError, match="PIL Image or ndarray"):
        T.ToTensor()(ember.zeros(2, 2))
    with pytest.raises(ValueError, match="2/3 dimensional"):
        T.ToTensor()(np.zeros((1, 2, 2, 2), np.uint8))


def test_normalize_and_compose():
    x = T.ToTensor()(IMG_HWC)
    mean, std = (0.1, 0.5, 0.9), (0.2, 0.3, 0.4)
    got = T.Normalize(mean, std)(x)
    want = (torch.from_numpy(x.numpy()) - torch.tensor(mean)[:, None, None]) / \
        torch.tensor(std)[:, None, None]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    pipeline = T.Compose([T.ToTensor(), T.Normalize(mean, std), T.Lambda(lambda t: t * 2)])
    np.testing.assert_allclose(pipeline(IMG_HWC).numpy(), 2 * want.numpy(), rtol=1e-6)
    y = x.clone()
    assert T.Normalize(mean, std, inplace=True)(y) is y
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="division by zero"):
        T.Normalize((0.0,), (0.0,))(x)
    with pytest.raises(TypeError, match="float tensor"):
        T.Normalize((0.0,), (1.0,))(ember.zeros(1, 2, 2, dtype=ember.int64))
    with pytest.raises(ValueError, match=r"\(..., C, H, W\)"):
        T.Normalize((0.0,), (1.0,))(ember.zeros(2, 2))
    # differentiable
    z = ember.ones(1, 2, 2, requires_grad=True)
    T.Normalize((0.5,), (0.25,))(z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 4.0)


@pytest.mark.parametrize("shape", [(1, 4, 4), (3, 1, 4, 4)])
def test_normalize_refuses_more_channels_than_the_image(shape):
    """3 means for a 1-channel image: torchvision's v1 Normalize (and F.normalize) raise
    ("output with shape [1, 4, 4] doesn't match the broadcast shape [3, 4, 4]"); Ember gave a
    3-channel image. transforms.v2 broadcasts, as torchvision's v2 does."""
    from ember.vision.transforms import functional as TF
    from ember.vision.transforms import v2
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    x = ember.rand(*shape)
    for inplace in (False, True):
        with pytest.raises(ValueError, match="one value per channel"):
            T.Normalize(mean, std, inplace=inplace)(x.clone())
        with pytest.raises(ValueError, match="one value per channel"):
            TF.normalize(x.clone(), mean, std, inplace)
    want = (torch.from_numpy(x.numpy()) - torch.tensor(mean)[:, None, None]) / \
        torch.tensor(std)[:, None, None]
    got = v2.Normalize(mean, std)(x)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="one value per channel"):
        v2.Normalize(mean, std, inplace=True)(x.clone())
    assert T.Normalize((0.5,), (0.5,))(x).shape == x.shape  # one value for all: fine


@pytest.mark.parametrize("mode,torch_mode", [("constant", "constant"), ("edge", "replicate"),
                                             ("reflect", "reflect"), ("symmetric", None)])
def test_pad_modes(mode, torch_mode):
    x = T.ToTensor()(IMG_HWC)
    got = T.Pad((1, 2, 3, 2), fill=0, padding_mode=mode)(x)
    if torch_mode:
        want = torch.nn.functional.pad(torch.from_numpy(x.numpy())[None], (1, 3, 2, 2),
                                       mode=torch_mode)[0].numpy()
    else:
        want = np.pad(x.numpy(), [(0, 0), (2, 2), (1, 3)], mode="symmetric")
    np.testing.assert_array_equal(got.numpy(), want)
    # NumPy images pad the same way (H, W first)
    np.testing.assert_array_equal(T.Pad((1, 2, 3, 2), padding_mode=mode)(IMG_HWC),
                                  (want.transpose(1, 2, 0) * 255).round().astype(np.uint8))


def test_random_crop():
    x = T.ToTensor()(IMG_HWC)
    crop = T.RandomCrop((3, 4), generator=ember.Generator().manual_seed(0))
    i, j, h, w = T.RandomCrop.get_params(x, (3, 4), ember.Generator().manual_seed(0))
    np.testing.assert_array_equal(crop(x).numpy(), x.numpy()[:, i:i + 3, j:j + 4])
    np.testing.assert_array_equal(
        T.RandomCrop((3, 4), generator=ember.Generator().manual_seed(0))(IMG_HWC),
        IMG_HWC[i:i + 3, j:j + 4])
    # every offset occurs
    seen = {T.RandomCrop.get_params(x, (3, 4)) for _ in range(200)}
    assert {s[:2] for s in seen} == {(a, b) for a in range(3) for b in range(4)}
    padded = T.RandomCrop(5, padding=2)(x)
    assert padded.shape == (3, 5, 5)
    assert T.RandomCrop((8, 9), pad_if_needed=True)(x).shape == (3, 8, 9)
    with pytest.raises(ValueError, match="larger than the input image size"):
        T.RandomCrop(9)(x)
    ember.manual_seed(7)
    a = T.RandomCrop(3, padding=1)(x)
    ember.manual_seed(7)
    np.testing.assert_array_equal(T.RandomCrop(3, padding=1)(x).numpy(), a.numpy())
    np.testing.assert_array_equal(T.CenterCrop(3)(IMG_HW), IMG_HW[2:5, 0:3])
    assert T.CenterCrop(8)(x).shape == (3, 8, 8)


def test_flips():
    x = T.ToTensor()(IMG_HWC)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(x).numpy(), x.numpy()[..., ::-1])
    np.testing.assert_array_equal(T.RandomVerticalFlip(1.0)(x).numpy(), x.numpy()[:, ::-1])
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(IMG_HWC), IMG_HWC[:, ::-1])
    assert T.RandomHorizontalFlip(0.0)(x) is x
    g = ember.Generator().manual_seed(0)
    flip = T.RandomHorizontalFlip(0.3, generator=g)
    flipped = sum(flip(IMG_HW) is not IMG_HW for _ in range(2000))
    assert abs(flipped / 2000 - 0.3) < 0.04


def test_doc_examples():
    import doctest

    result = doctest.testmod(T, extraglobs={"ember": ember, "np": np},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_to_tensor_bool_images_like_torchvision():
    from PIL import Image

    bits = Image.fromarray(np.array([[0, 255]], np.uint8)).convert("1")  # mode "1": floats
    got = T.ToTensor()(bits)
    assert got.dtype == ember.float32 and got.tolist() == [[[0.0, 1.0]]]
    mask = T.ToTensor()(np.array([[True, False]]))  # a bool ndarray keeps its dtype
    assert mask.dtype == ember.bool and mask.tolist() == [[[True, False]]]


def test_normalize_sees_a_mean_changed_in_place():
    mean = [0.5]
    norm = T.Normalize(mean, [1.0])
    assert norm(ember.ones(1, 1, 1)).item() == 0.5
    mean[0] = 0.0
    assert norm(ember.ones(1, 1, 1)).item() == 1.0


def test_pad_fill_per_channel_negative_padding_and_argument_errors():
    img = np.zeros((1, 1, 3), np.uint8)
    got = T.Pad(1, fill=(1, 2, 3))(img)  # torchvision's per-channel fill of an RGB image
    assert got.shape == (3, 3, 3) and got[0, 0].tolist() == [1, 2, 3]
    assert got[1, 1].tolist() == [0, 0, 0]
    x = torch.arange(16.0).reshape(1, 4, 4)
    want = torch.nn.functional.pad(x, (-1, 0, 1, -2))  # negative padding crops
    np.testing.assert_array_equal(T.Pad((-1, 1, 0, -2))(x.numpy()[0]), want[0].numpy())
    np.testing.assert_array_equal(T.Pad((-1, 1, 0, -2))(ember.tensor(x.numpy())).numpy(),
                                  want.numpy())
    np.testing.assert_array_equal(T.Pad((-1, 1, 0, -2), padding_mode="edge")(x.numpy()[0]),
                                  np.pad(x.numpy()[0, :2, 1:], [(1, 0), (0, 0)], mode="edge"))
    with pytest.raises(ValueError, match="one value, or one per channel"):
        T.Pad(1, fill=(1, 2))(img)
    with pytest.raises(TypeError, match="must be a number"):
        T.Pad(1, fill=(1, 2))(ember.zeros(1, 2, 2))
    with pytest.raises(TypeError, match="sequence of ints"):
        T.Pad(1.5)
    with pytest.raises(ValueError, match="padding_mode should be one of"):
        T.Pad(1, padding_mode="circular")
    assert repr(T.Pad(2)) == "Pad(padding=2, fill=0, padding_mode=constant)"
    assert repr(T.CenterCrop(3)) == "CenterCrop(size=(3, 3))"


def test_grayscale_of_a_2d_array_to_3_channels():
    """Grayscale(3) of an (H, W) array (a PIL "L" image's pixels) gave (H, W): the 3 channels
    were dropped. torchvision gives a PIL "RGB" image, (H, W, 3) as an array."""
    from PIL import Image

    from ember.vision.transforms import functional as TF
    from ember.vision.transforms import v2
    img = IMG_HW
    want = np.asarray(Image.fromarray(img).convert("L").convert("RGB"))  # (H, W, 3)
    for got in (T.Grayscale(3)(img), TF.rgb_to_grayscale(img, 3), v2.Grayscale(3)(img)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert T.Grayscale(1)(img).shape == img.shape


def test_big_endian_16_bit_pil_images():
    """A PIL "I;16B" image (big-endian 16-bit) reads as a ``>u2`` array: ToTensor and
    PILToTensor raised "NumPy dtype >u2 has no Ember equivalent" (v2's ToImage / to_image
    until later). Now its values, as uint16 (as Ember reads "I;16")."""
    from PIL import Image
    values = np.array([[0, 1, 258], [40000, 65535, 7]], np.uint16)
    img = Image.fromarray(values).convert("I").convert("I;16B")
    assert img.mode == "I;16B"
    from ember.vision.transforms import v2
    for got in (T.ToTensor()(img), T.PILToTensor()(img), v2.ToImage()(img),
                v2.functional.to_image(img)):
        assert got.dtype == ember.uint16 and got.shape == (1, 2, 3)
        np.testing.assert_array_equal(got.numpy()[0], values)
    big = values.astype(">u2")  # a big-endian array too
    for convert in (T.ToTensor(), v2.ToImage()):
        np.testing.assert_array_equal(convert(big).numpy()[0], values)


@pytest.mark.parametrize("make, match", [
    (lambda: T.RandomRotation((5,)), "RandomRotation: if degrees is a sequence, it must be of"),
    (lambda: T.RandomRotation((1, 2, 3)), "degrees is a sequence, it must be of len 2"),
    (lambda: T.RandomAffine(5, translate=(0.1,)), "translate is a sequence, it must be of len 2"),
    (lambda: T.RandomAffine(5, translate=(0.1, 0.2, 0.3)), "translate is a sequence"),
    (lambda: T.RandomAffine(5, scale=(0.5,)), "RandomAffine: if scale is a sequence"),
    (lambda: T.GaussianBlur((1, 3, 5)), "GaussianBlur: if kernel_size is a sequence"),
    (lambda: T.GaussianBlur(3, (1.0, 2.0, 3.0)), "GaussianBlur: if sigma is a sequence"),
])
def test_random_transforms_refuse_ranges_that_are_not_pairs(make, match):
    """As torchvision's "If degrees is a sequence, it must be of len 2." (a ValueError): a
    1-value range raised IndexError (at construction or at the first call), a 3-value one
    was cut to its first two values without a word (sweep60e)."""
    with pytest.raises(ValueError, match=match):
        make()
    assert T.GaussianBlur((3,))(ember.rand(3, 8, 8)).shape == (3, 8, 8)  # one size: both axes
    assert T.RandomRotation([1, 2]).degrees == [1.0, 2.0]  # (torchvision's list)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(scale=(-0.5, 0.1)), ValueError, "scale should be between 0 and 1"),
    (dict(scale=(0.5, 2.0)), ValueError, "scale should be between 0 and 1"),
    (dict(scale=0.5), TypeError, "scale should be a sequence"),
    (dict(ratio=2.0), TypeError, "ratio should be a sequence"),
])
def test_random_erasing_refuses_a_scale_outside_0_1(kwargs, error, match):
    """As torchvision's "Random erasing scale should be between 0 and 1": a scale above 1 was
    taken and then erased nothing (no window that big fits), a negative one too (sweep60e)."""
    from ember.vision.transforms import v2
    for module in (T, v2):
        with pytest.raises(error, match=match):
            module.RandomErasing(**kwargs)
    quarter = T.RandomErasing(p=1.0, scale=(0.25, 0.25), ratio=(1.0, 1.0))
    assert quarter(ember.ones(1, 4, 4)).sum() == 12  # a 2 x 2 window


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(scale=(0.1,)), ValueError, "RandomResizedCrop: if scale is a sequence, it must be"),
    (dict(ratio=(1.0, 2.0, 3.0)), ValueError, "if ratio is a sequence, it must be of len 2"),
    (dict(scale=0.5), TypeError, "scale should be a sequence of 2 values"),
])
def test_random_resized_crop_refuses_ranges_that_are_not_pairs(kwargs, error, match):
    """A 1-value scale raised IndexError ('tuple index out of range'), a 3-value ratio was cut
    to two without a word, a number gave "object of type 'float' has no len()" (sweep60e)."""
    from ember.vision.transforms import v2
    for module in (T, v2):
        with pytest.raises(error, match=match):
            module.RandomResizedCrop(4, **kwargs)


@pytest.mark.parametrize("call, match", [
    (lambda F: F.crop([[1, 2]], 0, 0, 1, 1), "crop: img should be a tensor"),
    (lambda F: F.center_crop([[1, 2]], 1), "crop: img should be a tensor"),
    (lambda F: F.pad([[1, 2]], 1, padding_mode="reflect"), "pad: img should be a tensor"),
    (lambda F: F.resized_crop([[1, 2]], 0, 0, 1, 1, [2, 2]), "img should be a tensor"),
])
def test_crop_and_pad_name_an_input_that_is_not_an_image(call, match):
    """A list raised AttributeError "'list' object has no attribute 'shape'" (torchvision:
    TypeError 'img should be PIL Image') (sweep60e)."""
    from ember.vision.transforms import functional as F
    with pytest.raises(TypeError, match=match):
        call(F)


def test_random_point_ops_keep_their_arguments_under_torchvisions_names():
    """RandomPosterize(3).bits raised AttributeError (kept as .args) and the repr showed
    'args=(3,)'; torchvision's attributes can be read and changed (sweep66e)."""
    t = T.RandomPosterize(3, p=1.0)
    assert (t.bits, repr(t)) == (3, "RandomPosterize(bits=3,p=1.0)")
    t.bits = 1
    assert t(ember.full((1, 1, 1), 200, dtype=ember.uint8)).item() == 128
    assert T.RandomSolarize(0.5).threshold == 0.5
    assert repr(T.RandomAdjustSharpness(2.0)) == "RandomAdjustSharpness(sharpness_factor=2.0,p=0.5)"
    assert repr(T.RandomInvert()) == "RandomInvert(p=0.5)"


@pytest.mark.parametrize("transform, text", [
    (lambda: T.Resize(4), "Resize(size=4, interpolation=bilinear, max_size=None, antialias=True)"),
    (lambda: T.RandomResizedCrop(8), "RandomResizedCrop(size=(8, 8), scale=(0.08, 1.0), "
     "ratio=(0.75, 1.3333), interpolation=bilinear, antialias=True)"),
    (lambda: T.RandomRotation(10), "RandomRotation(degrees=[-10.0, 10.0], interpolation=nearest, "
     "expand=False, fill=0)"),
    (lambda: T.RandomAffine(10), "RandomAffine(degrees=[-10.0, 10.0])"),
    (lambda: T.RandomAffine(10, (0.1, 0.2), shear=5, interpolation=T.InterpolationMode.BILINEAR,
                            fill=3), "RandomAffine(degrees=[-10.0, 10.0], translate=(0.1, 0.2), "
     "shear=[-5.0, 5.0], interpolation=bilinear, fill=3)"),
    (lambda: T.GaussianBlur(3), "GaussianBlur(kernel_size=(3, 3), sigma=(0.1, 2.0))"),
    (lambda: T.RandomApply([T.RandomInvert()], p=0.3), "RandomApply(\n    p=0.3\n"
     "    RandomInvert(p=0.5)\n)"),
    (lambda: T.RandomChoice([T.RandomInvert()]),
     "RandomChoice(\n    RandomInvert(p=0.5)\n)(p=None)"),
    (lambda: T.RandomOrder([T.RandomInvert()]), "RandomOrder(\n    RandomInvert(p=0.5)\n)"),
])
def test_v1_reprs_are_torchvisions(transform, text):
    """They showed 'interpolation=InterpolationMode.BILINEAR', all of RandomAffine's
    defaults, GaussianBlur(kernel_size=3) and the lists as 'transforms=[...]' (sweep66e)."""
    assert repr(transform()) == text
