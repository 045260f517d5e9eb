"""grid_sample and affine_grid against PyTorch and finite differences."""

import doctest
import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.ops import grid_sample as grid_sample_module
from tests.ops.optable import OpCase, S, arg, op_tests


def _grid(*shape, wide=False, **kw):
    # beyond [-1, 1]: the padding modes decide (wide: several reflections)
    return arg(*shape, low=-3.5 if wide else -1.4, high=3.5 if wide else 1.4, **kw)


# (small: gradgradcheck's cost grows with the square of the elements)
GRID2D = [
    S(arg(1, 2, 3, 4), _grid(1, 2, 3, 2), mode=m, padding_mode=p, align_corners=a)
    for m, p, a in itertools.product(("bilinear", "nearest", "bicubic"),
                                     ("zeros", "border", "reflection"), (False, True))
] + [
    S(arg(1, 2, 3, 4), _grid(1, 3, 4, 2, wide=True), mode="bilinear",
      padding_mode="reflection", align_corners=False),
    S(arg(1, 2, 3, 4), _grid(1, 3, 4, 2, wide=True), mode="bicubic",
      padding_mode="reflection", align_corners=True),
    S(arg(1, 2, 1, 5), _grid(1, 2, 2, 2), mode="bilinear", padding_mode="reflection",
      align_corners=True),                                          # a single row
    S(arg(1, 2, 3, 4, noncontig=True), _grid(1, 3, 4, 2, noncontig=True)),  # defaults
    S(arg(2, 3, 4, 5), _grid(2, 0, 6, 2)),                          # no output points
]
GRID3D = [
    S(arg(1, 2, 2, 3, 3), _grid(1, 2, 2, 2, 3), mode=m, padding_mode=p, align_corners=a)
    for m, p, a in itertools.product(("bilinear", "nearest"),
                                     ("zeros", "border", "reflection"), (False, True))
]


def _theta(n, rows):
    return arg(n, rows, rows + 1, low=-1.5, high=1.5)


CASES = [
    OpCase("grid_sample", F.grid_sample, TF.grid_sample, GRID2D),
    OpCase("grid_sample_3d", F.grid_sample, TF.grid_sample, GRID3D),
    OpCase("affine_grid", F.affine_grid, TF.affine_grid, [
        S(_theta(2, 2), size=(2, 3, 4, 5), align_corners=a) for a in (False, True)
    ] + [
        S(_theta(2, 3), size=(2, 1, 3, 4, 5), align_corners=a) for a in (False, True)
    ] + [
        S(_theta(1, 2), size=(1, 1, 1, 3), align_corners=False),   # a unit-size dimension
    ]),
    # a spatial transformer: the grid of theta, then the sample, differentiated end to end
    OpCase("spatial_transformer",
           lambda x, t, **k: F.grid_sample(x, F.affine_grid(t, x.shape, **k), **k),
           lambda x, t, **k: TF.grid_sample(x, TF.affine_grid(t, x.shape, **k), **k),
           [S(arg(1, 2, 4, 3), _theta(1, 2), align_corners=a) for a in (False, True)]),
]

(test_forward, test_backward, test_gradcheck, test_gradgradcheck,
 test_jvp) = op_tests(CASES)


def test_grid_sample_matches_torch_on_grid_points_at_pixel_edges():
    # points exactly on pixel centres and borders, where floor and the clamps switch
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4))
    g = np.stack(np.meshgrid(np.linspace(-1.5, 1.5, 13), np.linspace(-1, 1, 7)), -1)[None]
    for mode, pad, align in itertools.product(("bilinear", "nearest", "bicubic"),
                                              ("zeros", "border", "reflection"),
                                              (False, True)):
        mine = F.grid_sample(ember.tensor(x), ember.tensor(g), mode, pad, align)
        ref = TF.grid_sample(torch.tensor(x), torch.tensor(g), mode, pad, align)
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), atol=1e-12)


def test_grid_sample_under_vmap_matches_a_loop():
    x, g = ember.randn(3, 2, 4, 5), ember.rand(3, 6, 7, 2) * 2 - 1
    per_sample = ember.func.vmap(lambda a, b: F.grid_sample(a[None], b[None])[0])(x, g)
    loop = ember.stack([F.grid_sample(x[i:i + 1], g[i:i + 1])[0] for i in range(3)])
    np.testing.assert_allclose(per_sample.numpy(), loop.numpy(), atol=1e-6)


def test_grid_sample_and_affine_grid_errors():
    x, g = ember.randn(2, 3, 4, 5), ember.zeros(2, 6, 7, 2)
    with pytest.raises(ember.ShapeError, match=r"grid_sample: .*grid \(2, 6, 7, 3\)"):
        F.grid_sample(x, ember.zeros(2, 6, 7, 3))
    with pytest.raises(ember.ShapeError, match=r"grid_sample: .*input \(3, 4, 5\)"):
        F.grid_sample(x[0], g[0])
    with pytest.raises(ember.ShapeError, match="grid_sample"):
        F.grid_sample(x, ember.zeros(1, 6, 7, 2))               # batch sizes differ
    with pytest.raises(ember.DTypeError, match="float32 and float64"):
        F.grid_sample(x, g.double())
    with pytest.raises(ValueError, match="mode must be one of"):
        F.grid_sample(x, g, mode="area")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        F.grid_sample(x, g, padding_mode="circular")
    with pytest.raises(ValueError, match="bicubic interpolation only supports 4-D"):
        F.grid_sample(ember.randn(1, 1, 2, 2, 2), ember.zeros(1, 1, 1, 1, 3), mode="bicubic")
    with pytest.raises(ember.ShapeError, match=r"affine_grid: .*theta \(2, 2, 3\)"):
        F.affine_grid(ember.zeros(2, 2, 3), (2, 1, 2, 3, 4))
    with pytest.raises(ember.ShapeError, match="positive spatial"):
        F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 0, 3))


def test_docstring_examples():
    result = doctest.testmod(grid_sample_module, extraglobs={"ember": ember, "F": F})
    assert result.attempted and result.failed == 0
