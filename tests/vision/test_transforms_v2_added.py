"""The v2 transforms that wrap v1 draws or new functionals: one draw moves every input of a
sample (checked against the functionals with the same draws), equality with v1 for the same
seed, the type conversions, and what each refuses."""

import numpy as np
import pytest
from PIL import Image as PILImage

import ember
from ember.vision import tv_tensors as tv
from ember.vision.transforms import AugMix as V1AugMix
from ember.vision.transforms import AutoAugment as V1AutoAugment
from ember.vision.transforms import functional as TF
from ember.vision.transforms import geometric as v1_geometric
from ember.vision.transforms import v2
from ember.vision.transforms.v2 import functional as F

H, W = 20, 24


def _plain(x):
    return x.as_subclass(ember.Tensor) if isinstance(x, tv.TVTensor) else x


def _sample():
    img = tv.Image(ember.rand(3, H, W))
    mask = tv.Mask(ember.randint(0, 3, (H, W)))
    boxes = tv.BoundingBoxes([[4.0, 3.0, 15.0, 12.0]], format="XYXY", canvas_size=(H, W))
    points = tv.KeyPoints([[5.0, 6.0], [17.0, 2.0]], canvas_size=(H, W))
    return {"image": img, "mask": mask, "boxes": boxes, "points": points, "label": 3}


def _same(a, b):
    assert type(a) is type(b)
    assert ember.allclose(_plain(a).to(ember.float64), _plain(b).to(ember.float64), atol=1e-6)


def test_random_perspective_one_draw_for_all():
    sample = _sample()
    ember.manual_seed(0)
    out = v2.RandomPerspective(0.6, p=1.0, fill={tv.Mask: 7, "others": 0})(sample)
    ember.manual_seed(0)
    ember.rand(1)  # the coin
    start, end = v1_geometric.RandomPerspective.get_params(W, H, 0.6)
    _same(out["image"], F.perspective(sample["image"], start, end, fill=0))
    _same(out["mask"], F.perspective(sample["mask"], start, end, fill=7))
    _same(out["boxes"], F.perspective(sample["boxes"], start, end))
    _same(out["points"], F.perspective(sample["points"], start, end))
    assert out["label"] == 3
    assert v2.RandomPerspective(p=0.0)(sample)["image"] is sample["image"]
    with pytest.raises(ValueError, match="distortion_scale should be in"):
        v2.RandomPerspective(1.5)


def test_elastic_transform_one_draw_for_all():
    sample = _sample()
    ember.manual_seed(1)
    out = v2.ElasticTransform(alpha=8.0, sigma=1.5)(sample)
    ember.manual_seed(1)
    displacement = v1_geometric.ElasticTransform.get_params([8.0, 8.0], [1.5, 1.5], [H, W])
    for key in ("image", "mask", "boxes", "points"):
        _same(out[key], F.elastic(sample[key], displacement, fill=0))


def test_random_resize_scales_everything():
    sample = _sample()
    out = v2.RandomResize(10, 11)(sample)
    assert out["image"].shape == (3, 10, 12) and out["mask"].shape == (10, 12)
    assert out["boxes"].canvas_size == out["points"].canvas_size == (10, 12)
    assert _plain(out["boxes"]).tolist() == [[2.0, 1.5, 7.5, 6.0]]
    with pytest.raises(ValueError, match="min_size < max_size"):
        v2.RandomResize(5, 5)


def test_five_and_ten_crop_equal_v1():
    img = ember.rand(3, H, W)
    for t, v1_call in ((v2.FiveCrop(8), lambda x: TF.five_crop(x, 8)),
                       (v2.TenCrop([8, 6], vertical_flip=True),
                        lambda x: TF.ten_crop(x, [8, 6], True))):
        crops = t(tv.Image(img))
        expected = v1_call(img)
        assert len(crops) == len(expected)
        for c, e in zip(crops, expected):
            assert type(c) is tv.Image and ember.equal(_plain(c), e)
        video = t(tv.Video(img[None]))
        assert type(video[0]) is tv.Video and video[0].shape == (1, 3, 8, expected[0].shape[-1])
        with pytest.raises(TypeError, match="BoundingBoxes inputs are not supported"):
            t(img, _sample()["boxes"])
    pil = PILImage.fromarray((np.arange(H * W) % 256).astype(np.uint8).reshape(H, W))
    assert [c.size for c in v2.FiveCrop(4)(pil)] == [(4, 4)] * 5


@pytest.mark.parametrize("make", [
    lambda: (v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10),
             V1AutoAugment(v2.AutoAugmentPolicy.CIFAR10)),
    lambda: (v2.AugMix(severity=4), V1AugMix(severity=4)),
])
def test_policies_equal_v1_on_uint8_images(make, monkeypatch):
    # with v2's autocontrast in v1's ops: torchvision 0.28's v2 policies use the v2 kernel,
    # whose uint8 values can be a level below v1's
    monkeypatch.setattr(TF, "autocontrast", F.autocontrast)
    v2_t, v1_t = make()
    img = ember.randint(0, 256, (3, 16, 16), dtype=ember.uint8)
    for seed in range(4):
        ember.manual_seed(seed)
        out, label = v2_t(tv.Image(img), 5)
        ember.manual_seed(seed)
        assert type(out) is tv.Image and label == 5
        assert ember.equal(_plain(out), v1_t(img))
    with pytest.raises(TypeError, match="Mask are not supported"):
        v2_t(img, tv.Mask(ember.zeros(16, 16)))


@pytest.mark.parametrize("policy", [v2.AutoAugment, v2.AugMix, v2.RandAugment,
                                    v2.TrivialAugmentWide])
def test_policies_refuse_key_points_and_samples_without_an_image(policy):
    # (their shears, rotations and translations would move the image and leave the points)
    points = tv.KeyPoints([[1.0, 2.0]], canvas_size=(8, 8))
    img = tv.Image(ember.randint(0, 256, (3, 8, 8), dtype=ember.uint8))
    with pytest.raises(TypeError, match="KeyPoints are not supported"):
        policy()(img, points)
    with pytest.raises(TypeError, match="KeyPoints are not supported"):
        policy()(points)
    with pytest.raises(TypeError, match="no image"):
        policy()({"label": 3})


def test_augmix_mixes_a_video_with_one_draw_and_a_batch_per_image():
    # (torchvision: a (T, C, H, W) video is one sample, its frames mixed alike; a batch of
    # images, or of videos, draws the mixing weights per image or video)
    frame = ember.randint(0, 256, (1, 3, 16, 16), dtype=ember.uint8)
    for seed in range(3):
        ember.manual_seed(seed)
        video = _plain(v2.AugMix()(tv.Video(frame.expand(4, 3, 16, 16).clone())))
        assert all(ember.equal(video[t], video[0]) for t in range(4))
    ember.manual_seed(0)
    batch = v2.AugMix()(frame.expand(4, 3, 16, 16).clone())
    assert not all(ember.equal(batch[t], batch[0]) for t in range(4))


@pytest.mark.parametrize("mix", [v2.MixUp, v2.CutMix])
def test_mixup_cutmix_refuse_key_points(mix):
    # (the mixed images' points cannot follow: as their boxes, refused, not passed through)
    points = tv.KeyPoints(ember.rand(4, 3, 2), canvas_size=(8, 8))
    with pytest.raises(ValueError, match="key points"):
        mix(num_classes=3)(ember.rand(4, 3, 8, 8), ember.tensor([0, 1, 2, 0]), points)


def test_augmix_mixes_float_images_in_float():
    img = ember.rand(2, 3, 16, 16)
    out = v2.AugMix()(img)
    assert out.dtype is ember.float32 and out.shape == img.shape
    assert float(out.min()) >= 0.0 and float(out.max()) <= 1.0
    with pytest.raises(TypeError, match="expected a uint8 or float image"):
        v2.AugMix()(ember.zeros(3, 4, 4, dtype=ember.int32))


def test_jpeg():
    ys, xs = np.mgrid[:16, :16]
    img = ember.from_numpy(np.stack([xs * 12, ys * 12, xs * 6 + ys * 6]).astype(np.uint8))
    out = v2.JPEG(100)(tv.Image(img))
    assert type(out) is tv.Image and out.dtype is ember.uint8
    assert (_plain(out).to(ember.int32) - img.to(ember.int32)).abs().max().item() <= 10
    low = F.jpeg(img, 5)
    assert (low.to(ember.int32) - img.to(ember.int32)).abs().float().mean().item() > \
        (_plain(out).to(ember.int32) - img.to(ember.int32)).abs().float().mean().item()
    gray = F.jpeg(ember.full((2, 1, 8, 8), 77, dtype=ember.uint8), 90)
    assert gray.shape == (2, 1, 8, 8) and gray.tolist() == ember.full((2, 1, 8, 8), 77).tolist()
    with pytest.raises(TypeError, match="uint8 dtype"):
        F.jpeg(ember.rand(3, 8, 8), 50)
    with pytest.raises(ValueError, match="from 1 to 100"):
        v2.JPEG((0, 50))
    boxes = _sample()["boxes"]
    assert v2.JPEG(50)(tv.Image(img), boxes)[1] is boxes


def test_jpeg_takes_pil_images_arrays_and_empty_batches():
    ys, xs = np.mgrid[:16, :16]
    arr = np.stack([xs * 12, ys * 12, xs * 6 + ys * 6], axis=-1).astype(np.uint8)
    out = F.jpeg(PILImage.fromarray(arr), 5)  # as torchvision's PIL kernel: Pillow's round trip
    assert out.mode == "RGB" and np.abs(np.asarray(out).astype(int) - arr).mean() > 1.0
    assert v2.JPEG(5)(PILImage.fromarray(arr)).tobytes() == out.tobytes()  # not passed through
    assert np.array_equal(np.asarray(F.jpeg(arr, 5)), np.asarray(out))
    assert F.jpeg(PILImage.fromarray(arr[..., 0]), 50).mode == "L"
    empty = ember.zeros(0, 3, 8, 8, dtype=ember.uint8)
    assert F.jpeg(empty, 50).shape == (0, 3, 8, 8)


def test_rgb_and_noise_on_pil_images_as_torchvision():
    for mode in ("P", "RGBA", "L", "1", "YCbCr"):
        assert v2.RGB()(PILImage.new(mode, (5, 4))).mode == "RGB"  # Pillow's convert("RGB")
    assert v2.RGB()(ember.zeros(4, 2, 2)).shape == (4, 2, 2)  # 3 channels or more pass
    with pytest.raises(TypeError, match="not supported for PIL images"):
        v2.GaussianNoise()(PILImage.new("RGB", (5, 4)))  # refused, not passed through
    with pytest.raises(TypeError, match="not supported for PIL images"):
        F.gaussian_noise(np.zeros((4, 5, 3), np.float32))


def test_rgb_gaussian_noise_identity():
    gray = ember.rand(1, 4, 5)
    out = v2.RGB()(tv.Image(gray))
    assert type(out) is tv.Image and ember.equal(_plain(out), gray.expand(3, 4, 5))
    rgb = ember.rand(3, 4, 5)
    assert ember.equal(v2.RGB()(rgb), rgb)
    assert v2.RGB()(PILImage.new("L", (5, 4), 9)).mode == "RGB"
    img = ember.full((3, 4, 5), 0.5)
    ember.manual_seed(2)
    out = v2.GaussianNoise(mean=0.1, sigma=0.2)(img)
    ember.manual_seed(2)
    assert ember.allclose(out, (img + ember.randn(3, 4, 5) * 0.2 + 0.1).clamp(0, 1))
    assert float(v2.GaussianNoise(sigma=5.0, clip=False)(img).abs().max()) > 1.0
    with pytest.raises(ValueError, match="uint8 or float dtype"):
        v2.GaussianNoise()(ember.zeros(3, 2, 2, dtype=ember.int32))
    # uint8 (torchvision 0.28): noise * 255 truncated to int16, clamped, or wrapped unclipped
    u8 = ember.tensor([[[0, 3, 100, 240, 250, 255]]], dtype=ember.uint8)
    assert v2.GaussianNoise(mean=0.1, sigma=0.0)(u8).tolist() == \
        [[[25, 28, 125, 255, 255, 255]]]
    assert v2.GaussianNoise(mean=0.1, sigma=0.0, clip=False)(u8).tolist() == \
        [[[25, 28, 125, 9, 19, 24]]]
    assert v2.GaussianNoise(mean=-0.1, sigma=0.0, clip=False)(u8).tolist() == \
        [[[231, 234, 75, 215, 225, 230]]]
    noisy = v2.GaussianNoise(sigma=0.1)(ember.full((1, 60, 60), 128, dtype=ember.uint8))
    assert noisy.dtype is ember.uint8 and 20 < float(noisy.float().std()) < 31
    sample = _sample()
    assert v2.Identity()(sample) is sample
    assert v2.GaussianNoise()(sample)["boxes"] is sample["boxes"]


def test_linear_transformation_and_convert_image_dtype():
    matrix = ember.rand(12, 12)
    mean = ember.rand(12)
    img = ember.rand(3, 2, 2)
    out = v2.LinearTransformation(matrix, mean)(tv.Image(img))
    expected = ((img.reshape(1, 12) - mean) @ matrix).reshape(3, 2, 2)
    assert type(out) is tv.Image and ember.allclose(_plain(out), expected)
    with pytest.raises(TypeError, match="does not support array or PIL images"):
        v2.LinearTransformation(matrix, mean)(np.zeros((2, 2, 3), np.float32))
    u8 = tv.Image(ember.tensor([[[0, 255]]], dtype=ember.uint8))
    mask = tv.Mask(ember.ones(1, 2, dtype=ember.uint8))
    out_img, out_mask = v2.ConvertImageDtype(ember.float32)(u8, mask)
    assert out_img.tolist() == [[[0.0, 1.0]]] and out_mask is mask


def test_pil_conversions():
    pil = PILImage.fromarray(np.arange(24, dtype=np.uint8).reshape(2, 4, 3))
    t = v2.PILToTensor()(pil)
    assert type(t) is ember.Tensor and t.shape == (3, 2, 4) and t.dtype is ember.uint8
    back = v2.ToPILImage()(tv.Image(t))
    assert back.mode == "RGB" and np.array_equal(np.asarray(back), np.asarray(pil))
    assert v2.ToPILImage(mode="RGB")(np.asarray(pil)).size == (4, 2)
    f = v2.ToTensor()({"img": pil, "label": 1})
    assert f["img"].dtype is ember.float32 and abs(f["img"].max().item() - 23 / 255) < 1e-6
    assert F.to_pil_image(F.pil_to_tensor(pil)).mode == "RGB"


def test_sample_queries_are_exported():
    flat = list(_sample().values())
    assert v2.query_size(flat) == (H, W) and v2.query_chw(flat) == (3, H, W)
    assert v2.has_any(flat, tv.KeyPoints) and not v2.has_all(flat, tv.KeyPoints, tv.Video)
    assert v2.check_type(flat[0], (tv.Image,))
    assert v2.get_bounding_boxes(flat) is flat[2]
