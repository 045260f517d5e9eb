"""ember.vision.ops edge cases found by a sweep against torchvision 0.28 (values recorded from
it): complete_box_iou_loss's eps, batched remove_small_boxes, and clear errors for boxes and
RoIs that torchvision's kernels would read as undefined."""

import math

import numpy as np
import pytest

import ember
from ember.errors import ArgumentError, ArgumentTypeError
from ember.vision import ops


def test_complete_box_iou_loss_eps_weights_only_the_aspect_term():
    # torchvision passes eps to the aspect-ratio weight alone; the IoU and distance keep 1e-7
    b = ember.tensor([[0.0, 0, 2, 2], [0, 0, 2, 1]], dtype=ember.float64)
    g = ember.tensor([[0.0, 0, 2, 2], [0, 0, 1, 2]], dtype=ember.float64)
    expected = {0.0: [2.4999999403974016e-08, 0.762918344957811],
                1.0: [2.4999999403974016e-08, 0.7445199772761598]}
    for eps, want in expected.items():
        got = ops.complete_box_iou_loss(b, g, eps=eps).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_complete_box_iou_loss_eps_gradients():
    # (alpha is a constant to autograd, so no finite differences: torchvision's gradients)
    b = ember.tensor([[0.0, 0, 2, 1], [1, 1, 3, 4]], dtype=ember.float64, requires_grad=True)
    g = ember.tensor([[0.0, 0, 1, 2], [0, 1, 2, 3]], dtype=ember.float64)
    ops.complete_box_iou_loss(b, g, reduction="sum", eps=0.5).backward()
    expected = [[0.17611676055202954, -0.020636298983110347, 0.15548045123905882,
                 -0.310960912807978],
                [0.27476621046817074, 0.05466974691621693, 0.12569674744721,
                 0.06743673321334842]]
    np.testing.assert_allclose(b.grad.numpy(), expected, rtol=1e-10)


def test_remove_small_boxes_takes_batched_boxes():
    boxes = ember.tensor([[[0.0, 0, 1, 5], [0, 0, 3, 3]], [[0.0, 0, 3, 3], [0, 0, 3, 3]],
                          [[0.0, 0, 0.5, 0.5], [0, 0, 0.5, 0.5]]])
    assert ops.remove_small_boxes(boxes, 2).tolist() == [0, 1, 1]  # torchvision's answer


@pytest.mark.parametrize("fn", [ops.roi_align, ops.roi_pool, ops.ps_roi_align])
def test_roi_errors(fn):
    x = ember.zeros(2, 4, 4, 4)
    box = ember.tensor([[0.0, 0, 0, 2, 2]])
    with pytest.raises(ember.DTypeError, match="floating"):
        fn(ember.zeros(2, 4, 4, 4, dtype=ember.int64), box, 2)
    for bad in (math.nan, math.inf):
        with pytest.raises(ArgumentError, match=r"box 0 has a non-finite"):
            fn(x, ember.tensor([[0.0, 0, bad, 2, 2]]), 2)
        with pytest.raises(ArgumentError, match="non-finite"):
            fn(x, ember.tensor([[bad, 0, 0, 2, 2]]), 2)
    for size in (0, -1, (2, 0)):
        with pytest.raises(ArgumentError, match="output_size must be a positive"):
            fn(x, box, size)
    with pytest.raises(ArgumentTypeError, match=r"boxes\[0\] must be a Tensor"):
        fn(x, [np.zeros((1, 4))], 2)
    with pytest.raises(ArgumentTypeError, match="boxes must be"):
        fn(x, np.zeros((1, 5)), 2)
    with pytest.raises(ember.ShapeError, match="outside the input's 2 images"):
        fn(x, [box[:, 1:]] * 3, 2)  # three images' boxes for two images


def test_box_functions_name_a_non_tensor():
    with pytest.raises(ArgumentTypeError, match="box_iou: boxes1 must be a Tensor"):
        ops.box_iou(np.zeros((1, 4)), ember.zeros(1, 4))
    with pytest.raises(ArgumentTypeError, match="box_convert: boxes must be a Tensor"):
        ops.box_convert(np.zeros((1, 4)), "xyxy", "xywh")
    with pytest.raises(ArgumentTypeError, match="boxes2 must be a Tensor"):
        ops.generalized_box_iou_loss(ember.zeros(1, 4), np.zeros((1, 4)))
    with pytest.raises(ArgumentTypeError, match="sigmoid_focal_loss: inputs must be"):
        ops.sigmoid_focal_loss(np.zeros(2), ember.zeros(2))
    with pytest.raises(ArgumentTypeError, match="masks_to_boxes: masks must be a Tensor"):
        ops.masks_to_boxes(np.zeros((1, 2, 2)))
    with pytest.raises(ArgumentTypeError, match="nms: boxes must be a Tensor"):
        ops.nms(np.zeros((1, 4)), ember.zeros(1), 0.5)
    with pytest.raises(ArgumentTypeError, match="batched_nms: idxs must be a Tensor"):
        ops.batched_nms(ember.zeros(1, 4), ember.zeros(1), np.zeros(1), 0.5)


def test_non_tensors_are_named_with_their_package():
    # (a PyTorch tensor was "got Tensor", which reads as if an Ember tensor were refused)
    torch = pytest.importorskip("torch")
    x, box = ember.zeros(1, 2, 4, 4), ember.tensor([[0.0, 0, 0, 2, 2]])
    calls = {"nms: boxes": lambda: ops.nms(torch.zeros(2, 4), ember.zeros(2), 0.5),
             "box_iou: boxes1": lambda: ops.box_iou(torch.zeros(1, 4), ember.zeros(1, 4)),
             "box_convert: boxes": lambda: ops.box_convert(torch.zeros(1, 4), "xyxy", "xywh"),
             "masks_to_boxes: masks": lambda: ops.masks_to_boxes(torch.zeros(1, 2, 2)),
             "sigmoid_focal_loss: targets": lambda: ops.sigmoid_focal_loss(
                 ember.zeros(2), torch.zeros(2)),
             "distance_box_iou_loss: boxes2": lambda: ops.distance_box_iou_loss(
                 ember.zeros(1, 4), torch.zeros(1, 4)),
             "roi_align: input": lambda: ops.roi_align(torch.zeros(1, 2, 4, 4), box, 2),
             r"roi_pool: boxes\[0\]": lambda: ops.roi_pool(x, [torch.zeros(1, 4)], 2),
             "ps_roi_pool: boxes": lambda: ops.ps_roi_pool(x, torch.zeros(1, 5), 2)}
    for prefix, call in calls.items():
        with pytest.raises(ArgumentTypeError, match=f"{prefix} must be a .*got torch.Tensor"):
            call()


@pytest.mark.parametrize("fn", [ops.roi_align, ops.roi_pool, ops.ps_roi_align, ops.ps_roi_pool])
def test_roi_output_size_must_be_ints(fn):
    x, box = ember.zeros(1, 4, 4, 4), ember.tensor([[0.0, 0, 0, 2, 2]])
    for bad in (2.5, None, True, (2, True), (2.0, 2), "22"):
        with pytest.raises(ArgumentTypeError, match=f"{fn.__name__}: output_size must be an "
                           "int or a pair of ints"):
            fn(x, box, bad)
    assert fn(x, box, [2, 1]).shape[-2:] == (2, 1)
    assert fn(x, box, np.int64(2)).shape[-2:] == (2, 2)
