"""ember.vision.utils: grids laid out as torchvision lays them (a literal cell-by-cell copy as
the reference), PNGs read back with Pillow, and drawn boxes and masks checked pixel by pixel."""

import math

import numpy as np
import pytest
import torch
from PIL import Image

import ember
from ember.vision.utils import draw_bounding_boxes, draw_segmentation_masks, make_grid, save_image


def reference_grid(t, nrow=8, padding=2, pad_value=0.0):
    """torchvision's loop: a background canvas, each image copied into its cell."""
    if t.shape[1] == 1:
        t = torch.cat((t, t, t), 1)
    n, c, h, w = t.shape
    cols = min(nrow, n)
    rows = math.ceil(n / cols)
    height, width = h + padding, w + padding
    grid = torch.full((c, height * rows + padding, width * cols + padding), pad_value,
                      dtype=t.dtype)
    for k in range(n):
        y, x = divmod(k, cols)
        grid[:, y * height + padding:(y + 1) * height, x * width + padding:(x + 1) * width] = t[k]
    return grid


@pytest.mark.parametrize("n, c, nrow, padding", [(5, 3, 2, 2), (7, 1, 3, 1), (4, 3, 8, 0),
                                                  (3, 2, 1, 3)])
def test_make_grid_lays_out_cells_as_torchvision(n, c, nrow, padding):
    x = np.random.default_rng(n).uniform(size=(n, c, 4, 5))
    got = make_grid(ember.tensor(x), nrow=nrow, padding=padding, pad_value=0.5)
    ref = reference_grid(torch.tensor(x), nrow, padding, 0.5)
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


def test_make_grid_normalizes_and_accepts_lists_and_single_images():
    x = ember.tensor(np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2))
    g = make_grid(x, normalize=True, padding=0)
    assert g.min().item() == 0.0 and g.max().item() == 1.0
    each = make_grid(x, normalize=True, scale_each=True, padding=0)
    assert each[:, :, :2].max().item() == 1.0 and each[:, :, 2:].min().item() == 0.0
    clipped = make_grid(x, normalize=True, value_range=(0.0, 4.0), padding=0)
    assert clipped.max().item() == 1.0 and clipped[0, 0, 1].item() == 0.25
    assert make_grid([x[0], x[1]], padding=0).shape == (3, 2, 4)
    assert make_grid(x[0]).shape == (3, 2, 2)                  # one image: no padding
    assert make_grid(ember.zeros(5, 6)).shape == (3, 5, 6)
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        make_grid(x, normalize=True, value_range=[0, 1])
    with pytest.raises(TypeError, match="list containing int"):
        make_grid([x[0], 3])


def test_make_grid_is_differentiable():
    x = ember.rand(3, 1, 2, 2, requires_grad=True)
    make_grid(x, nrow=2).sum().backward()
    assert (x.grad.numpy() == 3.0).all()                       # each pixel in three channels


def test_save_image_writes_a_png(tmp_path):
    x = ember.rand(6, 3, 5, 4)
    save_image(x, tmp_path / "g.png", nrow=3, padding=1)
    back = np.asarray(Image.open(tmp_path / "g.png"))
    grid = make_grid(x, nrow=3, padding=1).numpy()
    assert back.shape == (grid.shape[1], grid.shape[2], 3)
    np.testing.assert_array_equal(back, np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8)
                                  .transpose(1, 2, 0))


@pytest.mark.parametrize("dtype", [ember.uint8, ember.int64, ember.bool])
def test_save_image_refuses_integer_images(tmp_path, dtype):
    # torchvision's grid.mul(255).add_(0.5) fails on them; 255 * 200 in uint8 wrapped to 56
    x = ember.full((3, 2, 2), 200, dtype=ember.uint8).to(dtype)
    with pytest.raises(ember.DTypeError, match="save_image: expected a floating image"):
        save_image(x, tmp_path / "g.png")
    assert not (tmp_path / "g.png").exists()
    save_image(x, tmp_path / "n.png", normalize=True)  # normalize gives floats in [0, 1]

def test_draw_segmentation_masks():
    img = ember.tensor(np.full((3, 4, 4), 100, np.uint8))
    masks = ember.zeros(2, 4, 4, dtype=ember.bool)
    masks[0, :2] = True
    masks[1, 1:3] = True
    out = draw_segmentation_masks(img, masks, alpha=0.5, colors=[(200, 0, 0), "blue"])
    assert out.dtype is ember.uint8
    assert out[:, 0, 0].tolist() == [150, 50, 50]          # 100 * 0.5 + colour * 0.5
    assert out[:, 1, 0].tolist() == [50, 50, 50]           # two masks: black
    assert out[:, 2, 0].tolist() == [50, 50, 177]          # 50 + 127.5, truncated as torch
    assert out[:, 3, 0].tolist() == [100, 100, 100]
    f = draw_segmentation_masks(img.float() / 255, masks[0], alpha=1.0, colors="red")
    assert f[:, 0, 0].tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="dtype bool"):
        draw_segmentation_masks(img, masks.float())
    with pytest.raises(ValueError, match="same height and width"):
        draw_segmentation_masks(img, masks[:, :3])


def test_draw_bounding_boxes():
    img = ember.zeros(3, 10, 12, dtype=ember.uint8)
    out = draw_bounding_boxes(img, ember.tensor([[1, 2, 8, 7]]), colors=(10, 20, 30), width=2)
    p = out.numpy()
    assert p[:, 2, 1].tolist() == [10, 20, 30] and p[:, 7, 8].tolist() == [10, 20, 30]
    assert p[:, 3, 2].tolist() == [10, 20, 30] and p[:, 5, 5].tolist() == [0, 0, 0]
    assert (img.numpy() == 0).all()                          # the input is not drawn on
    filled = draw_bounding_boxes(img, ember.tensor([[1, 2, 8, 7]]), colors="white", fill=True)
    assert 0 < filled[0, 5, 5].item() < 255                  # shaded inside
    labelled = draw_bounding_boxes(ember.zeros(1, 30, 60, dtype=ember.uint8),
                                   ember.tensor([[0, 0, 59, 29]]), labels=["cat"], colors="white")
    # torchvision tiles a grayscale image to RGB (the boxes keep their colour)
    assert labelled.shape == (3, 30, 60) and labelled[0, 5:15, 3:20].numpy().any()
    gray = draw_bounding_boxes(ember.zeros(1, 10, 12, dtype=ember.uint8),
                               ember.tensor([[1, 2, 8, 7]]), colors=(10, 20, 30))
    assert gray[:, 2, 1].tolist() == [10, 20, 30]
    # and truncates the coordinates to integers before drawing
    np.testing.assert_array_equal(
        draw_bounding_boxes(img, ember.tensor([[1.9, 2.7, 8.99, 7.5]]), colors="red").numpy(),
        draw_bounding_boxes(img, ember.tensor([[1, 2, 8, 7]]), colors="red").numpy())
    with pytest.raises(ValueError, match="xmin, ymin, xmax, ymax"):
        draw_bounding_boxes(img, ember.tensor([[5, 2, 1, 7]]))
    with pytest.raises(ValueError, match="uint8 or float"):  # (float images are drawn on too)
        draw_bounding_boxes(img.int(), ember.tensor([[1, 2, 8, 7]]))
