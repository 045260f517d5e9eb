"""box_convert's rotated formats (xywhr, cxcywhr, xyxyxyxy), as torchvision 0.29.1 converts
them; expected values recorded by running torchvision 0.29.1 on the same boxes."""

import numpy as np
import pytest

import ember
from ember.vision.ops import box_convert

BOX = ember.tensor([[10.0, 20.0, 8.0, 4.0, 30.0]])  # cx, cy, w, h, 30 degrees


def test_values_recorded_from_torchvision():
    np.testing.assert_allclose(box_convert(BOX, "cxcywhr", "xyxyxyxy").numpy(),
                               [[5.535898, 20.26795, 12.464102, 16.26795, 14.464102, 19.732051,
                                 7.535898, 23.732051]], rtol=1e-6)
    np.testing.assert_allclose(box_convert(BOX, "cxcywhr", "xywhr").numpy(),
                               [[5.535898, 20.26795, 8.0, 4.0, 30.0]], rtol=1e-6)
    # integer boxes are computed in float32 and rounded back
    ints = box_convert(BOX.long(), "cxcywhr", "xyxyxyxy")
    assert ints.dtype is ember.int64 and ints.tolist() == [[6, 20, 13, 16, 15, 19, 8, 23]]


@pytest.mark.parametrize("there", ["xywhr", "xyxyxyxy"])
def test_round_trips_through_each_rotated_format(there):
    rng = np.random.default_rng(0)
    boxes = ember.tensor(np.c_[rng.uniform(0, 50, (2, 3, 2)).reshape(6, 2),
                               rng.uniform(1, 20, (6, 2)), rng.uniform(-170, 170, 6)])
    back = box_convert(box_convert(boxes, "cxcywhr", there), there, "cxcywhr")
    np.testing.assert_allclose(back.numpy(), boxes.numpy(), rtol=1e-9, atol=1e-9)


def test_errors():
    with pytest.raises(NotImplementedError, match="between the axis-aligned and rotated"):
        box_convert(ember.zeros(1, 4), "xyxy", "xywhr")
    with pytest.raises(ember.ShapeError, match=r"'xyxyxyxy' boxes must have shape \(\.\.\., 8\)"):
        box_convert(ember.zeros(1, 5), "xyxyxyxy", "xywhr")
    with pytest.raises(ValueError, match="unknown box format 'xyzr'"):
        box_convert(BOX, "cxcywhr", "xyzr")
