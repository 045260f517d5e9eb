"""ember.vision.tv_tensors: construction, the type rules (ops give plain tensors; clone, to,
detach, pickling keep the type), wrap."""

import copy
import pickle

import numpy as np
import pytest

import ember
from ember.vision import tv_tensors as tv


def _boxes(data=((1, 2, 5, 6),), fmt="XYXY", canvas=(8, 8), **kw):
    return tv.BoundingBoxes(list(data), format=fmt, canvas_size=canvas, **kw)


def test_construction_and_shapes():
    assert tv.Image(ember.zeros(4, 5)).shape == (1, 4, 5)
    assert tv.Image([[1, 2]]).dtype is ember.int64
    assert tv.Mask(ember.zeros(4, 5)).shape == (4, 5)
    assert tv.Video(ember.zeros(2, 3, 4, 5)).shape == (2, 3, 4, 5)
    b = tv.BoundingBoxes([1, 2, 5, 6], format="cxcywh", canvas_size=[8, 9])
    assert b.shape == (1, 4) and b.format is tv.BoundingBoxFormat.CXCYWH
    assert b.canvas_size == (8, 9)
    x = ember.ones(1, 2, 2, requires_grad=True)
    assert tv.Image(x).requires_grad and not tv.Image(x, requires_grad=False).requires_grad
    assert tv.Image(x, dtype=ember.float64).dtype is ember.float64


@pytest.mark.parametrize("make, message", [
    (lambda: tv.Image(ember.zeros(3)), "at least 2"),
    (lambda: tv.Video(ember.zeros(3, 4, 5)), "at least 4"),
    (lambda: _boxes([[1, 2, 3]]), r"\(N, 4\)"),
    (lambda: _boxes(fmt="XYZ"), "unknown format"),
    (lambda: _boxes(canvas=(8,)), "canvas_size"),
])
def test_construction_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_ops_give_plain_tensors_and_copies_keep_the_type():
    img = tv.Image(ember.rand(3, 2, 2))
    for out in (img + 1, img * img, img.sum(), img[0], img.flip(-1), img.reshape(-1)):
        assert type(out) is ember.Tensor
    for out in (img.clone(), img.to(ember.float64), img.detach(), copy.deepcopy(img),
                pickle.loads(pickle.dumps(img))):
        assert type(out) is tv.Image
        assert ember.equal(out.to(img.dtype).as_subclass(ember.Tensor), img)
    assert type(img.add_(1)) is ember.Tensor and type(img) is tv.Image
    boxes = _boxes(fmt="XYWH", canvas=(8, 9))
    for out in (boxes.clone(), pickle.loads(pickle.dumps(boxes)), copy.deepcopy(boxes)):
        assert type(out) is tv.BoundingBoxes
        assert (out.format, out.canvas_size) == (tv.BoundingBoxFormat.XYWH, (8, 9))
    assert type(img.as_subclass(ember.Tensor)) is ember.Tensor


def test_autograd_flows_through_tv_tensors():
    x = ember.rand(1, 2, 2, dtype=ember.float64, requires_grad=True)
    img = tv.Image(x)
    (img * 3).sum().backward()
    assert ember.equal(x.grad, ember.full((1, 2, 2), 3.0, dtype=ember.float64))


def test_wrap_and_repr():
    boxes = _boxes()
    out = tv.wrap(boxes.as_subclass(ember.Tensor) * 2, like=boxes, canvas_size=(16, 16))
    assert type(out) is tv.BoundingBoxes and out.canvas_size == (16, 16)
    assert out.format is tv.BoundingBoxFormat.XYXY and out.tolist() == [[2, 4, 10, 12]]
    assert type(tv.wrap(ember.zeros(2), like=tv.Mask(ember.zeros(2)))) is tv.Mask
    with pytest.raises(TypeError, match="no metadata"):
        tv.wrap(ember.zeros(2), like=tv.Mask(ember.zeros(2)), format="XYXY")
    with pytest.raises(TypeError, match="should be a tv_tensor"):
        tv.wrap(ember.zeros(2), like=ember.zeros(2))
    assert repr(boxes) == ("BoundingBoxes([[1, 2, 5, 6]], format=BoundingBoxFormat.XYXY, "
                           "canvas_size=(8, 8), clamping_mode=soft)")
    assert repr(tv.Mask([1, 0])) == "Mask([1, 0])"


def test_gradients_reach_a_wrapped_leaf():
    x = ember.rand(2, 4, requires_grad=True)
    (tv.BoundingBoxes(x, format="XYXY", canvas_size=(4, 4)) ** 2).sum().backward()
    assert ember.allclose(x.grad, 2 * x.detach())


def test_user_subclasses_are_made_like_the_built_in_ones():
    class Heatmap(tv.TVTensor):
        pass

    h = Heatmap([[1.0, 2.0]], dtype=ember.float64)
    assert type(h) is Heatmap and h.dtype is ember.float64 and h.tolist() == [[1.0, 2.0]]
    assert type(h.clone()) is Heatmap and type(h * 2) is ember.Tensor


@pytest.mark.parametrize("canvas", [8, (8,), (8, 8, 3), None])
def test_bounding_boxes_bad_canvas_size_is_named(canvas):
    with pytest.raises(ValueError, match=r"BoundingBoxes: canvas_size should be \(height, width\)"):
        tv.BoundingBoxes([0, 0, 1, 1], format="XYXY", canvas_size=canvas)


def test_image_from_a_pil_image_is_channels_first():
    pil_image = pytest.importorskip("PIL.Image")
    array = np.arange(18, dtype=np.uint8).reshape(2, 3, 3)
    image = tv.Image(pil_image.fromarray(array))
    assert image.shape == (3, 2, 3) and image.dtype is ember.uint8
    np.testing.assert_array_equal(image.numpy(), array.transpose(2, 0, 1))
    assert tv.Image(pil_image.fromarray(array[..., 0])).shape == (1, 2, 3)


def test_inplace_ops_change_the_tv_tensor_and_return_a_plain_tensor():
    # torchvision: "the returned value of inplace operations will be a pure tensor"
    image = tv.Image(ember.zeros(1, 2, 2))
    out = image.add_(1)
    assert type(image) is tv.Image and type(out) is ember.Tensor
    assert image.tolist() == out.tolist() == [[[1.0, 1.0], [1.0, 1.0]]]
    out.mul_(3)  # the same data
    assert image.sum().item() == 12.0
    boxes = _boxes()
    assert type(boxes.clamp_(0, 4)) is ember.Tensor and boxes.tolist() == [[1, 2, 4, 4]]
    alias = image
    alias += 1  # rebinds to the plain result, as in torchvision
    assert type(alias) is ember.Tensor and image.sum().item() == 16.0
    assert type(image.requires_grad_(False)) is tv.Image


@pytest.mark.parametrize("method", ["float", "cpu", "contiguous"])
def test_no_op_conversions_give_plain_tensors(method):
    # only clone, to, detach and requires_grad_ keep the type, even when nothing changes
    image = tv.Image(ember.zeros(1, 2, 2))
    assert type(getattr(image, method)()) is ember.Tensor


def test_mask_from_a_pil_image_is_channels_first():
    pil_image = pytest.importorskip("PIL.Image")
    array = np.array([[0, 1, 2], [2, 1, 0]], np.uint8)
    mask = tv.Mask(pil_image.fromarray(array))
    assert mask.shape == (1, 2, 3) and mask.tolist() == [array.tolist()]


def test_set_return_type_tensor_is_the_default_and_tvtensor_is_refused_clearly():
    # torchvision's tv_tensors.set_return_type: "Tensor" (Ember's behaviour) works as a global
    # call and as a context manager; "TVTensor" is not built and says what to use instead
    img = tv.Image(ember.rand(3, 2, 2))
    tv.set_return_type("Tensor")
    with tv.set_return_type("tensor"):
        assert type(img + 1) is ember.Tensor
    with pytest.raises(NotImplementedError, match=r"tv_tensors.wrap\(out, like=x\)"):
        tv.set_return_type("TVTensor")
    with pytest.raises(ValueError, match="'TVTensor' or 'Tensor'"):
        tv.set_return_type("Image")
    assert type(img + 1) is ember.Tensor
