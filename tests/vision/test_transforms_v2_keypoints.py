"""tv_tensors.KeyPoints and the key point kernels: hand-computed results in torchvision's
convention (flips mirror pixels, ``x -> width - 1 - x``; every other warp maps the point by
the continuous map of box corners, ``resize`` scaling plainly), the image kernel moving a lit
pixel where that convention says, key points moving as degenerate boxes' corners;
perspective boxes against an independent homography."""

import numpy as np
import pytest

import ember
from ember.vision import tv_tensors as tv
from ember.vision.transforms import v2
from ember.vision.transforms.v2 import functional as F

H, W = 30, 36


def _plain(x):
    return x.as_subclass(ember.Tensor)


def test_construction_metadata_and_errors():
    k = tv.KeyPoints([3, 4], canvas_size=(5, 6))
    assert k.shape == (1, 2) and k.canvas_size == (5, 6)
    assert tv.KeyPoints(ember.zeros(2, 5, 2), canvas_size=[4, 4]).shape == (2, 5, 2)
    assert type(k.clone()) is tv.KeyPoints and type(k + 1) is ember.Tensor
    assert tv.wrap(k * 2, like=k, canvas_size=(9, 9)).canvas_size == (9, 9)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 2\)"):
        tv.KeyPoints(ember.zeros(3, 3), canvas_size=(4, 4))
    with pytest.raises(ValueError, match="canvas_size should be"):
        tv.KeyPoints([1, 2], canvas_size=4)
    assert "canvas_size=(5, 6)" in repr(k)


def test_kernels_by_hand():
    k = tv.KeyPoints([[1.0, 2.0], [4.0, 0.0]], canvas_size=(5, 6))
    assert _plain(F.horizontal_flip(k)).tolist() == [[4.0, 2.0], [1.0, 0.0]]
    assert _plain(F.vertical_flip(k)).tolist() == [[1.0, 2.0], [4.0, 4.0]]
    out = F.crop(k, 1, 2, 3, 3)
    assert _plain(out).tolist() == [[-1.0, 1.0], [2.0, -1.0]] and out.canvas_size == (3, 3)
    out = F.pad(k, [1, 2, 3, 4])
    assert _plain(out).tolist() == [[2.0, 4.0], [5.0, 2.0]] and out.canvas_size == (11, 10)
    out = F.resize(k, [10, 12])  # a plain scaling, as torchvision's resize_keypoints
    assert _plain(out).tolist() == [[2.0, 4.0], [8.0, 0.0]] and out.canvas_size == (10, 12)
    out = F.resize(tv.KeyPoints([[3, 1]], canvas_size=(4, 4)), [6, 6])
    assert _plain(out).tolist() == [[4, 1]] and out.dtype is ember.int64  # 4.5, 1.5 truncated
    out = F.center_crop(k, [3, 2])  # window x in [2, 4), y in [1, 4)
    assert _plain(out).tolist() == [[-1.0, 1.0], [2.0, -1.0]] and out.canvas_size == (3, 2)
    out = F.affine(k, 0.0, [2, -1], 1.0, 0.0)
    assert _plain(out).tolist() == [[3.0, 1.0], [6.0, -1.0]]
    # counter-clockwise about the canvas centre (2, 2): the corner (0, 0) goes to (0, 4)
    out = F.rotate(tv.KeyPoints([[0, 0]], canvas_size=(4, 4)), 90)
    assert _plain(out).tolist() == [[0, 4]] and out.dtype is ember.int64
    out = F.rotate(tv.KeyPoints([[0.0, 0.0]], canvas_size=(2, 4)), 90, expand=True)
    assert out.canvas_size == (4, 2) and _plain(out).tolist() == [[0.0, 4.0]]
    assert type(F.resized_crop(k, 0, 0, 5, 6, [10, 12])) is tv.KeyPoints


def test_plain_tensor_kernels_take_torchvision_signatures():
    points = ember.tensor([[1.0, 2.0]])
    # resize_keypoints(keypoints, size, canvas_size, max_size), as torchvision's
    out, canvas = F.resize_keypoints(points, [10, 12], (5, 6))
    assert out.tolist() == [[2.0, 4.0]] and canvas == (10, 12)
    out, canvas = F.resize_keypoints(points, size=[10], canvas_size=(5, 6), max_size=11)
    assert canvas == (9, 11)
    # affine_keypoints gives the canvas size back too
    out, canvas = F.affine_keypoints(points, (5, 6), 0.0, [1, 1], 1.0, 0.0)
    assert out.tolist() == [[2.0, 3.0]] and canvas == (5, 6)


def test_to_dtype_converts_key_points():
    k = tv.KeyPoints([[1, 2]], canvas_size=(5, 6))
    out = F.to_dtype(k, ember.float64)
    assert type(out) is tv.KeyPoints and out.dtype is ember.float64 and out.canvas_size == (5, 6)
    img = tv.Image(ember.zeros(3, 5, 6))
    out = v2.ToDtype({tv.KeyPoints: ember.float32, "others": None})(img, k)
    assert out[0] is img and type(out[1]) is tv.KeyPoints and out[1].dtype is ember.float32
    assert v2.ToDtype(ember.float64)(img, k)[1] is k  # one dtype: images and videos only


def test_clamp_keypoints():
    k = tv.KeyPoints([[-1.5, 2.0], [9.0, 9.0]], canvas_size=(4, 6))
    assert _plain(F.clamp_keypoints(k)).tolist() == [[0.0, 2.0], [5.0, 3.0]]
    plain = ember.tensor([[7.0, -2.0]])
    assert F.clamp_keypoints(plain, canvas_size=(4, 6)).tolist() == [[5.0, 0.0]]
    with pytest.raises(ValueError, match="canvas_size must be passed"):
        F.clamp_keypoints(plain)
    with pytest.raises(ValueError, match="must not be passed"):
        F.clamp_keypoints(k, canvas_size=(4, 6))
    out = v2.ClampKeyPoints()({"k": k, "img": ember.zeros(1, 4, 6)})
    assert _plain(out["k"]).tolist() == [[0.0, 2.0], [5.0, 3.0]]


def _lit(x, y):
    img = ember.zeros(1, H, W, dtype=ember.float64)
    img[0, y, x] = 1.0
    return img


def _centroid(img):
    a = img[0].numpy()
    ys, xs = np.mgrid[:a.shape[0], :a.shape[1]]
    return [float((a * xs).sum() / a.sum()), float((a * ys).sum() / a.sum())]


WARPS = {
    "rotate": lambda x: F.rotate(x, 33.0, v2.InterpolationMode.BILINEAR),
    # (with expand, torchvision's boxes and points take the exact canvas, not the image's
    # rounded-up one, and drop the shift a center gives the image; Ember's do as
    # torchvision's, so the rotation here keeps the canvas exact)
    "rotate_expand": lambda x: F.rotate(x, -90.0, v2.InterpolationMode.BILINEAR, expand=True),
    "rotate_center": lambda x: F.rotate(x, 50.0, v2.InterpolationMode.BILINEAR,
                                        center=[10, 12]),
    "affine": lambda x: F.affine(x, 20.0, [3, -2], 1.2, [10.0, 5.0],
                                 v2.InterpolationMode.BILINEAR),
    "perspective": lambda x: F.perspective(
        x, [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]],
        [[3, 2], [W - 2, 0], [W - 5, H - 3], [1, H - 1]]),
    "resize": lambda x: F.resize(x, [45, 24]),
    "flip": F.horizontal_flip,
    "pad_crop": lambda x: F.crop(F.pad(x, [2, 3]), 1, 4, 28, 25),
}


@pytest.mark.parametrize("name", WARPS)
@pytest.mark.parametrize("point", [(12, 9), (20, 16), (15, 20)])
def test_keypoints_follow_their_pixel(name, point):
    """A lit pixel's value lands where the key point of its centre goes: flips mirror pixel
    indices (the point itself), every other warp maps continuous coordinates, in which pixel
    (x, y) has its centre at (x + 0.5, y + 0.5)."""
    warp = WARPS[name]
    out_img = warp(tv.Image(_lit(*point)))
    half = 0.0 if name == "flip" else 0.5
    out_k = warp(tv.KeyPoints([[p + half for p in point]], canvas_size=(H, W)))
    assert out_k.canvas_size == tuple(out_img.shape[-2:])
    np.testing.assert_allclose((_plain(out_k)[0] - half).tolist(), _centroid(_plain(out_img)),
                               atol=0.2)


@pytest.mark.parametrize("name", [n for n in WARPS if n != "flip"])
def test_keypoints_move_as_box_corners(name):
    """Away from the canvas edges, a key point goes where a zero-size box at it goes."""
    points = [[12.25, 9.5], [20.0, 16.75], [15.5, 20.0]]
    out_k = WARPS[name](tv.KeyPoints(points, canvas_size=(H, W), dtype=ember.float64))
    boxes = tv.BoundingBoxes([p + p for p in points], format="XYXY", canvas_size=(H, W),
                             dtype=ember.float64)
    out_b = _plain(WARPS[name](boxes))
    np.testing.assert_allclose(_plain(out_k).tolist(), out_b[:, :2].tolist(), atol=1e-6)


def test_elastic_moves_points_back_by_the_displacement():
    shift = ember.zeros(1, H, W, 2, dtype=ember.float64)
    shift[..., 0] = 4.0 / W  # every pixel samples 2 columns to the right
    shift[..., 1] = -2.0 / H  # and 1 row up
    out_img = F.elastic(tv.Image(_lit(12, 9)), shift, v2.InterpolationMode.NEAREST)
    assert _centroid(_plain(out_img)) == [10.0, 10.0]
    out = F.elastic(tv.KeyPoints([[12, 9]], canvas_size=(H, W)), shift)
    assert _plain(out).tolist() == [[10, 10]] and out.dtype is ember.int64
    boxes = tv.BoundingBoxes([[4.0, 4.0, 8.0, 8.0]], format="XYXY", canvas_size=(H, W))
    assert _plain(F.elastic(boxes, shift)).tolist() == [[2.0, 5.0, 6.0, 9.0]]
    with pytest.raises(ValueError, match="displacement shape should be"):
        F.elastic(boxes, ember.zeros(1, 2, 2, 2))


def _homography(src, dst):
    """The 3x3 map taking each src point to its dst point (an independent 8x8 solve)."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(src, dst):
        rows += [[x, y, 1, 0, 0, 0, -u * x, -u * y], [0, 0, 0, x, y, 1, -v * x, -v * y]]
        rhs += [u, v]
    return np.append(np.linalg.solve(np.array(rows, float), np.array(rhs, float)), 1.0
                     ).reshape(3, 3)


def test_perspective_boxes_and_coefficients():
    start = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
    end = [[3, 2], [W - 2, 0], [W - 5, H - 3], [1, H - 1]]
    m = _homography(start, end)
    box = [4.0, 5.0, 20.0, 16.0]
    corners = np.array([[box[0], box[1], 1], [box[2], box[1], 1], [box[2], box[3], 1],
                        [box[0], box[3], 1]]) @ m.T
    xy = corners[:, :2] / corners[:, 2:]
    expected = [xy[:, 0].min(), xy[:, 1].min(), xy[:, 0].max(), xy[:, 1].max()]
    boxes = tv.BoundingBoxes([box], format="XYXY", canvas_size=(H, W), dtype=ember.float64)
    np.testing.assert_allclose(_plain(F.perspective(boxes, start, end))[0].tolist(), expected,
                               atol=1e-4)
    inverse = _homography(end, start).ravel()[:8].tolist()  # output -> input, as torchvision
    img = ember.rand(3, H, W)
    assert ember.allclose(F.perspective(img, None, None, coefficients=inverse),
                          F.perspective(img, start, end), atol=1e-5)
    with pytest.raises(ValueError, match="mutually exclusive"):
        F.perspective(img, start, end, coefficients=inverse)
    flat = [[0, 0]] * 4  # (a 1x1 image's corners: a map with no inverse)
    for inpt in (boxes, tv.KeyPoints([[1.0, 1.0]], canvas_size=(H, W))):
        with pytest.raises(ValueError, match="cannot be inverted"):
            F.perspective(inpt, flat, flat)


def test_transforms_move_keypoints_with_the_image():
    k = tv.KeyPoints([[12.5, 9.5]], canvas_size=(H, W))  # the centre of pixel (12, 9)
    bilinear = v2.InterpolationMode.BILINEAR
    for t in (v2.RandomPerspective(p=1.0), v2.RandomAffine(30, interpolation=bilinear),
              v2.RandomResizedCrop(20, scale=(0.6, 1.0)), v2.ElasticTransform(5.0, 2.0)):
        ember.manual_seed(3)
        out_img, out_k = t(tv.Image(_lit(12, 9)), k)
        assert type(out_k) is tv.KeyPoints and out_k.canvas_size == tuple(out_img.shape[-2:])
        if not isinstance(t, v2.ElasticTransform):  # (elastic moves points to first order)
            np.testing.assert_allclose((_plain(out_k)[0] - 0.5).tolist(),
                                       _centroid(_plain(out_img)), atol=0.2)
    for t in (v2.ColorJitter(0.5, 0.5), v2.GaussianNoise(), v2.RandomInvert(1.0)):
        assert t(ember.rand(3, H, W), k)[1] is k


# -- SanitizeKeyPoints: a point is kept when 0 <= x <= W - 1 and 0 <= y <= H - 1 ------------
def test_sanitize_keypoints_single_points():
    pts = tv.KeyPoints([[0, 0], [W - 1, H - 1], [-1, 5], [W, 5], [5, H], [5, -0.5],
                        [W - 1.5, 0.5]], canvas_size=(H, W))
    kept, valid = F.sanitize_keypoints(pts)
    assert valid.tolist() == [True, True, False, False, False, False, True]
    assert isinstance(kept, tv.KeyPoints) and kept.canvas_size == (H, W)
    assert kept.tolist() == [[0, 0], [W - 1, H - 1], [W - 1.5, 0.5]]
    kept, valid = F.sanitize_keypoints(_plain(pts), canvas_size=(H, W))  # a pure tensor
    assert type(kept) is ember.Tensor and valid.sum().item() == 3


def test_sanitize_keypoints_groups_go_whole():
    groups = tv.KeyPoints([[[1, 1], [2, 2]], [[1, 1], [W, 2]], [[3, 3], [4, 4]]],
                          canvas_size=(H, W))
    kept, valid = F.sanitize_keypoints(groups)
    assert valid.tolist() == [True, False, True] and kept.shape == (2, 2, 2)
    deep = ember.zeros(2, 3, 4, 2)
    deep[1, 2, 3, 0] = -2.0
    assert F.sanitize_keypoints(deep, canvas_size=(H, W))[1].tolist() == [True, False]
    single = tv.KeyPoints([[[5, 5]], [[-5, 5]]], canvas_size=(H, W))  # (N, 1, 2): per point
    assert F.sanitize_keypoints(single)[1].tolist() == [True, False]


def test_sanitize_keypoints_errors():
    pts = tv.KeyPoints([[1, 1]], canvas_size=(H, W))
    with pytest.raises(ValueError, match="canvas_size must not be passed"):
        F.sanitize_keypoints(pts, canvas_size=(H, W))
    with pytest.raises(ValueError, match="canvas_size must be passed"):
        F.sanitize_keypoints(ember.zeros(3, 2))
    with pytest.raises(TypeError, match="sanitize_keypoints: key_points must be a tensor"):
        F.sanitize_keypoints([[1, 1]], canvas_size=(H, W))


def test_sanitize_keypoints_transform_with_labels():
    pts = tv.KeyPoints([[1, 1], [W + 3, 1], [2, 2]], canvas_size=(H, W))
    image = tv.Image(ember.zeros(3, H, W))
    sample = {"image": image, "points": pts, "labels": ember.tensor([7, 8, 9])}
    out = v2.SanitizeKeyPoints()(sample)  # labels_getter None: labels stay as they are
    assert out["points"].tolist() == [[1, 1], [2, 2]] and out["labels"].tolist() == [7, 8, 9]
    out = v2.SanitizeKeyPoints("default")(sample)
    assert out["labels"].tolist() == [7, 9] and out["image"] is image
    assert isinstance(out["points"], tv.KeyPoints)
    scores = ember.tensor([0.5, 0.6, 0.7])
    out = v2.SanitizeKeyPoints(lambda s: (s["labels"], s["scores"]))({**sample, "scores": scores})
    assert out["scores"].tolist() == pytest.approx([0.5, 0.7])
    with pytest.raises(ValueError, match="number of key points \\(3\\) and number of labels"):
        v2.SanitizeKeyPoints("default")({"points": pts, "labels": ember.tensor([1])})
    with pytest.raises(ValueError, match="No keypoints were found in the sample"):
        v2.SanitizeKeyPoints()({"image": image})


def test_sanitize_keypoints_keeps_the_last_pixel_span():
    # torchvision's rule is 0 <= x < width, 0 <= y < height: a point within the last pixel
    # (past its centre, not past the edge) stays
    pts = tv.KeyPoints([[W - 0.5, 1], [1, H - 0.25], [W - 0.01, H - 0.01], [W, 1]],
                       canvas_size=(H, W))
    assert F.sanitize_keypoints(pts)[1].tolist() == [True, True, True, False]
