"""Key points against torchvision 0.29.1's values, recorded as constants (made by
/work/fuzz/vision_kp/gen_constants.py): the kernels torchvision names (center_crop_keypoints,
resized_crop_keypoints, perspective_keypoints, elastic_keypoints, get_size_keypoints),
integer points truncated as torchvision's float32 steps truncate them (perspective, rotate
with expand), sanitize of no points, get_keypoints, and draw_keypoints' torchvision inputs."""

import numpy as np
import pytest
import torch

import ember
from ember.vision import tv_tensors as tv
from ember.vision.transforms import v2
from ember.vision.transforms.v2 import functional as F
from ember.vision.utils import draw_keypoints

P = [[0.0, 0.0], [3.25, 1.5], [25.0, 33.0], [10.0, 10.0], [-4.5, 7.0], [30.0, -2.0]]
CANVAS = (34, 26)
SP = [[0, 0], [25, 0], [25, 33], [0, 33]]
EP = [[2, 1], [24, 3], [23, 30], [1, 32]]


def _list(x):
    return x.as_subclass(ember.Tensor).tolist()


def test_center_and_resized_crop_keypoints():
    out, canvas = F.center_crop_keypoints(ember.tensor(P), CANVAS, [20, 15])
    assert canvas == (20, 15)
    assert _list(out) == [[-6.0, -7.0], [-2.75, -5.5], [19.0, 26.0], [4.0, 3.0], [-10.5, 0.0],
                          [24.0, -9.0]]
    out, canvas = F.resized_crop_keypoints(ember.tensor(P), 3, -2, 20, 15, [40, 45])
    assert canvas == (40, 45)
    assert _list(out) == [[6.0, -6.0], [15.75, -3.0], [81.0, 60.0], [36.0, 14.0], [-7.5, 8.0],
                          [96.0, -10.0]]
    out, _ = F.resized_crop_keypoints(ember.tensor(P).to(ember.int64), 3, -2, 20, 15, [40, 45])
    assert out.dtype is ember.int64
    assert _list(out) == [[6, -6], [15, -4], [81, 60], [36, 14], [-6, 8], [96, -10]]
    k = tv.KeyPoints(P, canvas_size=CANVAS)
    assert F.get_size_keypoints(k) == [34, 26] == F.get_size(k)
    for fn in (lambda x: F.center_crop(x, [20, 15]),
               lambda x: F.resized_crop(x, 3, -2, 20, 15, [40, 45], antialias=False)):
        out = fn(k)
        assert type(out) is tv.KeyPoints and out.canvas_size in ((20, 15), (40, 45))


def test_perspective_keypoints_as_torchvision():
    out = F.perspective_keypoints(ember.tensor(P), CANVAS, SP, EP)
    expected = [[2.0, 1.0], [5.17700386, 2.68419695], [23.0000019, 30.0],
                [11.235013, 10.775094], [-2.88593245, 7.36793327], [27.7946873, 1.7345475]]
    assert np.allclose(_list(out), expected, rtol=1e-6, atol=1e-6)
    # integer points go through float32 and are truncated: 0.99999998 there is 1.0, as in
    # torchvision's (the map is scaled as its is, so float32 rounds the same way)
    ints = ember.tensor(P).to(ember.int64)
    assert _list(F.perspective_keypoints(ints, CANVAS, SP, EP)) == [
        [2, 1], [4, 2], [23, 30], [11, 10], [-2, 7], [27, 1]]
    u8 = tv.KeyPoints(ember.tensor([[0, 0], [3, 1], [25, 33], [10, 10]], dtype=ember.uint8),
                      canvas_size=CANVAS)
    out = F.perspective(u8, SP, EP)
    assert type(out) is tv.KeyPoints and out.dtype is ember.uint8
    assert _list(out) == [[2, 1], [4, 2], [23, 30], [11, 10]]


def test_elastic_keypoints_on_pixels_as_torchvision():
    d = ember.zeros(1, 34, 26, 2) + ember.tensor([0.25, -0.125])
    d[0, 10, 10] = ember.tensor([0.5, 0.5])
    on_pixels = ember.tensor([[0.0, 0.0], [3.0, 1.0], [10.0, 10.0], [25.0, 33.0]])
    expected = [[-3.25, 2.125], [-0.25, 3.125], [3.5, 1.5], [21.75, 35.125]]
    assert np.allclose(_list(F.elastic_keypoints(on_pixels, CANVAS, d)), expected, atol=1e-5)
    out = F.elastic_keypoints(on_pixels.to(ember.int64), CANVAS, d)
    assert out.dtype is ember.int64 and _list(out) == [[-3, 2], [0, 3], [3, 1], [21, 35]]
    with pytest.raises(TypeError, match="displacement should be a tensor"):
        F.elastic_keypoints(on_pixels, CANVAS, [[0.0]])
    with pytest.raises(ValueError, match="displacement shape"):
        F.elastic_keypoints(on_pixels, CANVAS, ember.zeros(1, 34, 25, 2))


ROTATED = [  # torchvision 0.29.1's rotate_keypoints(int32 points, expand=True, center=...)
    (90.0, [12.3, 20.7], [[-3, -5], [16, 9], [6, 5], [41, 8], [37, 25], [5, 21]]),
    (-90.0, [3.5, 8.25], [[37, 31], [18, 17], [28, 21], [-7, 18], [-3, 1], [29, 5]]),
    (180.0, [20.1, 4.9], [[-5, 37], [9, 18], [5, 28], [8, -7], [25, -3], [21, 29]]),
    (37.5, [12.3, 20.7], [[22, -5], [23, 18], [20, 7], [39, 37], [23, 44], [7, 16]]),
]


@pytest.mark.parametrize("angle, center, expected", ROTATED)
def test_rotate_expand_truncates_integer_points_as_torchvision(angle, center, expected):
    points = ember.tensor([[31, -3], [17, 16], [21, 6], [18, 41], [1, 37], [5, 5]],
                          dtype=ember.int32)
    out, canvas = F.rotate_keypoints(points, CANVAS, angle, expand=True, center=center)
    assert out.dtype is ember.int32 and _list(out) == expected
    image = F.rotate(tv.Image(ember.zeros(1, *CANVAS)), angle, expand=True, center=center)
    assert canvas == tuple(image.shape[-2:])  # the image's canvas (torchvision's may differ)
    floats, _ = F.rotate_keypoints(points.to(ember.float32), CANVAS, angle, expand=True,
                                   center=center)
    assert np.trunc(np.array(_list(floats))).astype(int).tolist() == expected


def test_float16_points_are_moved_in_float32_and_rounded_once():
    rng = np.random.default_rng(0)
    points = ember.tensor(rng.uniform(-10, 50, (40, 2))).to(ember.float16)
    args = dict(angle=33.0, translate=[1.5, -2.0], scale=1.1, shear=[7.0, -3.0])
    out, _ = F.affine_keypoints(points, (30, 40), **args)
    exact, _ = F.affine_keypoints(points.to(ember.float64), (30, 40), **args)
    assert out.dtype is ember.float16
    exact16 = torch.tensor(exact.numpy()).to(torch.float16)
    ulp = torch.finfo(torch.float16).eps * exact16.abs().float().clamp(min=1)
    assert ((torch.tensor(out.numpy()).float() - exact16.float()).abs() <= ulp).all()


def test_sanitize_keypoints_with_no_points():
    for shape in ((0, 2), (0, 3, 2)):
        kept, valid = F.sanitize_keypoints(tv.KeyPoints(ember.zeros(*shape), canvas_size=(4, 4)))
        assert type(kept) is tv.KeyPoints and tuple(kept.shape) == shape
        assert tuple(valid.shape) == (0,) and valid.dtype is ember.bool
    out = v2.SanitizeKeyPoints("default")({"points": tv.KeyPoints(ember.zeros(0, 2),
                                                                  canvas_size=(4, 4)),
                                           "labels": ember.zeros(0, dtype=ember.int64)})
    assert tuple(out["points"].shape) == (0, 2) and tuple(out["labels"].shape) == (0,)


def test_get_keypoints():
    first = tv.KeyPoints([[1, 2]], canvas_size=(4, 4))
    sample = [tv.Image(ember.zeros(3, 4, 4)), first, tv.KeyPoints([[0, 0]], canvas_size=(4, 4))]
    assert v2.get_keypoints(sample) is first
    with pytest.raises(ValueError, match="No keypoints were found in the sample"):
        v2.get_keypoints(sample[:1])


def test_draw_keypoints_takes_keypoint_rcnn_rows_and_converts_floats_as_torchvision():
    image = ember.zeros(3, 12, 12, dtype=ember.uint8)
    xy = ember.tensor([[[2.0, 3.0], [8.0, 9.0]]])
    xyv = ember.cat((xy, ember.ones(1, 2, 1)), dim=-1)  # (x, y, visibility), as the model gives
    assert ember.equal(draw_keypoints(image, xyv, [(0, 1)], "red"),
                       draw_keypoints(image, xy, [(0, 1)], "red"))
    with pytest.raises(ValueError, match=r"shape \(num_instances, K, 2\)"):
        draw_keypoints(image, ember.zeros(1, 2, 1))
    # a float image goes to uint8 and back times 1/255 (torchvision's to_dtype), to the bit
    levels = ember.arange(256).to(ember.float32) * (1.0 / 255)
    float_image = levels.reshape(1, 16, 16).expand(3, 16, 16).contiguous()
    out = draw_keypoints(float_image, ember.zeros(0, 1, 2))
    expected = torch.arange(256).float().mul_(1.0 / 255).reshape(1, 16, 16).expand(3, 16, 16)
    assert np.array_equal(out.numpy(), expected.numpy())


@pytest.mark.parametrize("kwargs", [dict(scale=0.0), dict(scale=-1.0), dict(translate=[1]),
                                    dict(shear=[1.0, 2.0, 3.0])])
def test_affine_of_points_and_boxes_checks_its_arguments(kwargs):
    # torchvision raises ValueError for each; the point and box kernels gave NaN, took the
    # first two shears, or raised IndexError
    args = {**dict(angle=10.0, translate=[1, 1], scale=1.0, shear=0.0), **kwargs}
    points = tv.KeyPoints([[1.5, 2.0]], canvas_size=(10, 12))
    boxes = tv.BoundingBoxes([[1.0, 2.0, 5.0, 6.0]], format="XYXY", canvas_size=(10, 12))
    for inpt in (points, boxes):
        with pytest.raises(ValueError, match="affine: "):
            F.affine(inpt, **args)
