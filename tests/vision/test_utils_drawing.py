"""vision.utils drawing added for torchvision 0.29.1 parity: draw_keypoints, flow_to_image,
float images and the label options of draw_bounding_boxes. Pixel values are checked by hand or
were recorded by running torchvision 0.29.1 on the same inputs."""

import numpy as np
import pytest

import ember
from ember.vision.utils import draw_bounding_boxes, draw_keypoints, flow_to_image

BLACK = ember.zeros(3, 30, 40, dtype=ember.uint8)
BOX = ember.tensor([[2, 2, 35, 25]])


def colours(image):
    return {tuple(p) for p in image.numpy().reshape(3, -1).T.tolist()}


def test_flow_to_image_values_recorded_from_torchvision():
    flow = ember.tensor([[[1.0, 0.0, -1.0, 0.3], [0.0, 0.5, 2.0, -0.7]],
                         [[0.0, 1.0, 0.0, -0.2], [-1.0, 0.25, 0.0, 0.9]]])
    image = flow_to_image(flow)
    assert image.dtype is ember.uint8
    assert image.tolist() == [[[255, 255, 127, 254], [171, 255, 255, 153]],
                              [[127, 242, 232, 209], [127, 202, 0, 255]],
                              [[127, 127, 255, 255], [255, 183, 0, 109]]]
    assert flow_to_image(ember.stack([flow, flow])).shape == (2, 3, 2, 4)
    assert flow_to_image(ember.zeros(2, 2, 2)).tolist() == [[[255] * 2] * 2] * 3  # no motion
    with pytest.raises(ValueError, match="flow_to_image: flow should be of dtype float32"):
        flow_to_image(flow.double())
    with pytest.raises(ValueError, match=r"shape \(2, H, W\) or \(N, 2, H, W\), got \(1, 2, 4\)"):
        flow_to_image(flow[:1])


def test_draw_keypoints_discs_lines_and_visibility():
    points = ember.tensor([[[5.0, 5.0], [30.0, 5.0], [30.0, 20.0]]])
    out = draw_keypoints(BLACK, points, connectivity=[(0, 1), (1, 2)], colors="red", radius=2,
                         width=1)
    assert out[:, 7, 5].tolist() == [255, 0, 0]       # a disc (below its line)
    assert out[:, 5, 17].tolist() == [255, 255, 255]  # the line 0-1 (white, as torchvision)
    assert out[:, 12, 30].tolist() == [255, 255, 255]  # the line 1-2
    hidden = draw_keypoints(BLACK, points, connectivity=[(0, 1), (1, 2)], colors="red",
                            visibility=ember.tensor([[True, False, True]]))
    assert hidden[:, 5, 30].tolist() == [0, 0, 0]  # the hidden point and both its lines
    assert hidden[:, 5, 17].tolist() == [0, 0, 0] and hidden[:, 12, 30].tolist() == [0, 0, 0]
    as_float = draw_keypoints(BLACK.float() / 255, points, colors="red")
    assert as_float.dtype is ember.float32 and as_float[:, 7, 5].tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"draw_keypoints: only RGB images are supported"):
        draw_keypoints(BLACK[:1], points)
    with pytest.raises(ValueError, match=r"visibility must have shape \(num_instances, K\) = "
                                         r"\(1, 3\), got \(1, 2\)"):
        draw_keypoints(BLACK, points, visibility=ember.ones(1, 2))


def test_draw_bounding_boxes_on_float_images_and_label_options():
    image = ember.tensor(np.random.default_rng(0).uniform(size=(3, 30, 40)), dtype=ember.float32)
    as_float = draw_bounding_boxes(image, BOX, colors="red")
    assert as_float.dtype is ember.float32
    as_bytes = draw_bounding_boxes((image * (256 - 1e-3)).to(ember.uint8), BOX, colors="red")
    # back to float as torchvision's to_dtype(scale=True): times 1/255 (not / 255), to the bit
    np.testing.assert_array_equal(as_float.numpy(), as_bytes.numpy() * np.float32(1.0 / 255))
    # a None label draws nothing, as no labels at all
    assert draw_bounding_boxes(BLACK, BOX, labels=[None]).tolist() == \
        draw_bounding_boxes(BLACK, BOX).tolist()
    filled = draw_bounding_boxes(BLACK, BOX, labels=["ab"], colors="red", label_colors="blue",
                                 fill_labels=True, label_background_colors="yellow")
    seen = colours(filled)
    assert {(255, 0, 0), (255, 255, 0)} <= seen  # the box and the label's background
    assert any(b > r for r, g, b in seen)  # blue text, blended into yellow by anti-aliasing
    plain = colours(draw_bounding_boxes(BLACK, BOX, labels=["ab"], colors="red"))
    assert (255, 255, 0) not in plain and not any(b > r for r, g, b in plain)
