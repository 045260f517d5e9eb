"""ember.vision.transforms.v2.functional on masks of every integer dtype: labels kept exact,
fills rounded and interpolation modes taken as torchvision 0.28 takes them (its values
computed with torchvision and written here: it is not a test dependency)."""

import numpy as np
import pytest

import ember
from ember.vision import tv_tensors as tv
from ember.vision.transforms.v2 import functional as F

CORNERS = [[0, 0], [10, 0], [10, 8], [0, 8]]
MOVED = [[1, 2], [9, 0], [10, 7], [0, 8]]
SHIFT = np.random.default_rng(3).normal(0, 0.05, (1, 9, 11, 2)).astype(np.float32)
OPS = {  # (mask, fill)
    "crop": lambda m, f: F.crop(m, -2, 3, 12, 9),
    "center_crop": lambda m, f: F.center_crop(m, [12, 6]),
    "pad": lambda m, f: F.pad(m, [1, 2, 3, 0], fill=f),
    "pad_reflect": lambda m, f: F.pad(m, [2, 1], padding_mode="reflect"),
    "resize": lambda m, f: F.resize(m, [13, 6]),
    "resize_exact": lambda m, f: F.resize(m, [5, 17], F.InterpolationMode.NEAREST_EXACT),
    "rotate": lambda m, f: F.rotate(m, -21.0, expand=True, fill=f),
    "rotate_90": lambda m, f: F.rotate(m, 90.0),
    "affine": lambda m, f: F.affine(m, 12.0, [1, -2], 1.2, [5.0, 3.0], fill=f),
    "perspective": lambda m, f: F.perspective(m, CORNERS, MOVED, fill=f),
    "elastic": lambda m, f: F.elastic(m, ember.tensor(SHIFT), fill=f),
}
WIDE = {  # labels for the ids 0, 1, 2, 3: past float32's exact integers (2**24), to the limits
    ember.int32: [0, 2 ** 24 + 1, -2 ** 31, 2 ** 31 - 1],
    ember.uint32: [0, 2 ** 25 + 1, 2 ** 32 - 1, 7],
    ember.int64: [0, -2 ** 63, 2 ** 63 - 1, 2 ** 53 + 1],
    ember.uint64: [0, 2 ** 64 - 1, 2 ** 53 + 1, 2 ** 25 + 3],
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", WIDE)
def test_mask_labels_past_float32_stay_exact(dtype, op):
    # review56a items 1, 2, 4: nearest-neighbour kernels copy labels, so a mask of labels past
    # 2**24 must give the small-id mask's result (a uint8 mask: torchvision's) renamed. uint32
    # and uint64 masks went through float32 even in crop and pad (2**25 + 1 -> 2**25), and
    # float64 rounded labels past 2**53; torchvision keeps them in crop, pad and resize, and
    # rounds them in float32 in its warps (Ember keeps them exact: docs/vision.md)
    ids = (np.random.default_rng(4).random((2, 9, 11)) * 4).astype(np.uint8)
    names = np.array(WIDE[dtype], dtype=ember.tensor(0, dtype=dtype).numpy().dtype)
    expected = names[OPS[op](tv.Mask(ember.tensor(ids)), 2).numpy()]  # fill: id 2's label
    out = OPS[op](tv.Mask(ember.tensor(names[ids])), int(names[2]))
    assert isinstance(out, tv.Mask) and out.dtype is dtype
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.uint32])
def test_mask_pad_keeps_a_fill_past_float32(dtype):
    # review56a item 2: small labels sent the mask through float32, which rounded the fill
    # (2**25 + 1 -> 2**25); torchvision pads in the mask's dtype
    mask = tv.Mask(ember.tensor([[1, 2], [3, 4]]).to(dtype))
    assert F.pad(mask, [1], fill=2 ** 25 + 1)[0].tolist() == [2 ** 25 + 1] * 4  # torchvision's
    moved = F.affine(mask, 0.0, [1, 0], 1.0, 0.0, fill=2 ** 25 + 1)
    assert moved[:, 0].tolist() == [2 ** 25 + 1] * 2  # (torchvision's float32: 2**25)


def test_mask_resize_takes_nearest_exact_as_torchvision():
    # torchvision resizes masks at NEAREST_EXACT when asked (any other mode is NEAREST);
    # Ember took NEAREST always
    mask = tv.Mask(ember.arange(5).reshape(1, 1, 5))
    exact = F.resize(mask, [1, 3], F.InterpolationMode.NEAREST_EXACT)
    assert exact.tolist() == [[[0, 2, 4]]]  # torchvision's
    assert F.resize(mask, [1, 3]).tolist() == [[[0, 1, 3]]]  # bilinear: nearest, as torchvision


def test_mask_warp_fill_is_rounded_as_torchvision():
    # torchvision rounds a warped integer or bool mask (half to even), the fill with it;
    # Ember truncated the fill (2.6 -> 2, a bool's 0.3 -> True)
    ones = tv.Mask(ember.ones(1, 1, 3, dtype=ember.int64))
    assert F.affine(ones, 0.0, [2, 0], 1.0, 0.0, fill=2.5).tolist() == [[[2, 2, 1]]]
    assert F.affine(ones, 0.0, [2, 0], 1.0, 0.0, fill=2.6).tolist() == [[[3, 3, 1]]]
    assert F.rotate(ones.to(ember.int16), 90.0, fill=3.5).tolist() == [[[4, 1, 4]]]
    flags = tv.Mask(ember.ones(1, 3, 3, dtype=ember.bool))
    assert F.affine(flags, 0.0, [2, 0], 1.0, 0.0, fill=0.3).tolist() == [[[False, False, True]] * 3]
    assert F.affine(flags, 0.0, [2, 0], 1.0, 0.0, fill=0.7).all()


@pytest.mark.parametrize("op", ["rotate", "affine", "perspective", "elastic"])
@pytest.mark.parametrize("dtype", [ember.uint8, ember.int16, ember.int64, ember.bool])
def test_mask_warp_refuses_a_fill_without_an_integer_value(op, dtype):
    # review56m2 item 1: a NaN or infinite fill on an integer mask warp raised a bare
    # "ValueError: cannot convert float NaN to integer" (no op, no fill named); torchvision
    # casts it (NaN -> int64 min), an arbitrary label: refused here with the op's name
    mask = tv.Mask(ember.ones(1, 9, 11, dtype=dtype))
    for fill in (float("nan"), float("inf"), [float("-inf")]):
        with pytest.raises(ember.errors.ArgumentError, match=f"{op}: fill must be finite"):
            OPS[op](mask, fill)


def test_mask_warp_takes_numpy_scalar_fills():
    # review56m2 item 1: np.int64(3) failed with "'numpy.int64' object is not iterable"
    ones = tv.Mask(ember.ones(1, 1, 3, dtype=ember.int64))
    for fill in (np.int64(3), np.float32(2.6), np.uint8(3)):
        assert F.affine(ones, 0.0, [2, 0], 1.0, 0.0, fill=fill).tolist() == [[[3, 3, 1]]]


@pytest.mark.parametrize("op", ["pad", "rotate", "affine", "perspective", "elastic"])
@pytest.mark.parametrize("dtype, fill", [(ember.uint8, 300), (ember.uint8, -1), (ember.int8, 300),
                                         (ember.int16, -0.7 - 2 ** 15), (ember.uint16, -1),
                                         (ember.uint32, 2 ** 32 + 5), (ember.uint64, -1)])
def test_mask_refuses_a_fill_outside_its_dtype(op, dtype, fill):
    # review56m2 item 3: one rule for every integer mask. uint8 warps saturated 300 to 255,
    # the other dtypes wrapped it (int8: 44, as torchvision's float32 cast; uint32's 2**32 + 5
    # gave 5, torchvision's 0), and pad wrapped -1 on unsigned masks (uint16: 65535), where
    # torchvision's pad refuses ("cannot be converted to type uint16_t without overflow")
    mask = tv.Mask(ember.ones(1, 9, 11, dtype=dtype))
    with pytest.raises(ember.errors.ArgumentError, match=rf"{op}: fill .* is outside the range"):
        OPS[op](mask, fill)
    edge = ember.iinfo(dtype).min if fill < 0 else ember.iinfo(dtype).max
    assert (OPS[op](mask, edge).numpy() == np.array(edge).astype(mask.numpy().dtype)).any()
