"""perspective / elastic_transform (against torch running torchvision's grid formulas, and
Pillow's perspective transform), RandomPerspective / ElasticTransform draws, five and ten
crops."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF_torch
from PIL import Image

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as TF

RNG = np.random.default_rng(0)
U8 = RNG.integers(0, 256, (3, 10, 13), dtype=np.uint8)
FLOAT = RNG.uniform(size=(3, 10, 13)).astype(np.float32)
STARTS = [[0, 0], [12, 0], [12, 9], [0, 9]]
ENDS = [[2, 1], [11, 3], [10, 8], [1, 9]]


def tv_coeffs(starts, ends):
    """torchvision's _get_perspective_coeffs."""
    a = torch.zeros(8, 8, dtype=torch.float64)
    for i, (p1, p2) in enumerate(zip(ends, starts)):
        a[2 * i] = torch.tensor([p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]])
        a[2 * i + 1] = torch.tensor([0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]])
    b = torch.tensor(starts, dtype=torch.float64).view(8)
    return torch.linalg.lstsq(a, b, driver="gels").solution.to(torch.float32).tolist()


def tv_perspective_grid(c, ow, oh, dtype):
    """torchvision's _perspective_grid."""
    theta1 = torch.tensor([[[c[0], c[1], c[2]], [c[3], c[4], c[5]]]], dtype=dtype)
    theta2 = torch.tensor([[[c[6], c[7], 1.0], [c[6], c[7], 1.0]]], dtype=dtype)
    base = torch.empty(1, oh, ow, 3, dtype=dtype)
    base[..., 0].copy_(torch.linspace(0.5, ow - 0.5, ow))
    base[..., 1].copy_(torch.linspace(0.5, oh - 0.5, oh).unsqueeze(-1))
    base[..., 2].fill_(1)
    scale = torch.tensor([0.5 * ow, 0.5 * oh], dtype=dtype)
    g1 = base.view(1, oh * ow, 3).bmm(theta1.transpose(1, 2) / scale)
    g2 = base.view(1, oh * ow, 3).bmm(theta2.transpose(1, 2))
    return (g1 / g2 - 1.0).view(1, oh, ow, 2)


def tv_grid_transform(img, grid, mode, fill):
    """torchvision's _apply_grid_transform on a (C, H, W) tensor."""
    out_dtype = img.dtype
    x = img[None].to(grid.dtype)
    if fill is not None:
        x = torch.cat((x, torch.ones_like(x[:, :1])), 1)
    x = TF_torch.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        mask, x = x[:, -1:].expand_as(x[:, :-1]), x[:, :-1]
        fills = torch.tensor(fill if isinstance(fill, list) else [float(fill)], dtype=x.dtype)
        back = fills.view(1, -1, 1, 1).expand_as(x)
        if mode == "nearest":
            x = torch.where(mask < 0.5, back, x)
        else:
            x = x * mask + (1.0 - mask) * back
    if not out_dtype.is_floating_point:
        x = x.round()
    return x[0].to(out_dtype)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, 0.5, [10.0, 128.0, 255.0]])
def test_perspective_matches_torchvisions_tensor_path(mode, fill):
    interpolation = T.InterpolationMode(mode)
    for img in (FLOAT, U8):
        f = fill if img.dtype == np.uint8 or not isinstance(fill, list) else [0.1, 0.5, 0.9]
        got = TF.perspective(ember.tensor(img), STARTS, ENDS, interpolation, f).numpy()
        grid = tv_perspective_grid(tv_coeffs(STARTS, ENDS), 13, 10, torch.float32)
        ref = tv_grid_transform(torch.tensor(img), grid, mode, f).numpy()
        assert got.dtype == img.dtype
        if img.dtype == np.uint8:
            diff = np.abs(got.astype(int) - ref.astype(int))
            assert diff.max() <= 1 and (diff == 0).mean() >= 0.99
        else:
            np.testing.assert_allclose(got, ref, atol=2e-5)


def test_perspective_nearest_samples_where_pillow_does():
    pil = Image.fromarray(np.ascontiguousarray(U8.transpose(1, 2, 0)))
    ref = np.asarray(pil.transform((13, 10), Image.PERSPECTIVE, tv_coeffs(STARTS, ENDS),
                                   Image.NEAREST)).transpose(2, 0, 1)
    got = TF.perspective(ember.tensor(U8), STARTS, ENDS, T.InterpolationMode.NEAREST).numpy()
    assert (got == ref).all(0).mean() >= 0.98


def test_perspective_identity_arrays_and_errors():
    x = ember.tensor(FLOAT)
    np.testing.assert_allclose(TF.perspective(x, STARTS, STARTS).numpy(), FLOAT, atol=1e-6)
    hwc = U8.transpose(1, 2, 0)
    out = TF.perspective(hwc, STARTS, ENDS)
    assert isinstance(out, np.ndarray) and out.shape == hwc.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(out.transpose(2, 0, 1),
                                  TF.perspective(ember.tensor(U8), STARTS, ENDS).numpy())
    with pytest.raises(ValueError, match="exactly four corners, got 3 startpoints"):
        TF.perspective(x, STARTS[:3], ENDS)
    with pytest.raises(ValueError, match="NEAREST or BILINEAR"):
        TF.perspective(x, STARTS, ENDS, T.InterpolationMode.BICUBIC)
    with pytest.raises(ValueError, match="fill .* has 2 values but the image has 3"):
        TF.perspective(x, STARTS, ENDS, fill=[1.0, 2.0])


def test_perspective_and_elastic_gradients():
    x = ember.tensor(RNG.uniform(size=(1, 4, 5)), dtype=ember.float64, requires_grad=True)
    starts, ends = [[0, 0], [4, 0], [4, 3], [0, 3]], [[1, 0], [4, 1], [3, 3], [0, 2]]
    assert ember.autograd.gradcheck(lambda t: TF.perspective(t, starts, ends, fill=0.3), (x,))
    d = ember.tensor(RNG.uniform(-0.2, 0.2, (1, 4, 5, 2)), dtype=ember.float64,
                     requires_grad=True)
    assert ember.autograd.gradcheck(lambda t, s: TF.elastic_transform(t, s), (x, d))
    # and the same gradients as torch's
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    td = torch.tensor(d.detach().numpy(), requires_grad=True)
    lin = [torch.linspace((1 - s) / s, (s - 1) / s, s) for s in (4, 5)]
    gy, gx = torch.meshgrid(lin, indexing="ij")
    ref = tv_grid_transform(tx, torch.stack([gx, gy], -1)[None] + td, "bilinear", None)
    ref.sum().backward()
    got = TF.elastic_transform(x, d)
    got.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-6)
    np.testing.assert_allclose(d.grad.numpy(), td.grad.numpy(), atol=1e-6)


@pytest.mark.parametrize("mode, fill", [("bilinear", None), ("nearest", [0.0, 99.0, 255.0]),
                                        ("bilinear", 7.0)])
def test_elastic_transform_matches_torchvision(mode, fill):
    d = RNG.uniform(-0.3, 0.3, (1, 10, 13, 2)).astype(np.float32)
    lin = [torch.linspace((1 - s) / s, (s - 1) / s, s) for s in (10, 13)]
    gy, gx = torch.meshgrid(lin, indexing="ij")
    grid = torch.stack([gx, gy], -1)[None] + torch.tensor(d)
    ref = tv_grid_transform(torch.tensor(U8), grid, mode, fill).numpy()
    got = TF.elastic_transform(ember.tensor(U8), ember.tensor(d), T.InterpolationMode(mode),
                               fill).numpy()
    diff = np.abs(got.astype(int) - ref.astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.99
    with pytest.raises(ValueError, match=r"displacement shape should be \(1, 10, 13, 2\)"):
        TF.elastic_transform(ember.tensor(U8), ember.zeros(1, 10, 12, 2))
    with pytest.raises(TypeError, match="displacement should be a tensor"):
        TF.elastic_transform(ember.tensor(U8), d)


def test_random_perspective_get_params_draws_torchvisions_ranges():
    ember.manual_seed(0)
    w, h, scale = 21, 11, 0.5                       # corners move up to 5 across, 2 down
    ends = np.array([T.RandomPerspective.get_params(w, h, scale)[1] for _ in range(400)])
    starts = T.RandomPerspective.get_params(w, h, scale)[0]
    assert starts == [[0, 0], [20, 0], [20, 10], [0, 10]]
    ranges = {(0, 0): range(0, 6), (0, 1): range(0, 3), (1, 0): range(15, 21),
              (1, 1): range(0, 3), (2, 0): range(15, 21), (2, 1): range(8, 11),
              (3, 0): range(0, 6), (3, 1): range(8, 11)}
    for (corner, axis), allowed in ranges.items():
        values, counts = np.unique(ends[:, corner, axis], return_counts=True)
        assert list(values) == list(allowed)                       # every value, no other
        expected = len(ends) / len(allowed)
        assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))   # uniform
    t = T.RandomPerspective(0.5, p=0.3)
    img = ember.tensor(U8)
    changed = sum(not np.array_equal(t(img).numpy(), U8) for _ in range(400))
    assert 80 < changed < 160
    ember.manual_seed(3)
    out = T.RandomPerspective(0.6, p=1.0, fill=(1, 2, 3))(img)
    ember.manual_seed(3)
    ember.rand(1)
    s, e = T.RandomPerspective.get_params(13, 10, 0.6)
    np.testing.assert_array_equal(out.numpy(), TF.perspective(img, s, e, fill=[1, 2, 3]).numpy())


def test_elastic_transform_get_params():
    ember.manual_seed(0)
    d = T.ElasticTransform.get_params([4.0, 6.0], [0.0, 0.0], [40, 30])
    assert d.shape == (1, 40, 30, 2) and d.dtype is ember.float32
    dx, dy = d[0, ..., 0].numpy(), d[0, ..., 1].numpy()
    assert np.abs(dx).max() <= 4.0 / 40 and np.abs(dy).max() <= 6.0 / 30   # alpha / size
    assert abs(dx.mean()) < 0.01 and np.abs(dx).max() > 0.09                # uniform, centred
    ember.manual_seed(1)
    d = T.ElasticTransform.get_params([5.0, 5.0], [1.0, 2.0], [12, 14])
    ember.manual_seed(1)
    noise = [ember.rand(1, 1, 12, 14) * 2 - 1 for _ in range(2)]            # kernel 9, 17
    want_x = TF.gaussian_blur(noise[0], [9, 9], [1.0, 2.0]) * 5.0 / 12
    np.testing.assert_allclose(d[0, ..., 0].numpy(), want_x[0, 0].numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="alpha should be float"):
        T.ElasticTransform(alpha=50)
    with pytest.raises(ValueError, match="length should be 2"):
        T.ElasticTransform(sigma=[1.0])
    assert T.ElasticTransform(20.0, 2.0)(U8.transpose(1, 2, 0)).shape == (10, 13, 3)


def test_five_and_ten_crop():
    x = ember.tensor(FLOAT)
    tl, tr, bl, br, c = TF.five_crop(x, (4, 5))
    np.testing.assert_array_equal(tl.numpy(), FLOAT[:, :4, :5])
    np.testing.assert_array_equal(tr.numpy(), FLOAT[:, :4, -5:])
    np.testing.assert_array_equal(bl.numpy(), FLOAT[:, -4:, :5])
    np.testing.assert_array_equal(br.numpy(), FLOAT[:, -4:, -5:])
    np.testing.assert_array_equal(c.numpy(), FLOAT[:, 3:7, 4:9])
    ten = T.TenCrop(4, vertical_flip=True)(x)
    assert len(ten) == 10
    np.testing.assert_array_equal(ten[5].numpy(), FLOAT[:, ::-1][:, :4, :4])
    np.testing.assert_array_equal(T.TenCrop([3])(x)[6].numpy(), FLOAT[:, :, ::-1][:, :3, -3:])
    crops = T.FiveCrop(3)(U8.transpose(1, 2, 0))
    assert all(isinstance(k, np.ndarray) and k.shape == (3, 3, 3) for k in crops)
    with pytest.raises(ValueError, match=r"crop size \(11, 2\) is bigger than input size"):
        TF.five_crop(x, (11, 2))
    with pytest.raises(ValueError, match="only two dimensions"):
        T.FiveCrop((1, 2, 3))
    pil_crops = T.TenCrop(2)(Image.new("RGB", (5, 4)))  # PIL images too, as PIL crops
    assert len(pil_crops) == 10 and all(k.size == (2, 2) for k in pil_crops)
