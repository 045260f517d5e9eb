"""ember.vision.transforms.v2: one draw per call applied to every input by type, pytree
structure, the pure-tensor heuristic, equality with v1 for the same draws, CutMix/MixUp label
mixing, SanitizeBoundingBoxes with labels."""

import numpy as np
import pytest

import ember
from ember.vision import tv_tensors as tv
from ember.vision.transforms import functional as TF
from ember.vision.transforms import v2


def _plain(x):
    return x.as_subclass(ember.Tensor) if isinstance(x, tv.TVTensor) else x


def _sample(h=12, w=16):
    """An image, a mask equal to its first channel, and the box of the mask's rectangle."""
    img = ember.zeros(3, h, w)
    img[:, 3:7, 4:11] = 1.0
    mask = tv.Mask(img[0].clone())
    boxes = tv.BoundingBoxes([[4.0, 3.0, 11.0, 7.0]], format="XYXY", canvas_size=(h, w))
    return tv.Image(img), mask, boxes


def _box_of(mask):
    ys, xs = np.nonzero(_plain(mask).numpy() > 0.5)
    return [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]


# (transform, whether mask and image pixels stay exact: no resampling between pixels)
GEOMETRIC = [
    (v2.RandomHorizontalFlip(p=1.0), True), (v2.RandomVerticalFlip(p=1.0), True),
    (v2.CenterCrop([8, 12]), True), (v2.RandomCrop(10, padding=2), True),
    (v2.Pad([1, 2, 3, 4]), True), (v2.RandomRotation([90, 90], expand=True), True),
    (v2.RandomZoomOut(p=1.0), True), (v2.RandomAffine(0, translate=(0.2, 0.2)), True),
    (v2.RandomResizedCrop(12, scale=(0.5, 1.0), interpolation=v2.InterpolationMode.NEAREST),
     False),
    (v2.Resize([24, 8]), False), (v2.RandomShortestSize([6, 8]), False),
    (v2.ScaleJitter((12, 16), scale_range=(0.5, 1.5)), False),
]


@pytest.mark.parametrize("t, exact", GEOMETRIC, ids=[type(t).__name__ for t, _ in GEOMETRIC])
def test_one_draw_moves_image_mask_and_boxes_together(t, exact):
    ember.manual_seed(3)
    img, mask, boxes = _sample()
    out = t({"image": img, "target": {"masks": mask, "boxes": boxes, "labels": [7]}})
    out_img, out_mask, out_boxes = out["image"], out["target"]["masks"], out["target"]["boxes"]
    assert out["target"]["labels"] == [7]
    assert (type(out_img), type(out_mask), type(out_boxes)) == (tv.Image, tv.Mask,
                                                                tv.BoundingBoxes)
    assert out_img.shape[-2:] == out_mask.shape == out_boxes.canvas_size
    if exact:  # the same window, the same pixels; the box is the mask's
        assert ember.equal(_plain(out_img)[0], _plain(out_mask))
        assert _plain(out_boxes).tolist() == [[float(v) for v in _box_of(out_mask)]]


def test_resizes_scale_boxes_with_the_canvas():
    img, mask, boxes = _sample()
    for t in (v2.Resize([24, 8]), v2.RandomShortestSize([6]), v2.ScaleJitter((24, 32), (1, 1))):
        out_img, out_boxes = t(img, boxes)
        h, w = out_img.shape[-2:]
        assert out_boxes.canvas_size == (h, w)
        expected = [4.0 * w / 16, 3.0 * h / 12, 11.0 * w / 16, 7.0 * h / 12]
        assert np.allclose(_plain(out_boxes).numpy(), [expected], atol=1e-5)


def test_pytree_structure_and_non_tensor_leaves_are_kept():
    img, mask, boxes = _sample()
    sample = [("a", img, 3), {"m": mask, "b": (boxes, None)}, 2.5]
    out = v2.RandomHorizontalFlip(p=1.0)(sample)
    assert type(out) is list and type(out[0]) is tuple and out[0][0] == "a"
    assert out[0][2] == 3 and out[1]["b"][1] is None and out[2] == 2.5
    assert type(out[1]["b"][0]) is tv.BoundingBoxes
    img2, boxes2 = v2.RandomVerticalFlip(p=1.0)(img, boxes)  # several arguments: a tuple
    assert type(img2) is tv.Image and type(boxes2) is tv.BoundingBoxes


def test_pure_tensor_heuristic():
    a, b = ember.rand(1, 2, 3), ember.rand(1, 2, 3)
    out_a, out_b = v2.RandomHorizontalFlip(p=1.0)(a, b)
    assert ember.equal(out_a, a.flip(-1)) and out_b is b  # the first pure tensor is the image
    img = tv.Image(ember.rand(1, 2, 3))
    out_a, out_img = v2.RandomHorizontalFlip(p=1.0)(a, img)
    assert out_a is a and ember.equal(_plain(out_img), _plain(img).flip(-1))


def test_image_results_equal_v1_for_the_same_draws():
    from ember.vision import transforms as v1

    img = ember.rand(3, 20, 24)
    for new, old in [
        (v2.RandomResizedCrop(8), v1.RandomResizedCrop(8)),
        (v2.RandomRotation(40), v1.RandomRotation(40)),
        (v2.RandomAffine(20, (0.1, 0.2), (0.8, 1.2), 10), v1.RandomAffine(20, (0.1, 0.2),
                                                                           (0.8, 1.2), 10)),
        (v2.RandomHorizontalFlip(), v1.RandomHorizontalFlip()),
        (v2.GaussianBlur(3), v1.GaussianBlur(3)),
        (v2.RandomErasing(p=1.0, value="random"), v1.RandomErasing(p=1.0, value="random")),
    ]:
        for seed in (0, 1):
            ember.manual_seed(seed)
            a = new(tv.Image(img))
            ember.manual_seed(seed)
            assert ember.equal(_plain(a), old(img)), type(new).__name__


def test_colour_transforms_touch_images_only():
    img, mask, boxes = _sample()
    for t in (v2.ColorJitter(0.5, 0.5, 0.5, 0.1), v2.RandomPhotometricDistort(p=1.0),
              v2.GaussianBlur(3), v2.Normalize([0.5] * 3, [0.2] * 3), v2.RandomInvert(1.0),
              v2.RandomGrayscale(1.0), v2.RandomErasing(p=1.0),
              v2.RandomChannelPermutation()):
        out_img, out_mask, out_boxes = t(img, mask, boxes)
        assert out_mask is mask and out_boxes is boxes and type(out_img) is tv.Image
    ember.manual_seed(0)
    out = v2.ColorJitter(brightness=(0.5, 0.5))(img)
    assert ember.allclose(_plain(out), TF.adjust_brightness(_plain(img), 0.5))
    assert v2.Grayscale()(img).shape == (1, 12, 16)


def test_to_image_to_dtype_to_pure_tensor():
    arr = np.full((4, 5, 3), 255, np.uint8)
    pipeline = v2.Compose([v2.ToImage(), v2.ToDtype(ember.float32, scale=True)])
    out, label = pipeline(arr, 3)
    assert type(out) is tv.Image and out.shape == (3, 4, 5) and out.max().item() == 1.0
    labels = ember.tensor([1, 2])
    out, target = v2.ToImage()(arr, {"labels": labels})  # an array is the image, as PIL's
    assert type(out) is tv.Image and target["labels"] is labels
    assert "ToDtype(dtype=ember.float32, scale=True)" in repr(pipeline)
    mask = tv.Mask(ember.ones(4, 5, dtype=ember.uint8))
    boxes = tv.BoundingBoxes([[0, 0, 2, 2]], format="XYXY", canvas_size=(4, 5))
    img = tv.Image(ember.full((3, 4, 5), 255, dtype=ember.uint8))
    out = v2.ToDtype(ember.float32, scale=True)(img, mask, boxes)
    assert out[0].dtype is ember.float32 and out[1] is mask and out[2] is boxes
    out = v2.ToDtype({tv.Image: ember.float64, tv.Mask: ember.int64, "others": None},
                     scale=True)(img, mask, boxes)
    assert out[0].max().item() == 1.0 and out[0].dtype is ember.float64
    assert out[1].dtype is ember.int64 and out[1].max().item() == 1 and out[2] is boxes
    with pytest.raises(ValueError, match="no dtype was specified for type BoundingBoxes"):
        v2.ToDtype({tv.Image: ember.float32})(img, boxes)
    out = v2.ToPureTensor()({"i": img, "b": boxes, "n": 1})
    assert type(out["i"]) is ember.Tensor and type(out["b"]) is ember.Tensor and out["n"] == 1


def test_box_meta_transforms():
    boxes = tv.BoundingBoxes([[-2.0, 1.0, 6.0, 9.0]], format="XYXY", canvas_size=(8, 4))
    out = v2.ConvertBoundingBoxFormat("CXCYWH")(boxes)
    assert out.format is tv.BoundingBoxFormat.CXCYWH and out.tolist() == [[2.0, 5.0, 8.0, 8.0]]
    assert v2.ClampBoundingBoxes()(out).tolist() == [[2.0, 4.5, 4.0, 7.0]]


def test_sanitize_bounding_boxes_with_labels():
    img = tv.Image(ember.zeros(3, 10, 10))
    boxes = tv.BoundingBoxes([[0, 0, 5, 5], [2, 2, 2.5, 8], [1, 1, 9, 9], [3, 3, 12, 4]],
                             format="XYXY", canvas_size=(10, 10))
    masks = tv.Mask(ember.arange(4).reshape(4, 1, 1).expand(4, 10, 10).clone())
    labels = ember.tensor([1, 2, 3, 4])
    out_img, target = v2.SanitizeBoundingBoxes()(img, {"boxes": boxes, "masks": masks,
                                                       "labels": labels, "id": 9})
    assert out_img is img and target["id"] == 9
    assert target["labels"].tolist() == [1, 3] and type(target["labels"]) is ember.Tensor
    assert target["boxes"].tolist() == [[0, 0, 5, 5], [1, 1, 9, 9]]
    assert target["masks"][:, 0, 0].tolist() == [0, 2] and type(target["masks"]) is tv.Mask
    out = v2.SanitizeBoundingBoxes(min_size=6)({"boxes": boxes, "Labels": labels})
    assert out["Labels"].tolist() == [3]
    scores = ember.tensor([0.1, 0.2, 0.3, 0.4])
    out = v2.SanitizeBoundingBoxes(labels_getter=lambda s: (s["a"], s["b"]))(
        {"boxes": boxes, "a": labels, "b": scores})
    assert out["a"].tolist() == [1, 3] and ember.allclose(out["b"], ember.tensor([0.1, 0.3]))
    assert v2.SanitizeBoundingBoxes(labels_getter=None)(boxes).shape == (2, 4)
    with pytest.raises(ValueError, match="number of boxes .4. and number of labels .2."):
        v2.SanitizeBoundingBoxes()({"boxes": boxes, "labels": labels[:2]})
    with pytest.raises(ValueError, match="Could not infer where the labels are"):
        v2.SanitizeBoundingBoxes()({"boxes": boxes})


def test_iou_crop_then_sanitize():
    ember.manual_seed(0)
    img = tv.Image(ember.rand(3, 40, 40))
    boxes = tv.BoundingBoxes([[2, 2, 10, 10], [20, 20, 38, 38], [5, 25, 15, 35]],
                             format="XYXY", canvas_size=(40, 40), dtype=ember.float32)
    t = v2.Compose([v2.RandomIoUCrop(), v2.SanitizeBoundingBoxes()])
    for _ in range(5):
        out_img, target = t(img, {"boxes": boxes, "labels": ember.tensor([1, 2, 3])})
        b = target["boxes"]
        assert b.canvas_size == tuple(out_img.shape[-2:]) and len(target["labels"]) == len(b)
        assert bool((b[:, 2] <= b.canvas_size[1]).all()) and bool((b >= 0).all())
    with pytest.raises(TypeError, match="requires the sample to contain"):
        v2.RandomIoUCrop()(img)


def test_mixup_and_cutmix_mix_labels_with_the_images():
    ember.manual_seed(0)
    images = ember.arange(4.0).reshape(4, 1, 1, 1).expand(4, 3, 8, 8).clone() + 1
    labels = ember.tensor([0, 1, 2, 0])
    out, mixed = v2.MixUp(num_classes=3)(images, labels)
    lam = mixed[1, 1].item()  # sample 1 (class 1) keeps lam, mixed with sample 0 (class 0)
    assert ember.allclose(mixed.sum(1), ember.ones(4))
    assert ember.allclose(out[1], images[1] * lam + images[0] * (1 - lam), atol=1e-6)
    out, mixed = v2.CutMix(num_classes=3)(images, labels)
    kept = (out[1] == images[1]).to(ember.float32).mean().item()
    assert abs(mixed[1, 1].item() - kept) < 1e-6 and abs(mixed[1, 0].item() - (1 - kept)) < 1e-6
    one_hot = ember.nn.functional.one_hot(labels, num_classes=3).to(ember.float32)
    out = v2.CutMix()({"image": tv.Image(images), "labels": one_hot})  # one-hot labels
    assert type(out["image"]) is tv.Image and out["labels"].shape == (4, 3)
    assert ember.allclose(out["labels"].sum(1), ember.ones(4))
    with pytest.raises(ValueError, match="num_classes must be given"):
        v2.MixUp()(images, labels)
    with pytest.raises(ValueError, match="batched input with 4 dims"):
        v2.MixUp(num_classes=3)(images[0], labels)
    with pytest.raises(ValueError, match="does not support array images, bounding boxes and masks"):
        v2.MixUp(num_classes=3)(images, labels, tv.Mask(ember.zeros(8, 8)))


@pytest.mark.parametrize("p", [[0, 0], [-1.0, 2.0], [float("nan"), 1.0], [float("inf"), 1.0]])
def test_random_choice_refuses_weights_it_cannot_draw_with(p):
    # torchvision: ZeroDivisionError for [0, 0]; negative weights pass until the first call
    # ("probability tensor contains either inf, nan or element < 0"); [inf, 1] passed here
    # as p [nan, 0] (review56a item 8)
    flips = [v2.RandomHorizontalFlip(1.0), v2.RandomVerticalFlip(1.0)]
    with pytest.raises(ValueError, match="RandomChoice: p should be finite non-negative weights"):
        v2.RandomChoice(flips, p=p)


def test_random_choice_normalizes_huge_and_tensor_weights():
    # [1e308, 1e308] overflowed its sum to inf: p [0, 0], refused at the first call
    # (torchvision's too); 0-d tensor weights were kept as tensors in p
    flips = [v2.RandomHorizontalFlip(1.0), v2.RandomVerticalFlip(1.0)]
    assert v2.RandomChoice(flips, p=[1e308, 1e308]).p == [0.5, 0.5]
    chosen = v2.RandomChoice(flips, p=[ember.tensor(1.0), ember.tensor(3.0)])
    assert chosen.p == [0.25, 0.75] and all(type(w) is float for w in chosen.p)


def test_containers_and_auto_augment():
    img, mask, boxes = _sample()
    out = v2.Compose([v2.RandomHorizontalFlip(1.0), v2.RandomVerticalFlip(1.0)])(img, boxes)
    assert _plain(out[1]).tolist() == [[5.0, 5.0, 12.0, 9.0]]
    assert v2.RandomApply([v2.RandomHorizontalFlip(1.0)], p=0.0)(img, boxes)[1] is boxes
    out = v2.RandomChoice([v2.RandomHorizontalFlip(1.0)], p=[2.0])(img)
    assert ember.equal(_plain(out), _plain(img).flip(-1))
    out = v2.RandomOrder([v2.Pad(1), v2.CenterCrop(12)])(boxes)
    assert out.canvas_size in ((12, 12), (14, 14))
    out_img, out_mask = v2.Lambda(lambda m: m + 1, tv.Mask)(img, mask)
    assert out_img is img and ember.equal(out_mask, _plain(mask) + 1)
    u8 = tv.Image(ember.randint(0, 256, (3, 8, 8), dtype=ember.uint8))
    for t in (v2.RandAugment(), v2.TrivialAugmentWide()):
        out, label = t(u8, 4)
        assert type(out) is tv.Image and out.shape == (3, 8, 8) and label == 4
        with pytest.raises(TypeError, match="BoundingBoxes are not supported"):
            t(u8, boxes)


def test_errors():
    img, mask, boxes = _sample()
    other = tv.Mask(ember.zeros(5, 5))
    with pytest.raises(ValueError, match="found multiple HxW dimensions"):
        v2.RandomCrop(4)(img, other)
    with pytest.raises(ValueError, match="p should be a probability"):
        v2.RandomHorizontalFlip(p=2.0)
    with pytest.raises(ValueError, match="invalid canvas side range"):
        v2.RandomZoomOut(side_range=(0.5, 2.0))
    with pytest.raises(ValueError, match="larger than the input image size"):
        v2.RandomCrop(20)(img)
    assert v2.RandomCrop(20, pad_if_needed=True)(img).shape == (3, 20, 20)


def test_fill_per_type_and_repr():
    img, mask, boxes = _sample()
    out_img, out_mask = v2.Pad(1, fill={tv.Image: 0.5, tv.Mask: 7})(img, mask)
    assert out_img[0, 0, 0].item() == 0.5 and out_mask[0, 0].item() == 7
    assert repr(v2.RandomHorizontalFlip(p=0.3)) == "RandomHorizontalFlip(p=0.3)"
    assert "Resize(size=[4]" in repr(v2.Resize(4))


def test_numpy_images_go_through_the_v1_kernels():
    arr = (np.arange(12 * 16 * 3) % 251).astype(np.uint8).reshape(12, 16, 3)
    boxes = tv.BoundingBoxes([[1, 2, 5, 6]], format="XYXY", canvas_size=(12, 16))
    out, out_boxes = v2.Compose([v2.Pad(2), v2.RandomHorizontalFlip(p=1.0)])(arr, boxes)
    expected = TF.hflip(TF.pad(arr, 2))
    assert isinstance(out, np.ndarray) and np.array_equal(out, expected)
    assert out_boxes.tolist() == [[13, 4, 17, 8]] and out_boxes.canvas_size == (16, 20)
    with pytest.raises(TypeError, match="does not support array images"):
        v2.Normalize([0.5], [0.5])(arr)
    with pytest.raises(ValueError, match="does not support array images"):
        v2.MixUp(num_classes=2)(arr, ember.tensor([0]))


def test_pad_fill_per_channel():
    img = tv.Image(ember.zeros(3, 2, 2))
    out = v2.RandomZoomOut(fill={tv.Image: (1, 2, 3), "others": 0}, side_range=(2, 2),
                           p=1.0)(img)
    assert out.shape == (3, 4, 4) and out.amax((1, 2)).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="one per channel"):
        v2.Pad(1, fill=(1, 2))(img)


def test_uniform_temporal_subsample():
    video = tv.Video(ember.arange(8.0).reshape(8, 1, 1, 1).expand(8, 3, 2, 2).clone())
    img, mask, boxes = _sample()
    out, out_img = v2.UniformTemporalSubsample(3)(video, img)
    assert type(out) is tv.Video and out[:, 0, 0, 0].tolist() == [0.0, 3.0, 7.0]
    assert out_img is img
    with pytest.raises(ValueError, match="positive int"):
        v2.UniformTemporalSubsample(0)


def test_get_num_frames():
    # torchvision's v2.functional.get_num_frames: T of a video (..., T, C, H, W) or pure tensor
    from ember.vision.transforms.v2 import functional as F

    assert F.get_num_frames(tv.Video(ember.zeros(2, 5, 3, 4, 4))) == 5
    assert F.get_num_frames(ember.zeros(7, 3, 4, 4)) == 7
    with pytest.raises(TypeError, match="get_num_frames: supports inputs of type"):
        F.get_num_frames(tv.Image(ember.zeros(3, 4, 4)))
    with pytest.raises(ValueError, match=r"\(\.\.\., T, C, H, W\)"):
        F.get_num_frames(ember.zeros(3, 4, 4))


def test_sanitize_labels_getter_entries_must_be_tensors():
    boxes = tv.BoundingBoxes([[0, 0, 4, 4]], format="XYXY", canvas_size=(8, 8))
    sanitize = v2.SanitizeBoundingBoxes(labels_getter=lambda s: (s["labels"], 3))
    with pytest.raises(ValueError, match="must be a tensor or a tuple/list of them, got int"):
        sanitize({"boxes": boxes, "labels": ember.tensor([1])})


def test_mixup_refuses_integer_images():
    images = ember.randint(0, 256, (4, 3, 2, 2), dtype=ember.uint8)
    with pytest.raises(TypeError, match="MixUp: expected floating images or videos, got "
                                        "ember.uint8"):
        v2.MixUp(num_classes=3)(images, ember.tensor([0, 1, 2, 0]))
    out, _ = v2.CutMix(num_classes=3)(images, ember.tensor([0, 1, 2, 0]))
    assert out.dtype is ember.uint8


def test_numpy_arrays_beyond_the_image_pass_through():
    # an array is the image only when the sample has no Image or Video, and only the first
    image, points = tv.Image(ember.rand(3, 4, 6)), np.array([[1, 2], [3, 4]])
    out = v2.RandomHorizontalFlip(p=1.0)({"image": image, "points": points})
    assert out["points"] is points and out["image"].tolist() == image.flip(-1).tolist()
    array, labels = np.zeros((4, 6, 3), np.uint8), np.array([1, 2, 3])
    resized, same = v2.Resize(2)((array, labels))
    assert resized.shape == (2, 3, 3) and same is labels
    normalized, same = v2.Normalize([0.5] * 3, [0.5] * 3)(image, labels)
    assert same is labels and normalized.shape == image.shape


@pytest.mark.parametrize("policy", [lambda: v2.RandAugment(num_ops=3),
                                    lambda: v2.TrivialAugmentWide()])
def test_auto_augment_float_images_follow_the_uint8_draws(policy):
    # torchvision's v2 policies take float images: same draws, values in [0, 1]
    u8 = ember.randint(0, 256, (3, 12, 12), dtype=ember.uint8)
    x = tv.Image(u8.to(ember.float32) / 255)
    for seed in range(12):
        ember.manual_seed(seed)
        ref = policy()(u8)
        ember.manual_seed(seed)
        out = policy()(x)
        assert type(out) is tv.Image and out.dtype is ember.float32
        diff = np.abs(_plain(out).numpy() - ref.numpy() / 255)
        assert np.mean(diff > 0.02) < 0.02  # (uint8 rounding may flip a pixel at solarize's
        assert diff.mean() < 0.01            # threshold)


def test_resize_to_max_size_alone():
    # size=None: the longer edge becomes max_size (torchvision's v2)
    image = tv.Image(ember.zeros(1, 20, 30))
    boxes = tv.BoundingBoxes([[3, 6, 15, 12]], format="XYXY", canvas_size=(20, 30))
    out, out_boxes = v2.Resize(None, max_size=15)(image, boxes)
    assert out.shape == (1, 10, 15) and out_boxes.canvas_size == (10, 15)
    assert out_boxes.tolist() == [[1, 3, 7, 6]]
    assert v2.functional.resize(tv.Mask(ember.zeros(30, 20)), None, max_size=15).shape == (15, 10)
    with pytest.raises(ValueError, match="max_size must be an int when size is None"):
        v2.Resize(None)


def test_pil_images_are_transformed_not_passed_through():
    # as their arrays, back as PIL images of their mode (see transforms._pil)
    pil_image = pytest.importorskip("PIL.Image")
    array = np.arange(72, dtype=np.uint8).reshape(4, 6, 3)
    pil = pil_image.fromarray(array)
    for transform in (v2.RandomHorizontalFlip(p=1.0), v2.ColorJitter(0.5),
                      v2.RandAugment(), v2.RandomCrop(2), v2.RandomErasing(p=1.0)):
        ember.manual_seed(0)
        got = transform(pil)
        ember.manual_seed(0)
        want = transform(array)
        assert isinstance(got, pil_image.Image) and got.mode == "RGB"
        assert np.array_equal(np.asarray(got), want)
    assert v2.ToImage()(pil).shape == (3, 4, 6)
    assert np.asarray(v2.RandomHorizontalFlip(p=0.0)(pil)).tolist() == array.tolist()
    # resizing is Pillow's own, as torchvision's PIL path
    resized = v2.Resize(2)(pil)
    assert np.array_equal(np.asarray(resized), np.asarray(pil.resize((3, 2), pil_image.BILINEAR)))


def test_random_apply_takes_a_module_list():
    flips = ember.nn.ModuleList([v2.RandomHorizontalFlip(p=1.0)])
    assert v2.RandomApply(flips, p=1.0)(ember.tensor([[[1, 2]]])).tolist() == [[[2, 1]]]


def test_mixup_labels_before_the_images_are_not_taken_for_the_image():
    # the labels never count as the sample's pure-tensor image, wherever they sit
    images = ember.arange(4.0).reshape(4, 1, 1, 1)
    out = v2.MixUp(num_classes=3)({"labels": ember.tensor([0, 1, 2, 0]), "image": images})
    lam = out["labels"][1, 1].item()
    assert abs(out["image"][1].item() - lam) < 1e-6  # lam * 1 + (1 - lam) * 0
    with pytest.raises(ValueError, match="labels_getter should return the sample's own"):
        v2.MixUp(num_classes=3, labels_getter=lambda s: ember.tensor([0, 1, 2, 0]))(images)
