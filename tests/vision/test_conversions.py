"""PIL conversions (pil_to_tensor / to_pil_image and their transforms) against Pillow's own
arrays, and LinearTransformation against torch's matrix product."""

import numpy as np
import pytest
import torch
from PIL import Image

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as TF

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("mode, dtype", [("L", np.uint8), ("RGB", np.uint8), ("RGBA", np.uint8),
                                         ("I", np.int32), ("F", np.float32), ("1", np.bool_)])
def test_pil_to_tensor_keeps_values_and_dtype(mode, dtype):
    pic = Image.fromarray(RNG.integers(0, 256, (4, 5, 3), dtype=np.uint8)).convert(mode)
    got = T.PILToTensor()(pic)
    arr = np.asarray(pic)
    want = (arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1))
    assert got.numpy().dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(TypeError, match="pic should be PIL Image"):
        TF.pil_to_tensor(arr)


def test_to_pil_image_modes_scaling_and_round_trip():
    u8 = RNG.integers(0, 256, (3, 4, 5), dtype=np.uint8)
    pic = TF.to_pil_image(ember.tensor(u8))
    assert pic.mode == "RGB" and pic.size == (5, 4)
    np.testing.assert_array_equal(TF.pil_to_tensor(pic).numpy(), u8)
    x = RNG.uniform(size=(1, 4, 5)).astype(np.float32)            # floats: * 255, truncated
    gray = T.ToPILImage()(ember.tensor(x))
    assert gray.mode == "L"
    np.testing.assert_array_equal(np.asarray(gray), (x[0] * 255).astype(np.uint8))
    assert TF.to_pil_image(ember.tensor(x), mode="F").mode == "F"
    assert TF.to_pil_image(u8.transpose(1, 2, 0)).mode == "RGB"       # arrays are (H, W, C)
    assert TF.to_pil_image(u8[:2].transpose(1, 2, 0)).mode == "LA"
    assert TF.to_pil_image(np.zeros((3, 3), np.int32)).mode == "I"
    assert TF.to_pil_image(ember.zeros(4, 2, 2), mode="CMYK").mode == "CMYK"
    assert repr(T.ToPILImage("RGB")) == "ToPILImage(mode=RGB)"
    with pytest.raises(ValueError, match="incorrect mode \\(RGB\\)"):
        TF.to_pil_image(ember.zeros(1, 2, 2), mode="RGB")
    with pytest.raises(ValueError, match="only modes \\['RGB', 'YCbCr', 'HSV'\\]"):
        TF.to_pil_image(ember.zeros(3, 2, 2), mode="RGBA")
    with pytest.raises(ValueError, match="> 4 channels"):
        TF.to_pil_image(ember.zeros(5, 2, 2))
    with pytest.raises(ValueError, match="2/3 dimensional"):
        TF.to_pil_image(ember.zeros(1, 1, 2, 2))
    with pytest.raises(TypeError, match="input type int64 is not supported"):
        TF.to_pil_image(np.zeros((2, 2, 3), np.int64))
    with pytest.raises(TypeError, match="Tensor or ndarray"):
        TF.to_pil_image([[0]])


def test_linear_transformation_matches_torch():
    x = RNG.normal(size=(2, 3, 2, 2))
    m, mean = RNG.normal(size=(12, 12)), RNG.normal(size=12)
    got = T.LinearTransformation(ember.tensor(m), ember.tensor(mean))(ember.tensor(x))
    want = torch.mm(torch.tensor(x).view(-1, 12) - torch.tensor(mean), torch.tensor(m))
    np.testing.assert_allclose(got.numpy(), want.view(2, 3, 2, 2).numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="should be square"):
        T.LinearTransformation(ember.zeros(3, 4), ember.zeros(3))
    with pytest.raises(ValueError, match="mean_vector should have the same length 2"):
        T.LinearTransformation(ember.zeros(3, 3), ember.zeros(2))
    with pytest.raises(ValueError, match="same dtype"):
        T.LinearTransformation(ember.zeros(3, 3), ember.zeros(3, dtype=ember.float64))
    with pytest.raises(ValueError, match=r"incompatible shape: \[1 x 2 x 2\] != 3"):
        T.LinearTransformation(ember.zeros(3, 3), ember.zeros(3))(ember.zeros(1, 2, 2))


def tv_convert_image_dtype(image, dtype):
    """torchvision's convert_image_dtype, in torch."""
    def top(dt):
        return 1.0 if dt.is_floating_point or dt == torch.bool else float(torch.iinfo(dt).max)
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        return image.mul(top(dtype) + 1.0 - 1e-3).to(dtype)
    if dtype.is_floating_point:
        return image.to(dtype) / top(image.dtype)
    if top(image.dtype) > top(dtype):
        factor = int((top(image.dtype) + 1) // (top(dtype) + 1))
        return torch.div(image, factor, rounding_mode="floor").to(dtype)
    return image.to(dtype) * int((top(dtype) + 1) // (top(image.dtype) + 1))


@pytest.mark.parametrize("src, dst", [("uint8", "float32"), ("float32", "uint8"),
                                      ("float64", "int32"), ("uint8", "int16"),
                                      ("int16", "uint8"), ("int32", "uint8"),
                                      ("float64", "float32"), ("int8", "int64"),
                                      ("bool", "float32"), ("bool", "uint8"),
                                      ("uint8", "bool"), ("float32", "bool")])
def test_convert_image_dtype_matches_torchvision(src, dst):
    if src.startswith("float"):
        x = RNG.uniform(size=(2, 3, 4)).astype(src)
        x.flat[:2] = (0.0, 1.0)
    elif src == "bool":                           # PILToTensor of a mode "1" image
        x = RNG.integers(0, 2, (2, 3, 4)).astype(bool)
    else:
        info = np.iinfo(src)
        x = RNG.integers(0, info.max, (2, 3, 4), dtype=src, endpoint=True)
    got = T.ConvertImageDtype(getattr(ember, dst))(ember.tensor(x))
    want = tv_convert_image_dtype(torch.tensor(x), getattr(torch, dst)).numpy()
    assert got.numpy().dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-7)


def test_convert_image_dtype_refusals_and_dimensions():
    x = ember.rand(3, 2, 2)
    assert TF.convert_image_dtype(x, ember.float32) is x
    with pytest.raises(RuntimeError, match="float32 to ember.int64 cannot be performed safely"):
        TF.convert_image_dtype(x, ember.int64)
    with pytest.raises(TypeError, match="expected a tensor"):
        TF.convert_image_dtype(np.zeros((2, 2)), ember.uint8)
    assert TF.get_dimensions(ember.zeros(2, 3, 4, 5)) == [3, 4, 5]
    assert TF.get_dimensions(ember.zeros(4, 5)) == [1, 4, 5]
    assert TF.get_dimensions(np.zeros((4, 5, 3))) == [3, 4, 5]
    assert TF.get_image_num_channels(np.zeros((4, 5))) == 1
    assert TF.get_image_size(np.zeros((4, 5, 3))) == [5, 4]
    with pytest.raises(TypeError, match="get_dimensions"):
        TF.get_dimensions([[0]])
    with pytest.raises(TypeError, match=r"get_dimensions: .* got shape \(5,\)"):
        TF.get_image_size(ember.zeros(5))
    np.testing.assert_allclose(TF.normalize(TF.to_tensor(np.full((2, 2, 3), 51, np.uint8)),
                                            [0.1, 0.2, 0.3], [0.5, 0.5, 0.5]).numpy()[:, 0, 0],
                               [0.2, 0.0, -0.2], atol=1e-6)


# torchvision 0.28's rule (checked against it by fuzz/mend54b/topil_rule.py): a tensor becomes
# an (H, W, C) array first, then floats of either are scaled by 255 to uint8 (unless mode is
# "F"); the mode follows the dtype and the number of channels, other dtypes are refused
_TOPIL_MODES = {"uint8": {None: "L", 1: "L", 2: "LA", 3: "RGB", 4: "RGBA"},
                "int16": {None: "I;16", 1: "I;16"}, "int32": {None: "I", 1: "I"}}
for _float in ("float16", "float32", "float64"):
    _TOPIL_MODES[_float] = _TOPIL_MODES["uint8"]


@pytest.mark.parametrize("kind", ["tensor", "array"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "float16",
                                   "float32", "float64", "bool"])
@pytest.mark.parametrize("channels", [None, 1, 2, 3, 4])
def test_to_pil_image_follows_torchvision_0_28_over_dtypes_channels_and_kinds(kind, dtype,
                                                                              channels):
    hwc = (3, 5) if channels is None else (3, 5, channels)
    arr = RNG.random(hwc).astype(dtype) if dtype.startswith("float") else (
        RNG.integers(0, 2 if dtype == "bool" else 100, hwc).astype(dtype))
    pic = arr if kind == "array" else ember.from_numpy(
        np.ascontiguousarray(arr if channels is None else arr.transpose(2, 0, 1)))
    want = _TOPIL_MODES.get(dtype, {}).get(channels)
    if want is None:
        with pytest.raises(TypeError, match=f"input type {dtype} is not supported"):
            TF.to_pil_image(pic)
        return
    img = TF.to_pil_image(pic)
    assert img.mode == want
    if dtype.startswith("float"):   # scaled by 255 and truncated, arrays as well as tensors
        got = np.asarray(img)
        np.testing.assert_array_equal(got, (arr * 255).astype(np.uint8).reshape(got.shape))


def test_to_pil_image_of_float_arrays_scales_unless_mode_f():
    depth = np.array([[0.25, 0.5], [0.75, 1.0]], np.float32)
    assert TF.to_pil_image(depth, mode="L").mode == "L"
    assert T.ToPILImage()(depth).getpixel((1, 1)) == 255
    kept = TF.to_pil_image(depth, mode="F")              # mode "F" keeps the values
    np.testing.assert_array_equal(np.asarray(kept), depth)
    assert TF.to_pil_image(np.zeros((2, 2, 3))).mode == "RGB"   # float64 (H, W, 3)
    assert TF.to_pil_image(depth.astype(np.float64)).mode == "L"


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint16"])
@pytest.mark.parametrize("channels, mode", [(2, "LA"), (3, "RGB"), (3, "HSV"), (4, "RGBA")])
def test_to_pil_image_of_multichannel_non_uint8_with_a_mode_is_a_clear_error(dtype, channels,
                                                                            mode):
    # Pillow's 'Cannot handle this data type: (1, 1, 3), <i4' came through; torchvision reads
    # the raw bytes as uint8 levels (int32 [0, 1, 2] becomes [0, 0, 0]), a silent wrong image
    arr = np.zeros((2, 2, channels), dtype)
    with pytest.raises(TypeError, match=f"to_pil_image: mode {mode} needs uint8 data for "
                                        f"{channels} channels, got {dtype}"):
        TF.to_pil_image(arr, mode=mode)


@pytest.mark.parametrize("dtype", ["int8", "bool"])
@pytest.mark.parametrize("channels, mode", [(2, "LA"), (3, "RGB"), (4, "RGBA")])
def test_to_pil_image_of_one_byte_multichannel_with_a_mode_reads_the_bytes(dtype, channels,
                                                                          mode):
    # torchvision 0.28 draws these: int8 [1, 2, 3] as levels [1, 2, 3], -1 as 255, True as 1
    arr = (np.arange(4 * channels).reshape(2, 2, channels) % 3 - 1).astype(dtype)
    got = np.asarray(TF.to_pil_image(arr, mode=mode))
    np.testing.assert_array_equal(got, arr.view(np.uint8))
